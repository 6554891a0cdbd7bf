package linear

import (
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"sortie/internal/tracker"
)

// Linear meters two budgets per API key, each a leaky bucket: requests, and complexity
// points (the sum of the estimated cost of the queries sent). Every response carries
// both in headers; the reset headers are UTC epoch milliseconds.
const (
	budgetRequests   = "requests"
	budgetComplexity = "complexity"
)

// Rate-limit policy.
const (
	// pollFloorFraction: the adapter's own requests stop when less than a twentieth
	// of a budget is left, until that budget's reset, so the limit is never reached.
	pollFloorFraction = 20
	// agentFloorFraction: linear_graphql calls stop earlier, below a fifth, so that
	// agents cannot spend what polling and reconciling need.
	agentFloorFraction = 5
	// defaultRefusedWait is the wait after a refusal that says nothing about when to
	// come back; it doubles on each refusal in a row, up to maxRefusedWait.
	defaultRefusedWait = time.Minute
	maxRefusedWait     = time.Hour
)

// RateLimitedError is wrapped by the tracker_api_error of a call Linear refused for its
// rate limit (HTTP 429 or a RATELIMITED GraphQL error), or that the adapter held back
// because a budget was nearly spent. No request is sent before Until.
type RateLimitedError struct {
	Until  time.Time
	Budget string // requests or complexity; "" when Linear did not say which
}

func (e *RateLimitedError) Error() string {
	b := ""
	if e.Budget != "" {
		b = " (" + e.Budget + " budget)"
	}
	return "Linear rate limit" + b + ": no request before " + e.Until.UTC().Format(time.RFC3339)
}

// RetryAfter is how long after now the call may be tried again.
func (e *RateLimitedError) RetryAfter(now time.Time) time.Duration { return max(e.Until.Sub(now), 0) }

// limiter holds what Linear said about the two budgets and when a request may go. It
// never sleeps: hold says whether a request must wait, and until when.
type limiter struct {
	mu            sync.Mutex
	budgets       [2]tracker.RateLimit // requests, complexity
	lastCost      int                  // X-Complexity of the last query
	refusedUntil  time.Time
	refusedBudget string
	strikes       int
}

func newLimiter() *limiter {
	l := &limiter{}
	l.budgets[0].Resource, l.budgets[1].Resource = budgetRequests, budgetComplexity
	return l
}

// hold returns a *RateLimitedError when a request must not be sent now: after a refusal
// until its end, and when a budget is below its floor (a 1/floorFraction share of its
// limit; for complexity at least twice the last query's cost) until its reset.
func (l *limiter) hold(now time.Time, floorFraction int) *RateLimitedError {
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Before(l.refusedUntil) {
		return &RateLimitedError{Until: l.refusedUntil, Budget: l.refusedBudget}
	}
	for i, b := range l.budgets {
		if b.Limit <= 0 || b.Reset.IsZero() || !now.Before(b.Reset) {
			continue
		}
		floor := b.Limit / floorFraction
		if i == 1 {
			floor = max(floor, 2*l.lastCost)
		}
		if b.Remaining <= max(floor, 1) {
			return &RateLimitedError{Until: b.Reset, Budget: b.Resource}
		}
	}
	return nil
}

// observe records a response's headers. refused says Linear turned the request away
// for its rate limit; the wait is Retry-After when given, else the reset of a spent
// budget, else a minute doubling on repeats.
func (l *limiter) observe(now time.Time, h http.Header, refused bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, name := range []string{"Requests", "Complexity"} {
		b := &l.budgets[i]
		lim, okL := headerInt(h, "X-RateLimit-"+name+"-Limit")
		rem, okR := headerInt(h, "X-RateLimit-"+name+"-Remaining")
		reset, okS := headerInt(h, "X-RateLimit-"+name+"-Reset")
		if okL {
			b.Limit = lim
		}
		if okR {
			b.Remaining = rem
		}
		if okS && reset > 0 {
			b.Reset = time.UnixMilli(int64(reset)).UTC()
		}
		if okL || okR || okS {
			b.UpdatedAt = now
		}
	}
	if c, ok := headerInt(h, "X-Complexity"); ok && c >= 0 {
		l.lastCost = c
	}
	if !refused {
		l.strikes = 0
		return
	}
	until, budget := time.Time{}, ""
	if d, ok := retryAfter(h.Get("Retry-After"), now); ok {
		until = now.Add(d)
	}
	if until.IsZero() {
		for _, b := range l.budgets {
			if b.Limit > 0 && b.Remaining <= 0 && b.Reset.After(now) && b.Reset.After(until) {
				until, budget = b.Reset, b.Resource
			}
		}
	}
	if until.IsZero() {
		until = now.Add(min(defaultRefusedWait<<min(l.strikes, 6), maxRefusedWait))
	}
	if ceiling := now.Add(maxRefusedWait); until.After(ceiling) {
		until = ceiling
	}
	l.strikes++
	if until.After(l.refusedUntil) {
		l.refusedUntil, l.refusedBudget = until, budget
	}
}

// snapshot returns both budgets that Linear has reported, with ThrottledUntil set while
// the adapter holds its own requests back.
func (l *limiter) snapshot(now time.Time) []tracker.RateLimit {
	held := l.hold(now, pollFloorFraction)
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []tracker.RateLimit
	for _, b := range l.budgets {
		if b.UpdatedAt.IsZero() {
			continue
		}
		if held != nil && (held.Budget == "" || held.Budget == b.Resource) {
			b.ThrottledUntil = held.Until
		}
		out = append(out, b)
	}
	return out
}

func headerInt(h http.Header, name string) (int, bool) {
	v := strings.TrimSpace(h.Get(name))
	if v == "" {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 || n > 1<<53 {
		return 0, false
	}
	return int(n), true
}

// retryAfter reads Retry-After: seconds or an HTTP date, at most a day.
func retryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n < 0 {
			return 0, false
		}
		return time.Duration(min(n, 24*3600)) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return min(max(t.Sub(now), 0), 24*time.Hour), true
	}
	return 0, false
}
