package opencode

import (
	"context"
	"path/filepath"
	"testing"

	"sortie/internal/agent"
	"sortie/internal/testkit/clis"
	"sortie/internal/testkit/fakemodel"
)

// TestContract_ConfinedCLIWorksInItsWorkspaceOnly: the real CLI, confined, with its
// isolated state directories the only others it may write, runs the bash tool the model
// asks for: the write in its workspace lands, the read of a hidden file and the write
// outside fail, and the turn still completes with its usage.
func TestContract_ConfinedCLIWorksInItsWorkspaceOnly(t *testing.T) {
	r := newRig(t, nil)
	e := clis.NewEscape(t, clis.OpenCode(t), r.ws, &r.env, filepath.Dir(r.argvLog))
	r.model.Push(
		fakemodel.Reply{Text: "Trying.", ToolUses: []fakemodel.ToolUse{{Name: "bash",
			Input: map[string]any{"command": e.Script, "description": "try"}}},
			Usage: fakemodel.Usage{InputTokens: 10, OutputTokens: 2}},
		fakemodel.Reply{Text: "Done.", Usage: fakemodel.Usage{InputTokens: 20, OutputTokens: 3}},
	)
	s := r.start(t, agent.StartParams{Confine: e.Confinement})
	o := r.turn(t, context.Background(), s, 1, "Try things.")
	mustComplete(t, o)
	e.Check(t)
	if o.res.Usage.Output != 5 {
		t.Errorf("usage = %+v, want the model's 5 output tokens", o.res.Usage)
	}
}
