package mock

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"sortie/internal/agent"
	"sortie/internal/agent/proc/proctest"
)

func newAdapter(t *testing.T, command string, opts map[string]any) *adapter {
	t.Helper()
	a, err := New(agent.Config{Kind: Kind, Command: command, Options: opts})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return a.(*adapter)
}

// startSession starts a session in ws whose child sees env on top of this process's
// environment (minus any issue identifier of the developer's shell).
func startSession(t *testing.T, a *adapter, ws string, env ...string) *agent.Session {
	t.Helper()
	s, err := a.StartSession(t.Context(), agent.StartParams{
		Workspace: ws,
		Env:       append(withoutKey(os.Environ(), IssueEnv), env...),
	})
	if err != nil {
		t.Fatalf("StartSession(%s): %v", ws, err)
	}
	t.Cleanup(func() { a.StopSession(context.Background(), s) })
	return s
}

type turnOutput struct {
	res    agent.TurnResult
	err    error
	events []agent.Event
}

func (o turnOutput) types() []agent.EventType {
	types := make([]agent.EventType, len(o.events))
	for i, e := range o.events {
		types[i] = e.Type
	}
	return types
}

func (o turnOutput) last() agent.Event {
	if len(o.events) == 0 {
		return agent.Event{}
	}
	return o.events[len(o.events)-1]
}

func runTurn(t *testing.T, ctx context.Context, a *adapter, s *agent.Session, n int) turnOutput {
	t.Helper()
	var out turnOutput
	out.res, out.err = a.RunTurn(ctx, s, agent.TurnParams{
		Prompt: "do the thing", TurnNumber: n,
		OnEvent: func(e agent.Event) { out.events = append(out.events, e) },
	})
	return out
}

func readFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatalf("reading %s: %v", name, err)
	}
	return string(b)
}

func TestRunTurn_OutcomesMapToSpecErrorKinds(t *testing.T) {
	base := map[string]any{
		"events_per_turn": 2,
		"tool_calls":      []any{map[string]any{"name": "Bash", "duration_ms": 1}},
	}
	const (
		ss  = agent.EventSessionStarted
		no  = agent.EventNotification
		tr  = agent.EventToolResult
		tu  = agent.EventTokenUsage
		tc  = agent.EventTurnCompleted
		tf  = agent.EventTurnFailed
		tir = agent.EventTurnInputRequired
	)
	tests := []struct {
		name       string
		opts       map[string]any
		wantKind   agent.ErrorKind
		wantReason agent.EventType
		wantEvents []agent.EventType
		wantInErr  string
	}{
		{"success", map[string]any{"script": []any{"success"}}, "", tc, []agent.EventType{ss, no, no, tr, tu, tc}, ""},
		{"failure", map[string]any{"script": []any{"failure"}}, agent.ErrTurnFailed, tf, []agent.EventType{ss, no, no, tr, tu, tf}, "failed as scripted"},
		{"input_required", map[string]any{"script": []any{"input_required"}}, agent.ErrTurnInputRequired, tir, []agent.EventType{ss, no, no, tr, tu, tir}, "human input"},
		{"crash", map[string]any{"script": []any{"crash"}}, agent.ErrPortExit, tf, []agent.EventType{ss, no, no, tr, tf}, "exit status 1; stderr: mock agent: crashing"},
		{"crash with 127", map[string]any{"script": []any{"crash"}, "crash_exit_code": 127}, agent.ErrNotFound, tf, []agent.EventType{ss, no, no, tr, tf}, "exit status 127"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := map[string]any{}
			for k, v := range base {
				opts[k] = v
			}
			for k, v := range tt.opts {
				opts[k] = v
			}
			a := newAdapter(t, "", opts)
			s := startSession(t, a, t.TempDir())

			out := runTurn(t, t.Context(), a, s, 1)

			if got := agent.KindOf(out.err); got != tt.wantKind || (tt.wantKind != "" && out.err == nil) {
				t.Errorf("error kind: want %q, got %q (err %v)", tt.wantKind, got, out.err)
			}
			if tt.wantInErr != "" && (out.err == nil || !strings.Contains(out.err.Error(), tt.wantInErr)) {
				t.Errorf("error: want it to mention %q, got %v", tt.wantInErr, out.err)
			}
			if out.res.ExitReason != tt.wantReason {
				t.Errorf("ExitReason: want %s, got %s", tt.wantReason, out.res.ExitReason)
			}
			if !slices.Equal(out.types(), tt.wantEvents) {
				t.Errorf("events: want %v, got %v", tt.wantEvents, out.types())
			}
			if out.res.PID <= 0 || out.last().PID != out.res.PID || out.last().SessionID != s.ID {
				t.Errorf("want every event to carry the turn's pid and session id; result pid %d, last event %+v", out.res.PID, out.last())
			}
			if s.PID != 0 {
				t.Errorf("Session.PID: want 0 after the turn, got %d", s.PID)
			}
		})
	}
}

