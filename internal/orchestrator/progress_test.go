package orchestrator

import (
	"context"
	"sync"
	"testing"

	"sortie/internal/agent"
	"sortie/internal/config"
	"sortie/internal/store"
)

// processWrites counts the store writes that record a run's agent process.
type processWrites struct {
	Store
	mu                 sync.Mutex
	process, progress  int // UpdateRunProcess, RecordProgress
	processAndProgress int // RecordProcessAndProgress
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

// TestRun_FirstEventRecordsProcessAndSessionInOneWrite: while the agent's first turn
// is still going, the run's row already names its process (what recovery stops) and
// its session (what a restart resumes), written together by one transaction.
func TestRun_FirstEventRecordsProcessAndSessionInOneWrite(t *testing.T) {
	cfg := testConfig(t, func(c *config.Config) {
		c.Extensions = map[string]any{"mock": map[string]any{"events_per_turn": 1,
			"issues": map[string]any{"A-1": map[string]any{"script": []any{"hang"}}}}}
	})
	writes := &processWrites{}
	h := newHarness(t, cfg, harnessOptions{pollOnly: true, wrapStore: func(s Store) Store {
		writes.Store = s
		return writes
	}})
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
