package agenttest

import (
	"context"
	"sync"
	"testing"

	"sortie/internal/agent"
)

// Outcome is what one RunTurn produced: its events in order, its result and its error.
type Outcome struct {
	Events []agent.Event
	Result agent.TurnResult
	Err    error
}

// Of is the outcome's events of type typ, in order.
func (o Outcome) Of(typ agent.EventType) []agent.Event { return OfType(o.Events, typ) }

// Types is the type of each event, in order, for messages.
func (o Outcome) Types() []agent.EventType { return Types(o.Events) }

// Last is the last event, the zero Event when there is none.
func (o Outcome) Last() agent.Event {
	if len(o.Events) == 0 {
		return agent.Event{}
	}
	return o.Events[len(o.Events)-1]
}

// StartSession starts a session of a with p and stops it when the test ends.
func StartSession(t testing.TB, a agent.Adapter, p agent.StartParams) *agent.Session {
	t.Helper()
	s, err := a.StartSession(context.Background(), p)
	if err != nil {
		t.Fatalf("StartSession: %v", err)
	}
	t.Cleanup(func() { a.StopSession(context.Background(), s) })
	return s
}

// RunTurn runs turn n of s with prompt under ctx and collects what it produced; each
// event is also passed to watch, when given, on the goroutine that sent it. It checks
// nothing, and may run on any goroutine.
func RunTurn(ctx context.Context, a agent.Adapter, s *agent.Session, n int, prompt string, watch ...func(agent.Event)) Outcome {
	var (
		mu sync.Mutex
		o  Outcome
	)
	res, err := a.RunTurn(ctx, s, agent.TurnParams{Prompt: prompt, TurnNumber: n, OnEvent: func(e agent.Event) {
		mu.Lock()
		o.Events = append(o.Events, e)
		mu.Unlock()
		for _, w := range watch {
			w(e)
		}
	}})
	mu.Lock()
	defer mu.Unlock()
	o.Result, o.Err = res, err
	return o
}

// MustComplete fails t unless the turn completed, its last event saying so.
func MustComplete(t testing.TB, o Outcome) {
	t.Helper()
	if o.Err != nil || o.Result.ExitReason != agent.EventTurnCompleted {
		t.Fatalf("turn = %s, %v; want turn_completed; events: %v", o.Result.ExitReason, o.Err, o.Types())
	}
	if last := o.Last(); last.Type != agent.EventTurnCompleted {
		t.Fatalf("last event = %s, want turn_completed", last.Type)
	}
}

// Rig runs an adapter's sessions in its package's own contract tests: sessions start
// in WS with Env unless told otherwise, and every turn is held to what the suite holds
// its own to (CheckTurn).
type Rig struct {
	Adapter agent.Adapter
	WS      string   // the workspace of a session that names none
	Env     []string // the environment of a session that names none
}

// Start starts a session with p, stopped when the test ends.
func (r *Rig) Start(t testing.TB, p agent.StartParams) *agent.Session {
	t.Helper()
	if p.Workspace == "" {
		p.Workspace = r.WS
	}
	if p.Env == nil {
		p.Env = r.Env
	}
	return StartSession(t, r.Adapter, p)
}

// Turn runs turn n of s with prompt and checks its events (CheckTurn). Call it on the
// test's goroutine.
func (r *Rig) Turn(t testing.TB, s *agent.Session, n int, prompt string) Outcome {
	t.Helper()
	o := RunTurn(context.Background(), r.Adapter, s, n, prompt)
	CheckTurn(t, n, s, o, false)
	return o
}

// OfType is the events of type typ, in order.
func OfType(events []agent.Event, typ agent.EventType) []agent.Event {
	var out []agent.Event
	for _, e := range events {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

// Types is the type of each event, in order, for messages.
func Types(events []agent.Event) []agent.EventType {
	out := make([]agent.EventType, len(events))
	for i, e := range events {
		out[i] = e.Type
	}
	return out
}
