package metrics

import (
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"sortie/internal/tracker"
)

// rateLimitCollector reports the tracker API's budget (tracker.RateLimiter) at scrape
// time, one series per resource the API names.
type rateLimitCollector struct {
	source atomic.Pointer[func() []tracker.RateLimit]

	remaining, limit, throttled *prometheus.Desc
}

func newRateLimitCollector() *rateLimitCollector {
	desc := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName(namespace, "", name), help, []string{"resource"}, nil)
	}
	return &rateLimitCollector{
		remaining: desc("tracker_rate_limit_remaining", "Requests the tracker's API still allows in its current window, by resource, as its last response said."),
		limit:     desc("tracker_rate_limit_limit", "Requests the tracker's API allows per window, by resource."),
		throttled: desc("tracker_rate_limit_throttled", "1 while the tracker adapter holds back requests on its own (a 429, a secondary limit, Retry-After, or a budget nearly spent), by resource."),
	}
}

// SetRateLimits makes the scrape report the budget f returns; a tracker without a rate
// limit reports nothing.
func (m *Metrics) SetRateLimits(f func() []tracker.RateLimit) { m.rateLimits.source.Store(&f) }

// Describe implements prometheus.Collector.
func (c *rateLimitCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.remaining
	ch <- c.limit
	ch <- c.throttled
}

// Collect implements prometheus.Collector.
func (c *rateLimitCollector) Collect(ch chan<- prometheus.Metric) {
	f := c.source.Load()
	if f == nil || *f == nil {
		return
	}
	seen := map[string]bool{}
	for _, rl := range (*f)() {
		res := sanitizeLabel(rl.Resource)
		if res == "" {
			res = "default"
		}
		if seen[res] || len(seen) >= 16 {
			continue
		}
		seen[res] = true
		throttled := 0.0
		if rl.ThrottledUntil.After(time.Now()) {
			throttled = 1
		}
		ch <- prometheus.MustNewConstMetric(c.remaining, prometheus.GaugeValue, float64(rl.Remaining), res)
		ch <- prometheus.MustNewConstMetric(c.limit, prometheus.GaugeValue, float64(rl.Limit), res)
		ch <- prometheus.MustNewConstMetric(c.throttled, prometheus.GaugeValue, throttled, res)
	}
}
