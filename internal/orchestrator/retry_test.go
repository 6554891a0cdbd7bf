package orchestrator

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"sortie/internal/agent"
	"sortie/internal/config"
	"sortie/internal/store"
	"sortie/internal/store/sqlite"
	"sortie/internal/testkit/faketracker"
	"sortie/internal/tracker"
)

var failingAgent = map[string]any{"script": []any{"failure"}, "events_per_turn": 1}

// retryDelay returns the kind, attempt and delay (due − now) of an issue's retry in s.
func retryDelay(t *testing.T, s Snapshot, id string) (kind string, attempt int, delay time.Duration) {
	t.Helper()
	r, ok := retryOf(s, id)
	if !ok {
		t.Fatalf("no retry of %s in %s", id, describe(s))
	}
	return r.Kind, r.Attempt, r.DueAt.Sub(s.GeneratedAt)
}

func TestRetry_FailureBackoffDoublesFromTenSecondsUpToTheCap(t *testing.T) {
	cfg := testConfig(t, func(c *config.Config) {
		c.Agent.MaxRetryBackoff = 70 * time.Second
		c.Agent.StallTimeout = 0
		c.Extensions = map[string]any{"mock": failingAgent}
	})
	h := newHarness(t, cfg, harnessOptions{pollOnly: true})
	h.trk.Put(issue("FAIL-1", "Todo"))
	h.start()
	want := []time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second, 70 * time.Second, 70 * time.Second}
	for i, wantDelay := range want {
		o := h.awaitStep(StepExit, "FAIL-1")
		kind, attempt, delay := retryDelay(t, o.Snapshot, "FAIL-1")
		if kind != retryFailure || attempt != i+1 || delay != wantDelay {
			t.Fatalf("after failure %d: retry %s attempt %d in %v, want failure attempt %d in %v",
				i+1, kind, attempt, delay, i+1, wantDelay)
		}
		if i == len(want)-1 {
			break
		}
		h.advance(delay)
	}
	runs := h.runs("FAIL-1")
	for i, r := range runs {
		if r.Status != store.StatusFailed || r.Attempt != i+1 {
			t.Fatalf("run %d: %s attempt %d, want failed attempt %d", i+1, r.Status, r.Attempt, i+1)
		}
	}
}

func TestRetry_ContinuationResumesTheSessionAfterOneSecond(t *testing.T) {
	cfg := testConfig(t, nil) // no handoff_state: a clean exit continues
	h := newHarness(t, cfg, harnessOptions{pollOnly: true})
	h.trk.Put(issue("CONT-1", "Todo"))
	h.start()
	first := h.awaitEvent("CONT-1", agent.EventSessionStarted)
	o := h.awaitStep(StepExit, "CONT-1")
	kind, attempt, delay := retryDelay(t, o.Snapshot, "CONT-1")
	if kind != retryContinuation || attempt != 1 || delay != time.Second {
		t.Fatalf("after a clean exit: retry %s attempt %d in %v, want continuation attempt 1 in 1s", kind, attempt, delay)
	}

	h.advance(time.Second)
	h.awaitStep(StepExit, "CONT-1")
	starts := h.agent.startsOf("CONT-1")
	if len(starts) != 2 {
		t.Fatalf("sessions started = %d, want 2", len(starts))
	}
	if starts[0].ResumeSessionID != "" || starts[1].ResumeSessionID != first.ev.SessionID {
		t.Fatalf("resumed sessions = [%q %q], want [\"\" %q]", starts[0].ResumeSessionID, starts[1].ResumeSessionID, first.ev.SessionID)
	}
	runs := h.runs("CONT-1")
	if runs[0].SessionID != first.ev.SessionID || runs[1].SessionID != first.ev.SessionID || runs[1].Attempt != 2 {
		t.Fatalf("run rows: session %q then %q (attempt %d), want %q twice, attempt 2",
			runs[0].SessionID, runs[1].SessionID, runs[1].Attempt, first.ev.SessionID)
	}
}

