package checkpoint

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"sortie/internal/clock"
	"sortie/internal/config"
	"sortie/internal/store"
	"sortie/internal/workflow/engine"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// memStore is a Store in memory. answer, when set, replaces AnswerCheckpoint's write.
type memStore struct {
	mu      sync.Mutex
	rows    map[int64]store.Checkpoint
	answers int // AnswerCheckpoint calls
	answer  func(ctx context.Context, a store.CheckpointAnswer) (store.Checkpoint, error)
}

func (m *memStore) PendingCheckpoints(context.Context) ([]store.Checkpoint, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []store.Checkpoint
	for _, r := range m.rows {
		out = append(out, r)
	}
	return out, nil
}

func (m *memStore) AnswerCheckpoint(ctx context.Context, a store.CheckpointAnswer) (store.Checkpoint, error) {
	m.mu.Lock()
	m.answers++
	write := m.answer
	m.mu.Unlock()
	if write != nil {
		return write(ctx, a)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for id, r := range m.rows {
		if r.SessionID == a.SessionID && r.CheckpointID == a.CheckpointID {
			if r.Answered() {
				return store.Checkpoint{}, store.ErrConflict
			}
			r.Answer, r.AnsweredBy, r.AnswerSource, r.AnsweredAt = a.Option, a.By, a.Source, a.At
			m.rows[id] = r
			return r, nil
		}
	}
	return store.Checkpoint{}, store.ErrNotFound
}

func (m *memStore) LoadWorkflowSessions(context.Context) ([]store.WorkflowSession, error) {
	return nil, nil
}

func (m *memStore) EndIssueWorkflows(context.Context, string, time.Time) ([]string, error) {
	return nil, nil
}

func (m *memStore) calls() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.answers
}

// newDesk returns a Desk on st with a fake clock, and the hooks it gave its (absent)
// engine.
func newDesk(t *testing.T, st *memStore) (*Desk, *clock.Fake, engine.Hooks) {
	t.Helper()
	clk := clock.NewFake(t0)
	var hooks engine.Hooks
	d, err := New(Options{Store: st, Config: func() *config.Config { return &config.Config{} }, Clock: clk,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))},
		func(h engine.Hooks) (Engine, error) { hooks = h; return nil, nil })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	return d, clk, hooks
}

// arm stores cp as armed and tells the desk, as the engine does.
func arm(st *memStore, hooks engine.Hooks, cp store.Checkpoint) {
	st.mu.Lock()
	if st.rows == nil {
		st.rows = map[int64]store.Checkpoint{}
	}
	cp.ID = int64(len(st.rows) + 1)
	st.rows[cp.ID] = cp
	st.mu.Unlock()
	hooks.Armed(engine.Caller{IssueID: cp.IssueID, Identifier: cp.Identifier}, []store.Checkpoint{cp})
}

func checkpointOf(issue string) store.Checkpoint {
	return store.Checkpoint{SessionID: "sid-" + issue, IssueID: issue, Identifier: issue, Workflow: "w", Activity: "plan",
		CheckpointID: "approve-plan", Name: "Plan", Message: "Approve?",
		Options: []store.CheckpointOption{{ID: "approve", Label: "Approve"}, {ID: "revise", Label: "Revise"}}, Blocking: true, IssuedAt: t0}
}

func nonBlocking(issue string) store.Checkpoint {
	cp := checkpointOf(issue)
	cp.Blocking, cp.DefaultOption, cp.AutoAdvanceMS = false, "approve", 60_000
	return cp
}

// TestDesk_CloseStopsAPendingAutoAdvance: after Close, a non-blocking checkpoint's
// timer is gone, and its due time passing answers nothing and wakes no loop; nor does
// a checkpoint armed after Close get a timer.
func TestDesk_CloseStopsAPendingAutoAdvance(t *testing.T) {
	st := &memStore{}
	d, clk, hooks := newDesk(t, st)
	arm(st, hooks, nonBlocking("CP-1"))
	if n := clk.Pending(); n != 1 {
		t.Fatalf("timers after arming a non-blocking checkpoint = %d, want 1", n)
	}
	d.Close()
	if n := clk.Pending(); n != 0 {
		t.Fatalf("timers after Close = %d, want none", n)
	}
	arm(st, hooks, nonBlocking("CP-2"))
	if err := d.Recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := clk.Pending(); n != 0 {
		t.Fatalf("timers armed after Close = %d, want none", n)
	}
	clk.Advance(time.Hour)
	if n := st.calls(); n != 0 {
		t.Fatalf("answers written after Close = %d, want none", n)
	}
	select {
	case <-d.Answered():
		t.Fatal("the loop was woken after Close")
	default:
	}
	if _, ok := d.NextAnswered(); ok {
		t.Fatal("an issue was announced answered after Close")
	}
}

