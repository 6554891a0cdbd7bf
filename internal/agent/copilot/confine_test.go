package copilot

import (
	"path/filepath"
	"testing"

	"sortie/internal/agent"
	"sortie/internal/testkit/clis"
	"sortie/internal/testkit/fakemodel"
)

// TestContract_ConfinedCLIWorksInItsWorkspaceOnly: the real CLI, confined, runs the
// bash tool the model asks for: the write in its workspace lands, the read of a hidden
// file and the write outside fail, and the turn still completes with the usage from
// the usage file in its private directory.
func TestContract_ConfinedCLIWorksInItsWorkspaceOnly(t *testing.T) {
	r := newRig(t, nil)
	e := clis.NewEscape(t, r.cli, r.WS, &r.Env, filepath.Dir(r.argvFile))
	r.model.Push(
		fakemodel.Reply{Text: "Trying.", ToolUses: []fakemodel.ToolUse{{Name: "bash",
			Input: map[string]any{"command": e.Script, "description": "try"}}},
			Usage: fakemodel.Usage{InputTokens: 10, OutputTokens: 2}},
		fakemodel.Reply{ToolUses: []fakemodel.ToolUse{done("tried")}, Usage: fakemodel.Usage{InputTokens: 20, OutputTokens: 3}},
	)
	s := r.Start(t, agent.StartParams{Confine: e.Confinement})
	o := r.Turn(t, s, 1, "Try things.")
	mustComplete(t, o)
	e.Check(t)
	if o.Result.Usage.Output != 5 {
		t.Errorf("usage = %+v, want the model's 5 output tokens", o.Result.Usage)
	}
}