// TestRetry_DueRetryRevalidatesTheIssue covers what a due retry finds in the tracker.
func TestRetry_DueRetryRevalidatesTheIssue(t *testing.T) {
	cases := []struct {
		name string
		act  func(h *harness)
		// want: released, or rescheduled with this attempt and delay
		released     bool
		attempt      int
		delay        time.Duration
		wantDispatch bool
	}{
		{name: "issue deleted: released", act: func(h *harness) { h.trk.Delete("R-1") }, released: true},
		{name: "issue no longer active: released", act: func(h *harness) { h.trk.SetState("R-1", "Backlog") }, released: true},
		{name: "issue terminal: released", act: func(h *harness) { h.trk.SetState("R-1", "Done") }, released: true},
		{name: "issue now blocked: released", act: func(h *harness) {
			h.trk.Put(issue("BLK", "Backlog"))
			h.trk.Update("R-1", func(is *tracker.Issue) { is.BlockedBy = []tracker.BlockerRef{{ID: "BLK", Identifier: "BLK"}} })
		}, released: true},
		{name: "tracker unreachable: rescheduled", act: func(h *harness) {
			h.trk.FailNext(faketracker.OpFetchIssue, 1, nil)
		}, attempt: 2, delay: 20 * time.Second},
		{name: "still eligible: dispatched", act: func(h *harness) {}, wantDispatch: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := testConfig(t, func(c *config.Config) {
				c.Agent.StallTimeout = 0
				c.Extensions = map[string]any{"mock": failingAgent}
			})
			h := newHarness(t, cfg, harnessOptions{pollOnly: true})
			h.trk.Put(issue("R-1", "Todo"))
			h.start()
			h.awaitStep(StepExit, "R-1") // failed: retry in 10s
			c.act(h)
			h.advance(10 * time.Second)
			o := h.awaitStep(StepRetryFetched, "R-1")
			switch {
			case c.released:
				if !settled(o.Snapshot, "R-1") {
					t.Fatalf("after the retry: %s, want R-1 released", describe(o.Snapshot))
				}
				if rs, err := h.st.LoadRetries(context.Background()); err != nil || len(rs) != 0 {
					t.Fatalf("persisted retries = %v (%v), want none", rs, err)
				}
			case c.wantDispatch:
				if !isRunning(o.Snapshot, "R-1") {
					t.Fatalf("after the retry: %s, want R-1 running", describe(o.Snapshot))
				}
			default:
				kind, attempt, delay := retryDelay(t, o.Snapshot, "R-1")
				if kind != retryFailure || attempt != c.attempt || delay != c.delay {
					t.Fatalf("retry = %s attempt %d in %v, want failure attempt %d in %v", kind, attempt, delay, c.attempt, c.delay)
				}
			}
			if n := len(h.runs("R-1")); !c.wantDispatch && n != 1 {
				t.Fatalf("runs = %d, want 1 (no dispatch)", n)
			}
		})
	}
}

// TestRetry_WaitingForASlotKeepsTheAttempt: a due retry that finds every slot taken
// waits for one without counting the wait as an attempt: its attempt number and its
// backoff stay those of the failures it had, it re-checks at a fixed interval, and it
// starts as soon as a slot frees.
func TestRetry_WaitingForASlotKeepsTheAttempt(t *testing.T) {
	cfg := testConfig(t, func(c *config.Config) {
		c.Agent.MaxConcurrentAgents = 1
		c.Agent.StallTimeout = 0
		c.Extensions = map[string]any{"mock": map[string]any{
			"issues": map[string]any{
				"A": map[string]any{"script": []any{"failure"}},
				"B": map[string]any{"script": []any{"hang"}},
			},
		}}
	})
	h := newHarness(t, cfg, harnessOptions{pollOnly: true})
	a := issue("A", "Todo")
	a.Priority = prio(1) // A first, B takes the slot when A fails
	h.trk.Put(a, issue("B", "Todo"))
	h.start()
	o := h.awaitStep(StepExit, "A")
	if !isRunning(o.Snapshot, "B") {
		t.Fatalf("after A failed: %s, want B in the freed slot", describe(o.Snapshot))
	}
	h.advance(10 * time.Second) // A's retry is due; B still holds the only slot
	for wait := 1; wait <= 3; wait++ {
		o = h.awaitStep(StepRetryFetched, "A")
		kind, attempt, delay := retryDelay(t, o.Snapshot, "A")
		if kind != retryFailure || attempt != 1 || delay != cfg.Polling.Interval {
			t.Fatalf("re-check %d with no free slot: retry %s attempt %d in %v, want failure attempt 1 (unchanged) re-checked in %v",
				wait, kind, attempt, delay, cfg.Polling.Interval)
		}
		if r, _ := retryOf(o.Snapshot, "A"); r.Error != "waiting for a free agent slot" {
			t.Fatalf("retry reason = %q, want %q", r.Error, "waiting for a free agent slot")
		}
		if wait < 3 {
			h.advance(delay)
		}
	}
	if got := h.statuses("A"); !slices.Equal(got, []store.RunStatus{store.StatusFailed}) {
		t.Fatalf("runs of A while it waited = %v, want only the first, failed", got)
	}
	if rs, err := h.st.LoadRetries(context.Background()); err != nil || len(rs) != 1 || rs[0].Attempt != 2 {
		t.Fatalf("persisted retries = %+v (%v), want A's, for its run attempt 2", rs, err)
	}

	// B leaves the active states: the poll stops it, and A takes the freed slot at once,
	// before its own re-check is due (the clock does not move).
	h.setState("B", "Backlog")
	h.refresh()
	o = h.awaitStep(StepExit, "A")
	runs := h.runs("A")
	if len(runs) != 2 || runs[1].Attempt != 2 {
		t.Fatalf("runs of A = %d, last attempt %d; want 2 runs, the second with attempt 2", len(runs), runs[len(runs)-1].Attempt)
	}
	if p := h.agent.promptsOf("A"); len(p) != 2 || !strings.Contains(p[1], "(attempt 1)") {
		t.Fatalf("prompts of A = %q, want the second to say attempt 1", p)
	}
	if kind, attempt, delay := retryDelay(t, o.Snapshot, "A"); kind != retryFailure || attempt != 2 || delay != 20*time.Second {
		t.Fatalf("after A's second failure: retry %s attempt %d in %v, want failure attempt 2 in 20s", kind, attempt, delay)
	}
}