// TestDesk_CloseWaitsForAnAutoAdvanceUnderWay: Close cancels the bounded context of
// an auto-advance whose timer already fired and returns only once its write is over.
func TestDesk_CloseWaitsForAnAutoAdvanceUnderWay(t *testing.T) {
	entered, returned := make(chan struct{}), make(chan struct{})
	var hadDeadline bool
	st := &memStore{answer: func(ctx context.Context, _ store.CheckpointAnswer) (store.Checkpoint, error) {
		_, hadDeadline = ctx.Deadline()
		close(entered)
		<-ctx.Done() // a write stuck until cancelled
		close(returned)
		return store.Checkpoint{}, ctx.Err()
	}}
	d, clk, hooks := newDesk(t, st)
	arm(st, hooks, nonBlocking("CP-1"))
	fired := make(chan struct{})
	go func() {
		defer close(fired)
		clk.Advance(time.Minute) // runs the timer's function on this goroutine
	}()
	<-entered
	d.Close()
	select {
	case <-returned:
	default:
		t.Fatal("Close returned while the auto-advance's write was under way")
	}
	<-fired
	if !hadDeadline {
		t.Error("the auto-advance's write had no deadline")
	}
}

// TestDesk_AnswersNeverWaitForTheLoop: with no loop taking them, answers return at
// once, start no goroutine, and none is lost: each issue is announced once, in order.
func TestDesk_AnswersNeverWaitForTheLoop(t *testing.T) {
	st := &memStore{}
	d, _, hooks := newDesk(t, st)
	const n = 200 // more than any buffer
	var want []string
	for i := range n {
		issue := fmt.Sprintf("CP-%03d", i)
		want = append(want, issue)
		arm(st, hooks, checkpointOf(issue))
	}
	// On this goroutine: an answer that blocked would hang the test (go test -timeout).
	before := runtime.NumGoroutine()
	ctx := context.Background()
	for _, issue := range want {
		if _, err := d.AnswerCheckpoint(ctx, issue, "approve-plan", "approve", "alice", store.AnswerAPI); err != nil {
			t.Fatalf("answering %s: %v", issue, err)
		}
	}
	// A second answer of an issue is refused and announces nothing more.
	if _, err := d.AnswerCheckpoint(ctx, want[0], "approve-plan", "revise", "bob", store.AnswerAPI); err == nil {
		t.Fatal("a second answer was taken")
	}
	if after := runtime.NumGoroutine(); after != before {
		t.Errorf("goroutines: %d before the answers, %d after; want as many", before, after)
	}

	var got []string
	for {
		select {
		case <-d.Answered():
		default:
			if len(got) != n {
				t.Fatalf("no wake-up with %d of %d answered issues taken", len(got), n)
			}
		}
		id, ok := d.NextAnswered()
		if !ok {
			break
		}
		got = append(got, id)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("answered issues taken = %d %q..., want the %d issues once each, in order", len(got), got[:min(3, len(got))], n)
	}
}

// TestHandoffRefusal_NoEngineNoGate: without an engine nothing is refused.
func TestHandoffRefusal_NoEngineNoGate(t *testing.T) {
	d, _, _ := newDesk(t, &memStore{})
	if why := d.HandoffRefusal(context.Background(), "1", "PROJ-1", 1, "work-package", "", "test"); why != "" {
		t.Fatalf("HandoffRefusal without an engine = %q, want none", why)
	}
}

// TestDesk_NilAnswersCheckpointsOff: a nil Desk is the server's answerer when
// structured workflows are off.
func TestDesk_NilAnswersCheckpointsOff(t *testing.T) {
	var d *Desk
	if _, err := d.AnswerCheckpoint(context.Background(), "PROJ-1", "a", "b", "c", store.AnswerAPI); err != ErrCheckpointsOff {
		t.Fatalf("a nil Desk's answer: %v, want ErrCheckpointsOff", err)
	}
	if got := d.RefusedAnswers("1"); got != nil {
		t.Fatalf("a nil Desk's refused answers = %v", got)
	}
}
