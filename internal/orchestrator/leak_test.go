package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"go.uber.org/goleak"

	"sortie/internal/agent"
	"sortie/internal/config"
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

// TestSnapshot_WaitsForTheRecoveredState: a snapshot asked for before Run has
// recovered the state (the API is served while the daemon starts) waits for it rather
// than failing, as it did when it asked the loop; one whose context ends first fails.
func TestSnapshot_WaitsForTheRecoveredState(t *testing.T) {
	cfg := testConfig(t, nil)
	h := newHarness(t, cfg, harnessOptions{pollOnly: true})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := h.orch.Snapshot(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Snapshot before Run with its context ended = %v, want context.Canceled", err)
	}
	got := make(chan error, 1)
	go func() {
		_, err := h.orch.Snapshot(t.Context())
		got <- err
	}()
	h.start()
	if err := <-got; err != nil {
		t.Fatalf("Snapshot asked before Run = %v, want the state once recovered", err)
	}
}