func TestRunTurn_UsageIsCumulativeAcrossTurns(t *testing.T) {
	a := newAdapter(t, "", map[string]any{
		"input_tokens_per_turn": 1200, "output_tokens_per_turn": 300, "cache_read_tokens_per_turn": 50,
		"model": "mock-large", "api_duration_ms": 7,
	})
	s := startSession(t, a, t.TempDir())

	var usages []agent.Usage
	var last turnOutput
	for n := 1; n <= 3; n++ {
		last = runTurn(t, t.Context(), a, s, n)
		if last.err != nil {
			t.Fatalf("turn %d: %v", n, last.err)
		}
		for _, e := range last.events {
			if e.Type == agent.EventTokenUsage {
				usages = append(usages, e.Usage)
				if e.Model != "mock-large" || e.APIDurationMS != 7 {
					t.Errorf("token_usage: want model mock-large and api 7ms, got %q %dms", e.Model, e.APIDurationMS)
				}
			}
		}
	}

	want := []agent.Usage{
		{Input: 1200, Output: 300, Total: 1500, CacheRead: 50},
		{Input: 2400, Output: 600, Total: 3000, CacheRead: 100},
		{Input: 3600, Output: 900, Total: 4500, CacheRead: 150},
	}
	if !slices.Equal(usages, want) {
		t.Errorf("token_usage events: want running totals %v, got %v", want, usages)
	}
	if last.res.Usage != want[2] || last.last().Usage != want[2] {
		t.Errorf("TurnResult and turn_completed usage: want %v, got %v and %v", want[2], last.res.Usage, last.last().Usage)
	}
}

func TestScript_CounterSpansSessionsOfOneWorkspace(t *testing.T) {
	a := newAdapter(t, "", map[string]any{"script": []any{"failure", "success"}})
	ws := t.TempDir()

	first := startSession(t, a, ws)
	got1 := runTurn(t, t.Context(), a, first, 1)
	a.StopSession(t.Context(), first)
	// A retry is a new session on the same workspace.
	second := startSession(t, a, ws)
	got2 := runTurn(t, t.Context(), a, second, 1)
	got3 := runTurn(t, t.Context(), a, second, 2)

	if agent.KindOf(got1.err) != agent.ErrTurnFailed {
		t.Errorf("first turn: want turn_failed, got %v", got1.err)
	}
	if got2.err != nil || got3.err != nil {
		t.Errorf("later turns: want success, then success again (the last entry repeats); got %v, %v", got2.err, got3.err)
	}
	if c := readFile(t, filepath.Join(ws, counterFile)); c != "3\n" {
		t.Errorf("%s: want 3 turns recorded, got %q", counterFile, c)
	}
}

