package codex

// Contract tests: the real codex CLI, at the version pinned in scripts/clis, driven
// through the adapter against the fake Responses API in internal/testkit/fakemodel, on
// 127.0.0.1 only.

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"sortie/internal/agent"
	"sortie/internal/testkit/clis"
	"sortie/internal/testkit/fakemodel"
)

var update = flag.Bool("update", false, "re-capture testdata/*.jsonl from the real CLI")

// rig is one contract test's world: a fake model, a HOME (the adapter's CODEX_HOME lands
// below it), a workspace, and the adapter running the real CLI.
type rig struct {
	model   *fakemodel.ResponsesServer
	home    string
	ws      string
	env     []string
	adapter *adapter

	mu    sync.Mutex
	lines [][]byte // what the app-server wrote, for transcripts
}

func newRig(t *testing.T, opts map[string]any, script ...fakemodel.ResponsesReply) *rig {
	t.Helper()
	codex := clis.Codex(t)
	r := &rig{model: fakemodel.StartResponses(t, script...), home: t.TempDir(), ws: t.TempDir()}
	r.env = clis.CodexEnv(os.Environ(), r.home)
	if opts == nil {
		opts = map[string]any{}
	}
	defaults := map[string]any{
		"model":           clis.CodexModel,
		"model_provider":  "fakemodel",
		"model_providers": map[string]any{"fakemodel": clis.CodexProvider(r.model.URL)},
	}
	for k, v := range defaults {
		if _, ok := opts[k]; !ok {
			opts[k] = v
		}
	}
	a, err := New(agent.Config{Kind: Kind, Command: codex, Options: opts, WorkflowDir: t.TempDir(), Env: r.env})
	if err != nil {
		t.Fatal(err)
	}
	r.adapter = a.(*adapter)
	r.adapter.record = func(l []byte) {
		r.mu.Lock()
		r.lines = append(r.lines, l)
		r.mu.Unlock()
	}
	return r
}

func (r *rig) start(t *testing.T, p agent.StartParams) *agent.Session {
	t.Helper()
	if p.Workspace == "" {
		p.Workspace = r.ws
	}
	if p.Env == nil {
		p.Env = r.env
	}
	s, err := r.adapter.StartSession(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.adapter.StopSession(context.Background(), s) })
	return s
}

// turnOutcome is what one RunTurn produced.
type turnOutcome struct {
	events []agent.Event
	res    agent.TurnResult
	err    error
}

func (o turnOutcome) of(typ agent.EventType) []agent.Event { return ofType(o.events, typ) }

func (r *rig) turn(t *testing.T, ctx context.Context, s *agent.Session, n int, prompt string) turnOutcome {
	t.Helper()
	var out turnOutcome
	out.res, out.err = r.adapter.RunTurn(ctx, s, agent.TurnParams{Prompt: prompt, TurnNumber: n, OnEvent: func(e agent.Event) {
		out.events = append(out.events, e)
	}})
	return out
}

func mustComplete(t *testing.T, o turnOutcome) {
	t.Helper()
	if o.err != nil || o.res.ExitReason != agent.EventTurnCompleted {
		t.Fatalf("turn = %s, %v; events: %v", o.res.ExitReason, o.err, describe(o.events))
	}
	if last := o.events[len(o.events)-1]; last.Type != agent.EventTurnCompleted {
		t.Fatalf("last event = %s, want turn_completed", last.Type)
	}
}

func describe(events []agent.Event) string {
	var b strings.Builder
	for _, e := range events {
		b.WriteString("\n  " + string(e.Type))
		if e.Message != "" {
			b.WriteString(": " + agent.Truncate(e.Message, 300))
		}
	}
	return b.String()
}

// groupGone reports whether no live process is left in the process group pgid. Killed
// processes may stay zombies until their new parent reaps them, which kill(-pgid, 0)
// would still count: /proc tells their state.
func groupGone(pgid int) bool {
	if errors.Is(syscall.Kill(-pgid, 0), syscall.ESRCH) {
		return true
	}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// After the command's closing parenthesis: state ppid pgrp ...
		f := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
		if len(f) > 2 && f[2] == strconv.Itoa(pgid) && f[0] != "Z" {
			return false
		}
	}
	return true
}

