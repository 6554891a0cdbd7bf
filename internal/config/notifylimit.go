package config

import (
	"fmt"
	"time"
)

// NotifyOperatorConfig is the `notify_operator:` section: how often agents may call the
// notify_operator tool. The daemon's own alerts are not limited. Read at every call, so
// a reload applies to the next one.
type NotifyOperatorConfig struct {
	RateLimit NotifyRateLimit
}

// NotifyRateLimit is `notify_operator.rate_limit`: a bucket for each issue, and one for
// all issues together. A call must find a message in both.
type NotifyRateLimit struct {
	PerIssue, Global TokenBucket
}

// TokenBucket is the size of a token bucket: up to Burst messages at once, then one more
// each Every. A zero field (a Config built by hand) means the default.
type TokenBucket struct {
	Burst int
	Every time.Duration
}

// The defaults of notify_operator.rate_limit (docs/notifications.md#rate-limit). Per
// issue: a few messages in a row (blocked, then a question, then done), then six an
// hour; all issues together: 20 in a row, then one a minute, well under the 1 message
// per second a Slack incoming webhook accepts.
var (
	DefaultNotifyPerIssue = TokenBucket{Burst: 5, Every: 10 * time.Minute}
	DefaultNotifyGlobal   = TokenBucket{Burst: 20, Every: time.Minute}
)

// Bounds of a TokenBucket in WORKFLOW.md.
const (
	maxNotifyBurst   = 1000
	minNotifyEveryMS = 1000             // 1 s
	maxNotifyEveryMS = 24 * 3600 * 1000 // 24 h
)

var (
	notifyOperatorKeys = []string{"rate_limit"}
	notifyRateKeys     = []string{"per_issue", "global"}
	tokenBucketKeys    = []string{"burst", "every_ms"}
)

// buildNotifyOperator reads the `notify_operator:` section. A value out of bounds is an
// error, never silently replaced: a limit the operator did not get is no limit.
func (b *builder) buildNotifyOperator(cfg *Config, raw map[string]any) {
	sec := b.section(raw, "notify_operator", notifyOperatorKeys)
	rl := b.subMap(sec, "rate_limit", "notify_operator.rate_limit", notifyRateKeys)
	r := &cfg.NotifyOperator.RateLimit
	r.PerIssue = b.tokenBucket(rl, "per_issue", DefaultNotifyPerIssue)
	r.Global = b.tokenBucket(rl, "global", DefaultNotifyGlobal)
}

// tokenBucket reads notify_operator.rate_limit.<key>: {burst, every_ms}. An absent
// field keeps its default.
func (b *builder) tokenBucket(rl map[string]any, key string, def TokenBucket) TokenBucket {
	field := "notify_operator.rate_limit." + key
	sec := b.subMap(rl, key, field, tokenBucketKeys)
	tb := def
	if v, ok := b.value(sec, field+".burst"); ok {
		if n, ok := b.integer(field+".burst", v); ok {
			if n < 1 || n > maxNotifyBurst {
				b.invalid(field+".burst", fmt.Sprintf("must be between 1 and %d messages", maxNotifyBurst), v)
			} else {
				tb.Burst = int(n)
			}
		}
	}
	if v, ok := b.value(sec, field+".every_ms"); ok {
		if n, ok := b.integer(field+".every_ms", v); ok {
			if n < minNotifyEveryMS || n > maxNotifyEveryMS {
				b.invalid(field+".every_ms", fmt.Sprintf("must be between %d (1 s) and %d (24 h) milliseconds", minNotifyEveryMS, maxNotifyEveryMS), v)
			} else {
				tb.Every = time.Duration(n) * time.Millisecond
			}
		}
	}
	return tb
}
