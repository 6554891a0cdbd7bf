package opencode

// The dialect against a fake CLI (clis.Fake) printing chosen event lines: how a turn's
// events and exit decide its outcome, and each turn's arguments. The runner's own
// lifecycle is tested in package cli.

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sortie/internal/agent"
	"sortie/internal/agent/agenttest"
	"sortie/internal/testkit/clis"
)

const stepLine = `{"type":"step_finish","sessionID":"ses_f","part":{"reason":"stop","tokens":{"input":3,"output":1}}}`

// fakeCLI is a fake opencode whose runs 1..len(runs) print runs[i] and exit 0, the
// adapter running it, and a session of it resuming resume ("" for a new one).
func fakeCLI(t *testing.T, resume string, runs ...[]string) (*clis.Fake, agent.Adapter, *agent.Session) {
	t.Helper()
	f := clis.NewFake(t, "opencode")
	for i, lines := range runs {
		f.Run(t, i+1, 0, lines...)
	}
	a, err := New(agent.Config{Kind: Kind, Command: f.Path, Options: map[string]any{"state_dir": t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	s := agenttest.StartSession(t, a, agent.StartParams{Workspace: t.TempDir(), ResumeSessionID: resume,
		Env: []string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir()}})
	return f, a, s
}

// TestRunTurn_EventsDecide: the CLI's events, not its exit status alone, say how a turn
// ended.
func TestRunTurn_EventsDecide(t *testing.T) {
	cases := []struct {
		name   string
		code   int
		lines  []string
		stderr string
		resume string
		reason agent.EventType
		kind   agent.ErrorKind
		msg    string
	}{
		{"clean exit without output", 0, nil, "", "", agent.EventTurnFailed, agent.ErrTurnFailed, "exited 0 without any output"},
		{"clean exit with garbage", 0, []string{"not-json"}, "", "", agent.EventTurnFailed, agent.ErrTurnFailed, "without a single OpenCode event"},
		{"output then exit 0", 0, []string{stepLine}, "", "", agent.EventTurnCompleted, "", ""},
		{"error line, exit 0", 0, []string{`{"type":"error","sessionID":"ses_f","error":{"name":"UnknownError","data":{"message":"boom"}}}`},
			"", "", agent.EventTurnFailed, agent.ErrTurnFailed, "UnknownError: boom"},
		{"error line, exit 1", 1, []string{`{"type":"error","sessionID":"ses_f","error":{"name":"APIError","data":{"message":"boom"}}}`},
			"", "", agent.EventTurnFailed, agent.ErrTurnFailed, "exit status 1; APIError: boom"},
		{"unknown session", 1, nil, "\x1b[91mError: \x1b[0mSession not found\n", "ses_gone", agent.EventTurnFailed, agent.ErrPortExit,
			"stderr: Error: Session not found (OpenCode has no session ses_gone"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, a, s := fakeCLI(t, c.resume)
			f.Run(t, 1, c.code, c.lines...)
			f.Set(t, "stderr.1", c.stderr)
			o := agenttest.RunTurn(context.Background(), a, s, 1, "hi")
			if o.Result.ExitReason != c.reason || agent.KindOf(o.Err) != c.kind {
				t.Fatalf("turn = %s, %v; want %s with kind %q", o.Result.ExitReason, o.Err, c.reason, c.kind)
			}
			if c.msg != "" && !strings.Contains(o.Err.Error(), c.msg) {
				t.Errorf("error %q does not say %q", o.Err, c.msg)
			}
			if len(c.lines) > 0 && strings.Contains(c.lines[0], "ses_f") && s.ID != "ses_f" {
				t.Errorf("session id = %q, want the one the CLI reported, failed turn or not", s.ID)
			}
		})
	}
}

// A new session's first turn is titled after the workspace (no model request for a
// title) and later ones continue the session the CLI reported; without a permission
// configuration turns run with --auto; the prompt goes to standard input.
func TestRunTurn_SessionFlags(t *testing.T) {
	f, a, s := fakeCLI(t, "", []string{stepLine}, []string{stepLine})
	for n, prompt := range []string{"Remember the word PAPAYA.", "- which word?"} {
		agenttest.MustComplete(t, agenttest.RunTurn(context.Background(), a, s, n+1, prompt))
		if got := f.Stdin(t, n+1); got != prompt {
			t.Errorf("turn %d stdin = %q, want the prompt", n+1, got)
		}
	}
	argvs := f.Argvs(t)
	if want := []string{"run", "--format", "json", "--title=sortie " + filepath.Base(s.Workspace), "--auto"}; !slices.Equal(argvs[0], want) {
		t.Errorf("turn 1 argv %q, want %q", argvs[0], want)
	}
	if want := []string{"run", "--format", "json", "--session", "ses_f", "--auto"}; !slices.Equal(argvs[1], want) {
		t.Errorf("turn 2 argv %q, want %q", argvs[1], want)
	}
}
