package opencode

import (
	"context"
	"strings"
	"testing"
	"time"

	"sortie/internal/agent"
	"sortie/internal/agent/cli"
)

// fakeCLI is an adapter whose agent.command is a shell script standing in for the CLI.
func fakeCLI(t *testing.T, body string) agent.Adapter {
	t.Helper()
	script := writeScript(t, "fake-opencode", "#!/bin/sh\n"+body+"\n")
	a, err := New(agent.Config{Kind: Kind, Command: script, Options: map[string]any{"state_dir": t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	a.(*cli.Runner[state]).Grace = time.Second
	return a
}

func runFake(t *testing.T, a agent.Adapter, resume string) turnOutcome {
	t.Helper()
	s, err := a.StartSession(context.Background(), agent.StartParams{Workspace: t.TempDir(), ResumeSessionID: resume, Env: []string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.StopSession(context.Background(), s)
	var o turnOutcome
	o.res, o.err = a.RunTurn(context.Background(), s, agent.TurnParams{Prompt: "hi", TurnNumber: 1, OnEvent: func(e agent.Event) { o.events = append(o.events, e) }})
	if len(o.events) == 0 || o.events[len(o.events)-1].Type != o.res.ExitReason {
		t.Fatalf("last event %v does not match the exit reason %s", describe(o.events), o.res.ExitReason)
	}
	return o
}

func TestRunTurn_ExitMapping(t *testing.T) {
	step := `{"type":"step_finish","sessionID":"ses_f","part":{"reason":"stop","tokens":{"input":3,"output":1}}}`
	cases := []struct {
		name   string
		body   string
		resume string
		reason agent.EventType
		kind   agent.ErrorKind
		msg    string
	}{
		{"clean exit without output", "cat >/dev/null; exit 0", "", agent.EventTurnFailed, agent.ErrTurnFailed, "exited 0 without any output"},
		{"clean exit with garbage", "echo not-json; exit 0", "", agent.EventTurnFailed, agent.ErrTurnFailed, "without a single OpenCode event"},
		{"output then exit 0", "echo '" + step + "'", "", agent.EventTurnCompleted, "", ""},
		{"error line, exit 0", `echo '{"type":"error","sessionID":"ses_f","error":{"name":"UnknownError","data":{"message":"boom"}}}'`, "", agent.EventTurnFailed, agent.ErrTurnFailed, "UnknownError: boom"},
		{"not found", "exit 127", "", agent.EventTurnFailed, agent.ErrNotFound, "the CLI was not found"},
		{"unknown session", "printf '\\033[91mError: \\033[0mSession not found\\n' >&2; exit 1", "ses_gone", agent.EventTurnFailed, agent.ErrPortExit, "stderr: Error: Session not found (OpenCode has no session ses_gone"},
		{"killed", "kill -9 $$", "", agent.EventTurnCancelled, agent.ErrTurnCancelled, "killed by signal"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := runFake(t, fakeCLI(t, c.body), c.resume)
			if o.res.ExitReason != c.reason || agent.KindOf(o.err) != c.kind {
				t.Fatalf("turn = %s, %v; want %s with kind %q", o.res.ExitReason, o.err, c.reason, c.kind)
			}
			if c.msg != "" && !strings.Contains(o.err.Error(), c.msg) {
				t.Errorf("error %q does not say %q", o.err, c.msg)
			}
		})
	}
}

func TestRunTurn_StopSessionCancelsTheTurn(t *testing.T) {
	a := fakeCLI(t, `echo '{"type":"step_start","sessionID":"ses_f"}'; exec sleep 60`)
	s, err := a.StartSession(context.Background(), agent.StartParams{Workspace: t.TempDir(), Env: []string{"PATH=/usr/bin:/bin"}})
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := a.RunTurn(context.Background(), s, agent.TurnParams{Prompt: "hi", OnEvent: func(e agent.Event) {
			if e.Type == agent.EventSessionStarted {
				close(started)
			}
		}})
		done <- err
	}()
	<-started
	a.StopSession(context.Background(), s)
	if err := <-done; agent.KindOf(err) != agent.ErrTurnCancelled {
		t.Fatalf("RunTurn = %v, want turn_cancelled", err)
	}
}
