package claude

// End-to-end tests of SSH mode against a real sshd on 127.0.0.1 with throw-away keys
// (internal/testkit/sshd), the real claude CLI on the "remote" side and the fake
// Anthropic API behind it (spec: claude-code-adapter.md, "SSH remote execution").

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"sortie/internal/agent"
	"sortie/internal/agent/cli"
	"sortie/internal/agent/proc/proctest"
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

// sshRunTurn starts a session on host in workspace and runs one turn of prompt.
func sshRunTurn(t *testing.T, a agent.Adapter, host, workspace, prompt string) (*agent.Session, agent.TurnResult, []agent.Event, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	s, err := a.StartSession(ctx, agent.StartParams{Workspace: workspace, SSHHost: host})
	if err != nil {
		t.Fatalf("StartSession(SSHHost %q): %v", host, err)
	}
	t.Cleanup(func() { a.StopSession(context.Background(), s) })
	var events []agent.Event
	res, err := a.RunTurn(ctx, s, agent.TurnParams{Prompt: prompt, TurnNumber: 1,
		OnEvent: func(e agent.Event) { events = append(events, e) }})
	if len(events) == 0 || events[len(events)-1].Type != res.ExitReason {
		t.Fatalf("RunTurn: last event %v does not match the result's exit reason %q", events, res.ExitReason)
	}
	return s, res, events, err
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
	root := t.TempDir()
	workspace := filepath.Join(root, "ws 'it''s' \"q\" $(touch PWNED) `touch PWNED`; & é")
	if err := os.Mkdir(workspace, 0o755); err != nil {
		t.Fatal(err)
	}

	s, res, events, err := sshRunTurn(t, a, fx.Host(), workspace, sshHostile)
	if err != nil || res.ExitReason != agent.EventTurnCompleted {
		t.Fatalf("RunTurn = %q, %v; want turn_completed; events: %+v", res.ExitReason, err, events)
	}

	wantArgv := []string{"-p", "--output-format", "stream-json", "--verbose", "--session-id", s.ID,
		"--permission-mode", "bypassPermissions", "--append-system-prompt", sshHostile}
	if got := remoteClaude.Argv(t); !slices.Equal(got, wantArgv) {
		t.Errorf("remote argv:\n got %q\nwant %q", got, wantArgv)
	}

	// sshd sets SSH_CONNECTION to "client-ip client-port server-ip server-port".
	if conn := remoteClaude.Conn(); !strings.HasSuffix(conn, " 127.0.0.1 "+strconv.Itoa(fx.Port)) {
		t.Errorf("the remote command's SSH_CONNECTION = %q, want it to end with the test sshd's 127.0.0.1 %d", conn, fx.Port)
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

	where, err := os.ReadFile(filepath.Join(workspace, "where.txt"))
	if err != nil {
		t.Fatalf("the Bash tool did not write where.txt in the workspace: %v (tool results: %+v)", err, reqs[len(reqs)-1].ToolResults())
	}
	if got := strings.TrimSuffix(string(where), "\n"); got != workspace {
		t.Errorf("remote pwd = %q, want the workspace %q", got, workspace)
	}
	sshNoPwned(t, root, remoteClaude.Dir)
}

// A remote agent.command that does not exist makes the remote shell exit 127, which is
// agent_not_found (spec: "Exit codes").
func TestSSH_MissingRemoteBinaryIsAgentNotFound(t *testing.T) {
	fx := sshd.Start(t)
	a, err := New(agent.Config{Kind: Kind, Command: filepath.Join(fx.Dir, "no-such-claude")})
	if err != nil {
		t.Fatal(err)
	}
	_, res, _, err := sshRunTurn(t, a, fx.Host(), t.TempDir(), "hello")
	if got := agent.KindOf(err); got != agent.ErrNotFound || res.ExitReason != agent.EventTurnFailed {
		t.Fatalf("RunTurn = %q, %v (kind %q); want turn_failed with agent_not_found", res.ExitReason, err, got)
	}
	if !strings.Contains(err.Error(), "exit status 127") {
		t.Errorf("error %q does not name exit status 127", err)
	}
}

// ssh exits 255 when it cannot connect, which is port_exit (spec: "Exit codes").
func TestSSH_UnreachableHostIsPortExit(t *testing.T) {
	sshd.ClientOnPath(t, t.TempDir())
	port := sshd.FreePort(t) // closed again: connecting is refused at once
	a, err := New(agent.Config{Kind: Kind, Command: "claude"})
	if err != nil {
		t.Fatal(err)
	}
	_, res, _, err := sshRunTurn(t, a, "127.0.0.1:"+strconv.Itoa(port), t.TempDir(), "hello")
	if got := agent.KindOf(err); got != agent.ErrPortExit || res.ExitReason != agent.EventTurnFailed {
		t.Fatalf("RunTurn = %q, %v (kind %q); want turn_failed with port_exit", res.ExitReason, err, got)
	}
	if !strings.Contains(err.Error(), "exit status 255") || !strings.Contains(err.Error(), "Connection refused") {
		t.Errorf("error %q does not name exit status 255 and ssh's reason", err)
	}
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

// sshNoPwned fails the test if a hostile string ran its `touch PWNED` anywhere in dirs.
func sshNoPwned(t *testing.T, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		filepath.WalkDir(d, func(path string, e fs.DirEntry, err error) error {
			if err == nil && e.Name() == "PWNED" {
				t.Errorf("a hostile string ran a command: %s exists", path)
			}
			return nil
		})
	}
}

// Cancelling a turn stops the agent on the remote host too, not only the local ssh:
// without a terminal the remote shell gets no hangup, so the adapter kills the remote
// process group it announced.
func TestSSH_CancelStopsTheRemoteAgent(t *testing.T) {
	fx := sshd.Start(t)
	fm := fakemodel.Start(t, fakemodel.Reply{Stall: true})
	a, err := New(agent.Config{Kind: Kind, Command: sshRemoteClaude(t, fm).Command, Options: map[string]any{"permission_mode": "bypassPermissions"}})
	if err != nil {
		t.Fatal(err)
	}
	a.(*cli.Runner[state]).Grace = time.Second
	s, err := a.StartSession(t.Context(), agent.StartParams{Workspace: t.TempDir(), SSHHost: fx.Host()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := a.RunTurn(ctx, s, agent.TurnParams{Prompt: "hang", TurnNumber: 1})
		done <- err
	}()
	fm.WaitStall(t, time.Minute)
	if len(proctest.WithEnv(t, fm.URL)) == 0 {
		t.Fatal("no remote claude process found while the model stalls; the check below would prove nothing")
	}
	cancel()
	if err := <-done; agent.KindOf(err) != agent.ErrTurnCancelled {
		t.Fatalf("RunTurn = %v, want turn_cancelled", err)
	}
	if left := proctest.WithEnv(t, fm.URL); len(left) > 0 {
		t.Errorf("remote agent processes still running after the cancelled turn returned: %v", left)
	}
}
