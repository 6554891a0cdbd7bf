package config

import (
	"testing"
	"time"
)

func TestNotifyRateLimit_DefaultsWhenAbsent(t *testing.T) {
	cfg, _ := mustLoad(t, minimal, nil)
	want := NotifyRateLimit{
		PerIssue: TokenBucket{Burst: 5, Every: 10 * time.Minute},
		Global:   TokenBucket{Burst: 20, Every: time.Minute},
	}
	if got := cfg.NotifyOperator.RateLimit; got != want {
		t.Errorf("NotifyOperator.RateLimit = %+v, want %+v", got, want)
	}
	if _, ok := cfg.Extensions["notify_operator"]; ok {
		t.Error("notify_operator is kept in Extensions, want a typed section only")
	}
}

func TestNotifyRateLimit_ExplicitValues(t *testing.T) {
	tests := []struct {
		name string
		fm   string
		want NotifyRateLimit
	}{
		{"both buckets",
			"notify_operator: {rate_limit: {per_issue: {burst: 2, every_ms: 300000}, global: {burst: 50, every_ms: 30000}}}\n",
			NotifyRateLimit{PerIssue: TokenBucket{2, 5 * time.Minute}, Global: TokenBucket{50, 30 * time.Second}}},
		{"one field keeps the other's default",
			"notify_operator: {rate_limit: {per_issue: {burst: 1}}}\n",
			NotifyRateLimit{PerIssue: TokenBucket{1, 10 * time.Minute}, Global: DefaultNotifyGlobal}},
		{"numbers as strings and whole floats",
			"notify_operator: {rate_limit: {global: {burst: \"7\", every_ms: 60000.0}}}\n",
			NotifyRateLimit{PerIssue: DefaultNotifyPerIssue, Global: TokenBucket{7, time.Minute}}},
		{"bounds are inclusive",
			"notify_operator: {rate_limit: {per_issue: {burst: 1000, every_ms: 86400000}, global: {burst: 1, every_ms: 1000}}}\n",
			NotifyRateLimit{PerIssue: TokenBucket{1000, 24 * time.Hour}, Global: TokenBucket{1, time.Second}}},
		{"null is absent",
			"notify_operator: {rate_limit: {per_issue: null, global: {burst: null}}}\n",
			NotifyRateLimit{PerIssue: DefaultNotifyPerIssue, Global: DefaultNotifyGlobal}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, _ := mustLoad(t, minimal+tt.fm, nil)
			if got := cfg.NotifyOperator.RateLimit; got != tt.want {
				t.Errorf("NotifyOperator.RateLimit = %+v, want %+v", got, tt.want)
			}
			if len(cfg.Warnings) > 0 {
				t.Errorf("warnings:\n%s", problemLines(cfg.Warnings))
			}
		})
	}
}

func TestNotifyRateLimit_InvalidValuesAreErrors(t *testing.T) {
	tests := []struct {
		name, fm, want string
	}{
		{"section not a map", "notify_operator: [rate_limit]\n",
			"config: notify_operator: must be a map (got a list)"},
		{"rate_limit not a map", "notify_operator: {rate_limit: 5}\n",
			"config: notify_operator.rate_limit: must be a map (got 5)"},
		{"bucket not a map", "notify_operator: {rate_limit: {per_issue: 5}}\n",
			"config: notify_operator.rate_limit.per_issue: must be a map (got 5)"},
		{"zero burst", "notify_operator: {rate_limit: {per_issue: {burst: 0}}}\n",
			"config: notify_operator.rate_limit.per_issue.burst: must be between 1 and 1000 messages (got 0)"},
		{"negative burst", "notify_operator: {rate_limit: {global: {burst: -3}}}\n",
			"config: notify_operator.rate_limit.global.burst: must be between 1 and 1000 messages (got -3)"},
		{"burst too large", "notify_operator: {rate_limit: {global: {burst: 1001}}}\n",
			"config: notify_operator.rate_limit.global.burst: must be between 1 and 1000 messages (got 1001)"},
		{"fractional burst", "notify_operator: {rate_limit: {per_issue: {burst: 2.5}}}\n",
			"config: notify_operator.rate_limit.per_issue.burst: must be a whole number (got 2.5)"},
		{"every_ms below a second", "notify_operator: {rate_limit: {per_issue: {every_ms: 999}}}\n",
			"config: notify_operator.rate_limit.per_issue.every_ms: must be between 1000 (1 s) and 86400000 (24 h) milliseconds (got 999)"},
		{"every_ms zero", "notify_operator: {rate_limit: {global: {every_ms: 0}}}\n",
			"config: notify_operator.rate_limit.global.every_ms: must be between 1000 (1 s) and 86400000 (24 h) milliseconds (got 0)"},
		{"every_ms above a day", "notify_operator: {rate_limit: {global: {every_ms: 86400001}}}\n",
			"config: notify_operator.rate_limit.global.every_ms: must be between 1000 (1 s) and 86400000 (24 h) milliseconds (got 86400001)"},
		{"every_ms as a Go duration", "notify_operator: {rate_limit: {global: {every_ms: 1m}}}\n",
			`config: notify_operator.rate_limit.global.every_ms: must be an integer (got "1m")`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, problems, _ := checkFrontMatter(t, minimal+tt.fm, nil)
			if cfg != nil {
				t.Fatalf("the file loaded; want the error %q", tt.want)
			}
			if !hasProblem(problems, SeverityError, tt.want) {
				t.Errorf("want the error %q, got:\n%s", tt.want, problemLines(problems))
			}
		})
	}
}

func TestNotifyRateLimit_UnknownKeysWarn(t *testing.T) {
	tests := []struct{ fm, want string }{
		{"notify_operator: {rate_limits: {}}\n",
			"config: notify_operator.rate_limits: unknown key in notify_operator; it is ignored (known: rate_limit)"},
		{"notify_operator: {rate_limit: {issue: {burst: 1}}}\n",
			"config: notify_operator.rate_limit.issue: unknown key in notify_operator.rate_limit; it is ignored (known: per_issue, global)"},
		{"notify_operator: {rate_limit: {global: {every: 1m}}}\n",
			"config: notify_operator.rate_limit.global.every: unknown key in notify_operator.rate_limit.global; it is ignored (known: burst, every_ms)"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			cfg, problems, _ := checkFrontMatter(t, minimal+tt.fm, nil)
			if cfg == nil {
				t.Fatalf("the file did not load:\n%s", problemLines(problems))
			}
			if !hasProblem(problems, SeverityWarning, tt.want) {
				t.Errorf("want the warning %q, got:\n%s", tt.want, problemLines(problems))
			}
		})
	}
}
