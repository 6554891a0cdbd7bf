package agenttools

import (
	"context"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"sortie/internal/agentsock"
	"sortie/internal/clock"
	"sortie/internal/config"
)

// limitedNotify is a Service whose Deliver counts what it sends, on a fake clock
// starting at t0 (a whole second, so retry times are exact), with
// the rate limit that *limit holds at each call (a reload is a store) and the refusals'
// scopes in order.
type limitedNotify struct {
	svc       *Service
	clk       *clock.Fake
	delivered atomic.Int32
	limit     atomic.Pointer[config.NotifyRateLimit]
	scopes    []string
}

func newLimitedNotify(t *testing.T, limit config.NotifyRateLimit) *limitedNotify {
	t.Helper()
	n := &limitedNotify{clk: clock.NewFake(t0)}
	n.limit.Store(&limit)
	n.svc = New(Options{
		Config: func() *config.Config {
			c := testConfig(t, nil)
			c.NotifyOperator.RateLimit = *n.limit.Load()
			return c
		},
		Deliver: func(context.Context, agentsock.Session, agentsock.NotifyRequest) (agentsock.NotifyResult, error) {
			n.delivered.Add(1)
			return agentsock.NotifyResult{Delivered: true, Backends: []string{"slack#0"}}, nil
		},
		Clock:             n.clk,
		NotifyRateLimited: func(scope string) { n.scopes = append(n.scopes, scope) },
	})
	return n
}

// notify sends one message for issue and returns the tool error, nil on success.
func (n *limitedNotify) notify(issue string) *agentsock.Error {
	_, e := n.svc.Notify(context.Background(), agentsock.Session{IssueID: issue, Identifier: "PROJ-" + issue},
		agentsock.NotifyRequest{Message: "hello"})
	return e
}

// sendN sends count messages for issue and fails unless all of them pass.
func (n *limitedNotify) sendN(t *testing.T, issue string, count int) {
	t.Helper()
	for i := range count {
		if e := n.notify(issue); e != nil {
			t.Fatalf("message %d of %d for issue %s: %v, want it sent", i+1, count, issue, e)
		}
	}
}

// refused fails unless a call for issue is refused as rate_limited; it returns the message.
func (n *limitedNotify) refused(t *testing.T, issue string) string {
	t.Helper()
	before := n.delivered.Load()
	e := n.notify(issue)
	if e == nil || e.Kind != "rate_limited" {
		t.Fatalf("call for issue %s = %v, want a rate_limited error", issue, e)
	}
	if n.delivered.Load() != before {
		t.Fatalf("a refused call for issue %s reached Deliver", issue)
	}
	return e.Message
}

func limits(perBurst int, perEvery time.Duration, globalBurst int, globalEvery time.Duration) config.NotifyRateLimit {
	return config.NotifyRateLimit{PerIssue: config.TokenBucket{Burst: perBurst, Every: perEvery},
		Global: config.TokenBucket{Burst: globalBurst, Every: globalEvery}}
}

func TestNotifyLimit_PerIssueBurstThenOneEachPeriod(t *testing.T) {
	n := newLimitedNotify(t, config.NotifyRateLimit{}) // zero: the defaults, 5 then 1 per 10m
	n.sendN(t, "1", 5)
	n.refused(t, "1")
	n.clk.Advance(10*time.Minute - time.Second)
	n.refused(t, "1")
	n.clk.Advance(time.Second)
	n.sendN(t, "1", 1)
	n.refused(t, "1")
	n.clk.Advance(25 * time.Minute) // two more accrue; the half period counts towards a third
	n.sendN(t, "1", 2)
	n.refused(t, "1")
	n.clk.Advance(5 * time.Minute)
	n.sendN(t, "1", 1)
	if got, want := n.delivered.Load(), int32(9); got != want {
		t.Errorf("delivered %d messages, want %d", got, want)
	}
}

func TestNotifyLimit_EachIssueHasItsOwnBucket(t *testing.T) {
	n := newLimitedNotify(t, limits(2, 10*time.Minute, 20, time.Minute))
	n.sendN(t, "1", 2)
	n.refused(t, "1")
	n.sendN(t, "2", 2)
	n.refused(t, "2")
	n.sendN(t, "3", 1)
}

func TestNotifyLimit_GlobalBucketCapsAllIssuesTogether(t *testing.T) {
	n := newLimitedNotify(t, limits(5, 10*time.Minute, 3, time.Minute))
	for _, issue := range []string{"1", "2", "3"} {
		n.sendN(t, issue, 1)
	}
	n.refused(t, "4")
	n.clk.Advance(time.Minute)
	n.sendN(t, "4", 1)
	n.refused(t, "1")
	if want := []string{NotifyScopeGlobal, NotifyScopeGlobal}; !slices.Equal(n.scopes, want) {
		t.Errorf("refusals counted as %v, want %v", n.scopes, want)
	}
}

func TestNotifyLimit_RefusedCallSpendsNoMessage(t *testing.T) {
	t.Run("refused per issue spends nothing of the global bucket", func(t *testing.T) {
		n := newLimitedNotify(t, limits(1, 10*time.Minute, 2, time.Hour))
		n.sendN(t, "1", 1)
		for range 5 {
			n.refused(t, "1")
		}
		n.sendN(t, "2", 1) // the second and last global message
	})
	t.Run("refused globally spends nothing of the issue's bucket", func(t *testing.T) {
		n := newLimitedNotify(t, limits(1, time.Hour, 1, time.Minute))
		n.sendN(t, "1", 1)
		n.refused(t, "2")
		n.clk.Advance(time.Minute)
		n.sendN(t, "2", 1) // issue 2 still has its one message
	})
}

