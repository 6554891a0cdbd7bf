package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"go.uber.org/goleak"

	"sortie/internal/agent"
	"sortie/internal/config"
	"sortie/internal/store"
)

// TestRunAndShutdown_LeaveNoGoroutine starts an orchestrator with agents mid-turn and
// a poll in flight, and stops it, a hundred times over: once Run has returned and the
// store is closed, no goroutine is left of it (the loop's fetches, the tracker watch,
// workers and their event readers, timers, background cleanups: each has an owner
// that stops it and waits for it). goleak gives goroutines that are returning a moment
// to finish; one blocked for good is reported with its stack.
func TestRunAndShutdown_LeaveNoGoroutine(t *testing.T) {
	before := goleak.IgnoreCurrent()
	for i := range 100 {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			cfg := testConfig(t, func(c *config.Config) { c.Extensions = map[string]any{"mock": hangingAgent} })
			h := newHarness(t, cfg, harnessOptions{})
			h.trk.Put(issue("LEAK-1", "Todo"))
			h.trk.Put(issue("LEAK-2", "Todo"))
			h.start()
			h.awaitEvent("LEAK-1", agent.EventSessionStarted)
			h.awaitEvent("LEAK-2", agent.EventSessionStarted)
			h.refresh()
			if err := h.stop(); err != nil {
				t.Fatalf("Run returned %v, want nil after a shutdown", err)
			}
		})
		if t.Failed() {
			return
		}
		if err := goleak.Find(before); err != nil {
			t.Fatalf("daemon %d left goroutines behind: %v", i, err)
		}
	}
}

// blockingHolds is a store whose LoadHolds, which recovery calls, waits until release
// is closed: a daemon still recovering.
type blockingHolds struct {
	Store
	release chan struct{}
}

func (b blockingHolds) LoadHolds(ctx context.Context) ([]store.Hold, error) {
	<-b.release
	return b.Store.LoadHolds(ctx)
}

// TestSnapshot_WaitsForTheRecoveredState: a snapshot asked for while Run is still
// recovering (the API is served while the daemon starts) waits for the recovered
// state, a recovered hold included, rather than failing or answering an empty one; one
// whose context ends first fails.
func TestSnapshot_WaitsForTheRecoveredState(t *testing.T) {
	cfg := testConfig(t, nil)
	release := make(chan struct{})
	h := newHarness(t, cfg, harnessOptions{pollOnly: true,
		wrapStore: func(s Store) Store { return blockingHolds{Store: s, release: release} }})
	// The held issue is in the tracker as it was held: a poll applied before the
	// snapshot is read (a loaded machine) keeps the hold rather than lifting it for an
	// issue gone.
	held := issue("HELD-1", "Todo")
	held.UpdatedAt = "2026-03-01T11:00:00Z"
	h.trk.Put(held)
	if err := h.st.SaveHold(t.Context(), store.Hold{IssueID: "HELD-1", Identifier: "HELD-1", Reason: holdBlocked,
		State: "Todo", IssueUpdatedAt: held.UpdatedAt, Since: t0}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := h.orch.Snapshot(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Snapshot before Run with its context ended = %v, want context.Canceled", err)
	}
	h.start() // Run blocks in recovery until release
	go close(release)
	s, err := h.orch.Snapshot(t.Context())
	if err != nil {
		t.Fatalf("Snapshot asked while recovering = %v, want the recovered state", err)
	}
	if _, ok := heldOf(s, "HELD-1"); !ok {
		t.Fatalf("Snapshot asked while recovering = %s, want the recovered hold", describe(s))
	}
	// The poll, whenever it was applied, kept the hold: the issue is as it was held.
	o := h.awaitStep(StepTick, "")
	if _, ok := heldOf(o.Snapshot, "HELD-1"); !ok {
		t.Fatalf("after the first poll: %s, want HELD-1 still held", describe(o.Snapshot))
	}
}