// TestRetry_MaxRetriesHoldsAPermanentlyFailingIssue: with agent.max_retries 2 a failing
// issue gets two retries; its third consecutive failure holds it, also when the first
// two failures happened before a restart (the count comes from run history). A new
// workflow configuration lifts the hold.
func TestRetry_MaxRetriesHoldsAPermanentlyFailingIssue(t *testing.T) {
	for _, restart := range []bool{false, true} {
		name := "in one daemon"
		if restart {
			name = "across a restart"
		}
		t.Run(name, func(t *testing.T) {
			cfg := testConfig(t, func(c *config.Config) {
				c.Agent.MaxRetries = 2
				c.Agent.StallTimeout = 0
				c.Extensions = map[string]any{"mock": failingAgent}
			})
			if restart {
				// A previous daemon ran and failed twice and queued the second retry.
				seedStore(t, cfg.DBPath, func(ctx context.Context, st *sqlite.Store) {
					for i := 1; i <= 2; i++ {
						id, err := st.StartRun(ctx, store.Run{IssueID: "MR-1", Identifier: "MR-1", Attempt: i, AgentKind: "mock", StartedAt: t0.Add(-time.Hour)})
						must(t, err)
						must(t, st.FinishRun(ctx, id, store.RunEnd{Status: store.StatusFailed, Error: "turn_failed", EndedAt: t0.Add(-time.Hour)}))
					}
					must(t, st.SaveRetry(ctx, store.Retry{IssueID: "MR-1", Identifier: "MR-1", Attempt: 3, DueAt: t0, Kind: store.RetryFailure}))
				})
			}
			h := newHarness(t, cfg, harnessOptions{pollOnly: true})
			h.trk.Put(issue("MR-1", "Todo"))
			h.start()
			if restart {
				h.awaitStep(StepTick, "")
				h.advance(0) // the overdue retry
			} else {
				for _, delay := range []time.Duration{10 * time.Second, 20 * time.Second} {
					o := h.awaitStep(StepExit, "MR-1")
					if _, _, got := retryDelay(t, o.Snapshot, "MR-1"); got != delay {
						t.Fatalf("retry in %v, want %v", got, delay)
					}
					h.advance(delay)
				}
			}
			o := h.awaitStep(StepExit, "MR-1")
			held, ok := heldOf(o.Snapshot, "MR-1")
			if !ok || held.Reason != holdRetries {
				t.Fatalf("after the third failure: %s, want MR-1 held as %s", describe(o.Snapshot), holdRetries)
			}
			if got := h.statuses("MR-1"); !slices.Equal(got, []store.RunStatus{store.StatusFailed, store.StatusFailed, store.StatusFailed}) {
				t.Fatalf("runs = %v, want three failed", got)
			}
			h.obs.skip()
			h.mutateConfig(func(c *config.Config) { c.Agent.MaxRetries = 5 })
			h.awaitStep(StepExit, "MR-1")
			if n := len(h.runs("MR-1")); n != 4 {
				t.Fatalf("runs after the workflow changed = %d, want 4 (the hold lifted)", n)
			}
		})
	}
}

func TestRetry_TurnTimeoutIsRecordedAndRetried(t *testing.T) {
	cfg := testConfig(t, func(c *config.Config) {
		// agent.turn_timeout_ms is enforced with a context deadline on the wall clock.
		c.Agent.TurnTimeout = 300 * time.Millisecond
		c.Agent.StallTimeout = 0
		c.Extensions = map[string]any{"mock": hangingAgent}
	})
	h := newHarness(t, cfg, harnessOptions{pollOnly: true})
	h.trk.Put(issue("SLOW-1", "Todo"))
	h.start()
	o := h.awaitStep(StepExit, "SLOW-1")
	if kind, attempt, delay := retryDelay(t, o.Snapshot, "SLOW-1"); kind != retryFailure || attempt != 1 || delay != 10*time.Second {
		t.Fatalf("after the timeout: retry %s attempt %d in %v, want failure attempt 1 in 10s", kind, attempt, delay)
	}
	runs := h.runs("SLOW-1")
	if len(runs) != 1 || runs[0].Status != store.StatusTimedOut {
		t.Fatalf("runs = %v, want one timed_out", h.statuses("SLOW-1"))
	}
	requireNoProcessLeft(t, h, "SLOW-1")
}
