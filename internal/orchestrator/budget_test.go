package orchestrator

import (
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"sortie/internal/agent"
	"sortie/internal/config"
	"sortie/internal/store"
)

// TestBudget_MaxSessionsStopsDispatchUntilRaised runs an issue whose sessions end
// cleanly (so it continues) up to agent.max_sessions, with a poll landing while the
// first run is in progress (the store then already counts that run), then raises the
// limit.
func TestBudget_MaxSessionsStopsDispatchUntilRaised(t *testing.T) {
	cfg := testConfig(t, func(c *config.Config) { c.Agent.MaxSessions = 2 })
	h := newHarness(t, cfg, harnessOptions{pollOnly: true})
	h.trk.Put(issue("SESS-1", "Todo"))
	release := make(chan struct{})
	var turns atomic.Int32
	h.agent.afterTurn = func(string, int) {
		if turns.Add(1) == 1 {
			<-release // hold the first run open until the poll has happened
		}
	}
	h.start()
	h.awaitEvent("SESS-1", agent.EventSessionStarted)
	h.refresh()
	h.awaitStep(StepTick, "")
	close(release)

	// Run 1 ends cleanly: a continuation, which must dispatch (1 of 2 sessions used).
	o := h.awaitStep(StepExit, "SESS-1")
	if kind, _, _ := retryDelay(t, o.Snapshot, "SESS-1"); kind != retryContinuation {
		t.Fatalf("after run 1: retry kind %s, want continuation", kind)
	}
	h.advance(time.Second)
	o = h.awaitStep(StepRetryFetched, "SESS-1")
	if !isRunning(o.Snapshot, "SESS-1") {
		t.Fatalf("continuation after 1 of 2 sessions: %s, want SESS-1 running", describe(o.Snapshot))
	}

	// Run 2 ends cleanly too; its continuation finds the budget used up.
	h.awaitStep(StepExit, "SESS-1")
	h.advance(time.Second)
	o = h.awaitStep(StepRetryFetched, "SESS-1")
	if !settled(o.Snapshot, "SESS-1") {
		t.Fatalf("continuation after 2 of 2 sessions: %s, want SESS-1 released", describe(o.Snapshot))
	}
	for range 2 {
		h.advance(cfg.Polling.Interval)
		o = h.awaitStep(StepTick, "")
		if isRunning(o.Snapshot, "SESS-1") {
			t.Fatalf("poll after the budget was used: SESS-1 dispatched, want it left alone")
		}
	}
	runs := h.runs("SESS-1")
	if len(runs) != 2 || runs[1].SessionID != runs[0].SessionID {
		t.Fatalf("runs = %d (sessions %q), want 2, the second resuming the first", len(runs), sessionsOf(runs))
	}

	// Raising the limit releases it at the next poll.
	h.mutateConfig(func(c *config.Config) { c.Agent.MaxSessions = 3 })
	h.advance(cfg.Polling.Interval)
	h.awaitStep(StepExit, "SESS-1")
	if got := len(h.runs("SESS-1")); got != 3 {
		t.Fatalf("runs after raising agent.max_sessions to 3 = %d, want 3", got)
	}
}

func sessionsOf(runs []store.Run) []string {
	var out []string
	for _, r := range runs {
		out = append(out, r.SessionID)
	}
	return out
}

// TestBudget_MaxTokensStopsTheRunAtTheTurnThatCrossesIt: each mock turn reports 150
// tokens; with agent.max_tokens 200 the second of five turns crosses it.
func TestBudget_MaxTokensStopsTheRunAtTheTurnThatCrossesIt(t *testing.T) {
	cfg := testConfig(t, func(c *config.Config) {
		c.Agent.MaxTokens = 200
		c.Agent.MaxTurns = 5
		c.Extensions = map[string]any{"mock": map[string]any{"input_tokens_per_turn": 100, "output_tokens_per_turn": 50}}
	})
	h := newHarness(t, cfg, harnessOptions{pollOnly: true})
	h.trk.Put(issue("TOK-1", "Todo"))
	h.start()
	o := h.awaitStep(StepExit, "TOK-1")
	if !settled(o.Snapshot, "TOK-1") {
		t.Fatalf("after the budget run: %s, want TOK-1 released", describe(o.Snapshot))
	}
	if _, held := heldOf(o.Snapshot, "TOK-1"); held {
		t.Fatalf("TOK-1 held, want released (the budget, not a human, stops it)")
	}
	runs := h.runs("TOK-1")
	if len(runs) != 1 {
		t.Fatalf("runs = %d, want 1", len(runs))
	}
	if r := runs[0]; r.Status != store.StatusBudgetExhausted || r.Turns != 2 || r.Tokens.Total != 300 {
		t.Fatalf("run = %s after %d turns with %d tokens, want budget_exhausted after 2 turns with 300", r.Status, r.Turns, r.Tokens.Total)
	}

	for range 2 {
		h.advance(cfg.Polling.Interval)
		o = h.awaitStep(StepTick, "")
		if isRunning(o.Snapshot, "TOK-1") {
			t.Fatalf("poll after the budget was spent: TOK-1 dispatched, want it left alone")
		}
	}
	h.mutateConfig(func(c *config.Config) { c.Agent.MaxTokens = 10_000 })
	h.advance(cfg.Polling.Interval)
	h.awaitStep(StepExit, "TOK-1")
	if got := h.statuses("TOK-1"); !slices.Equal(got, []store.RunStatus{store.StatusBudgetExhausted, store.StatusSucceeded}) {
		t.Fatalf("runs after raising agent.max_tokens = %v, want [budget_exhausted succeeded]", got)
	}
}