func TestContract_TwoTurnsInOneThread(t *testing.T) {
	r := newRig(t, nil,
		fakemodel.ResponsesReply{Text: "Noted: PAPAYA.", Usage: fakemodel.Usage{InputTokens: 120, OutputTokens: 11}},
		fakemodel.ResponsesReply{Text: "The word was PAPAYA.", Usage: fakemodel.Usage{InputTokens: 150, OutputTokens: 9, CacheReadInputTokens: 100}},
	)
	s := r.start(t, agent.StartParams{})
	r.capture(t, "two_turns.jsonl")
	ctx := context.Background()
	o1 := r.turn(t, ctx, s, 1, "Remember the word PAPAYA.")
	mustComplete(t, o1)
	thread := s.ID
	if thread == "" {
		t.Fatal("no thread id after the first turn")
	}
	o2 := r.turn(t, ctx, s, 2, "Which word did I ask you to remember?")
	mustComplete(t, o2)
	if s.ID != thread {
		t.Errorf("thread changed from %s to %s", thread, s.ID)
	}
	if o1.res.PID == 0 || o1.res.PID != o2.res.PID {
		t.Errorf("turn pids %d, %d: want one app-server kept alive across turns", o1.res.PID, o2.res.PID)
	}
	reqs := r.model.Responses()
	if len(reqs) != 2 {
		t.Fatalf("model requests = %d, want 2", len(reqs))
	}
	tr := reqs[1].Transcript()
	for _, want := range []string{"Remember the word PAPAYA.", "Noted: PAPAYA.", "Which word did I ask you to remember?"} {
		if !strings.Contains(tr, want) {
			t.Errorf("turn 2 request lacks %q; transcript:\n%s", want, tr)
		}
	}
	if reqs[0].Model != clis.CodexModel {
		t.Errorf("model requested = %q, want %q", reqs[0].Model, clis.CodexModel)
	}
	// Absolute totals, each update counted once: 120+150 in, 11+9 out, 100 cached.
	want := agent.Usage{Input: 270, Output: 20, Total: 290, CacheRead: 100}
	if o2.res.Usage != want {
		t.Errorf("usage after turn 2 = %+v, want %+v", o2.res.Usage, want)
	}
	if u := o1.of(agent.EventTokenUsage); len(u) != 1 || u[0].Usage != (agent.Usage{Input: 120, Output: 11, Total: 131}) {
		t.Errorf("turn 1 token_usage = %+v, want one update of 120/11", u)
	}
	for _, o := range []turnOutcome{o1, o2} {
		if st := o.of(agent.EventSessionStarted); len(st) != 1 || st[0].SessionID != thread {
			t.Errorf("session_started = %+v, want one with the thread id", st)
		}
	}
}

// mcpConfig writes a claude-style MCP configuration, as the daemon's .sortie/mcp.json,
// naming the test binary as the sortie-tools server.
func mcpConfig(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"sortie-tools": map[string]any{
		"command": self, "args": []string{}, "env": map[string]string{mcpServerEnv: "1"},
	}}})
	p := filepath.Join(t.TempDir(), "mcp.json")
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestContract_ShellToolCallInTheWorkspace(t *testing.T) {
	r := newRig(t, nil,
		fakemodel.ResponsesReply{Text: "Writing the file.", FunctionCalls: []fakemodel.FunctionCall{{Name: "exec_command",
			Arguments: map[string]any{"cmd": "printf sortie > out.txt"}}},
			Usage: fakemodel.Usage{InputTokens: 100, OutputTokens: 20, CacheReadInputTokens: 7}},
		fakemodel.ResponsesReply{Text: "Done.", Usage: fakemodel.Usage{InputTokens: 200, OutputTokens: 30, CacheReadInputTokens: 3}},
	)
	s := r.start(t, agent.StartParams{})
	r.capture(t, "shell_tool.jsonl")
	o := r.turn(t, context.Background(), s, 1, "Create out.txt.")
	mustComplete(t, o)
	data, err := os.ReadFile(filepath.Join(r.ws, "out.txt"))
	if err != nil || string(data) != "sortie" {
		t.Fatalf("out.txt = %q, %v; codex did not run the command in the workspace; events: %s", data, err, describe(o.events))
	}
	tools := o.of(agent.EventToolResult)
	if len(tools) != 1 || tools[0].ToolName != "exec_command" || tools[0].ToolError || !strings.Contains(tools[0].Message, "printf sortie") {
		t.Fatalf("tool_result events = %+v, want one successful exec_command", tools)
	}
	reqs := r.model.Responses()
	if len(reqs) != 2 {
		t.Fatalf("model requests = %d, want 2", len(reqs))
	}
	if out, ok := reqs[1].LastFunctionOutput(); !ok || out.CallID == "" {
		t.Errorf("function output sent back = %+v, %v", out, ok)
	}
	// Two model responses, each with its own figures; the thread's totals are their sums.
	want := agent.Usage{Input: 300, Output: 50, Total: 350, CacheRead: 10}
	if o.res.Usage != want {
		t.Errorf("turn usage = %+v, want %+v", o.res.Usage, want)
	}
	if u := o.of(agent.EventTokenUsage); len(u) != 2 || u[1].Usage != want || u[0].Model != clis.CodexModel {
		t.Errorf("token_usage = %+v, want two updates ending at %+v", u, want)
	}
	for _, e := range o.events {
		if e.PID != o.res.PID || e.PID == 0 {
			t.Fatalf("event %s has pid %d, turn pid %d", e.Type, e.PID, o.res.PID)
		}
	}
}

