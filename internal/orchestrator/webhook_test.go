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
		c.Tracker.WebhookSecret = "s3cret"
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
		c.Tracker.WebhookSecret = "s3cret"
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
	h.advance(webhookPollGap) // a delivery within the gap would wait for its end
	h.orch.WebhookDelivered()
	h.await("erin's delivered answer lifts the hold", func(o Observation) bool {
		_, held := heldOf(o.Snapshot, "CP-W")
		return !held
	})
}

// The short interval stays when the slow one could cost an issue: after a failed poll
// (the delivery's own poll may have failed), once a reload removed the webhook secret,
// and in a cluster (the other daemons count a list older than a few polling intervals
// as lost).
func TestWebhookDelivered_ShortIntervalAfterAFailedPollOrWithoutASecret(t *testing.T) {
	cfg := testConfig(t, func(c *config.Config) {
		c.Polling.Interval = 30 * time.Second
		c.Polling.WebhookInterval = 5 * time.Minute
		c.Tracker.WebhookSecret = "s3cret"
	})
	h := newHarness(t, cfg, harnessOptions{pollOnly: true})
	h.orch.webhookAt.Store(h.clk.Now().UnixNano())
	h.orch.lastPollOK = true
	if got := h.orch.pollInterval(cfg); got != 5*time.Minute {
		t.Fatalf("pollInterval after a delivery and a good poll = %v, want 5m", got)
	}
	h.orch.lastPollOK = false
	if got := h.orch.pollInterval(cfg); got != 30*time.Second {
		t.Errorf("pollInterval after a failed poll = %v, want 30s", got)
	}
	h.orch.lastPollOK = true
	noSecret := *cfg
	noSecret.Tracker.WebhookSecret = ""
	if got := h.orch.pollInterval(&noSecret); got != 30*time.Second {
		t.Errorf("pollInterval without a webhook secret = %v, want 30s", got)
	}
}

// A burst of deliveries (or one captured delivery resent under new ids) is one poll
// now and one at the end of webhookPollGap, not one per delivery.
func TestWebhookDelivered_ABurstIsTwoPolls(t *testing.T) {
	cfg := testConfig(t, func(c *config.Config) { c.Tracker.WebhookSecret = "s3cret" })
	h := newHarness(t, cfg, harnessOptions{pollOnly: true})
	h.start()
	h.awaitStep(StepTick, "")
	polls := func() int { return h.trk.Calls(faketracker.OpFetchCandidates) }
	before := polls()

	h.obs.skip()
	h.orch.WebhookDelivered()
	h.awaitStep(StepTick, "")
	for range 20 {
		h.orch.WebhookDelivered()
	}
	if due := h.clk.Due(); !slices.Contains(due, webhookPollGap) {
		t.Fatalf("timers after a burst: %v, want one poll at the end of the %v gap", due, webhookPollGap)
	}
	if got := polls() - before; got != 1 {
		t.Fatalf("polls during the burst = %d, want 1", got)
	}
	h.advance(webhookPollGap)
	h.awaitStep(StepTick, "")
	if got := polls() - before; got != 2 {
		t.Fatalf("polls after the gap = %d, want 2", got)
	}
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
}