func TestNotifyLimit_ErrorSaysWhichLimitAndWhen(t *testing.T) {
	t.Run("per issue", func(t *testing.T) {
		n := newLimitedNotify(t, config.NotifyRateLimit{})
		n.sendN(t, "1", 5)
		n.clk.Advance(3*time.Minute + 30*time.Second + 500*time.Millisecond)
		got := n.refused(t, "1")
		want := "notify_operator is rate limited for this issue: at most 5 messages at once, then 1 every 10m. " +
			"The next message may be sent in 6m30s, at 2026-03-01T12:10:00Z; until then calls fail without sending. " +
			"Gather what the operator needs to know into one message."
		if got != want {
			t.Errorf("message:\n got %q\nwant %q", got, want)
		}
	})
	t.Run("global", func(t *testing.T) {
		n := newLimitedNotify(t, limits(5, 10*time.Minute, 1, 90*time.Minute))
		n.sendN(t, "1", 1)
		got := n.refused(t, "2")
		want := "notify_operator is rate limited for all issues together: at most 1 message at once, then 1 every 1h30m. " +
			"The next message may be sent in 1h30m, at 2026-03-01T13:30:00Z; until then calls fail without sending. " +
			"Gather what the operator needs to know into one message."
		if got != want {
			t.Errorf("message:\n got %q\nwant %q", got, want)
		}
	})
	for _, tt := range []struct {
		name      string
		limit     config.NotifyRateLimit
		scope     string
		who, wait string
	}{
		{"both empty, the global one for longer", limits(1, 10*time.Minute, 1, time.Hour), NotifyScopeGlobal, "for all issues together", "in 1h,"},
		{"both empty, the issue's for longer", limits(1, 2*time.Hour, 1, time.Hour), NotifyScopeIssue, "for this issue", "in 2h,"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			n := newLimitedNotify(t, tt.limit)
			n.sendN(t, "1", 1)
			msg := n.refused(t, "1")
			if !strings.Contains(msg, tt.who) || !strings.Contains(msg, tt.wait) {
				t.Errorf("message %q, want %q and %q: the limit that holds the call longest", msg, tt.who, tt.wait)
			}
			if want := []string{tt.scope}; !slices.Equal(n.scopes, want) {
				t.Errorf("refusal counted as %v, want %v", n.scopes, want)
			}
		})
	}
}

func TestNotifyLimit_ReloadAppliesAtTheNextCallAndKeepsTheBuckets(t *testing.T) {
	n := newLimitedNotify(t, config.NotifyRateLimit{})
	n.sendN(t, "1", 5)
	n.refused(t, "1")

	// A larger burst does not refill the empty bucket: the reload keeps what it holds.
	n.limit.Store(ptr(limits(10, time.Minute, 20, time.Minute)))
	n.refused(t, "1")
	// The new period applies from the next call: one minute, not ten.
	n.clk.Advance(time.Minute)
	n.sendN(t, "1", 1)
	n.refused(t, "1")

	// A smaller burst caps what the buckets hold: 14 global messages remain, but only 2
	// may be sent now.
	n.limit.Store(ptr(limits(10, time.Minute, 2, time.Hour)))
	n.sendN(t, "2", 2)
	n.refused(t, "3")
}

func TestNotifyLimit_InvalidCallsAreNotCounted(t *testing.T) {
	n := newLimitedNotify(t, limits(1, time.Hour, 20, time.Minute))
	for range 3 {
		if _, e := n.svc.Notify(context.Background(), agentsock.Session{IssueID: "1"}, agentsock.NotifyRequest{Message: " "}); e == nil || e.Kind != "invalid_input" {
			t.Fatalf("blank message: %v, want invalid_input", e)
		}
	}
	n.sendN(t, "1", 1)
	if len(n.scopes) != 0 {
		t.Errorf("refusals counted: %v, want none", n.scopes)
	}
}

func TestNotifyLimit_FullBucketsAreForgotten(t *testing.T) {
	n := newLimitedNotify(t, limits(2, time.Minute, 1000, time.Second))
	for _, issue := range []string{"1", "2", "3"} {
		n.sendN(t, issue, 1)
	}
	if got := len(n.svc.notifyLimit.issues); got != 3 {
		t.Fatalf("%d issue buckets after three issues notified, want 3", got)
	}
	n.clk.Advance(time.Minute) // every bucket is full again
	n.sendN(t, "4", 1)
	if got := len(n.svc.notifyLimit.issues); got != 1 {
		t.Errorf("%d issue buckets, want 1: full buckets are the same as none", got)
	}
}

func TestNotifyLimit_ShortDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		10 * time.Minute:                   "10m",
		time.Hour:                          "1h",
		90 * time.Minute:                   "1h30m",
		time.Hour + time.Second:            "1h0m1s",
		45 * time.Second:                   "45s",
		6*time.Minute + 29*time.Second + 1: "6m30s",
		time.Millisecond:                   "1s",
	} {
		if got := shortDuration(d); got != want {
			t.Errorf("shortDuration(%v) = %q, want %q", d, got, want)
		}
	}
}

func ptr[T any](v T) *T { return &v }
