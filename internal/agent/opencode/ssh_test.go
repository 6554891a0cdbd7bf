package opencode

// SSH mode against a real sshd on 127.0.0.1 with throw-away keys (internal/testkit/sshd),
// the real opencode CLI on the "remote" side and the fake Anthropic API behind it. The
// adapter's configuration travels on ssh's standard input, never in a command line.

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"sortie/internal/agent"
	"sortie/internal/agent/agenttest"
	"sortie/internal/agent/cli"
	"sortie/internal/testkit/clis"
	"sortie/internal/testkit/fakemodel"
	"sortie/internal/testkit/sshd"
)

// sshHostile is a prompt that must reach the model byte for byte: quotes, command
// substitutions, operators, a glob, newlines, backslashes, non-ASCII, a leading dash.
const sshHostile = "- Fix it's \"bug\" $(touch PWNED) `touch PWNED` ; touch PWNED && echo $HOME | cat *\n" +
	"second line with '\\'' and \\ backslash, tab\there, é 🚀"

// sshAdapter is an adapter whose agent.command, run by the remote shell, is the pinned
// opencode CLI with a private HOME, configured to talk to fm.
func sshAdapter(t *testing.T, fm *fakemodel.Server) (agent.Adapter, *sshd.Agent) {
	t.Helper()
	remoteCLI := sshd.NewAgent(t, clis.OpenCode(t), clis.OpenCodeEnv(nil, t.TempDir(), sharedCache))
	a, err := New(agent.Config{Kind: Kind, Command: remoteCLI.Command, Options: map[string]any{"config": clis.OpenCodeConfig(fm.URL)}})
	if err != nil {
		t.Fatal(err)
	}
	a.(*cli.Runner[state]).Grace = time.Second
	return a, remoteCLI
}

func TestSSH_TurnRunsRemotelyInWorkspace(t *testing.T) {
	fx := sshd.Start(t)
	fm := fakemodel.Start(t,
		fakemodel.Reply{ToolUses: []fakemodel.ToolUse{{Name: "bash", Input: map[string]any{"command": "pwd > where.txt", "description": "record"}}}},
		fakemodel.Reply{Text: "recorded"},
	)
	a, remoteCLI := sshAdapter(t, fm)
	workspace := sshd.HostileWorkspace(t)
	s := agenttest.StartSession(t, a, agent.StartParams{Workspace: workspace, SSHHost: fx.Host()})
	o := agenttest.RunTurn(t.Context(), a, s, 1, sshHostile)
	agenttest.CheckTurn(t, 1, s, o, false)
	agenttest.MustComplete(t, o)
	if !strings.HasPrefix(s.ID, "ses_") {
		t.Errorf("session id = %q, want the remote CLI's", s.ID)
	}
	want := []string{"run", "--format", "json", "--title=sortie " + filepath.Base(workspace), "--auto"}
	if got := remoteCLI.Argv(t); !slices.Equal(got, want) {
		t.Errorf("remote argv = %q, want %q", got, want)
	}
	reqs := fm.Messages()
	if len(reqs) != 2 || reqs[0].Messages[0].Text() != sshHostile {
		t.Fatalf("requests = %d; the first user message must be the prompt byte for byte", len(reqs))
	}
	remoteCLI.CheckRanIn(t, fx, workspace)
}

// TestSSH_ConfigurationNeverOnACommandLine: the inline configuration (MCP servers'
// tokens, a provider's key) travels on ssh's standard input, so no command line on
// either host, readable by every user there, holds it while the turn runs.
func TestSSH_ConfigurationNeverOnACommandLine(t *testing.T) {
	fx := sshd.Start(t)
	fm := fakemodel.Start(t, fakemodel.Reply{Stall: true})
	a, _ := sshAdapter(t, fm)
	s, err := a.StartSession(t.Context(), agent.StartParams{Workspace: t.TempDir(), SSHHost: fx.Host()})
	if err != nil {
		t.Fatal(err)
	}
	defer a.StopSession(context.Background(), s)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := a.RunTurn(ctx, s, agent.TurnParams{Prompt: "hang", TurnNumber: 1})
		done <- err
	}()
	fm.WaitStall(t, time.Minute) // the remote CLI has its configuration: it reached the model
	cmdlines, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	var seen int
	for _, p := range cmdlines {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		seen++
		if strings.Contains(string(b), clis.OpenCodeProviderKey) {
			t.Errorf("%s holds the inline configuration: %.200q", p, b)
		}
	}
	if seen == 0 {
		t.Fatal("no command line readable; the check proves nothing")
	}
	cancel()
	<-done
}
