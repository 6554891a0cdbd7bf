package config

import "time"

// ReactionsConfig is what Sortie does after the hand-off (docs/reactions.md): the
// `reactions:` section (and `ci_feedback:`, its deprecated form of
// reactions.ci_failure) and the `github:` block naming the code host when the tracker
// is not GitHub. Zero (both kinds nil) when no reaction is configured.
type ReactionsConfig struct {
	// CI is reactions.ci_failure (or ci_feedback): failing checks on the pull
	// request's head go back to the agent. nil when off.
	CI *CIReaction
	// Review is reactions.review_comments: change requests by humans go back to the
	// agent. nil when off.
	Review *ReviewReaction
	// GitHub is where the pull requests are: the tracker's endpoint, token and
	// project when tracker.kind is github, else the top-level `github:` block
	// (endpoint, api_key, project). Zero when no reaction is on.
	GitHub CodeHost
}

// Enabled reports whether any reaction kind is on.
func (r ReactionsConfig) Enabled() bool { return r.CI != nil || r.Review != nil }

// CodeHost is the GitHub repository reactions watch, and how to reach it.
type CodeHost struct {
	Endpoint string // API base URL; "" = https://api.github.com
	APIKey   string // secret: never log it
	Project  string // owner/repo
}

// ReactionLimits are the fields every reaction kind has.
type ReactionLimits struct {
	// Provider is the code host's kind: "github", the only one.
	Provider string
	// MaxRetries is how many reaction runs of this kind an issue gets before it is
	// escalated (default 2 for CI; review_comments uses max_continuation_turns,
	// default 3, and max_retries when only that is given).
	MaxRetries int
	// Escalation is "label" (default) or "comment"; EscalationLabel is the label
	// (default "needs-human").
	Escalation      string
	EscalationLabel string
	// PollInterval is how often a handed-off issue's pull request is looked at for
	// this kind (reactions.<kind>.poll_interval_ms).
	PollInterval time.Duration
}

// CIReaction is reactions.ci_failure.
type CIReaction struct {
	ReactionLimits
	// MaxLogLines is how many of the last lines of the first failing job's log go to
	// the agent (default 50, at most 1000).
	MaxLogLines int
}

// ReviewReaction is reactions.review_comments.
type ReviewReaction struct {
	ReactionLimits
	// Debounce is how long after a reviewer's newest comment Sortie waits before
	// reacting, so a burst of comments becomes one run (default 60 s).
	Debounce time.Duration
}

// SelfReviewConfig is `self_review:` (docs/reactions.md#self-review): before the
// hand-off, the agent's diff and the verification commands' results go back to it in
// a review turn that writes a verdict, with fix turns up to MaxIterations.
type SelfReviewConfig struct {
	Enabled              bool
	MaxIterations        int           // 1..10, default 3
	VerificationCommands []string      // required when enabled; run in the agent's sandbox
	VerificationTimeout  time.Duration // per command, default 2 min
	MaxDiffBytes         int           // default 100 KiB
	Reviewer             string        // "same", the only value
}
