package copilot

// SSH mode end to end: a real sshd on 127.0.0.1 with throw-away keys
// (internal/testkit/sshd), the pinned copilot CLI on the "remote" side in BYOK mode and
// the fake model API behind it (spec: copilot-cli-adapter.md, "SSH remote execution").
// ssh_test.go checks the dialect over SSH against a fake ssh client.

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"sortie/internal/agent"
	"sortie/internal/agent/agenttest"
	"sortie/internal/testkit/clis"
	"sortie/internal/testkit/fakemodel"
	"sortie/internal/testkit/sshd"
)

// sshHostile is a prompt that must reach the model byte for byte: a leading '-',
// quotes, command substitutions, operators, a glob, newlines, backslashes, non-ASCII.
const sshHostile = "- fix it's \"bug\" $(touch PWNED) `touch PWNED` ; touch PWNED && echo $HOME | cat *\n" +
	"second line with '\\'' and \\ backslash, tab\there, é 🚀"

// sshRemoteCopilot is the agent.command the remote shell runs: the pinned copilot CLI
// in BYOK mode against the fake model, with its own HOME and the package's warm cache.
func sshRemoteCopilot(t *testing.T, fm *fakemodel.Server) *sshd.Agent {
	t.Helper()
	cli := copilotCLI(t)
	home := filepath.Join(t.TempDir(), "home")
	if err := os.Mkdir(home, 0o700); err != nil {
		t.Fatal(err)
	}
	return sshd.NewAgent(t, cli, clis.CopilotEnv(nil, fm.URL, home, cliCache))
}

// The prompt and every CLI argument reach the remote copilot byte for byte, it runs in
// the workspace, and the turn completes under the session id the remote CLI reported.
func TestSSH_TurnRunsRemotelyInWorkspace(t *testing.T) {
	fx := sshd.Start(t)
	fm := fakemodel.Start(t,
		fakemodel.Reply{ToolUses: []fakemodel.ToolUse{{Name: "bash",
			Input: map[string]any{"command": "pwd > where.txt", "description": "Record the working directory"}}}},
		fakemodel.Reply{ToolUses: []fakemodel.ToolUse{done("recorded the working directory")}},
	)
	remoteCopilot := sshRemoteCopilot(t, fm)
	// agent.read_timeout_ms, as in newRig: a loaded machine starts the CLI slowly.
	ad, err := New(agent.Config{Kind: Kind, Command: remoteCopilot.Command, ReadTimeout: 60 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	a := ad.(*adapter)
	workspace := sshd.HostileWorkspace(t)

	ctx, cancel := context.WithTimeout(t.Context(), patience)
	defer cancel()
	s := agenttest.StartSession(t, a, agent.StartParams{Workspace: workspace, SSHHost: fx.Host()})
	o := agenttest.RunTurn(ctx, a, s, 1, sshHostile)
	agenttest.CheckTurn(t, 1, s, o, false)
	mustComplete(t, o)
	if len(s.ID) != 36 || o.Result.SessionID != s.ID {
		t.Errorf("session id %q, result %q; want the remote CLI's UUID from its result event", s.ID, o.Result.SessionID)
	}

	wantArgv := []string{"--prompt=" + sshHostile, "--output-format", "json", "-s", "--autopilot", "--no-ask-user",
		"--max-autopilot-continues", strconv.Itoa(DefaultMaxAutopilotContinues), "--allow-all"}
	if got := remoteCopilot.Argv(t); !slices.Equal(got, wantArgv) {
		t.Errorf("remote argv:\n got %q\nwant %q (no --usage-output-file: that file would be on the remote host)", got, wantArgv)
	}

	reqs := fm.Messages()
	if len(reqs) != 2 {
		t.Fatalf("model requests = %d, want 2 (the bash call, then task_complete)", len(reqs))
	}
	if tr := reqs[0].Transcript(); !strings.Contains(tr, sshHostile) {
		t.Errorf("the first request lacks the prompt byte for byte:\n%s", tr)
	}
	remoteCopilot.CheckRanIn(t, fx, workspace)
}
