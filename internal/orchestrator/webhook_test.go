package orchestrator

import (
	"slices"
	"testing"
	"time"

	"sortie/internal/config"
	"sortie/internal/testkit/faketracker"
	"sortie/internal/tracker"
)

// A webhook delivery makes the scheduler poll at once; while deliveries arrive, polling
// slows to polling.webhook_interval_ms, and it is back to polling.interval_ms once the
// last delivery is older than that.
func TestWebhookDelivered_PollsNowThenSlowsPollingDown(t *testing.T) {
	cfg := testConfig(t, func(c *config.Config) {
		c.Polling.Interval = 30 * time.Second
		c.Polling.WebhookInterval = 5 * time.Minute
	})
	h := newHarness(t, cfg, harnessOptions{pollOnly: true})
	h.start()
	h.awaitStep(StepTick, "")
	polls := func() int { return h.trk.Calls(faketracker.OpFetchCandidates) }

	// An issue filed, and the delivery that names it: it is dispatched now, not at the
	// next poll.
	h.trk.Put(tracker.Issue{ID: "w1", Identifier: "HOOK-1", Title: "t", State: "Todo"})
	h.obs.skip()
	h.orch.WebhookDelivered()
	if o := h.awaitStep(StepTick, ""); !isRunning(o.Snapshot, "w1") {
		t.Fatalf("after the delivery's poll: %s, want HOOK-1 running", describe(o.Snapshot))
	}
	// The poll the delivery caused scheduled the next one at polling.webhook_interval_ms,
	// not at polling.interval_ms.
	if due := h.clk.Due(); !slices.Contains(due, cfg.Polling.WebhookInterval) || slices.Contains(due, cfg.Polling.Interval) {
		t.Fatalf("timers after the delivery's poll: %v, want the next poll in 5m and none in 30s", due)
	}
	before := polls()
	h.advance(cfg.Polling.WebhookInterval)
	h.awaitStep(StepTick, "")
	if got := polls(); got != before+1 {
		t.Fatalf("candidate fetches over the 5 minutes after a delivery = %d, want 1", got-before)
	}

	// No delivery since: the last is now 5 minutes old, so polling.interval_ms is back.
	if due := h.clk.Due(); !slices.Contains(due, cfg.Polling.Interval) {
		t.Fatalf("timers once the last delivery is 5 minutes old: %v, want the next poll in 30s", due)
	}
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
}

// An operator who polls less often than polling.webhook_interval_ms keeps their
// interval: a delivery never makes polling more frequent.
func TestWebhookDelivered_NeverShortensALongerInterval(t *testing.T) {
	cfg := testConfig(t, func(c *config.Config) {
		c.Polling.Interval = 10 * time.Minute
		c.Polling.WebhookInterval = 5 * time.Minute
	})
	h := newHarness(t, cfg, harnessOptions{pollOnly: true})
	if got := h.orch.pollInterval(cfg); got != 10*time.Minute {
		t.Fatalf("pollInterval before any delivery = %v", got)
	}
	h.orch.webhookAt.Store(h.clk.Now().UnixNano())
	if got := h.orch.pollInterval(cfg); got != 10*time.Minute {
		t.Fatalf("pollInterval after a delivery = %v, want polling.interval_ms (10m), the longer", got)
	}
}

// A comment delivered by webhook goes through the same author rules as one found by a
// poll, because the delivery only makes the poll happen now: a "/sortie choose" by
// someone not in workflows.answerers is refused; an answerer's, announced the same way,
// lifts the hold, both without waiting for polling.interval_ms.
func TestWebhookDelivered_CheckpointAnswersKeepTheirAuthorRules(t *testing.T) {
	cfg := checkpointConfig(t)
	cfg.Workflows.Answerers = []string{"erin"}
	h := newHarness(t, cfg, harnessOptions{pollOnly: true, checkpoints: true})
	h.trk.Put(issue("CP-W", "Todo"))
	armOnFirstTurn(t, h, "CP-W", approvePlan("CP-W"))
	h.start()
	h.awaitStep(StepExit, "CP-W")

	if err := h.trk.AddComment("CP-W", "mallory", "/sortie choose approve"); err != nil {
		t.Fatal(err)
	}
	h.obs.skip()
	h.orch.WebhookDelivered()
	o := h.awaitStep(StepTick, "")
	if held, ok := heldOf(o.Snapshot, "CP-W"); !ok || held.Reason != holdAwaiting {
		t.Fatalf("mallory's delivered comment lifted the hold: %s", describe(o.Snapshot))
	}
	if refused := h.desk.RefusedAnswers("CP-W"); len(refused) != 1 {
		t.Fatalf("refused answers = %+v, want mallory's", refused)
	}

	if err := h.trk.AddComment("CP-W", "erin", "/sortie choose approve"); err != nil {
		t.Fatal(err)
	}
	h.obs.skip()
	h.orch.WebhookDelivered()
	h.await("erin's delivered answer lifts the hold", func(o Observation) bool {
		_, held := heldOf(o.Snapshot, "CP-W")
		return !held
	})
}