func TestContract_MCPToolCallToSortieTools(t *testing.T) {
	r := newRig(t, nil,
		fakemodel.ResponsesReply{FunctionCalls: []fakemodel.FunctionCall{{Namespace: "mcp__sortie_tools", Name: "ping",
			Arguments: map[string]any{"text": "hello"}}}},
		fakemodel.ResponsesReply{Text: "The server said pong."},
	)
	s := r.start(t, agent.StartParams{MCPConfigPath: mcpConfig(t)})
	r.capture(t, "mcp_tool.jsonl")
	o := r.turn(t, context.Background(), s, 1, "Ping the server.")
	mustComplete(t, o)
	tools := o.of(agent.EventToolResult)
	if len(tools) != 1 || tools[0].ToolName != "mcp__sortie-tools__ping" || tools[0].ToolError {
		t.Fatalf("tool_result events = %+v, want one successful mcp__sortie-tools__ping; events: %s", tools, describe(o.events))
	}
	reqs := r.model.Responses()
	if len(reqs) != 2 {
		t.Fatalf("model requests = %d, want 2", len(reqs))
	}
	if out, ok := reqs[1].LastFunctionOutput(); !ok || !strings.Contains(out.Text, "pong: hello") {
		t.Errorf("function output sent back = %+v, want the server's pong", out)
	}
}

func TestContract_ApprovalRequestIsAutoApproved(t *testing.T) {
	r := newRig(t, map[string]any{"approval_policy": "untrusted"},
		fakemodel.ResponsesReply{FunctionCalls: []fakemodel.FunctionCall{{Name: "exec_command",
			Arguments: map[string]any{"cmd": "printf yes > approved.txt"}}}},
		fakemodel.ResponsesReply{Text: "Approved and done."},
	)
	s := r.start(t, agent.StartParams{})
	r.capture(t, "approval.jsonl")
	o := r.turn(t, context.Background(), s, 1, "Write approved.txt.")
	mustComplete(t, o)
	if ap := o.of(agent.EventApprovalAutoApproved); len(ap) == 0 || !strings.Contains(ap[0].Message, "printf yes") {
		t.Fatalf("approval_auto_approved = %+v, want the command's approval; events: %s", ap, describe(o.events))
	}
	if data, err := os.ReadFile(filepath.Join(r.ws, "approved.txt")); err != nil || string(data) != "yes" {
		t.Errorf("approved.txt = %q, %v: the approved command did not run", data, err)
	}
}

func TestContract_UserInputRequestFailsTheTurn(t *testing.T) {
	// Codex 0.169.0 offers request_user_input outside Plan mode only behind a feature,
	// which a workflow could turn on through codex.config.
	r := newRig(t, map[string]any{"config": map[string]any{"features": map[string]any{"default_mode_request_user_input": true}}},
		fakemodel.ResponsesReply{FunctionCalls: []fakemodel.FunctionCall{{Name: "request_user_input",
			Arguments: map[string]any{"questions": []any{map[string]any{"id": "branch", "header": "Branch", "question": "Which branch?",
				"options": []any{map[string]any{"label": "main", "description": "the default"}, map[string]any{"label": "dev", "description": "the other"}}}}}}}},
		fakemodel.ResponsesReply{Text: "I will wait."},
	)
	s := r.start(t, agent.StartParams{})
	r.capture(t, "user_input.jsonl")
	o := r.turn(t, context.Background(), s, 1, "Ask me which branch.")
	if agent.KindOf(o.err) != agent.ErrTurnInputRequired || o.res.ExitReason != agent.EventTurnInputRequired {
		t.Fatalf("turn = %s, %v; want turn_input_required; events: %s", o.res.ExitReason, o.err, describe(o.events))
	}
	if !strings.Contains(o.err.Error(), "Which branch?") {
		t.Errorf("error %q does not carry the question", o.err)
	}
	// Codex was answered and the turn interrupted: the app-server is still usable.
	o2 := r.turn(t, context.Background(), s, 2, "Carry on with main.")
	mustComplete(t, o2)
	if o2.res.PID != o.res.PID {
		t.Errorf("pid %d → %d: the app-server was restarted after the input request", o.res.PID, o2.res.PID)
	}
}