func TestScript_IssueOverrideComesFromChildEnv(t *testing.T) {
	a := newAdapter(t, "", map[string]any{
		"script": []any{"success"},
		"issues": map[string]any{
			"DEMO-3": map[string]any{"script": []any{"failure", "success"}},
			"DEMO-4": map[string]any{"status": "blocked"},
		},
	})
	tests := []struct {
		issue      string
		wantKind   agent.ErrorKind
		wantStatus string // "" means no status file
	}{
		{"DEMO-3", agent.ErrTurnFailed, ""},
		{"DEMO-4", "", "blocked\n"},
		{"DEMO-9", "", ""},
		{"", "", ""},
	}
	for _, tt := range tests {
		t.Run("issue="+tt.issue, func(t *testing.T) {
			ws := t.TempDir()
			var env []string
			if tt.issue != "" {
				env = append(env, IssueEnv+"="+tt.issue)
			}
			s := startSession(t, a, ws, env...)

			out := runTurn(t, t.Context(), a, s, 1)

			if got := agent.KindOf(out.err); got != tt.wantKind {
				t.Errorf("error kind: want %q, got %q (%v)", tt.wantKind, got, out.err)
			}
			status, err := os.ReadFile(filepath.Join(ws, statusFile))
			if tt.wantStatus == "" && !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s: want none, got %q (%v)", statusFile, status, err)
			}
			if tt.wantStatus != "" && string(status) != tt.wantStatus {
				t.Errorf("%s: want %q, got %q (%v)", statusFile, tt.wantStatus, status, err)
			}
		})
	}
}

func TestRunTurn_WritesFilesAndStatus(t *testing.T) {
	a := newAdapter(t, "", map[string]any{
		"files":  map[string]any{"notes/plan.md": "plan", "README.md": "hello\n"},
		"status": "needs-human-review",
	})
	ws := t.TempDir()
	s := startSession(t, a, ws)

	if out := runTurn(t, t.Context(), a, s, 1); out.err != nil {
		t.Fatalf("RunTurn: %v", out.err)
	}

	for name, want := range map[string]string{
		"notes/plan.md": "plan", "README.md": "hello\n", ".sortie/status": "needs-human-review\n",
	} {
		if got := readFile(t, filepath.Join(ws, name)); got != want {
			t.Errorf("%s: want %q, got %q", name, want, got)
		}
	}
}

func TestRunTurn_FilesCannotEscapeThroughSymlink(t *testing.T) {
	outside := t.TempDir()
	ws := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(ws, "notes")); err != nil {
		t.Fatal(err)
	}
	a := newAdapter(t, "", map[string]any{"files": map[string]any{"notes/plan.md": "plan"}})
	s := startSession(t, a, ws)

	out := runTurn(t, t.Context(), a, s, 1)

	if agent.KindOf(out.err) != agent.ErrPortExit || !strings.Contains(out.err.Error(), "notes/plan.md") {
		t.Errorf("want port_exit naming the refused path, got %v", out.err)
	}
	if _, err := os.Stat(filepath.Join(outside, "plan.md")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("want nothing written outside the workspace, stat says %v", err)
	}
}

func TestRunTurn_HangThenCancelStopsWholeGroup(t *testing.T) {
	a := newAdapter(t, "", map[string]any{"script": []any{"hang"}, "helper_processes": 2})
	s := startSession(t, a, t.TempDir())
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()

	var members []int
	var pgid int
	out := turnOutput{}
	out.res, out.err = a.RunTurn(ctx, s, agent.TurnParams{TurnNumber: 1, OnEvent: func(e agent.Event) {
		out.events = append(out.events, e)
		if e.Type == agent.EventSessionStarted {
			// Helpers are started before session_started, and a hung child never
			// exits by itself, so the group is complete and stable here.
			pgid = e.PID
			members = proctest.GroupMembers(t, pgid)
			cancel() // what stall detection does
		}
	}})

	if agent.KindOf(out.err) != agent.ErrTurnCancelled || out.res.ExitReason != agent.EventTurnCancelled {
		t.Errorf("want turn_cancelled, got %s (%v)", out.res.ExitReason, out.err)
	}
	if want := []agent.EventType{agent.EventSessionStarted, agent.EventTurnCancelled}; !slices.Equal(out.types(), want) {
		t.Errorf("events: want %v, got %v", want, out.types())
	}
	if len(members) != 3 {
		t.Fatalf("want the child and 2 helpers in group %d, got %v", pgid, members)
	}
	for _, pid := range members {
		proctest.WaitExited(t, pid, 10*time.Second)
	}
	proctest.RequireGroupGone(t, pgid)
}

