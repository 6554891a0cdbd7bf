package gemini

import (
	"path/filepath"
	"testing"

	"sortie/internal/agent"
	"sortie/internal/agent/agenttest"
	"sortie/internal/testkit/clis"
	"sortie/internal/testkit/fakemodel"
)

// TestContract_ConfinedCLIWorksInItsWorkspaceOnly: the real CLI, confined, with the
// issue's GEMINI_CLI_HOME the only other place it may write, runs the shell command
// the model asks for: the write in its workspace lands, the read of a hidden file and
// the write outside fail, and the turn still completes with its usage.
func TestContract_ConfinedCLIWorksInItsWorkspaceOnly(t *testing.T) {
	r := newRig(t, nil)
	e := clis.NewEscape(t, clis.Gemini(t), r.WS, &r.Env, filepath.Dir(r.argvFile))
	r.model.Push(
		fakemodel.GeminiReply{FunctionCalls: []fakemodel.GeminiCall{{Name: "run_shell_command", Args: map[string]any{"command": e.Script}}},
			Usage: fakemodel.Usage{InputTokens: 10, OutputTokens: 2}},
		fakemodel.GeminiReply{Text: "Done.", Usage: fakemodel.Usage{InputTokens: 20, OutputTokens: 3}},
	)
	s := r.Start(t, agent.StartParams{Confine: e.Confinement})
	o := r.Turn(t, s, 1, "Try things.")
	agenttest.MustComplete(t, o)
	e.Check(t)
	if o.Result.Usage.Output != 5 {
		t.Errorf("usage = %+v, want the model's 5 output tokens", o.Result.Usage)
	}
}
