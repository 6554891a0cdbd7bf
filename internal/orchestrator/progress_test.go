package orchestrator

import (
	"context"
	"sync"
	"testing"

	"sortie/internal/agent"
	"sortie/internal/config"
	"sortie/internal/store"
)

// processWrites counts the store writes of a run after its start.
type processWrites struct {
	Store
	mu                 sync.Mutex
	process, progress  int // UpdateRunProcess, RecordProgress
	processAndProgress int // RecordProcessAndProgress
	finish             int // FinishRun
	finishEvents       []store.Event
}

func (s *processWrites) FinishRun(ctx context.Context, id int64, end store.RunEnd) error {
	s.mu.Lock()
	s.finish++
	s.finishEvents = append(s.finishEvents, end.Events...)
	s.mu.Unlock()
	return s.Store.FinishRun(ctx, id, end)
}

func (s *processWrites) UpdateRunProcess(ctx context.Context, id int64, p store.Process) error {
	s.mu.Lock()
	s.process++
	s.mu.Unlock()
	return s.Store.UpdateRunProcess(ctx, id, p)
}

func (s *processWrites) RecordProgress(ctx context.Context, id int64, p store.Progress, events []store.Event) error {
	s.mu.Lock()
	s.progress++
	s.mu.Unlock()
	return s.Store.RecordProgress(ctx, id, p, events)
}

func (s *processWrites) RecordProcessAndProgress(ctx context.Context, id int64, proc store.Process, p store.Progress, events []store.Event) error {
	s.mu.Lock()
	s.processAndProgress++
	s.mu.Unlock()
	return s.Store.RecordProcessAndProgress(ctx, id, proc, p, events)
}

// newCountingHarness is a poll-only harness whose store writes after a run's start are
// counted.
func newCountingHarness(t *testing.T, cfg *config.Config) (*harness, *processWrites) {
	writes := &processWrites{}
	h := newHarness(t, cfg, harnessOptions{pollOnly: true, wrapStore: func(s Store) Store {
		writes.Store = s
		return writes
	}})
	return h, writes
}

// TestRun_FirstEventRecordsProcessAndSessionInOneWrite: while the agent's first turn
// is still going, the run's row already names its process (what recovery stops) and
// its session (what a restart resumes), written together by one transaction.
func TestRun_FirstEventRecordsProcessAndSessionInOneWrite(t *testing.T) {
	cfg := testConfig(t, func(c *config.Config) {
		c.Extensions = map[string]any{"mock": map[string]any{"events_per_turn": 1,
			"issues": map[string]any{"A-1": map[string]any{"script": []any{"hang"}}}}}
	})
	h, writes := newCountingHarness(t, cfg)
	h.trk.Put(issue("A-1", "Todo"))
	h.start()
	ev := h.awaitEvent("A-1", agent.EventSessionStarted) // A-1 hangs in its turn
	runs := h.runs("A-1")
	if len(runs) != 1 || runs[0].Status != store.StatusRunning {
		t.Fatalf("runs of A-1 = %+v, want one running", runs)
	}
	if r := runs[0]; r.PID == 0 || r.PGID != r.PID || r.SessionID == "" || r.SessionID != ev.ev.SessionID {
		t.Errorf("the running run records pid %d, pgid %d, session %q; want the agent's process and session %q",
			r.PID, r.PGID, r.SessionID, ev.ev.SessionID)
	}
	writes.mu.Lock()
	defer writes.mu.Unlock()
	if writes.processAndProgress != 1 || writes.process != 0 || writes.progress != 0 {
		t.Errorf("writes at the first event: %d of process and progress together, %d of the process, %d of progress; want 1, 0, 0",
			writes.processAndProgress, writes.process, writes.progress)
	}
}

// TestRun_LastTurnIsWrittenWithTheRunsEnd: a turn's end is written when another turn
// follows it; the last turn's progress and events go with the run's end, in one write.
func TestRun_LastTurnIsWrittenWithTheRunsEnd(t *testing.T) {
	cfg := testConfig(t, func(c *config.Config) {
		c.Agent.MaxTurns = 2
		c.Extensions = map[string]any{"mock": map[string]any{"events_per_turn": 2, "input_tokens_per_turn": 10}}
	})
	h, writes := newCountingHarness(t, cfg)
	h.trk.Put(issue("A-1", "Todo"))
	h.start()
	h.awaitStep(StepExit, "A-1")

	writes.mu.Lock()
	defer writes.mu.Unlock()
	// The first event's write, then the first turn's end as the second starts (the
	// injected clock stands still, so no flush falls due in between).
	if writes.processAndProgress != 1 || writes.progress != 1 || writes.finish != 1 {
		t.Errorf("writes: %d of process and progress, %d of progress, %d ends; want 1, 1, 1",
			writes.processAndProgress, writes.progress, writes.finish)
	}
	if n := countType(writes.finishEvents, string(agent.EventTurnCompleted)); n != 1 {
		t.Errorf("the run's end carried %d turn_completed events, want the last turn's one (%+v)", n, writes.finishEvents)
	}
	runs := h.runs("A-1")
	if len(runs) != 1 || runs[0].Turns != 2 || runs[0].Tokens.Input != 20 {
		t.Fatalf("runs of A-1 = %+v, want one of 2 turns and 20 input tokens", runs)
	}
	evs, err := h.st.RunEvents(context.Background(), runs[0].ID, 100)
	if err != nil {
		t.Fatal(err)
	}
	if n := countType(evs, string(agent.EventTurnCompleted)); n != 2 {
		t.Errorf("the run's log has %d turn_completed events, want both turns'", n)
	}
}

func countType(evs []store.Event, typ string) int {
	n := 0
	for _, e := range evs {
		if e.Type == typ {
			n++
		}
	}
	return n
}
