package github

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"sortie/internal/testkit/fakegithub"
	"sortie/internal/tracker"
)

// sendsNothing asserts that a call fails with tracker_api_error "rate limited until …"
// without a request reaching the server.
func sendsNothing(t *testing.T, f *fakegithub.Server, tr *Tracker, wantUntil time.Time) {
	t.Helper()
	before := f.Counts().Requests
	_, err := tr.FetchCandidateIssues(context.Background())
	if tracker.KindOf(err) != tracker.ErrAPI || !strings.Contains(err.Error(), "rate limited until "+wantUntil.UTC().Format(time.RFC3339)) {
		t.Fatalf("err = %v, want tracker_api_error rate limited until %s", err, wantUntil.UTC().Format(time.RFC3339))
	}
	if after := f.Counts().Requests; after != before {
		t.Fatalf("%d request(s) sent while throttled", after-before)
	}
}

func TestRateLimit_PrimaryExhaustedWaitsForReset(t *testing.T) {
	clock := newTestClock()
	f := fakegithub.New(t, fakegithub.WithClock(clock.Now))
	f.AddIssue(1, "a", "open", "todo")
	reset := clock.Now().Add(20 * time.Minute)
	f.SetBudget("core", 5000, 1, reset)
	tr := newTestTracker(t, f, clock)
	ctx := context.Background()

	// The last request of the window succeeds and says remaining 0.
	if _, err := tr.FetchCandidateIssues(ctx); err != nil {
		t.Fatal(err)
	}
	sendsNothing(t, f, tr, reset.Add(time.Second))
	clock.Advance(19 * time.Minute)
	sendsNothing(t, f, tr, reset.Add(time.Second))

	rl := tr.RateLimits()
	if len(rl) != 1 || rl[0].Resource != "core" || rl[0].Remaining != 0 || rl[0].Limit != 5000 || !rl[0].Reset.Equal(reset.Truncate(time.Second)) || rl[0].ThrottledUntil.IsZero() {
		t.Errorf("RateLimits = %+v, want core 0/5000 throttled until the reset", rl)
	}
	clock.Advance(2 * time.Minute)
	if _, err := tr.FetchCandidateIssues(ctx); err != nil {
		t.Fatalf("after the reset: %v", err)
	}
	if rl := tr.RateLimits(); !rl[0].ThrottledUntil.IsZero() {
		t.Errorf("still throttled after the reset: %+v", rl)
	}
}

func TestRateLimit_RefusalIsNotHammered(t *testing.T) {
	cases := []struct {
		name      string
		status    int
		header    map[string]string
		body      string
		wantDelay time.Duration
	}{
		{"429 with retry-after", 429, map[string]string{"Retry-After": "42"}, `{"message":"too many"}`, 42 * time.Second},
		{"403 secondary with retry-after", 403, map[string]string{"Retry-After": "90"}, `{"message":"You have exceeded a secondary rate limit"}`, 90 * time.Second},
		{"403 secondary without retry-after", 403, nil, `{"message":"You have exceeded a secondary rate limit. Please wait a few minutes before you try again."}`, time.Minute},
		{"429 without anything", 429, nil, ``, time.Minute},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			clock := newTestClock()
			f := fakegithub.New(t, fakegithub.WithClock(clock.Now))
			f.AddIssue(1, "a", "open", "todo")
			var refuse atomic.Bool
			refuse.Store(true)
			f.SetHook(func(w http.ResponseWriter, r *http.Request) bool {
				if !refuse.Load() {
					return false
				}
				for k, v := range c.header {
					w.Header().Set(k, v)
				}
				w.WriteHeader(c.status)
				_, _ = w.Write([]byte(c.body))
				return true
			})
			tr := newTestTracker(t, f, clock)
			start := clock.Now()
			_, err := tr.FetchCandidateIssues(context.Background())
			if tracker.KindOf(err) != tracker.ErrAPI || !strings.Contains(err.Error(), "rate limited until") {
				t.Fatalf("refused request: %v, want tracker_api_error rate limited until …", err)
			}
			until := start.Add(c.wantDelay)
			sendsNothing(t, f, tr, until)
			clock.Advance(c.wantDelay - time.Second)
			sendsNothing(t, f, tr, until)
			refuse.Store(false)
			clock.Advance(time.Second)
			if _, err := tr.FetchCandidateIssues(context.Background()); err != nil {
				t.Fatalf("after the wait: %v", err)
			}
		})
	}
}

