package agenttools

import (
	"strings"
	"sync"
	"time"

	"sortie/internal/agentsock"
	"sortie/internal/config"
)

// The scopes of notify_operator's rate limit, as Options.NotifyRateLimited and the
// sortie_notify_rate_limited_total metric name them.
const (
	NotifyScopeIssue  = "issue"
	NotifyScopeGlobal = "global"
)

// notifyLimiter is notify_operator's rate limit (notify_operator.rate_limit): a token
// bucket per issue and one for all issues together, so a looping agent cannot flood the
// operator's channels, and many agents together cannot either. The sizes are read at
// each call, so a reload applies to the next call; what the buckets hold survives it.
// Its zero value is ready to use; it is safe for concurrent use.
type notifyLimiter struct {
	mu     sync.Mutex
	issues map[string]*tokenBucket // by issue id; a full bucket is dropped
	global tokenBucket
}

// tokenBucket holds whole messages that may be sent. One more accrues each Every after
// since, up to Burst. The zero bucket is full.
type tokenBucket struct {
	tokens int
	since  time.Time // when the message now accruing started to; now while full; zero before first use
}

// refill brings b to now under size: the messages accrued since it was last looked at,
// and a Burst that a reload lowered.
func (b *tokenBucket) refill(now time.Time, size config.TokenBucket) {
	if b.since.IsZero() {
		b.tokens, b.since = size.Burst, now
		return
	}
	if elapsed := now.Sub(b.since); b.tokens < size.Burst && elapsed >= size.Every {
		n := elapsed / size.Every
		if n >= time.Duration(size.Burst-b.tokens) {
			b.tokens = size.Burst
		} else {
			b.tokens += int(n)
			b.since = b.since.Add(n * size.Every)
		}
	}
	if b.tokens >= size.Burst {
		// Nothing accrues in a full bucket: the next message taken starts the clock.
		b.tokens, b.since = size.Burst, now
	}
}

// next is when b next has a message: now when it has one.
func (b *tokenBucket) next(now time.Time, size config.TokenBucket) time.Time {
	if b.tokens > 0 {
		return now
	}
	return b.since.Add(size.Every)
}

// notifyRefusal says which limit refused a call and when the next call may succeed.
type notifyRefusal struct {
	scope   string
	size    config.TokenBucket
	retryAt time.Time // rounded up to the second
	wait    time.Duration
}

// take spends one message of issue's bucket and of the global one, or neither. When it
// refuses, the refusal names the limit that holds the call back longest.
func (l *notifyLimiter) take(issue string, now time.Time, limit config.NotifyRateLimit) *notifyRefusal {
	perIssue, global := bucketSize(limit.PerIssue, config.DefaultNotifyPerIssue), bucketSize(limit.Global, config.DefaultNotifyGlobal)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.issues == nil {
		l.issues = map[string]*tokenBucket{}
	}
	// A full bucket is the same as none: dropping them keeps the map as small as the
	// number of issues that notified lately.
	for id, b := range l.issues {
		if b.refill(now, perIssue); b.tokens >= perIssue.Burst {
			delete(l.issues, id)
		}
	}
	ib := l.issues[issue]
	if ib == nil {
		ib = &tokenBucket{}
		ib.refill(now, perIssue)
	}
	l.global.refill(now, global)
	if ib.tokens > 0 && l.global.tokens > 0 {
		ib.tokens--
		l.global.tokens--
		l.issues[issue] = ib
		return nil
	}
	r := &notifyRefusal{scope: NotifyScopeIssue, size: perIssue, retryAt: ib.next(now, perIssue)}
	if g := l.global.next(now, global); ib.tokens > 0 || g.After(r.retryAt) {
		r.scope, r.size, r.retryAt = NotifyScopeGlobal, global, g
	}
	if frac := r.retryAt.Sub(r.retryAt.Truncate(time.Second)); frac > 0 {
		r.retryAt = r.retryAt.Add(time.Second - frac)
	}
	r.wait = r.retryAt.Sub(now)
	return r
}

// bucketSize is size with the default for a zero field (a Config built by hand).
func bucketSize(size, def config.TokenBucket) config.TokenBucket {
	if size.Burst <= 0 {
		size.Burst = def.Burst
	}
	if size.Every <= 0 {
		size.Every = def.Every
	}
	return size
}

// toolError is the rate_limited error the agent gets: which limit, its size, and when to
// try again. It does not name the configuration keys: the agent cannot change them and
// should not try.
func (r *notifyRefusal) toolError() *agentsock.Error {
	who := "this issue"
	if r.scope == NotifyScopeGlobal {
		who = "all issues together"
	}
	return agentsock.Errorf("rate_limited",
		"notify_operator is rate limited for %s: at most %d %s at once, then 1 every %s. "+
			"The next message may be sent in %s, at %s; until then calls fail without sending. "+
			"Gather what the operator needs to know into one message.",
		who, r.size.Burst, plural(r.size.Burst, "message", "messages"), shortDuration(r.size.Every),
		shortDuration(r.wait), r.retryAt.UTC().Format(time.RFC3339))
}

// shortDuration renders d rounded up to the second without zero units: 10m, 1h30m, 45s.
func shortDuration(d time.Duration) string {
	if frac := d % time.Second; frac > 0 {
		d += time.Second - frac
	}
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
