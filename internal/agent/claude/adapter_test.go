package claude

// Adapter tests with fake CLIs: shell scripts that print a chosen stream and exit as
// told, for the exit-code mapping and the stream limits the real CLI cannot be made
// to produce on demand.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sortie/internal/agent"
	"sortie/internal/agent/cli"
	"sortie/internal/agent/proc"
)

const (
	initLine    = `{"type":"system","subtype":"init","session_id":"cli-session","model":"m"}`
	textLine    = `{"type":"assistant","message":{"id":"a1","model":"m","content":[{"type":"text","text":"hi"}],"usage":{"input_tokens":10,"output_tokens":4}}}`
	successLine = `{"type":"result","subtype":"success","is_error":false,"result":"all done","session_id":"cli-session","total_cost_usd":0.01,"usage":{"input_tokens":10,"output_tokens":4}}`
	errorLine   = `{"type":"result","subtype":"error_max_turns","is_error":true,"result":"","session_id":"cli-session","usage":{"input_tokens":10,"output_tokens":4}}`
)

// fakeCLI returns an adapter whose CLI is a shell script with body; stdout.jsonl in
// the script's directory holds lines, which the body can print with `cat "$out"`.
func fakeCLI(t *testing.T, body string, lines ...string) agent.Adapter {
	t.Helper()
	dir := t.TempDir()
	out := filepath.Join(dir, "stdout.jsonl")
	if err := os.WriteFile(out, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "claude")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nout="+shellQuote(out)+"\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	a, err := New(agent.Config{Kind: Kind, Command: script})
	if err != nil {
		t.Fatal(err)
	}
	a.(*cli.Runner[state]).Grace = 200 * time.Millisecond
	return a
}

func runOnce(t *testing.T, a agent.Adapter, ctx context.Context) turnOutcome {
	t.Helper()
	s, err := a.StartSession(context.Background(), agent.StartParams{Workspace: t.TempDir(), Env: os.Environ()})
	if err != nil {
		t.Fatal(err)
	}
	defer a.StopSession(context.Background(), s)
	var o turnOutcome
	o.res, o.err = a.RunTurn(ctx, s, agent.TurnParams{Prompt: "do it", TurnNumber: 1, OnEvent: func(e agent.Event) {
		o.events = append(o.events, e)
	}})
	return o
}

func TestRunTurn_ExitMapping(t *testing.T) {
	cases := []struct {
		name   string
		body   string
		lines  []string
		reason agent.EventType
		kind   agent.ErrorKind
		text   string // in the error
	}{
		{"result success", `cat "$out"`, []string{initLine, textLine, successLine}, agent.EventTurnCompleted, "", ""},
		{"result error, exit 0", `cat "$out"`, []string{initLine, textLine, errorLine}, agent.EventTurnFailed, agent.ErrTurnFailed, "error_max_turns"},
		{"output but no result", `cat "$out"`, []string{initLine, textLine}, agent.EventTurnCompleted, "", ""},
		{"no output, no result", `cat "$out"; echo "auth went wrong" >&2`, []string{initLine}, agent.EventTurnFailed, agent.ErrTurnFailed, "auth went wrong"},
		{"exit 127", `echo "claude: not found" >&2; exit 127`, nil, agent.EventTurnFailed, agent.ErrNotFound, "not found"},
		{"exit 1 with error result", `cat "$out"; exit 1`, []string{initLine, errorLine}, agent.EventTurnFailed, agent.ErrPortExit, "exit status 1"},
		{"ssh connection failure", `echo "ssh: connect to host h port 22: Connection refused" >&2; exit 255`, nil, agent.EventTurnFailed, agent.ErrPortExit, "Connection refused"},
		{"killed by a signal", `cat "$out"; kill -KILL $$`, []string{initLine}, agent.EventTurnCancelled, agent.ErrTurnCancelled, "signal"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := runOnce(t, fakeCLI(t, c.body, c.lines...), context.Background())
			if o.res.ExitReason != c.reason || agent.KindOf(o.err) != c.kind {
				t.Fatalf("turn = %s, %v; want %s, kind %q", o.res.ExitReason, o.err, c.reason, c.kind)
			}
			if c.text != "" && !strings.Contains(o.err.Error(), c.text) {
				t.Errorf("error %q lacks %q", o.err, c.text)
			}
			if last := o.events[len(o.events)-1]; last.Type != c.reason {
				t.Errorf("last event = %s, want %s", last.Type, c.reason)
			}
		})
	}
}