func TestRunTurn_HelpersLeftBehindAreKilled(t *testing.T) {
	a := newAdapter(t, "", map[string]any{"helper_processes": 1})
	s := startSession(t, a, t.TempDir())

	out := runTurn(t, t.Context(), a, s, 1)

	if out.err != nil {
		t.Fatalf("RunTurn: %v", out.err)
	}
	var helper int
	for _, e := range out.events {
		fmt.Sscanf(e.Message, "mock: started helper process %d", &helper)
	}
	if helper == 0 {
		t.Fatalf("want a notification naming the helper's pid, got %v", out.events)
	}
	proctest.WaitExited(t, helper, 10*time.Second)
	proctest.RequireGroupGone(t, out.res.PID)
}

func TestStopSession_StopsRunningTurnAndLaterTurns(t *testing.T) {
	a := newAdapter(t, "", map[string]any{"script": []any{"hang"}})
	s := startSession(t, a, t.TempDir())
	stopped := make(chan error, 1)

	out := turnOutput{}
	out.res, out.err = a.RunTurn(t.Context(), s, agent.TurnParams{OnEvent: func(e agent.Event) {
		if e.Type == agent.EventSessionStarted {
			go func() { stopped <- a.StopSession(context.Background(), s) }()
		}
	}})
	if err := <-stopped; err != nil {
		t.Errorf("StopSession: %v", err)
	}
	again := runTurn(t, t.Context(), a, s, 2)

	if agent.KindOf(out.err) != agent.ErrTurnCancelled {
		t.Errorf("running turn: want turn_cancelled, got %v", out.err)
	}
	if agent.KindOf(again.err) != agent.ErrTurnCancelled || again.last().Type != agent.EventTurnCancelled {
		t.Errorf("turn after StopSession: want turn_cancelled without a process, got %v %v", again.err, again.types())
	}
}

func TestRunTurn_CancelledContextStartsNothing(t *testing.T) {
	a := newAdapter(t, "", nil)
	s := startSession(t, a, t.TempDir())
	ctx, cancel := context.WithCancel(t.Context())
	cancel()

	out := runTurn(t, ctx, a, s, 1)

	if agent.KindOf(out.err) != agent.ErrTurnCancelled || out.res.PID != 0 {
		t.Errorf("want turn_cancelled with no process, got %v (pid %d)", out.err, out.res.PID)
	}
}

func TestRunTurn_MalformedLinesAreEventsNotFailures(t *testing.T) {
	a := newAdapter(t, "", map[string]any{"malformed_lines": 2, "events_per_turn": 0})
	s := startSession(t, a, t.TempDir())

	out := runTurn(t, t.Context(), a, s, 1)

	want := []agent.EventType{agent.EventSessionStarted, agent.EventMalformed, agent.EventMalformed, agent.EventTokenUsage, agent.EventTurnCompleted}
	if out.err != nil || !slices.Equal(out.types(), want) {
		t.Errorf("want %v and no error, got %v (%v)", want, out.types(), out.err)
	}
	if m := out.events[1].Message; m != "mock: malformed line 1, not JSON" {
		t.Errorf("malformed event: want the line as its message, got %q", m)
	}
}

var uuidV4 = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