func TestContract_MCPElicitationFailsTheTurn(t *testing.T) {
	// Under "never", codex declines elicitations itself; a policy that lets them through
	// reaches the adapter's.
	r := newRig(t, map[string]any{"approval_policy": "on-request"},
		fakemodel.ResponsesReply{FunctionCalls: []fakemodel.FunctionCall{{Namespace: "mcp__sortie_tools", Name: "ask",
			Arguments: map[string]any{"text": "deploy"}}}},
		fakemodel.ResponsesReply{Text: "No answer."},
	)
	s := r.start(t, agent.StartParams{MCPConfigPath: mcpConfig(t)})
	r.capture(t, "elicitation.jsonl")
	o := r.turn(t, context.Background(), s, 1, "Ask the server.")
	if agent.KindOf(o.err) != agent.ErrTurnInputRequired || o.res.ExitReason != agent.EventTurnInputRequired {
		t.Fatalf("turn = %s, %v; want turn_input_required; events: %s", o.res.ExitReason, o.err, describe(o.events))
	}
	if !strings.Contains(o.err.Error(), "Which branch?") {
		t.Errorf("error %q does not carry the server's question", o.err)
	}
}

func TestContract_CancelMidTurnLeavesNoProcess(t *testing.T) {
	r := newRig(t, nil, fakemodel.ResponsesReply{Stall: true}, fakemodel.ResponsesReply{Text: "Back again."})
	s := r.start(t, agent.StartParams{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan turnOutcome, 1)
	go func() { done <- r.turn(t, ctx, s, 1, "Think for a long time.") }()
	r.model.WaitStall(t, 60e9)
	cancel()
	o := <-done
	if agent.KindOf(o.err) != agent.ErrTurnCancelled || o.res.ExitReason != agent.EventTurnCancelled {
		t.Fatalf("turn = %s, %v; want turn_cancelled; events: %s", o.res.ExitReason, o.err, describe(o.events))
	}
	if o.res.PID == 0 || !groupGone(o.res.PID) {
		t.Fatalf("process group %d still has processes after the cancelled turn", o.res.PID)
	}
	// The session goes on: the next turn starts another app-server and resumes the thread.
	thread := s.ID
	o2 := r.turn(t, context.Background(), s, 2, "Are you there?")
	mustComplete(t, o2)
	if s.ID != thread || o2.res.PID == o.res.PID {
		t.Errorf("after the cancel: thread %s → %s, pid %d → %d; want the same thread in a new app-server", thread, s.ID, o.res.PID, o2.res.PID)
	}
	if st := o2.of(agent.EventSessionStarted); len(st) != 1 || !strings.Contains(st[0].Message, "resuming thread "+thread) {
		t.Errorf("session_started = %+v, want the thread resumed", st)
	}
	r.adapter.StopSession(context.Background(), s)
	if !groupGone(o2.res.PID) {
		t.Errorf("process group %d still has processes after StopSession", o2.res.PID)
	}
	after := r.turn(t, context.Background(), s, 3, "again")
	if agent.KindOf(after.err) != agent.ErrTurnCancelled {
		t.Errorf("turn after StopSession = %v, want turn_cancelled", after.err)
	}
}

func TestContract_ModelErrorFailsTheTurn(t *testing.T) {
	cases := []struct {
		name  string
		reply fakemodel.ResponsesReply
		want  string // in the error
	}{
		// Codex replaces a 5xx's message with its own and classifies it.
		{"500", fakemodel.ResponsesReply{Status: 500, ErrorMessage: "upstream exploded", Times: 4}, "internalServerError"},
		{"400", fakemodel.ResponsesReply{Status: 400, ErrorMessage: "bad tool schema", Times: 4}, "bad tool schema"},
		{"failed response", fakemodel.ResponsesReply{Failed: true, ErrorMessage: "the model gave up", Times: 4}, "the model gave up"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, nil, c.reply)
			s := r.start(t, agent.StartParams{})
			if c.name == "500" {
				r.capture(t, "model_error_500.jsonl")
			}
			o := r.turn(t, context.Background(), s, 1, "hello")
			if agent.KindOf(o.err) != agent.ErrTurnFailed || o.res.ExitReason != agent.EventTurnFailed {
				t.Fatalf("turn = %s, %v; want turn_failed; events: %s", o.res.ExitReason, o.err, describe(o.events))
			}
			if !strings.Contains(o.err.Error(), c.want) {
				t.Errorf("error %q does not say %q", o.err, c.want)
			}
		})
	}
}

