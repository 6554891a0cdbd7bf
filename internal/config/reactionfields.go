package config

import (
	"fmt"
	"math"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// This file reads `reactions:`, its deprecated form `ci_feedback:`, the `github:` block
// and `self_review:` into Config.Reactions and Config.SelfReview (reactions.go). Their
// keys are settings of the table in fields.go (reactionSettings, selfReviewSettings), so
// docs/configuration.md is checked against them as against every other section.

// The defaults and bounds of reactions and self_review (docs/reactions.md).
const (
	// ReactionProviderGitHub is the only code host reactions know.
	ReactionProviderGitHub = "github"
	// EscalationLabel and EscalationComment are the values of reactions.<kind>.escalation:
	// label the issue, or comment on it, when a reaction kind runs out of retries.
	EscalationLabel   = "label"
	EscalationComment = "comment"

	DefaultEscalation      = EscalationLabel
	DefaultEscalationLabel = "needs-human"

	DefaultCIMaxRetries   = 2
	DefaultCIMaxLogLines  = 50
	maxCIMaxLogLines      = 1000
	DefaultCIPollInterval = 60 * time.Second

	DefaultReviewMaxContinuationTurns = 3
	DefaultReviewDebounce             = 60 * time.Second
	DefaultReviewPollInterval         = 120 * time.Second

	// minReactionPollMS is the shortest poll_interval_ms accepted. The reference daemon
	// wants 30000 for review_comments; shorter intervals are allowed here but spend the
	// token's rate budget faster (docs/configuration.md#reactions).
	minReactionPollMS = 1000

	// SelfReviewerSame is the only reviewer: the agent that did the work.
	SelfReviewerSame = "same"

	DefaultSelfReviewMaxIterations       = 3
	maxSelfReviewIterations              = 10
	DefaultSelfReviewVerificationTimeout = 120 * time.Second
	DefaultSelfReviewMaxDiffBytes        = 100 << 10
	maxSelfReviewDiffBytes               = 1 << 20
)

// The reaction kinds Sortie acts on, as reactions.<kind> keys.
const (
	reactionCIFailure      = "ci_failure"
	reactionReviewComments = "review_comments"
)

// unsupportedReactions are the reference daemon's other reaction kinds: kept, so its
// files load, but each draws a not_supported warning saying what does not happen.
var unsupportedReactions = map[string]string{
	"merge_conflict":   "pull requests with merge conflicts are not sent back to the agent",
	"bot_review":       "review comments by bots are not sent back to the agent",
	"label_command":    "label commands on the issue are not acted on",
	"label_commands":   "label commands on the issue are not acted on",
	"auto_merge":       "pull requests are not merged",
	"merge_completion": "merged pull requests do not move the issue",
}

// reactionKindRE is what a reactions.<kind> key must match (as in the reference daemon).
var reactionKindRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z][a-z0-9_-]*$`) })

// reactionSettings are the keys of reactions.ci_failure, reactions.review_comments,
// ci_feedback and github. The sections are read by readReactions, readCIFeedback and
// readGitHub, which call these settings' readers on the kinds that are present.
var reactionSettings = slices.Concat(
	ciSettings("reactions.ci_failure", "provider"),
	[]setting{
		provider("reactions.review_comments.provider", "the code host whose change requests go back to the agent: github; absent: off",
			func(c *Config) *ReactionLimits { return &c.Reactions.Review.ReactionLimits }),
		{Key: "reactions.review_comments.max_continuation_turns", Type: "integer", Default: strconv.Itoa(DefaultReviewMaxContinuationTurns), Zero: zeroRefused,
			Doc: "review runs an issue gets before it is escalated",
			read: func(b *builder, c *Config, sec, _ map[string]any) {
				const key = "reactions.review_comments.max_continuation_turns"
				if n, ok := b.bounded(sec, key, 1, math.MaxInt32, "must be a positive number of turns"); ok {
					c.Reactions.Review.MaxRetries = int(n)
				}
			}},
		{Key: "reactions.review_comments.max_retries", Type: "integer", Default: "none", Zero: zeroDisables,
			Doc: "max_continuation_turns, when that is absent",
			read: func(b *builder, c *Config, sec, _ map[string]any) {
				const key = "reactions.review_comments.max_retries"
				if _, set := b.value(sec, key); !set {
					return
				}
				n := int(b.count(sec, key, -1, zeroNA))
				if _, turns := b.value(sec, "reactions.review_comments.max_continuation_turns"); !turns && n >= 0 {
					c.Reactions.Review.MaxRetries = n
				}
			}},
		{Key: "reactions.review_comments.debounce_ms", Type: "duration", Default: ms(DefaultReviewDebounce), Zero: zeroDisables,
			Doc: "quiet time after the newest review comment before the agent runs",
			read: func(b *builder, c *Config, sec, _ map[string]any) {
				const key = "reactions.review_comments.debounce_ms"
				if n, ok := b.bounded(sec, key, 0, maxMillis, "must be a non-negative number of milliseconds"); ok {
					c.Reactions.Review.Debounce = time.Duration(n) * time.Millisecond
				}
			}},
		pollInterval("reactions.review_comments.poll_interval_ms", DefaultReviewPollInterval,
			func(c *Config) *ReactionLimits { return &c.Reactions.Review.ReactionLimits }),
		escalation("reactions.review_comments.escalation", func(c *Config) *ReactionLimits { return &c.Reactions.Review.ReactionLimits }),
		escalationLabel("reactions.review_comments.escalation_label", func(c *Config) *ReactionLimits { return &c.Reactions.Review.ReactionLimits }),
	},
	ciSettings("ci_feedback", "kind"),
	[]setting{
		ref("github.endpoint", "https://api.github.com", "GitHub's API base URL (GitHub Enterprise: https://host/api/v3)",
			func(c *Config) *string { return &c.Reactions.GitHub.Endpoint }),
		{Key: "github.api_key", Type: "string, $VAR allowed", Default: "none",
			Doc: "the GitHub token reactions use when the tracker is not GitHub; $VAR expanded anywhere",
			read: func(b *builder, c *Config, sec, _ map[string]any) {
				c.Reactions.GitHub.APIKey = b.expandedKey(sec, "github.api_key")
			}},
		ref("github.project", "none", "the repository whose pull requests reactions watch, as owner/repo",
			func(c *Config) *string { return &c.Reactions.GitHub.Project }),
	},
)

// ciSettings are the keys of a CI reaction block at prefix: reactions.ci_failure, whose
// provider key is `provider`, or ci_feedback, whose is `kind`.
func ciSettings(prefix, providerKey string) []setting {
	limits := func(c *Config) *ReactionLimits { return &c.Reactions.CI.ReactionLimits }
	return []setting{
		provider(prefix+"."+providerKey, "the code host whose failing checks go back to the agent: github; absent: off", limits),
		{Key: prefix + ".max_retries", Type: "integer", Default: strconv.Itoa(DefaultCIMaxRetries), Zero: zeroDisables,
			Doc: "CI runs an issue gets before it is escalated",
			read: func(b *builder, c *Config, sec, _ map[string]any) {
				c.Reactions.CI.MaxRetries = int(b.count(sec, prefix+".max_retries", DefaultCIMaxRetries, zeroNA))
			}},
		{Key: prefix + ".max_log_lines", Type: "integer", Default: strconv.Itoa(DefaultCIMaxLogLines), Zero: zeroRefused,
			Doc: "last lines of the failing job's log the agent gets",
			read: func(b *builder, c *Config, sec, _ map[string]any) {
				wrong := fmt.Sprintf("must be between 1 and %d lines", maxCIMaxLogLines)
				if n, ok := b.bounded(sec, prefix+".max_log_lines", 1, maxCIMaxLogLines, wrong); ok {
					c.Reactions.CI.MaxLogLines = int(n)
				}
			}},
		pollInterval(prefix+".poll_interval_ms", DefaultCIPollInterval, limits),
		escalation(prefix+".escalation", limits),
		escalationLabel(prefix+".escalation_label", limits),
	}
}

// provider reads a reaction kind's code host: only github; absent or empty leaves the
// kind off.
func provider(key, doc string, dst func(*Config) *ReactionLimits) setting {
	return setting{Key: key, Type: "string", Default: "none (off)", Doc: doc,
		read: func(b *builder, c *Config, sec, _ map[string]any) {
			s, ok := b.str(sec, key)
			switch s = strings.ToLower(s); {
			case !ok || s == "":
			case s != ReactionProviderGitHub:
				b.invalid(key, "unknown provider; supported: "+ReactionProviderGitHub, s)
			default:
				dst(c).Provider = s
			}
		}}
}

// pollInterval reads a reaction kind's poll_interval_ms: at least minReactionPollMS.
func pollInterval(key string, def time.Duration, dst func(*Config) *ReactionLimits) setting {
	return setting{Key: key, Type: "duration", Default: ms(def), Zero: zeroRefused,
		Doc: "time between looks at a handed-off issue's pull request",
		read: func(b *builder, c *Config, sec, _ map[string]any) {
			wrong := fmt.Sprintf("must be at least %d milliseconds (1 s)", minReactionPollMS)
			if n, ok := b.bounded(sec, key, minReactionPollMS, maxMillis, wrong); ok {
				dst(c).PollInterval = time.Duration(n) * time.Millisecond
			}
		}}
}

// escalation reads what happens when a reaction kind runs out of retries.
func escalation(key string, dst func(*Config) *ReactionLimits) setting {
	return setting{Key: key, Type: "string", Default: DefaultEscalation,
		Doc: "when retries run out: label the issue, or comment on it",
		read: func(b *builder, c *Config, sec, _ map[string]any) {
			if s, ok := b.str(sec, key); ok && s != "" {
				switch s = strings.ToLower(s); s {
				case EscalationLabel, EscalationComment:
					dst(c).Escalation = s
				default:
					b.invalid(key, "must be label or comment", s)
				}
			}
		}}
}

// escalationLabel reads the label escalation puts on the issue.
func escalationLabel(key string, dst func(*Config) *ReactionLimits) setting {
	return setting{Key: key, Type: "string", Default: DefaultEscalationLabel, Doc: "the label escalation adds",
		read: func(b *builder, c *Config, sec, _ map[string]any) {
			if _, set := b.value(sec, key); !set {
				return
			}
			s, ok := b.str(sec, key)
			switch {
			case !ok:
			case s == "":
				b.errorf(key, "must not be empty; remove the key for %s", DefaultEscalationLabel)
			default:
				dst(c).EscalationLabel = s
			}
		}}
}

// readKeys calls the readers of the settings directly under prefix on sec, the map at
// prefix.
func (b *builder) readKeys(cfg *Config, prefix string, sec, raw map[string]any) {
	for _, s := range settings {
		if rest, ok := strings.CutPrefix(s.Key, prefix+"."); ok && !strings.Contains(rest, ".") && s.read != nil {
			s.read(b, cfg, sec, raw)
		}
	}
}

// defaultLimits are a reaction kind's limits before its block is read.
func defaultLimits(retries int, poll time.Duration) ReactionLimits {
	return ReactionLimits{MaxRetries: retries, Escalation: DefaultEscalation, EscalationLabel: DefaultEscalationLabel, PollInterval: poll}
}

// readReactions reads `reactions:`: a map of reaction kind to its settings. ci_failure
// and review_comments are read; the reference daemon's other kinds, and unknown ones,
// draw a not_supported warning. A kind is on when its block names a provider.
func (b *builder) readReactions(cfg *Config, raw map[string]any) {
	v, ok := raw["reactions"]
	if !ok || v == nil {
		return
	}
	sec, isMap := v.(map[string]any)
	if !isMap {
		b.invalid("reactions", "must be a map of reaction kind to its settings", v)
		return
	}
	for _, kind := range sortedKeys(sec) {
		field := "reactions." + kind
		switch {
		case !reactionKindRE().MatchString(kind):
			b.errorf(field, "is not a reaction kind: a kind is a lower-case letter, then lower-case letters, digits, _ or - (supported: %s, %s)", reactionCIFailure, reactionReviewComments)
		case kind == reactionCIFailure || kind == reactionReviewComments:
		default:
			what, known := unsupportedReactions[kind]
			if !known {
				what = "nothing reads it"
			}
			b.warnf(CheckNotSupported, field, "reaction kind %s is not supported (supported: %s, %s): %s; it is kept so the file loads",
				kind, reactionCIFailure, reactionReviewComments, what)
		}
	}
	if m := b.subMap(sec, reactionCIFailure, "reactions."+reactionCIFailure, knownKeys("reactions."+reactionCIFailure)); m != nil {
		b.readCI(cfg, "reactions."+reactionCIFailure, "provider", m, raw)
	}
	const review = "reactions." + reactionReviewComments
	if m := b.subMap(sec, reactionReviewComments, review, knownKeys(review)); m != nil {
		cfg.Reactions.Review = &ReviewReaction{
			ReactionLimits: defaultLimits(DefaultReviewMaxContinuationTurns, DefaultReviewPollInterval),
			Debounce:       DefaultReviewDebounce,
		}
		b.readKeys(cfg, review, m, raw)
		if cfg.Reactions.Review.Provider == "" {
			b.offWithoutProvider(review+".provider", review)
			cfg.Reactions.Review = nil
		}
	}
}

// readCI reads a CI reaction block at prefix (reactions.ci_failure or ci_feedback) into
// Config.Reactions.CI, which stays nil when the block names no provider.
func (b *builder) readCI(cfg *Config, prefix, providerKey string, sec, raw map[string]any) {
	cfg.Reactions.CI = &CIReaction{
		ReactionLimits: defaultLimits(DefaultCIMaxRetries, DefaultCIPollInterval),
		MaxLogLines:    DefaultCIMaxLogLines,
	}
	b.readKeys(cfg, prefix, sec, raw)
	if cfg.Reactions.CI.Provider == "" {
		b.offWithoutProvider(prefix+"."+providerKey, prefix)
		cfg.Reactions.CI = nil
	}
}

// offWithoutProvider warns that a reaction block is off for want of a provider (unless
// its provider is wrong, an error already).
func (b *builder) offWithoutProvider(field, block string) {
	if !b.failed(field) {
		b.warnf(block, field, "is not set, so %s is off; set it to %s to turn it on", block, ReactionProviderGitHub)
	}
}

// readCIFeedback reads `ci_feedback:`, the deprecated form of reactions.ci_failure
// (`kind` in place of `provider`). reactions.ci_failure wins when both are present.
func (b *builder) readCIFeedback(cfg *Config, raw map[string]any) {
	if v, ok := raw["ci_feedback"]; !ok || v == nil {
		return
	}
	if reactions, _ := raw["reactions"].(map[string]any); reactions[reactionCIFailure] != nil {
		b.warnf(CheckDeprecated, "ci_feedback", "is deprecated and ignored: reactions.%s is set and takes precedence; remove ci_feedback", reactionCIFailure)
		return
	}
	sec := b.section(raw, "ci_feedback", knownKeys("ci_feedback"))
	if sec == nil {
		return
	}
	b.warnf(CheckDeprecated, "ci_feedback", "is deprecated; write it as reactions.%s, with provider in place of kind", reactionCIFailure)
	b.readCI(cfg, "ci_feedback", "kind", sec, raw)
}

// readGitHub fills Reactions.GitHub, the repository reactions watch, when a reaction is
// on: the tracker's endpoint, api_key and project when tracker.kind is github, else the
// top-level `github:` block's, api_key and project required.
func (b *builder) readGitHub(cfg *Config, raw map[string]any) {
	v, present := raw["github"]
	present = present && v != nil
	if cfg.Tracker.Kind == "github" {
		if present {
			b.warnf("github", "github", "is ignored: tracker.kind is github, so reactions use tracker.endpoint, tracker.api_key and tracker.project; remove the block")
		}
		if cfg.Reactions.Enabled() {
			t := cfg.Tracker
			cfg.Reactions.GitHub = CodeHost{Endpoint: t.Endpoint, APIKey: t.APIKey, Project: t.Project}
		}
		return
	}
	if !cfg.Reactions.Enabled() {
		if present {
			b.section(raw, "github", knownKeys("github"))
			b.warnf("github", "github", "is ignored: it is read only when a reaction (reactions.%s or reactions.%s) is on", reactionCIFailure, reactionReviewComments)
		}
		return
	}
	sec := b.section(raw, "github", knownKeys("github"))
	if sec == nil {
		if !b.failed("github") {
			b.errorf("github", "is required when a reaction is on and tracker.kind is %s: add a github: block with api_key and project (owner/repo), the repository whose pull requests reactions watch", orNone(cfg.Tracker.Kind))
		}
		return
	}
	b.readKeys(cfg, "github", sec, raw)
	gh := &cfg.Reactions.GitHub
	if e := gh.Endpoint; e != "" && !b.failed("github.endpoint") {
		if u, err := url.Parse(e); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			b.invalid("github.endpoint", "must be an http or https URL, such as https://github.example.com/api/v3", e)
		}
	}
	if gh.APIKey == "" && !b.failed("github.api_key") {
		b.errorf("github.api_key", "is required when a reaction is on and tracker.kind is %s; set it, for example to $GITHUB_TOKEN", orNone(cfg.Tracker.Kind))
	}
	switch {
	case b.failed("github.project"):
	case gh.Project == "":
		b.errorf("github.project", "is required when a reaction is on and tracker.kind is %s; set it to the repository as owner/repo", orNone(cfg.Tracker.Kind))
	case !isOwnerRepo(gh.Project):
		b.invalid("github.project", "must be owner/repo", gh.Project)
	}
}

// isOwnerRepo reports whether s is a GitHub repository as owner/repo.
func isOwnerRepo(s string) bool {
	owner, repo, ok := strings.Cut(s, "/")
	return ok && owner != "" && repo != "" && !strings.Contains(repo, "/")
}

func orNone(s string) string {
	if s == "" {
		return "unset"
	}
	return s
}

// selfReviewSettings are the keys of `self_review:`. When enabled is false (the
// default) nothing else is read, and SelfReview stays zero.
var selfReviewSettings = []setting{
	{Key: "self_review.enabled", Type: "bool", Default: "false", Doc: "review the agent's own work before the hand-off",
		read: func(b *builder, c *Config, sec, _ map[string]any) {
			if b.boolean(sec, "self_review.enabled") {
				c.SelfReview = SelfReviewConfig{
					Enabled:             true,
					MaxIterations:       DefaultSelfReviewMaxIterations,
					VerificationTimeout: DefaultSelfReviewVerificationTimeout,
					MaxDiffBytes:        DefaultSelfReviewMaxDiffBytes,
					Reviewer:            SelfReviewerSame,
				}
			}
		}},
	{Key: "self_review.max_iterations", Type: "integer", Default: strconv.Itoa(DefaultSelfReviewMaxIterations), Zero: zeroRefused,
		Doc: "review turns before the hand-off, 1 to 10",
		read: func(b *builder, c *Config, sec, _ map[string]any) {
			if !c.SelfReview.Enabled {
				return
			}
			wrong := fmt.Sprintf("must be between 1 and %d", maxSelfReviewIterations)
			if n, ok := b.bounded(sec, "self_review.max_iterations", 1, maxSelfReviewIterations, wrong); ok {
				c.SelfReview.MaxIterations = int(n)
			}
		}},
	{Key: "self_review.verification_commands", Type: "list of strings", Default: "none",
		Doc: "commands whose results the review sees; required when enabled", read: (*builder).readVerificationCommands},
	{Key: "self_review.verification_timeout_ms", Type: "duration", Default: ms(DefaultSelfReviewVerificationTimeout), Zero: zeroRefused,
		Doc: "limit of each verification command",
		read: func(b *builder, c *Config, sec, _ map[string]any) {
			if !c.SelfReview.Enabled {
				return
			}
			if n, ok := b.bounded(sec, "self_review.verification_timeout_ms", 1, maxMillis, "must be a positive number of milliseconds"); ok {
				c.SelfReview.VerificationTimeout = time.Duration(n) * time.Millisecond
			}
		}},
	{Key: "self_review.max_diff_bytes", Type: "integer", Default: strconv.Itoa(DefaultSelfReviewMaxDiffBytes), Zero: zeroRefused,
		Doc: "the largest diff the review turn is shown",
		read: func(b *builder, c *Config, sec, _ map[string]any) {
			if !c.SelfReview.Enabled {
				return
			}
			wrong := fmt.Sprintf("must be between 1 and %d (1 MiB) bytes", maxSelfReviewDiffBytes)
			if n, ok := b.bounded(sec, "self_review.max_diff_bytes", 1, maxSelfReviewDiffBytes, wrong); ok {
				c.SelfReview.MaxDiffBytes = int(n)
			}
		}},
	{Key: "self_review.reviewer", Type: "string", Default: SelfReviewerSame, Doc: "who reviews: same, the agent that did the work",
		read: func(b *builder, c *Config, sec, _ map[string]any) {
			if !c.SelfReview.Enabled {
				return
			}
			if s, ok := b.str(sec, "self_review.reviewer"); ok && s != "" && !strings.EqualFold(s, SelfReviewerSame) {
				b.invalid("self_review.reviewer", "must be same (the agent that did the work), the only reviewer", s)
			}
		}},
}

// readVerificationCommands reads self_review.verification_commands: a non-empty list of
// non-empty strings when self_review is enabled.
func (b *builder) readVerificationCommands(c *Config, sec, _ map[string]any) {
	const field = "self_review.verification_commands"
	if !c.SelfReview.Enabled {
		return
	}
	v, ok := b.value(sec, field)
	list, isList := v.([]any)
	if ok && !isList {
		b.invalid(field, "must be a list of shell commands", v)
		return
	}
	for i, e := range list {
		item := fmt.Sprintf("%s[%d]", field, i)
		s, isStr := e.(string)
		switch {
		case !isStr:
			b.invalid(item, "must be a string", e)
		case strings.TrimSpace(s) == "":
			b.errorf(item, "must not be empty")
		default:
			c.SelfReview.VerificationCommands = append(c.SelfReview.VerificationCommands, strings.TrimSpace(s))
		}
	}
	if len(list) == 0 {
		b.errorf(field, "is required when self_review.enabled is true: list the commands that check the agent's work, such as [make test]")
	}
}
