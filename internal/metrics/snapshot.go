package metrics

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"sortie/internal/orchestrator"
)

// snapshotCollector reads the session gauges from the orchestrator's snapshot at scrape
// time: they are state, not events, and the loop owns that state.
type snapshotCollector struct {
	snapshot func(context.Context) (orchestrator.Snapshot, error)
	timeout  time.Duration

	running, retrying, awaiting, slots, elapsed *prometheus.Desc
}

func newSnapshotCollector(snapshot func(context.Context) (orchestrator.Snapshot, error), timeout time.Duration) *snapshotCollector {
	desc := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName(namespace, "", name), help, nil, nil)
	}
	return &snapshotCollector{
		snapshot: snapshot, timeout: timeout,
		running:  desc("sessions_running", "Agent sessions running now."),
		retrying: desc("sessions_retrying", "Issues waiting for a retry timer."),
		awaiting: desc("sessions_awaiting_input", "Issues waiting for a human's answer: the agent signalled blocked, needs review with no handoff, or a workflow checkpoint waits."),
		slots:    desc("slots_available", "Sessions that could start now: agent.max_concurrent_agents minus those running, never negative."),
		elapsed:  desc("active_sessions_elapsed_seconds", "Seconds the running sessions have run so far, summed."),
	}
}

// Describe implements prometheus.Collector.
func (c *snapshotCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.running
	ch <- c.retrying
	ch <- c.awaiting
	ch <- c.slots
	ch <- c.elapsed
}

// Collect implements prometheus.Collector. When the snapshot fails (the loop is busy
// past the timeout, or not running) the gauges are left out of this scrape: a stale or
// zero value would read as a fact.
func (c *snapshotCollector) Collect(ch chan<- prometheus.Metric) {
	if c.snapshot == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	s, err := c.snapshot(ctx)
	if err != nil {
		return
	}
	var elapsed float64
	for _, r := range s.Running {
		if !r.StartedAt.IsZero() && s.GeneratedAt.After(r.StartedAt) {
			elapsed += s.GeneratedAt.Sub(r.StartedAt).Seconds()
		}
	}
	gauge := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v)
	}
	gauge(c.running, float64(len(s.Running)))
	gauge(c.retrying, float64(len(s.Retrying)))
	awaiting := 0
	for _, h := range s.Held {
		// The holds a human answers; errors and used-up retries are counted by holds_total.
		if h.Reason == "blocked" || h.Reason == "needs_human_review" || h.Reason == "awaiting_input" {
			awaiting++
		}
	}
	gauge(c.awaiting, float64(awaiting))
	gauge(c.slots, float64(max(s.MaxAgents-len(s.Running), 0)))
	gauge(c.elapsed, elapsed)
}
