package claude

import (
	"testing"

	"sortie/internal/agent"
	"sortie/internal/agent/agenttest"
	"sortie/internal/testkit/clis"
	"sortie/internal/testkit/fakemodel"
)

// TestContract_ConfinedCLIWorksInItsWorkspaceOnly: the real CLI, confined, runs the
// Bash tool the model asks for: the write in its workspace lands, the read of a hidden
// file and the write outside fail, and the turn still completes with its usage.
func TestContract_ConfinedCLIWorksInItsWorkspaceOnly(t *testing.T) {
	r := newRig(t)
	e := clis.NewEscape(t, clis.Claude(t), r.WS, &r.Env)
	r.model.Push(
		fakemodel.Reply{Text: "Trying.", ToolUses: []fakemodel.ToolUse{{Name: "Bash",
			Input: map[string]any{"command": e.Script, "description": "try"}}},
			Usage: fakemodel.Usage{InputTokens: 10, OutputTokens: 2}},
		fakemodel.Reply{Text: "Done.", Usage: fakemodel.Usage{InputTokens: 20, OutputTokens: 3}},
	)
	s := r.Start(t, agent.StartParams{Confine: e.Confinement})
	o := r.Turn(t, s, 1, "Try things.")
	agenttest.MustComplete(t, o)
	e.Check(t)
	if o.Result.Usage.Output != 5 {
		t.Errorf("usage = %+v, want the model's 5 output tokens", o.Result.Usage)
	}
}
