package claude

// End-to-end tests of SSH mode against a real sshd on 127.0.0.1 with throw-away keys
// (internal/testkit/sshd), the real claude CLI on the "remote" side and the fake
// Anthropic API behind it (spec: claude-code-adapter.md, "SSH remote execution").

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sortie/internal/agent"
	"sortie/internal/agent/agenttest"
	"sortie/internal/testkit/clis"
	"sortie/internal/testkit/fakemodel"
	"sortie/internal/testkit/sshd"
)

// sshHostile is a prompt and a system prompt that must reach the model byte for byte:
// quotes, command substitutions, operators, a glob, newlines, backslashes, non-ASCII.
const sshHostile = "Fix it's \"bug\" $(touch PWNED) `touch PWNED` ; touch PWNED && echo $HOME | cat *\n" +
	"second line with '\\'' and \\ backslash, tab\there, é 🚀"

// sshRemoteClaude is the agent.command the remote shell runs: the pinned claude CLI,
// talking to the fake model.
func sshRemoteClaude(t *testing.T, fm *fakemodel.Server) *sshd.Agent {
	t.Helper()
	home := filepath.Join(t.TempDir(), "home")
	if err := os.Mkdir(home, 0o700); err != nil {
		t.Fatal(err)
	}
	return sshd.NewAgent(t, clis.Claude(t), clis.ClaudeEnv(nil, fm.URL, home))
}

// The prompt and every CLI argument reach the remote claude byte for byte, it runs in the
// workspace, and the turn completes.
func TestSSH_TurnRunsRemotelyInWorkspace(t *testing.T) {
	fx := sshd.Start(t)
	fm := fakemodel.Start(t,
		fakemodel.Reply{ToolUses: []fakemodel.ToolUse{{Name: "Bash",
			Input: map[string]any{"command": "pwd > where.txt", "description": "Record the working directory"}}}},
		fakemodel.Reply{Text: "recorded"},
	)
	remoteClaude := sshRemoteClaude(t, fm)
	a, err := New(agent.Config{Kind: Kind, Command: remoteClaude.Command, Options: map[string]any{
		"permission_mode": "bypassPermissions",
		"system_prompt":   sshHostile,
	}})
	if err != nil {
		t.Fatal(err)
	}
	workspace := sshd.HostileWorkspace(t)

	s := agenttest.StartSession(t, a, agent.StartParams{Workspace: workspace, SSHHost: fx.Host()})
	o := agenttest.RunTurn(t.Context(), a, s, 1, sshHostile)
	agenttest.CheckTurn(t, 1, s, o, false)
	agenttest.MustComplete(t, o)

	wantArgv := []string{"-p", "--output-format", "stream-json", "--verbose", "--session-id", s.ID,
		"--permission-mode", "bypassPermissions", "--append-system-prompt", sshHostile}
	if got := remoteClaude.Argv(t); !slices.Equal(got, wantArgv) {
		t.Errorf("remote argv:\n got %q\nwant %q", got, wantArgv)
	}

	reqs := fm.Messages()
	if len(reqs) < 2 {
		t.Fatalf("the fake model got %d message requests, want 2 (tool use, then the answer)", len(reqs))
	}
	if !sshUserSaid(reqs[0], sshHostile) {
		t.Errorf("the first request has no user text block equal to the prompt %q; messages: %+v", sshHostile, reqs[0].Messages)
	}
	if !strings.Contains(reqs[0].System, sshHostile) {
		t.Errorf("the system prompt does not contain the appended %q:\n%s", sshHostile, reqs[0].System)
	}

	remoteClaude.CheckRanIn(t, fx, workspace)
}

// sshUserSaid reports whether a user message of req has a text block equal to text.
func sshUserSaid(req fakemodel.Request, text string) bool {
	for _, m := range req.Messages {
		if m.Role != "user" {
			continue
		}
		for _, b := range m.Content {
			if b.Type == "text" && b.Text == text {
				return true
			}
		}
	}
	return false
}
