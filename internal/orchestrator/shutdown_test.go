package orchestrator

import (
	"context"
	"slices"
	"testing"
	"time"

	"sortie/internal/agent"
	"sortie/internal/config"
	"sortie/internal/store"
	"sortie/internal/tracker"
)

// TestShutdown_StopsAgentsRecordsRunsAndQueuesResumes cancels Run while three agents
// hang mid-turn.
func TestShutdown_StopsAgentsRecordsRunsAndQueuesResumes(t *testing.T) {
	cfg := testConfig(t, func(c *config.Config) { c.Extensions = map[string]any{"mock": hangingAgent} })
	h := newHarness(t, cfg, harnessOptions{pollOnly: true})
	ids := []string{"DOWN-1", "DOWN-2", "DOWN-3"}
	for _, id := range ids {
		h.trk.Put(issue(id, "Todo"))
	}
	h.start()
	sessions := map[string]string{}
	for _, id := range ids {
		sessions[id] = h.awaitEvent(id, agent.EventSessionStarted).ev.SessionID
	}

	if err := h.stop(); err != nil {
		t.Fatalf("Run returned %v, want nil after a shutdown", err)
	}
	retries, err := h.st.LoadRetries(context.Background())
	if err != nil {
		t.Fatalf("LoadRetries: %v", err)
	}
	for _, id := range ids {
		runs := h.runs(id)
		if len(runs) != 1 || runs[0].Status != store.StatusInterrupted || runs[0].EndedAt.IsZero() {
			t.Fatalf("%s runs = %+v, want one finished as interrupted", id, runs)
		}
		i := slices.IndexFunc(retries, func(r store.Retry) bool { return r.IssueID == id })
		if i < 0 {
			t.Fatalf("%s: persisted retries %+v, want a resume retry for it", id, retries)
		}
		if r := retries[i]; r.Kind != store.RetryResume || r.SessionID != sessions[id] || r.Attempt != 1 {
			t.Fatalf("%s: persisted retry = %s attempt %d session %q, want resume attempt 1 session %q",
				id, r.Kind, r.Attempt, r.SessionID, sessions[id])
		}
	}
	for _, id := range ids {
		requireNoProcessLeft(t, h, id)
	}
}

// TestExitWhenIdle_ReturnsOnceNothingIsRunningRetryingOrEligible: held and blocked
// issues do not keep the daemon alive; a pending retry does.
func TestExitWhenIdle_ReturnsOnceNothingIsRunningRetryingOrEligible(t *testing.T) {
	cfg := testConfig(t, func(c *config.Config) {
		c.Tracker.HandoffState = "Human Review"
		c.Agent.StallTimeout = 0
		c.Extensions = map[string]any{"mock": map[string]any{"issues": map[string]any{
			"FLAKY": map[string]any{"script": []any{"failure", "success"}},
			"HELD":  map[string]any{"status": "blocked"},
		}}}
	})
	h := newHarness(t, cfg, harnessOptions{pollOnly: true, exitWhenIdle: true})
	h.trk.Put(issue("OK", "Todo"), issue("FLAKY", "Todo"), issue("HELD", "Todo"), issue("UPSTREAM", "Backlog"),
		tracker.Issue{ID: "BLOCKED", Identifier: "BLOCKED", Title: "t", State: "Todo",
			BlockedBy: []tracker.BlockerRef{{ID: "UPSTREAM", Identifier: "UPSTREAM"}}})
	h.start()
	o := h.awaitExits("OK", "FLAKY", "HELD")
	if _, ok := retryOf(o.Snapshot, "FLAKY"); !ok {
		t.Fatalf("after the first runs: %s, want FLAKY waiting for its retry", describe(o.Snapshot))
	}
	// With a retry pending the loop is still there to answer.
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if _, err := h.orch.Snapshot(ctx); err != nil {
		t.Fatalf("Snapshot while a retry is pending: %v, want the loop still running", err)
	}
	select {
	case <-h.exited:
		t.Fatal("Run returned while a retry was pending, want it to wait")
	default:
	}

	h.advance(10 * time.Second)
	if err := h.wait(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	want := map[string][]store.RunStatus{
		"OK":      {store.StatusHandedOff},
		"FLAKY":   {store.StatusFailed, store.StatusHandedOff},
		"HELD":    {store.StatusBlocked},
		"BLOCKED": nil,
	}
	for id, w := range want {
		if got := h.statuses(id); !slices.Equal(got, w) {
			t.Errorf("%s runs = %v, want %v", id, got, w)
		}
	}
	if _, ok := heldOf(h.obs.latest().Snapshot, "HELD"); !ok {
		t.Errorf("HELD at exit: %s, want held", describe(h.obs.latest().Snapshot))
	}
}
