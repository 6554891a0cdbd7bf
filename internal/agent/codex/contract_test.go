package codex

// Contract tests of what only codex does: the real codex CLI, at the version pinned in
// scripts/clis, driven through the adapter against the fake Responses API in
// internal/testkit/fakemodel, on 127.0.0.1 only. What every adapter does is the agenttest
// suite's (agenttest_test.go).

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"sortie/internal/agent"
	"sortie/internal/agent/agenttest"
	"sortie/internal/agent/proc/proctest"
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

// start starts a session, in the rig's workspace and environment unless p names others.
func (r *rig) start(t *testing.T, p agent.StartParams) *agent.Session {
	t.Helper()
	if p.Workspace == "" {
		p.Workspace = r.ws
	}
	if p.Env == nil {
		p.Env = r.env
	}
	return agenttest.StartSession(t, r.adapter, p)
}

func (r *rig) turn(t *testing.T, ctx context.Context, s *agent.Session, n int, prompt string) agenttest.Outcome {
	t.Helper()
	o := agenttest.RunTurn(ctx, r.adapter, s, n, prompt)
	agenttest.CheckTurn(t, n, s, o, true)
	return o
}

var mustComplete = agenttest.MustComplete

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

// One app-server serves every turn of a session, each turn starting with
// session_started for the thread.
func TestContract_TwoTurnsInOneThread(t *testing.T) {
	r := newRig(t, nil,
		fakemodel.ResponsesReply{Text: "Noted: PAPAYA.", Usage: fakemodel.Usage{InputTokens: 120, OutputTokens: 11}},
		fakemodel.ResponsesReply{Text: "The word was PAPAYA.", Usage: fakemodel.Usage{InputTokens: 150, OutputTokens: 9, CacheReadInputTokens: 100}},
	)
	s := r.start(t, agent.StartParams{})
	r.capture(t, "two_turns.jsonl")
	o1 := r.turn(t, context.Background(), s, 1, "Remember the word PAPAYA.")
	mustComplete(t, o1)
	o2 := r.turn(t, context.Background(), s, 2, "Which word did I ask you to remember?")
	mustComplete(t, o2)
	if o1.Result.PID == 0 || o1.Result.PID != o2.Result.PID {
		t.Errorf("turn pids %d, %d: want one app-server kept alive across turns", o1.Result.PID, o2.Result.PID)
	}
	for _, o := range []agenttest.Outcome{o1, o2} {
		if st := o.Of(agent.EventSessionStarted); len(st) != 1 || st[0].SessionID != s.ID {
			t.Errorf("session_started = %+v, want one with the thread id %s", st, s.ID)
		}
	}
	if reqs := r.model.Responses(); reqs[0].Model != clis.CodexModel {
		t.Errorf("model requested = %q, want %q", reqs[0].Model, clis.CodexModel)
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

// TestContract_Capture re-captures with -update the transcripts of conversations the
// agenttest suite holds every adapter to (a shell command, a call of sortie-tools),
// which events_test.go replays.
func TestContract_Capture(t *testing.T) {
	if !*update {
		t.Skip("re-captures testdata/ with -update only")
	}
	for _, c := range []struct {
		file, prompt string
		mcp          bool
		script       []fakemodel.ResponsesReply
	}{
		{"shell_tool.jsonl", "Create out.txt.", false, []fakemodel.ResponsesReply{
			{Text: "Writing the file.", FunctionCalls: []fakemodel.FunctionCall{{Name: "exec_command", Arguments: map[string]any{"cmd": "printf sortie > out.txt"}}},
				Usage: fakemodel.Usage{InputTokens: 100, OutputTokens: 20, CacheReadInputTokens: 7}},
			{Text: "Done.", Usage: fakemodel.Usage{InputTokens: 200, OutputTokens: 30, CacheReadInputTokens: 3}}}},
		{"mcp_tool.jsonl", "Ping the server.", true, []fakemodel.ResponsesReply{
			{FunctionCalls: []fakemodel.FunctionCall{{Namespace: "mcp__sortie_tools", Name: "ping", Arguments: map[string]any{"text": "hello"}}}},
			{Text: "The server said pong."}}},
	} {
		t.Run(c.file, func(t *testing.T) {
			r := newRig(t, nil, c.script...)
			var p agent.StartParams
			if c.mcp {
				p.MCPConfigPath = mcpConfig(t)
			}
			s := r.start(t, p)
			r.capture(t, c.file)
			mustComplete(t, r.turn(t, context.Background(), s, 1, c.prompt))
		})
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
	if ap := o.Of(agent.EventApprovalAutoApproved); len(ap) == 0 || !strings.Contains(ap[0].Message, "printf yes") {
		t.Fatalf("approval_auto_approved = %+v, want the command's approval; events: %s", ap, describe(o.Events))
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
	if agent.KindOf(o.Err) != agent.ErrTurnInputRequired || o.Result.ExitReason != agent.EventTurnInputRequired {
		t.Fatalf("turn = %s, %v; want turn_input_required; events: %s", o.Result.ExitReason, o.Err, describe(o.Events))
	}
	if !strings.Contains(o.Err.Error(), "Which branch?") {
		t.Errorf("error %q does not carry the question", o.Err)
	}
	// Codex was answered and the turn interrupted: the app-server is still usable.
	o2 := r.turn(t, context.Background(), s, 2, "Carry on with main.")
	mustComplete(t, o2)
	if o2.Result.PID != o.Result.PID {
		t.Errorf("pid %d → %d: the app-server was restarted after the input request", o.Result.PID, o2.Result.PID)
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
	if agent.KindOf(o.Err) != agent.ErrTurnInputRequired || o.Result.ExitReason != agent.EventTurnInputRequired {
		t.Fatalf("turn = %s, %v; want turn_input_required; events: %s", o.Result.ExitReason, o.Err, describe(o.Events))
	}
	if !strings.Contains(o.Err.Error(), "Which branch?") {
		t.Errorf("error %q does not carry the server's question", o.Err)
	}
}

func TestContract_CancelMidTurnLeavesNoProcess(t *testing.T) {
	r := newRig(t, nil, fakemodel.ResponsesReply{Stall: true}, fakemodel.ResponsesReply{Text: "Back again."})
	s := r.start(t, agent.StartParams{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan agenttest.Outcome, 1)
	go func() { done <- agenttest.RunTurn(ctx, r.adapter, s, 1, "Think for a long time.") }()
	r.model.WaitStall(t, time.Minute)
	cancel()
	o := <-done
	agenttest.CheckTurn(t, 1, s, o, true)
	if agent.KindOf(o.Err) != agent.ErrTurnCancelled || o.Result.ExitReason != agent.EventTurnCancelled {
		t.Fatalf("turn = %s, %v; want turn_cancelled; events: %s", o.Result.ExitReason, o.Err, describe(o.Events))
	}
	proctest.RequireGroupGone(t, o.Result.PID)
	// The session goes on: the next turn starts another app-server and resumes the thread.
	thread := s.ID
	o2 := r.turn(t, context.Background(), s, 2, "Are you there?")
	mustComplete(t, o2)
	if s.ID != thread || o2.Result.PID == o.Result.PID {
		t.Errorf("after the cancel: thread %s → %s, pid %d → %d; want the same thread in a new app-server", thread, s.ID, o.Result.PID, o2.Result.PID)
	}
	if st := o2.Of(agent.EventSessionStarted); len(st) != 1 || !strings.Contains(st[0].Message, "resuming thread "+thread) {
		t.Errorf("session_started = %+v, want the thread resumed", st)
	}
	r.adapter.StopSession(context.Background(), s)
	proctest.RequireGroupGone(t, o2.Result.PID)
	after := r.turn(t, context.Background(), s, 3, "again")
	if agent.KindOf(after.Err) != agent.ErrTurnCancelled {
		t.Errorf("turn after StopSession = %v, want turn_cancelled", after.Err)
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
			if agent.KindOf(o.Err) != agent.ErrTurnFailed || o.Result.ExitReason != agent.EventTurnFailed {
				t.Fatalf("turn = %s, %v; want turn_failed; events: %s", o.Result.ExitReason, o.Err, describe(o.Events))
			}
			if !strings.Contains(o.Err.Error(), c.want) {
				t.Errorf("error %q does not say %q", o.Err, c.want)
			}
		})
	}
}

// Symphony's codex.command runs through bash -lc: a missing CLI is the shell's 127,
// which fails the turn's start with agent_not_found.
func TestContract_MissingBinaryThroughTheShell(t *testing.T) {
	a, err := New(agent.Config{Kind: Kind, Options: map[string]any{"command": "no-such-codex-cli app-server"}, WorkflowDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	s := agenttest.StartSession(t, a, agent.StartParams{Workspace: t.TempDir(), Env: clis.CodexEnv(os.Environ(), t.TempDir())})
	o := agenttest.RunTurn(context.Background(), a, s, 1, "hi")
	if agent.KindOf(o.Err) != agent.ErrNotFound || o.Result.ExitReason != agent.EventStartupFailed {
		t.Fatalf("RunTurn = %s, %v; want startup_failed with agent_not_found", o.Result.ExitReason, o.Err)
	}
}

func TestContract_VersionIsThePinnedCLI(t *testing.T) {
	r := newRig(t, nil)
	v, err := r.adapter.Version(context.Background())
	if err != nil || !strings.Contains(v, "0.169.0") {
		t.Fatalf("Version = %q, %v; want codex-cli 0.169.0", v, err)
	}
}

// StopSession ends the session's app-server; a new session resumes its thread in
// another.
func TestContract_ResumeByIDInANewSession(t *testing.T) {
	r := newRig(t, nil, fakemodel.ResponsesReply{Text: "Noted: PAPAYA."}, fakemodel.ResponsesReply{Text: "Still PAPAYA."})
	s := r.start(t, agent.StartParams{})
	o1 := r.turn(t, context.Background(), s, 1, "Remember the word PAPAYA.")
	mustComplete(t, o1)
	r.adapter.StopSession(context.Background(), s)
	proctest.RequireGroupGone(t, o1.Result.PID)
	again := r.start(t, agent.StartParams{ResumeSessionID: s.ID})
	r.capture(t, "resume.jsonl")
	mustComplete(t, r.turn(t, context.Background(), again, 1, "And now?"))
	if again.ID != s.ID {
		t.Errorf("resumed session id %q, want %q", again.ID, s.ID)
	}
}

func TestContract_SilenceFailsWithTurnTimeout(t *testing.T) {
	r := newRig(t, map[string]any{"turn_timeout_ms": 1500}, fakemodel.ResponsesReply{Stall: true})
	s := r.start(t, agent.StartParams{})
	o := r.turn(t, context.Background(), s, 1, "Think for a long time.")
	if agent.KindOf(o.Err) != agent.ErrTurnTimeout || o.Result.ExitReason != agent.EventTurnFailed {
		t.Fatalf("turn = %s, %v; want turn_failed with turn_timeout; events: %s", o.Result.ExitReason, o.Err, describe(o.Events))
	}
	proctest.RequireGroupGone(t, o.Result.PID)
}
