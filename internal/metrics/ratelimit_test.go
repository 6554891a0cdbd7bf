package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"sortie/internal/tracker"
)

func TestRateLimits_ReportedPerResourceAtScrapeTime(t *testing.T) {
	m := New("v1")
	if n, _ := testutil.GatherAndCount(m.reg, "sortie_tracker_rate_limit_remaining"); n != 0 {
		t.Fatalf("rate-limit series without a rate-limited tracker: %d", n)
	}
	m.SetRateLimits(func() []tracker.RateLimit {
		return []tracker.RateLimit{
			{Resource: "core", Limit: 5000, Remaining: 4990},
			{Resource: "search", Limit: 30, Remaining: 0, ThrottledUntil: time.Now().Add(time.Minute)},
		}
	})
	want := `
# HELP sortie_tracker_rate_limit_remaining Requests the tracker's API still allows in its current window, by resource, as its last response said.
# TYPE sortie_tracker_rate_limit_remaining gauge
sortie_tracker_rate_limit_remaining{resource="core"} 4990
sortie_tracker_rate_limit_remaining{resource="search"} 0
# HELP sortie_tracker_rate_limit_throttled 1 while the tracker adapter holds back requests on its own (a 429, a secondary limit, Retry-After, or a budget nearly spent), by resource.
# TYPE sortie_tracker_rate_limit_throttled gauge
sortie_tracker_rate_limit_throttled{resource="core"} 0
sortie_tracker_rate_limit_throttled{resource="search"} 1
`
	if err := testutil.GatherAndCompare(m.reg, strings.NewReader(want),
		"sortie_tracker_rate_limit_remaining", "sortie_tracker_rate_limit_throttled"); err != nil {
		t.Error(err)
	}
	if n, _ := testutil.GatherAndCount(m.reg, "sortie_tracker_rate_limit_limit"); n != 2 {
		t.Errorf("limit series = %d, want 2", n)
	}
}
