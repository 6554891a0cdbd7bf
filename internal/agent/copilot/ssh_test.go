package copilot

// SSH mode against a fake ssh client first on PATH (clis.FakeSSH) that runs the remote
// command line with sh, as sshd would, with the fake CLI as the remote program: what
// the dialect does differently there. The runner's SSH mode is tested in package cli;
// sshd_test.go runs the real CLI through a real sshd.

import (
	"os"
	"slices"
	"strings"
	"testing"

	"sortie/internal/agent"
	"sortie/internal/agent/agenttest"
	"sortie/internal/testkit/clis"
)

// Over SSH neither the canary nor the authentication preflight runs (they would ask
// this machine), no usage file is asked for (it would be written on the host), and a
// prompt goes to standard input as soon as the remote command line, one argument of
// ssh, would be too long with it.
func TestSSH_NothingLocalAndPromptsFitTheRemoteLine(t *testing.T) {
	clis.FakeSSH(t, 0, "")
	f := newFakeCLI(t)
	f.Remove(t, "version") // the canary would fail
	f.Run(t, 1, 0, message, resultLine("remote-1", 0, 5))
	f.Run(t, 2, 0, message, resultLine("remote-1", 0, 5))
	a := newFakeAdapter(t, f, map[string]any{"model": "gpt-4.1"})
	// No credential in the environment either.
	s := agenttest.StartSession(t, a, agent.StartParams{Workspace: t.TempDir(), Env: []string{"PATH=" + os.Getenv("PATH")},
		SSHHost: "deploy@build-1:2222"})
	prompt := "- fix it's \"bug\" $(touch PWNED) `touch PWNED` ; echo $HOME\nline two é"
	mustComplete(t, runTurn(t, a, s, 1, prompt))
	if s.ID != "remote-1" {
		t.Errorf("session id = %q, want the remote result's", s.ID)
	}
	big := strings.Repeat("x", maxArg-50) // would fit a local argument, not the remote line
	mustComplete(t, runTurn(t, a, s, 2, big))

	argvs := f.Argvs(t)
	if v, _ := clis.FlagValue(argvs[0], "--prompt"); v != prompt {
		t.Errorf("the remote CLI got prompt %q, want %q", v, prompt)
	}
	if v, _ := clis.FlagValue(argvs[0], "--model"); v != "gpt-4.1" || slices.Contains(argvs[0], "--usage-output-file") {
		t.Errorf("remote argv = %q: want --model and no usage file", argvs[0])
	}
	if _, ok := clis.FlagValue(argvs[1], "--prompt"); ok || f.Stdin(t, 2) != big {
		t.Errorf("turn 2: the prompt must reach the remote CLI on stdin (got %d bytes), not in the remote line", len(f.Stdin(t, 2)))
	}
}
