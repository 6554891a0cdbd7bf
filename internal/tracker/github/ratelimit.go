package github

import (
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"sortie/internal/tracker"
)

// Rate-limit policy. GitHub's guidance: never retry before x-ratelimit-reset once the
// primary limit is spent; after a secondary limit wait retry-after, or at least a minute
// and longer on repeats; make requests serially.
const (
	// lowBudgetFraction: below this share of the limit left, requests are paced so the
	// remainder lasts until the window resets.
	lowBudgetFraction = 10
	// paceBurst is how many paced requests may go back to back before the pacing holds
	// one back, so a poll cycle's few requests still go together.
	paceBurst = 5
	// secondaryWait is the first wait after a secondary limit without retry-after; it
	// doubles on each consecutive one, up to secondaryMaxWait.
	secondaryWait    = time.Minute
	secondaryMaxWait = 16 * time.Minute
)

// limiter holds what GitHub said about our budgets and when we may send again. It never
// sleeps: admit refuses a request that would go out before the throttle ends.
type limiter struct {
	mu               sync.Mutex
	budgets          map[string]*budget // by resource: core, search, …
	secondaryUntil   time.Time          // applies to every resource
	secondaryStrikes int
}

type budget struct {
	tracker.RateLimit
	exhaustedUntil time.Time // the primary limit is spent until then
	paceNext       time.Time // pacing: when the next paced request is due
	paceInterval   time.Duration
}

func newLimiter() *limiter { return &limiter{budgets: map[string]*budget{}} }

// until returns when a request for resource may next be sent; zero or past means now.
func (l *limiter) until(now time.Time, resource string) time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.untilLocked(now, resource)
}

func (l *limiter) untilLocked(now time.Time, resource string) time.Time {
	u := l.secondaryUntil
	b := l.budgets[resource]
	if b == nil {
		return u
	}
	if b.exhaustedUntil.After(u) {
		u = b.exhaustedUntil
	}
	// Pacing ends when the window resets: the budget is full again.
	if !b.Reset.IsZero() && now.Before(b.Reset) && b.paceInterval > 0 {
		if p := b.paceNext.Add(-paceBurst * b.paceInterval); p.After(u) {
			u = p
		}
	}
	return u
}

// observe records a response's rate-limit headers. status is the HTTP status; counted
// is false for a 304, which GitHub does not charge against the primary limit. It
// returns true when the response is a rate-limit refusal rather than an ordinary error.
func (l *limiter) observe(now time.Time, resource string, status int, h headerGetter, body []byte) (limited bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if r := strings.TrimSpace(h.Get("X-RateLimit-Resource")); r != "" {
		resource = r
	}
	b := l.budgets[resource]
	if b == nil {
		b = &budget{RateLimit: tracker.RateLimit{Resource: resource}}
		l.budgets[resource] = b
	}
	limit, okL := headerInt(h, "X-RateLimit-Limit")
	remaining, okR := headerInt(h, "X-RateLimit-Remaining")
	reset, okS := headerInt(h, "X-RateLimit-Reset")
	if okL {
		b.Limit = limit
	}
	if okR {
		b.Remaining = remaining
	}
	if okS {
		b.Reset = time.Unix(int64(reset), 0).UTC()
	}
	if okL || okR || okS {
		b.UpdatedAt = now
	}

	retryAfter, hasRetryAfter := headerInt(h, "Retry-After")
	refused := status == 429 || status == 403 && (hasRetryAfter || okR && remaining == 0 || mentionsRateLimit(body))
	switch {
	case refused && okR && remaining == 0 && !b.Reset.IsZero():
		// Primary limit spent: nothing for this resource until the window resets.
		b.exhaustedUntil = b.Reset.Add(time.Second)
	case refused:
		// A secondary limit (or a 429 that says nothing): retry-after if given, else
		// a minute, doubling while they keep coming.
		wait := secondaryWait << min(l.secondaryStrikes, 4)
		if hasRetryAfter && retryAfter >= 0 {
			wait = time.Duration(retryAfter) * time.Second
		}
		l.secondaryStrikes++
		if u := now.Add(min(wait, secondaryMaxWait)); u.After(l.secondaryUntil) {
			l.secondaryUntil = u
		}
	case status < 400:
		l.secondaryStrikes = 0
		if okR && remaining == 0 && !b.Reset.IsZero() {
			// That was the last request of the window; the next would be refused.
			b.exhaustedUntil = b.Reset.Add(time.Second)
		}
	}
	if status == 304 || refused {
		return refused
	}
	// Slow down before the limit: with less than a tenth left, spread what remains
	// evenly until the reset instead of spending it and then waiting.
	if b.Limit > 0 && b.Remaining*lowBudgetFraction < b.Limit && now.Before(b.Reset) {
		b.paceInterval = b.Reset.Sub(now) / time.Duration(b.Remaining+1)
		if b.paceNext.Before(now) {
			b.paceNext = now
		}
		b.paceNext = b.paceNext.Add(b.paceInterval)
	} else {
		b.paceInterval, b.paceNext = 0, time.Time{}
	}
	return false
}

// snapshot returns the budgets, sorted by resource, with ThrottledUntil set while a
// request would be refused.
func (l *limiter) snapshot(now time.Time) []tracker.RateLimit {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]tracker.RateLimit, 0, len(l.budgets))
	for res, b := range l.budgets {
		rl := b.RateLimit
		if u := l.untilLocked(now, res); u.After(now) {
			rl.ThrottledUntil = u
		}
		out = append(out, rl)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Resource < out[j].Resource })
	return out
}

type headerGetter interface{ Get(string) string }

func headerInt(h headerGetter, name string) (int, bool) {
	v := strings.TrimSpace(h.Get(name))
	if v == "" {
		return 0, false
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, false
	}
	return n, true
}

// mentionsRateLimit reports whether a 403 body is GitHub's rate-limit message ("API
// rate limit exceeded…", "You have exceeded a secondary rate limit…") rather than a
// permission refusal.
func mentionsRateLimit(body []byte) bool {
	if len(body) > 4096 {
		body = body[:4096]
	}
	return strings.Contains(strings.ToLower(string(body)), "rate limit")
}

// resourceFor is the budget a request path draws on, before the response says.
func resourceFor(path string) string {
	if strings.Contains(path, "/search/") {
		return "search"
	}
	return "core"
}
