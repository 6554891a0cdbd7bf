package config

import "time"

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