func TestRunTurn_PromptGoesToStdin(t *testing.T) {
	dir := t.TempDir()
	got := filepath.Join(dir, "stdin")
	a := fakeCLI(t, `cat > `+shellQuote(got)+`; cat "$out"`, initLine, textLine, successLine)
	s, err := a.StartSession(context.Background(), agent.StartParams{Workspace: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	prompt := strings.Repeat("a long prompt line with 'quotes' and $(no expansion)\n", 5000) // > 128 KiB: too big for one argv string
	if _, err := a.RunTurn(context.Background(), s, agent.TurnParams{Prompt: prompt, TurnNumber: 1}); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(got)
	if string(data) != prompt {
		t.Errorf("stdin got %d bytes, want the %d-byte prompt", len(data), len(prompt))
	}
}

func TestRunTurn_LineLimits(t *testing.T) {
	big := func(n int) string {
		// A valid assistant line of n bytes, padded inside its text.
		head := `{"type":"assistant","message":{"id":"big","model":"m","content":[{"type":"text","text":"`
		tail := `"}],"usage":{"input_tokens":1,"output_tokens":1}}}`
		return head + strings.Repeat("x", n-len(head)-len(tail)) + tail
	}
	t.Run("a line just under 10 MB is read", func(t *testing.T) {
		o := runOnce(t, fakeCLI(t, `cat "$out"`, initLine, big(proc.DefaultMaxLine-1), successLine), context.Background())
		if o.err != nil {
			t.Fatalf("turn failed: %v", o.err)
		}
		if len(o.of(agent.EventMalformed)) != 0 {
			t.Errorf("malformed events: %v", types(o.events))
		}
	})
	t.Run("a longer line fails the turn with port_exit", func(t *testing.T) {
		o := runOnce(t, fakeCLI(t, `cat "$out"`, initLine, big(proc.DefaultMaxLine+100), successLine), context.Background())
		if agent.KindOf(o.err) != agent.ErrPortExit {
			t.Fatalf("turn = %v, want port_exit", o.err)
		}
	})
	t.Run("malformed lines do not end the turn", func(t *testing.T) {
		o := runOnce(t, fakeCLI(t, `cat "$out"`, initLine, "not json", `{"type":`, textLine, successLine), context.Background())
		if o.err != nil || len(o.of(agent.EventMalformed)) != 2 {
			t.Fatalf("turn = %v, events %v", o.err, types(o.events))
		}
	})
}

func TestRunTurn_SessionIDs(t *testing.T) {
	dir := t.TempDir()
	argv := filepath.Join(dir, "argv")
	body := `printf '%s ' "$@" >> ` + shellQuote(argv) + `; echo >> ` + shellQuote(argv) + `; cat "$out"`
	lines := []string{`{"type":"system","subtype":"init","session_id":"%s"}`, textLine, successLine}

	t.Run("new session: --session-id, then --resume", func(t *testing.T) {
		os.Remove(argv)
		a := fakeCLI(t, body, initLine, textLine, successLine)
		s, _ := a.StartSession(context.Background(), agent.StartParams{Workspace: t.TempDir()})
		first := s.ID
		for i := 1; i <= 2; i++ {
			if _, err := a.RunTurn(context.Background(), s, agent.TurnParams{Prompt: "p", TurnNumber: i}); err != nil {
				t.Fatal(err)
			}
		}
		got := strings.Split(strings.TrimSpace(readFile(t, argv)), "\n")
		if !strings.Contains(got[0], "--session-id "+first) || !strings.Contains(got[1], "--resume cli-session") {
			t.Errorf("argv = %q; want --session-id %s then --resume with the CLI's id", got, first)
		}
		if s.ID != "cli-session" {
			t.Errorf("session id = %q, want the one system/init announced", s.ID)
		}
	})
	t.Run("resumed session: --resume from the first turn", func(t *testing.T) {
		os.Remove(argv)
		a := fakeCLI(t, body, fmt.Sprintf(lines[0], "old"), lines[1], lines[2])
		s, _ := a.StartSession(context.Background(), agent.StartParams{Workspace: t.TempDir(), ResumeSessionID: "old"})
		if _, err := a.RunTurn(context.Background(), s, agent.TurnParams{Prompt: "p", TurnNumber: 1}); err != nil {
			t.Fatal(err)
		}
		if got := readFile(t, argv); !strings.Contains(got, "--resume old") || strings.Contains(got, "--session-id") {
			t.Errorf("argv = %q, want --resume old", got)
		}
	})
	t.Run("without session persistence every turn is new", func(t *testing.T) {
		os.Remove(argv)
		a := fakeCLI(t, body, textLine, successLine) // no init line: ids stay ours
		a.(*cli.Runner[state]).Dialect.(*dialect).opts.SessionPersistence = false
		s, _ := a.StartSession(context.Background(), agent.StartParams{Workspace: t.TempDir()})
		for i := 1; i <= 2; i++ {
			if _, err := a.RunTurn(context.Background(), s, agent.TurnParams{Prompt: "p", TurnNumber: i}); err != nil {
				t.Fatal(err)
			}
		}
		got := readFile(t, argv)
		if strings.Contains(got, "--resume") || strings.Count(got, "--session-id") != 2 || strings.Count(got, "--no-session-persistence") != 2 {
			t.Errorf("argv = %q, want two fresh --session-id turns", got)
		}
	})
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestRunTurn_UsageAndCostAccumulateAcrossTurns(t *testing.T) {
	a := fakeCLI(t, `cat "$out"`, initLine, textLine,
		`{"type":"result","subtype":"success","is_error":false,"result":"ok","usage":{"input_tokens":10,"output_tokens":4},"model_usage_since_last_result":{"m":{"costUSD":0.25}}}`)
	s, _ := a.StartSession(context.Background(), agent.StartParams{Workspace: t.TempDir()})
	var res agent.TurnResult
	for i := 1; i <= 3; i++ {
		var err error
		if res, err = a.RunTurn(context.Background(), s, agent.TurnParams{Prompt: "p", TurnNumber: i}); err != nil {
			t.Fatal(err)
		}
	}
	if want := (agent.Usage{Input: 30, Output: 12, Total: 42}); res.Usage != want || res.CostUSD != 0.75 {
		t.Errorf("after 3 turns: usage %+v cost %v, want %+v and 0.75", res.Usage, res.CostUSD, want)
	}
}

func TestRunTurn_StopSessionStopsTheTurn(t *testing.T) {
	a := fakeCLI(t, `cat "$out"; exec sleep 600`, initLine)
	s, _ := a.StartSession(context.Background(), agent.StartParams{Workspace: t.TempDir()})
	started := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := a.RunTurn(context.Background(), s, agent.TurnParams{Prompt: "p", TurnNumber: 1, OnEvent: func(e agent.Event) {
			if e.Type == agent.EventSessionStarted {
				close(started)
			}
		}})
		done <- err
	}()
	<-started
	if err := a.StopSession(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	if err := <-done; agent.KindOf(err) != agent.ErrTurnCancelled {
		t.Fatalf("turn = %v, want turn_cancelled", err)
	}
	if _, err := a.RunTurn(context.Background(), s, agent.TurnParams{Prompt: "p", TurnNumber: 2}); agent.KindOf(err) != agent.ErrTurnCancelled {
		t.Errorf("turn after StopSession = %v, want turn_cancelled", err)
	}
}

func TestStartSession_Workspace(t *testing.T) {
	a := fakeCLI(t, "true")
	file := filepath.Join(t.TempDir(), "f")
	os.WriteFile(file, nil, 0o644)
	for _, ws := range []string{"", "relative/path", filepath.Join(t.TempDir(), "missing"), file} {
		if _, err := a.StartSession(context.Background(), agent.StartParams{Workspace: ws}); agent.KindOf(err) != agent.ErrInvalidWorkspace {
			t.Errorf("workspace %q: %v, want invalid_workspace_cwd", ws, err)
		}
	}
}

func TestStartSession_SSHNeedsOnlyTheSSHClient(t *testing.T) {
	a, err := New(agent.Config{Kind: Kind, Command: "claude-not-installed-here"})
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", t.TempDir()) // neither claude nor ssh
	_, err = a.StartSession(context.Background(), agent.StartParams{Workspace: t.TempDir(), SSHHost: "builder-1"})
	if agent.KindOf(err) != agent.ErrNotFound || !strings.Contains(err.Error(), "ssh") {
		t.Fatalf("StartSession without ssh = %v, want agent_not_found naming ssh", err)
	}
	bin := t.TempDir()
	os.WriteFile(filepath.Join(bin, "ssh"), []byte("#!/bin/sh\n"), 0o755)
	t.Setenv("PATH", bin)
	if _, err := a.StartSession(context.Background(), agent.StartParams{Workspace: t.TempDir(), SSHHost: "builder-1"}); err != nil {
		t.Fatalf("StartSession with ssh but no local claude = %v, want success (claude is looked up remotely)", err)
	}
}

func TestRegistration(t *testing.T) {
	meta, ok := agent.Lookup(Kind)
	if !ok || !meta.RequiresCommand {
		t.Fatalf("claude-code registered = %v, meta %+v; want RequiresCommand", ok, meta)
	}
}
