package linear

import (
	"sync"
	"time"
)

// The per-issue limits of linear_graphql: an agent looping on the tool cannot spend the
// daemon's Linear budgets on its own, nor flood its issue with comments. Each is a token
// bucket: Burst calls at once, then one more every Every.
var (
	// AgentCallLimit bounds the calls of one issue's sessions that reach Linear (a call
	// the policy refuses costs nothing): 30 at once, then one every 10 s (360 an hour,
	// against Linear's 5,000 requests an hour for a key).
	AgentCallLimit = BucketSize{Burst: 30, Every: 10 * time.Second}
	// AgentCommentLimit bounds the commentCreate mutations of one issue's sessions: 5 at
	// once, then one every 5 minutes.
	AgentCommentLimit = BucketSize{Burst: 5, Every: 5 * time.Minute}
)

// BucketSize is a token bucket's size: Burst tokens at most, one more every Every.
type BucketSize struct {
	Burst int
	Every time.Duration
}

// bucket holds the tokens of one issue for one limit. One more accrues each Every after
// since, up to the Burst; a new bucket is full.
type bucket struct {
	tokens int
	since  time.Time
}

func (b *bucket) refill(now time.Time, size BucketSize) {
	if b.since.IsZero() {
		b.tokens, b.since = size.Burst, now
		return
	}
	if n := int(now.Sub(b.since) / size.Every); n > 0 && b.tokens < size.Burst {
		b.tokens = min(b.tokens+n, size.Burst)
		b.since = b.since.Add(time.Duration(n) * size.Every)
	}
	if b.tokens >= size.Burst {
		b.tokens, b.since = size.Burst, now
	}
}

// next is when b has a token again.
func (b *bucket) next(now time.Time, size BucketSize) time.Time {
	if b.tokens > 0 {
		return now
	}
	return b.since.Add(size.Every)
}

// agentLimiter is linear_graphql's per-issue limit: a bucket of calls and one of
// comments for each issue. Its zero value is ready; it is safe for concurrent use.
type agentLimiter struct {
	mu     sync.Mutex
	issues map[string]*[2]bucket // calls, comments; dropped when both are full
}

// take spends one call and comments comments of issue's buckets, or nothing, and then
// says which limit refuses the call and when to come back.
func (l *agentLimiter) take(issue string, now time.Time, comments int) *AgentError {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.issues == nil {
		l.issues = map[string]*[2]bucket{}
	}
	// A full bucket is the same as none: dropping them keeps the map as small as the
	// number of issues whose agents called lately.
	for id, b := range l.issues {
		b[0].refill(now, AgentCallLimit)
		b[1].refill(now, AgentCommentLimit)
		if b[0].tokens >= AgentCallLimit.Burst && b[1].tokens >= AgentCommentLimit.Burst {
			delete(l.issues, id)
		}
	}
	b := l.issues[issue]
	if b == nil {
		b = &[2]bucket{}
		b[0].refill(now, AgentCallLimit)
		b[1].refill(now, AgentCommentLimit)
	}
	switch {
	case b[0].tokens < 1:
		return limited(now, "calls", AgentCallLimit, b[0].next(now, AgentCallLimit))
	case comments > b[1].tokens:
		return limited(now, "comments", AgentCommentLimit, b[1].next(now, AgentCommentLimit))
	}
	b[0].tokens--
	b[1].tokens -= comments
	l.issues[issue] = b
	return nil
}

func limited(now time.Time, what string, size BucketSize, at time.Time) *AgentError {
	if frac := at.Sub(at.Truncate(time.Second)); frac > 0 {
		at = at.Add(time.Second - frac)
	}
	return refuse(KindRateLimited, "linear_graphql is rate limited for this issue: at most %d %s at once, then 1 every %s; "+
		"the next may be sent in %s, at %s. Until then calls fail without reaching Linear: gather what you need into fewer calls",
		size.Burst, what, size.Every, at.Sub(now).Round(time.Second), at.UTC().Format(time.RFC3339))
}
