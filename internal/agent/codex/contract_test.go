package codex

// Contract tests: the real codex CLI, at the version pinned in scripts/clis, driven
// through the adapter against the fake Responses API in internal/testkit/fakemodel, on
// 127.0.0.1 only.

import (
	"context"
	"errors"
	"flag"
	"os"
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

// groupGone reports whether no process is left in the process group pgid.
func groupGone(pgid int) bool {
	return errors.Is(syscall.Kill(-pgid, 0), syscall.ESRCH)
}

func TestContract_TwoTurnsInOneThread(t *testing.T) {
	r := newRig(t, nil,
		fakemodel.ResponsesReply{Text: "Noted: PAPAYA.", Usage: fakemodel.Usage{InputTokens: 120, OutputTokens: 11}},
		fakemodel.ResponsesReply{Text: "The word was PAPAYA.", Usage: fakemodel.Usage{InputTokens: 150, OutputTokens: 9, CacheReadInputTokens: 100}},
	)
	s := r.start(t, agent.StartParams{})
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
	r.capture(t, "two_turns.jsonl")
}