func TestRateLimit_RepeatedSecondaryLimitsWaitLonger(t *testing.T) {
	clock := newTestClock()
	f := fakegithub.New(t, fakegithub.WithClock(clock.Now))
	f.SetHook(func(w http.ResponseWriter, r *http.Request) bool {
		w.WriteHeader(403)
		_, _ = w.Write([]byte(`{"message":"You have exceeded a secondary rate limit"}`))
		return true
	})
	tr := newTestTracker(t, f, clock)
	for _, want := range []time.Duration{time.Minute, 2 * time.Minute, 4 * time.Minute} {
		start := clock.Now()
		if _, err := tr.FetchCandidateIssues(context.Background()); tracker.KindOf(err) != tracker.ErrAPI {
			t.Fatalf("err = %v", err)
		}
		sendsNothing(t, f, tr, start.Add(want))
		clock.Advance(want)
	}
}

func TestRateLimit_LowBudgetIsSpreadUntilReset(t *testing.T) {
	clock := newTestClock()
	f := fakegithub.New(t, fakegithub.WithClock(clock.Now))
	f.AddIssue(1, "a", "open", "todo")
	f.SetHook(func(w http.ResponseWriter, r *http.Request) bool {
		r.Header.Del("If-None-Match") // every request is charged
		return false
	})
	// 100 of 5000 left (2%), an hour to the reset: one request per ~36 s on average.
	f.SetBudget("core", 5000, 100, clock.Now().Add(time.Hour))
	tr := newTestTracker(t, f, clock)
	sent := 0
	for range 20 {
		if _, err := tr.FetchCandidateIssues(context.Background()); err != nil {
			if tracker.KindOf(err) != tracker.ErrAPI {
				t.Fatal(err)
			}
			break
		}
		sent++
	}
	if sent < 2 || sent > paceBurst+1 {
		t.Fatalf("sent %d requests back to back on a low budget, want a short burst (≤ %d) then a hold", sent, paceBurst+1)
	}
	if rl := tr.RateLimits(); rl[0].ThrottledUntil.IsZero() || rl[0].ThrottledUntil.After(clock.Now().Add(2*time.Minute)) {
		t.Errorf("RateLimits = %+v, want a hold of about a paced interval", rl)
	}
	clock.Advance(time.Minute)
	if _, err := tr.FetchCandidateIssues(context.Background()); err != nil {
		t.Errorf("after a minute: %v, want the paced request to go", err)
	}
}

func TestRateLimit_NotModifiedIsFreeAndSearchHasItsOwnBudget(t *testing.T) {
	clock := newTestClock()
	f := fakegithub.New(t, fakegithub.WithClock(clock.Now))
	f.AddIssue(1, "a", "open", "todo")
	tr := newTestTracker(t, f, clock)
	ctx := context.Background()
	for range 3 {
		if _, err := tr.FetchCandidateIssues(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if rl := tr.RateLimits(); len(rl) != 1 || rl[0].Remaining != 4999 {
		t.Fatalf("after one charged request and two 304s: %+v, want core remaining 4999", rl)
	}
	search := newTestTracker(t, f, clock, func(c *tracker.Config) { c.QueryFilter = "label:todo" })
	f.SetBudget("search", 30, 0, clock.Now().Add(time.Minute))
	if _, err := search.FetchCandidateIssues(ctx); tracker.KindOf(err) != tracker.ErrAPI {
		t.Fatalf("spent search budget: %v, want tracker_api_error", err)
	}
	if _, err := search.FetchIssueStatesByIDs(ctx, []string{"1"}); err != nil {
		t.Errorf("core request while only search is spent: %v", err)
	}
}