func TestStartSession_SessionID(t *testing.T) {
	a := newAdapter(t, "", nil)
	ws := t.TempDir()

	fresh := startSession(t, a, ws)
	out := runTurn(t, t.Context(), a, fresh, 1)
	resumed, err := a.StartSession(t.Context(), agent.StartParams{Workspace: ws, ResumeSessionID: "prior-session"})
	if err != nil {
		t.Fatal(err)
	}
	defer a.StopSession(t.Context(), resumed)
	out2 := runTurn(t, t.Context(), a, resumed, 1)

	if !uuidV4.MatchString(fresh.ID) {
		t.Errorf("new session id: want a UUID v4, got %q", fresh.ID)
	}
	if out.events[0].SessionID != fresh.ID || out.res.SessionID != fresh.ID {
		t.Errorf("session_started and result: want id %s, got %s and %s", fresh.ID, out.events[0].SessionID, out.res.SessionID)
	}
	if resumed.ID != "prior-session" || out2.res.SessionID != "prior-session" {
		t.Errorf("resumed session: want id prior-session, got %s / %s", resumed.ID, out2.res.SessionID)
	}
}

func TestStartSession_RejectsBadWorkspace(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	a := newAdapter(t, "", nil)
	for _, ws := range []string{"", "relative/ws", filepath.Join(dir, "missing"), file} {
		_, err := a.StartSession(t.Context(), agent.StartParams{Workspace: ws})
		if agent.KindOf(err) != agent.ErrInvalidWorkspace {
			t.Errorf("StartSession(%q): want invalid_workspace_cwd, got %v", ws, err)
		}
	}
}

func TestCommand_RunsConfiguredProgram(t *testing.T) {
	script := filepath.Join(t.TempDir(), "agent.sh")
	body := `test -f "$1" || exit 9
echo '{"type":"session_started","session_id":"from-script"}'
echo '{"type":"whatever","message":"x"}'
echo '{"type":"result","outcome":"success"}'
`
	if err := os.WriteFile(script, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	a := newAdapter(t, "sh "+script, nil)
	s := startSession(t, a, t.TempDir())

	out := runTurn(t, t.Context(), a, s, 1)

	want := []agent.EventType{agent.EventSessionStarted, agent.EventOtherMessage, agent.EventTurnCompleted}
	if out.err != nil || !slices.Equal(out.types(), want) {
		t.Fatalf("want %v and no error, got %v (%v)", want, out.types(), out.err)
	}
	if s.ID != "from-script" || out.res.SessionID != "from-script" {
		t.Errorf("session id: want the child's from-script, got %s / %s", s.ID, out.res.SessionID)
	}
}

func TestCommand_MissingProgramIsAgentNotFound(t *testing.T) {
	a := newAdapter(t, "/nonexistent/sortie-agent --flag", nil)
	_, err := a.StartSession(t.Context(), agent.StartParams{Workspace: t.TempDir()})
	if agent.KindOf(err) != agent.ErrNotFound {
		t.Errorf("want agent_not_found, got %v", err)
	}
}

func TestRunTurn_OverlongLineIsPortExit(t *testing.T) {
	script := filepath.Join(t.TempDir(), "agent.sh")
	if err := os.WriteFile(script, []byte(`head -c 11000000 /dev/zero | tr '\0' a; echo`), 0o644); err != nil {
		t.Fatal(err)
	}
	a := newAdapter(t, "sh "+script, nil)
	s := startSession(t, a, t.TempDir())

	out := runTurn(t, t.Context(), a, s, 1)

	if agent.KindOf(out.err) != agent.ErrPortExit || !strings.Contains(out.err.Error(), "line longer than") {
		t.Errorf("want port_exit for an over-long line, got %v", out.err)
	}
	if out.res.ExitReason != agent.EventTurnFailed {
		t.Errorf("ExitReason: want turn_failed, got %s", out.res.ExitReason)
	}
}

func TestRunTurn_CleanExitWithoutResultIsTurnFailed(t *testing.T) {
	a := newAdapter(t, "true", nil)
	s := startSession(t, a, t.TempDir())

	out := runTurn(t, t.Context(), a, s, 1)

	if agent.KindOf(out.err) != agent.ErrTurnFailed {
		t.Errorf("want turn_failed, got %v", out.err)
	}
}