func TestContract_MissingBinary(t *testing.T) {
	a, err := New(agent.Config{Kind: Kind, Command: filepath.Join(t.TempDir(), "no-such-codex")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.StartSession(context.Background(), agent.StartParams{Workspace: t.TempDir()}); agent.KindOf(err) != agent.ErrNotFound {
		t.Fatalf("StartSession = %v, want agent_not_found", err)
	}
	if _, err := a.(agent.Versioner).Version(context.Background()); agent.KindOf(err) != agent.ErrNotFound {
		t.Fatalf("Version = %v, want agent_not_found", err)
	}
	// Symphony's codex.command runs through bash -lc: a missing CLI is the shell's 127.
	home := t.TempDir()
	a, err = New(agent.Config{Kind: Kind, Options: map[string]any{"command": "no-such-codex-cli app-server"}, WorkflowDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	s, err := a.StartSession(context.Background(), agent.StartParams{Workspace: t.TempDir(), Env: clis.CodexEnv(os.Environ(), home)})
	if err != nil {
		t.Fatal(err)
	}
	defer a.StopSession(context.Background(), s)
	res, err := a.RunTurn(context.Background(), s, agent.TurnParams{Prompt: "hi", TurnNumber: 1})
	if agent.KindOf(err) != agent.ErrNotFound || res.ExitReason != agent.EventStartupFailed {
		t.Fatalf("RunTurn = %s, %v; want startup_failed with agent_not_found", res.ExitReason, err)
	}
}

func TestContract_VersionIsThePinnedCLI(t *testing.T) {
	r := newRig(t, nil)
	v, err := r.adapter.Version(context.Background())
	if err != nil || !strings.Contains(v, "0.169.0") {
		t.Fatalf("Version = %q, %v; want codex-cli 0.169.0", v, err)
	}
}

func TestContract_ResumeByIDInANewSession(t *testing.T) {
	r := newRig(t, nil,
		fakemodel.ResponsesReply{Text: "Noted: PAPAYA.", Usage: fakemodel.Usage{InputTokens: 100, OutputTokens: 10}},
		fakemodel.ResponsesReply{Text: "Still PAPAYA.", Usage: fakemodel.Usage{InputTokens: 200, OutputTokens: 20}},
	)
	s := r.start(t, agent.StartParams{})
	o1 := r.turn(t, context.Background(), s, 1, "Remember the word PAPAYA.")
	mustComplete(t, o1)
	r.adapter.StopSession(context.Background(), s)
	if !groupGone(o1.res.PID) {
		t.Fatalf("process group %d still has processes after StopSession", o1.res.PID)
	}
	again := r.start(t, agent.StartParams{ResumeSessionID: s.ID})
	r.capture(t, "resume.jsonl")
	o2 := r.turn(t, context.Background(), again, 1, "And now?")
	mustComplete(t, o2)
	if again.ID != s.ID {
		t.Errorf("resumed session id %q, want %q", again.ID, s.ID)
	}
	// Codex restates the thread's totals from the earlier session on resume; only the
	// new turn's figures count for the new session.
	if want := (agent.Usage{Input: 200, Output: 20, Total: 220}); o2.res.Usage != want {
		t.Errorf("resumed session's usage = %+v, want %+v", o2.res.Usage, want)
	}
	reqs := r.model.Responses()
	if tr := reqs[len(reqs)-1].Transcript(); !strings.Contains(tr, "Noted: PAPAYA.") {
		t.Errorf("the resumed turn's request lacks the first turn; transcript:\n%s", tr)
	}
}

func TestContract_SilenceFailsWithTurnTimeout(t *testing.T) {
	r := newRig(t, map[string]any{"turn_timeout_ms": 1500}, fakemodel.ResponsesReply{Stall: true})
	s := r.start(t, agent.StartParams{})
	o := r.turn(t, context.Background(), s, 1, "Think for a long time.")
	if agent.KindOf(o.err) != agent.ErrTurnTimeout || o.res.ExitReason != agent.EventTurnFailed {
		t.Fatalf("turn = %s, %v; want turn_failed with turn_timeout; events: %s", o.res.ExitReason, o.err, describe(o.events))
	}
	if !groupGone(o.res.PID) {
		t.Errorf("process group %d still has processes after the timed-out turn", o.res.PID)
	}
}
