package config

import (
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// jiraTracker is a valid non-GitHub tracker for reactions, with the github: block's
// token in GITHUB_TOKEN (reactionEnv).
const jiraTracker = `tracker:
  kind: jira
  endpoint: https://acme.atlassian.net
  api_key: $JIRA_TOKEN
  project: ACME
  active_states: [To Do]
agent: {kind: mock}
`

const githubBlock = "github: {api_key: $GITHUB_TOKEN, project: acme/app}\n"

var reactionEnv = map[string]string{"JIRA_TOKEN": "u@x:t", "GITHUB_TOKEN": "ghp_secret"}

// githubTracker is a valid GitHub tracker: reactions use its credentials.
const githubTracker = `tracker:
  kind: github
  endpoint: https://ghe.example.com/api/v3
  api_key: $GITHUB_TOKEN
  project: acme/app
  active_states: [todo]
agent: {kind: mock}
`

// The defaults of every key, with only the provider given.
func TestReactions_Defaults(t *testing.T) {
	cfg, _ := mustLoad(t, jiraTracker+githubBlock+
		"reactions: {ci_failure: {provider: github}, review_comments: {provider: GitHub}}\nself_review: {enabled: true, verification_commands: [make test]}\n", reactionEnv)
	wantCI := &CIReaction{
		ReactionLimits: ReactionLimits{Provider: "github", MaxRetries: 2, Escalation: "label", EscalationLabel: "needs-human", PollInterval: time.Minute},
		MaxLogLines:    50,
	}
	wantReview := &ReviewReaction{
		ReactionLimits: ReactionLimits{Provider: "github", MaxRetries: 3, Escalation: "label", EscalationLabel: "needs-human", PollInterval: 2 * time.Minute},
		Debounce:       time.Minute,
	}
	wantSelf := SelfReviewConfig{Enabled: true, MaxIterations: 3, VerificationCommands: []string{"make test"},
		VerificationTimeout: 2 * time.Minute, MaxDiffBytes: 102400, Reviewer: "same"}
	checks := []struct {
		name      string
		got, want any
	}{
		{"CI", cfg.Reactions.CI, wantCI},
		{"Review", cfg.Reactions.Review, wantReview},
		{"GitHub", cfg.Reactions.GitHub, CodeHost{APIKey: "ghp_secret", Project: "acme/app"}},
		{"SelfReview", cfg.SelfReview, wantSelf},
		{"Warnings", cfg.Warnings, []Problem(nil)},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s = %+v, want %+v", c.name, c.got, c.want)
		}
	}
	if _, ok := cfg.Extensions["reactions"]; ok {
		t.Error("reactions is still kept in Extensions")
	}
}

// Without the blocks, or with self_review disabled, nothing is on and nothing is read.
func TestReactions_OffByDefault(t *testing.T) {
	for _, fm := range []string{
		minimal,
		minimal + "self_review: {enabled: false, max_iterations: 99, reviewer: other}\n",
		minimal + "reactions: {}\nself_review: {}\n",
		minimal + "reactions: {ci_failure: null}\n",
	} {
		cfg, _ := mustLoad(t, fm, nil)
		if cfg.Reactions.Enabled() || !reflect.DeepEqual(cfg.Reactions, ReactionsConfig{}) || !reflect.DeepEqual(cfg.SelfReview, SelfReviewConfig{}) {
			t.Errorf("%s: Reactions = %+v, SelfReview = %+v, want zero", fm, cfg.Reactions, cfg.SelfReview)
		}
		if len(cfg.Warnings) != 0 {
			t.Errorf("%s: warnings:\n%s", fm, problemLines(cfg.Warnings))
		}
	}
}

// Every value given is read.
func TestReactions_ValuesAreRead(t *testing.T) {
	cfg, _ := mustLoad(t, jiraTracker+
		"github: {endpoint: https://ghe.example.com/api/v3, api_key: 'Bearer ${GITHUB_TOKEN}', project: acme/app}\n"+
		"reactions:\n"+
		"  ci_failure: {provider: github, max_retries: 0, max_log_lines: 1000, poll_interval_ms: 1000, escalation: Comment, escalation_label: stuck}\n"+
		"  review_comments: {provider: github, max_continuation_turns: 5, max_retries: 1, debounce_ms: 0, poll_interval_ms: '30000', escalation: comment}\n"+
		"self_review: {enabled: true, max_iterations: 10, verification_commands: [' go vet ./... ', go test ./...], verification_timeout_ms: 1, max_diff_bytes: 1048576, reviewer: Same}\n",
		reactionEnv)
	if got, want := *cfg.Reactions.CI, (CIReaction{ReactionLimits{"github", 0, "comment", "stuck", time.Second}, 1000}); !reflect.DeepEqual(got, want) {
		t.Errorf("CI = %+v, want %+v", got, want)
	}
	if got, want := *cfg.Reactions.Review, (ReviewReaction{ReactionLimits{"github", 5, "comment", "needs-human", 30 * time.Second}, 0}); !reflect.DeepEqual(got, want) {
		t.Errorf("Review = %+v, want %+v (max_continuation_turns wins over max_retries)", got, want)
	}
	if got, want := cfg.Reactions.GitHub, (CodeHost{"https://ghe.example.com/api/v3", "Bearer ghp_secret", "acme/app"}); got != want {
		t.Errorf("GitHub = %+v, want %+v", got, want)
	}
	want := SelfReviewConfig{true, 10, []string{"go vet ./...", "go test ./..."}, time.Millisecond, 1 << 20, "same"}
	if !reflect.DeepEqual(cfg.SelfReview, want) {
		t.Errorf("SelfReview = %+v, want %+v", cfg.SelfReview, want)
	}
}

// review_comments.max_retries stands for max_continuation_turns when only it is given.
func TestReactions_ReviewMaxRetriesAlone(t *testing.T) {
	cfg, _ := mustLoad(t, jiraTracker+githubBlock+"reactions: {review_comments: {provider: github, max_retries: 1}}\n", reactionEnv)
	if cfg.Reactions.Review.MaxRetries != 1 {
		t.Errorf("Review.MaxRetries = %d, want 1", cfg.Reactions.Review.MaxRetries)
	}
	if cfg.Reactions.CI != nil {
		t.Errorf("CI = %+v, want nil (no ci_failure block)", cfg.Reactions.CI)
	}
}

// Every error names the field, as `config: <field>: <message>`.
func TestReactions_Errors(t *testing.T) {
	const ci = "reactions: {ci_failure: {provider: github, %s}}\n"
	const review = "reactions: {review_comments: {provider: github, %s}}\n"
	const self = "self_review: {enabled: true, verification_commands: [make test], %s}\n"
	with := func(block, kv string) string { return jiraTracker + githubBlock + strings.Replace(block, "%s", kv, 1) }
	selfWith := func(kv string) string { return minimal + strings.Replace(self, "%s", kv, 1) }
	tests := []struct {
		name, fm string
		env      map[string]string
		want     string
	}{
		{"reactions not a map", jiraTracker + "reactions: [ci_failure]\n", nil, "config: reactions: must be a map of reaction kind to its settings"},
		{"kind not a map", jiraTracker + "reactions: {ci_failure: github}\n", nil, "config: reactions.ci_failure: must be a map"},
		{"bad kind key", jiraTracker + "reactions: {CI-Failure: {provider: github}}\n", nil, "config: reactions.CI-Failure: is not a reaction kind"},
		{"kind starting with a digit", jiraTracker + "reactions: {1ci: {}}\n", nil, "config: reactions.1ci: is not a reaction kind"},
		{"ci provider", jiraTracker + "reactions: {ci_failure: {provider: gitlab}}\n", reactionEnv, `config: reactions.ci_failure.provider: unknown provider; supported: github (got "gitlab")`},
		{"ci provider not a string", jiraTracker + "reactions: {ci_failure: {provider: [github]}}\n", reactionEnv, "config: reactions.ci_failure.provider: must be a string"},
		{"ci max_retries negative", with(ci, "max_retries: -1"), reactionEnv, "config: reactions.ci_failure.max_retries: must be non-negative (got -1)"},
		{"ci max_retries not a number", with(ci, "max_retries: many"), reactionEnv, "config: reactions.ci_failure.max_retries:"},
		{"ci max_log_lines 0", with(ci, "max_log_lines: 0"), reactionEnv, "config: reactions.ci_failure.max_log_lines: must be between 1 and 1000 lines (got 0)"},
		{"ci max_log_lines too many", with(ci, "max_log_lines: 1001"), reactionEnv, "config: reactions.ci_failure.max_log_lines: must be between 1 and 1000 lines (got 1001)"},
		{"ci escalation", with(ci, "escalation: email"), reactionEnv, `config: reactions.ci_failure.escalation: must be label or comment (got "email")`},
		{"ci escalation_label empty", with(ci, "escalation_label: ' '"), reactionEnv, "config: reactions.ci_failure.escalation_label: must not be empty"},
		{"ci poll below 1 s", with(ci, "poll_interval_ms: 999"), reactionEnv, "config: reactions.ci_failure.poll_interval_ms: must be at least 1000 milliseconds (1 s) (got 999)"},
		{"ci poll 0", with(ci, "poll_interval_ms: 0"), reactionEnv, "config: reactions.ci_failure.poll_interval_ms: must be at least 1000 milliseconds (1 s) (got 0)"},
		{"review provider", jiraTracker + "reactions: {review_comments: {provider: bitbucket}}\n", reactionEnv, `config: reactions.review_comments.provider: unknown provider; supported: github (got "bitbucket")`},
		{"review turns 0", with(review, "max_continuation_turns: 0"), reactionEnv, "config: reactions.review_comments.max_continuation_turns: must be a positive number of turns (got 0)"},
		{"review max_retries negative", with(review, "max_retries: -2"), reactionEnv, "config: reactions.review_comments.max_retries: must be non-negative (got -2)"},
		{"review debounce negative", with(review, "debounce_ms: -1"), reactionEnv, "config: reactions.review_comments.debounce_ms: must be a non-negative number of milliseconds (got -1)"},
		{"review poll below 1 s", with(review, "poll_interval_ms: 500"), reactionEnv, "config: reactions.review_comments.poll_interval_ms: must be at least 1000 milliseconds (1 s) (got 500)"},
		{"review escalation", with(review, "escalation: page"), reactionEnv, `config: reactions.review_comments.escalation: must be label or comment (got "page")`},
		{"review escalation_label empty", with(review, "escalation_label: ''"), reactionEnv, "config: reactions.review_comments.escalation_label: must not be empty"},
		{"ci_feedback kind", jiraTracker + githubBlock + "ci_feedback: {kind: jenkins}\n", reactionEnv, `config: ci_feedback.kind: unknown provider; supported: github (got "jenkins")`},
		{"ci_feedback max_log_lines", jiraTracker + githubBlock + "ci_feedback: {kind: github, max_log_lines: 5000}\n", reactionEnv, "config: ci_feedback.max_log_lines: must be between 1 and 1000 lines (got 5000)"},
		{"github block missing", jiraTracker + "reactions: {ci_failure: {provider: github}}\n", reactionEnv, "config: github: is required when a reaction is on and tracker.kind is jira"},
		{"github not a map", jiraTracker + "github: acme/app\nreactions: {ci_failure: {provider: github}}\n", reactionEnv, "config: github: must be a map"},
		{"github api_key missing", jiraTracker + "github: {project: acme/app}\nreactions: {ci_failure: {provider: github}}\n", reactionEnv, "config: github.api_key: is required when a reaction is on and tracker.kind is jira"},
		{"github api_key unset variable", jiraTracker + githubBlock + "reactions: {ci_failure: {provider: github}}\n", map[string]string{"JIRA_TOKEN": "t"}, "config: github.api_key: environment variable GITHUB_TOKEN is not set"},
		{"github project missing", jiraTracker + "github: {api_key: k}\nreactions: {review_comments: {provider: github}}\n", reactionEnv, "config: github.project: is required when a reaction is on and tracker.kind is jira; set it to the repository as owner/repo"},
		{"github project not owner/repo", jiraTracker + "github: {api_key: k, project: acme}\nreactions: {review_comments: {provider: github}}\n", reactionEnv, `config: github.project: must be owner/repo (got "acme")`},
		{"github project too deep", jiraTracker + "github: {api_key: k, project: a/b/c}\nreactions: {review_comments: {provider: github}}\n", reactionEnv, `config: github.project: must be owner/repo (got "a/b/c")`},
		{"github endpoint", jiraTracker + "github: {api_key: k, project: a/b, endpoint: ghe.example.com}\nreactions: {review_comments: {provider: github}}\n", reactionEnv, "config: github.endpoint: must be an http or https URL"},
		{"self_review enabled not a bool", minimal + "self_review: {enabled: maybe}\n", nil, "config: self_review.enabled: must be true or false"},
		{"self_review commands missing", minimal + "self_review: {enabled: true}\n", nil, "config: self_review.verification_commands: is required when self_review.enabled is true"},
		{"self_review commands empty list", minimal + "self_review: {enabled: true, verification_commands: []}\n", nil, "config: self_review.verification_commands: is required when self_review.enabled is true"},
		{"self_review commands not a list", minimal + "self_review: {enabled: true, verification_commands: make test}\n", nil, `config: self_review.verification_commands: must be a list of shell commands (got "make test")`},
		{"self_review command empty", minimal + "self_review: {enabled: true, verification_commands: [make test, '  ']}\n", nil, "config: self_review.verification_commands[1]: must not be empty"},
		{"self_review command not a string", minimal + "self_review: {enabled: true, verification_commands: [[make]]}\n", nil, "config: self_review.verification_commands[0]: must be a string"},
		{"self_review max_iterations 0", selfWith("max_iterations: 0"), nil, "config: self_review.max_iterations: must be between 1 and 10 (got 0)"},
		{"self_review max_iterations 11", selfWith("max_iterations: 11"), nil, "config: self_review.max_iterations: must be between 1 and 10 (got 11)"},
		{"self_review timeout 0", selfWith("verification_timeout_ms: 0"), nil, "config: self_review.verification_timeout_ms: must be a positive number of milliseconds (got 0)"},
		{"self_review diff 0", selfWith("max_diff_bytes: 0"), nil, "config: self_review.max_diff_bytes: must be between 1 and 1048576 (1 MiB) bytes (got 0)"},
		{"self_review diff over 1 MiB", selfWith("max_diff_bytes: 1048577"), nil, "config: self_review.max_diff_bytes: must be between 1 and 1048576 (1 MiB) bytes (got 1048577)"},
		{"self_review reviewer", selfWith("reviewer: other-agent"), nil, `config: self_review.reviewer: must be same (the agent that did the work), the only reviewer (got "other-agent")`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, problems, _ := checkFrontMatter(t, tt.fm, tt.env)
			if cfg != nil {
				t.Fatalf("the file loads; want the error %q\n%s", tt.want, problemLines(problems))
			}
			if !slices.ContainsFunc(problems, func(p Problem) bool { return p.IsError() && strings.HasPrefix(p.String(), tt.want) }) {
				t.Errorf("want an error starting %q, got:\n%s", tt.want, problemLines(problems))
			}
		})
	}
}

// The github: block's token never appears in a problem, even when it is not a string.
func TestReactions_GitHubAPIKeyIsNotShown(t *testing.T) {
	_, problems, _ := checkFrontMatter(t, jiraTracker+"github: {api_key: [ghp_leak], project: a/b}\nreactions: {ci_failure: {provider: github}}\n", reactionEnv)
	if !hasProblem(problems, SeverityError, "config: github.api_key: must be a string (got a list)") {
		t.Errorf("want the api_key error without its value, got:\n%s", problemLines(problems))
	}
	if strings.Contains(problemLines(problems), "ghp_leak") {
		t.Errorf("a problem shows the token:\n%s", problemLines(problems))
	}
}

// ci_feedback is reactions.ci_failure with kind for provider, with a deprecation
// warning; reactions.ci_failure wins when both are present.
func TestReactions_CIFeedback(t *testing.T) {
	t.Run("alone", func(t *testing.T) {
		cfg, _ := mustLoad(t, jiraTracker+githubBlock+"ci_feedback: {kind: github, max_retries: 4, max_log_lines: 10, escalation: comment, escalation_label: x}\n", reactionEnv)
		want := &CIReaction{ReactionLimits{"github", 4, "comment", "x", DefaultCIPollInterval}, 10}
		if !reflect.DeepEqual(cfg.Reactions.CI, want) {
			t.Errorf("CI = %+v, want %+v", cfg.Reactions.CI, want)
		}
		if !hasProblem(cfg.Warnings, SeverityWarning, "config: ci_feedback: is deprecated; write it as reactions.ci_failure, with provider in place of kind") {
			t.Errorf("no deprecation warning:\n%s", problemLines(cfg.Warnings))
		}
		if cfg.Reactions.GitHub.Project != "acme/app" {
			t.Errorf("GitHub = %+v, want the github: block's", cfg.Reactions.GitHub)
		}
	})
	t.Run("with reactions.ci_failure", func(t *testing.T) {
		cfg, _ := mustLoad(t, jiraTracker+githubBlock+"ci_feedback: {kind: nonsense, max_retries: -5}\nreactions: {ci_failure: {provider: github, max_retries: 1}}\n", reactionEnv)
		if cfg.Reactions.CI == nil || cfg.Reactions.CI.MaxRetries != 1 {
			t.Errorf("CI = %+v, want reactions.ci_failure's (max_retries 1)", cfg.Reactions.CI)
		}
		var got []string
		for _, p := range cfg.Warnings {
			got = append(got, p.Check+" "+p.String())
		}
		want := []string{"deprecated config: ci_feedback: is deprecated and ignored: reactions.ci_failure is set and takes precedence; remove ci_feedback"}
		if !slices.Equal(got, want) {
			t.Errorf("warnings = %q, want %q", got, want)
		}
	})
	t.Run("without kind", func(t *testing.T) {
		cfg, _ := mustLoad(t, minimal+"ci_feedback: {max_retries: 2}\n", nil)
		if cfg.Reactions.CI != nil {
			t.Errorf("CI = %+v, want nil: ci_feedback is on only when kind is set", cfg.Reactions.CI)
		}
		if !hasProblem(cfg.Warnings, SeverityWarning, "config: ci_feedback.kind: is not set, so ci_feedback is off; set it to github to turn it on") {
			t.Errorf("no warning that ci_feedback is off:\n%s", problemLines(cfg.Warnings))
		}
	})
}

// Warnings that keep the file loading: a block without a provider, reaction kinds
// Sortie does not have, unknown keys, a github: block that is not used.
func TestReactions_Warnings(t *testing.T) {
	tests := []struct {
		name, fm string
		env      map[string]string
		want     []string // check, then the problem as rendered
	}{
		{"no provider", minimal + "reactions: {ci_failure: {max_retries: 1}, review_comments: {}}\n", nil, []string{
			"reactions.ci_failure config: reactions.ci_failure.provider: is not set, so reactions.ci_failure is off; set it to github to turn it on",
			"reactions.review_comments config: reactions.review_comments.provider: is not set, so reactions.review_comments is off; set it to github to turn it on",
		}},
		{"reference kinds", minimal + "reactions: {merge_conflict: {provider: github}, auto_merge: {}, my_kind: 3}\n", nil, []string{
			"not_supported config: reactions.auto_merge: reaction kind auto_merge is not supported (supported: ci_failure, review_comments): pull requests are not merged; it is kept so the file loads",
			"not_supported config: reactions.merge_conflict: reaction kind merge_conflict is not supported (supported: ci_failure, review_comments): pull requests with merge conflicts are not sent back to the agent; it is kept so the file loads",
			"not_supported config: reactions.my_kind: reaction kind my_kind is not supported (supported: ci_failure, review_comments): nothing reads it; it is kept so the file loads",
		}},
		{"unknown keys", jiraTracker + "github: {api_key: $GITHUB_TOKEN, project: a/b, owner: a}\nreactions: {ci_failure: {provider: github, max_log_line: 3}}\nself_review: {enabled: false, max_iteration: 3}\n", reactionEnv, []string{
			"unknown_sub_key config: reactions.ci_failure.max_log_line: unknown key in reactions.ci_failure; it is ignored (known: provider, max_retries, max_log_lines, poll_interval_ms, escalation, escalation_label)",
			"unknown_sub_key config: github.owner: unknown key in github; it is ignored (known: endpoint, api_key, project)",
			"unknown_sub_key config: self_review.max_iteration: unknown key in self_review; it is ignored (known: enabled, max_iterations, verification_commands, verification_timeout_ms, max_diff_bytes, reviewer)",
		}},
		{"github block with the GitHub tracker", githubTracker + githubBlock + "reactions: {ci_failure: {provider: github}}\n", reactionEnv, []string{
			"github config: github: is ignored: tracker.kind is github, so reactions use tracker.endpoint, tracker.api_key and tracker.project; remove the block",
		}},
		{"github block without a reaction", jiraTracker + "github: {api_key: $UNSET, project: nope}\n", reactionEnv, []string{
			"github config: github: is ignored: it is read only when a reaction (reactions.ci_failure or reactions.review_comments) is on",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, _ := mustLoad(t, tt.fm, tt.env)
			var got []string
			for _, p := range cfg.Warnings {
				got = append(got, p.Check+" "+p.String())
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("warnings:\n\t%s\nwant\n\t%s", strings.Join(got, "\n\t"), strings.Join(tt.want, "\n\t"))
			}
		})
	}
}

// With the GitHub tracker, reactions use its endpoint, token and project.
func TestReactions_GitHubTrackerCredentials(t *testing.T) {
	cfg, _ := mustLoad(t, githubTracker+"reactions: {review_comments: {provider: github}}\n", reactionEnv)
	want := CodeHost{Endpoint: "https://ghe.example.com/api/v3", APIKey: "ghp_secret", Project: "acme/app"}
	if cfg.Reactions.GitHub != want {
		t.Errorf("GitHub = %+v, want %+v", cfg.Reactions.GitHub, want)
	}
	// No reaction on: no code host.
	cfg, _ = mustLoad(t, githubTracker, reactionEnv)
	if cfg.Reactions.GitHub != (CodeHost{}) {
		t.Errorf("GitHub = %+v without a reaction, want zero", cfg.Reactions.GitHub)
	}
}

// The github: block's variables are credentials: removed from agents' environments,
// and refused in agent.env, whether or not a reaction is on.
func TestReactions_GitHubTokenIsSecret(t *testing.T) {
	for _, fm := range []string{
		jiraTracker + "github: {api_key: $GH_REACTIONS_TOKEN, endpoint: '${GHE_URL}', project: a/b}\nreactions: {ci_failure: {provider: github}}\n",
		jiraTracker + "github: {api_key: $GH_REACTIONS_TOKEN, endpoint: '${GHE_URL}', project: a/b}\n",
	} {
		cfg, _ := mustLoad(t, fm, map[string]string{"JIRA_TOKEN": "t", "GH_REACTIONS_TOKEN": "ghp_x", "GHE_URL": "https://ghe.example.com/api/v3"})
		for _, name := range []string{"GH_REACTIONS_TOKEN", "GHE_URL", "JIRA_TOKEN"} {
			if !slices.Contains(cfg.SecretEnv, name) {
				t.Errorf("SecretEnv = %q, want it to hold %s", cfg.SecretEnv, name)
			}
		}
	}
	fm := strings.Replace(jiraTracker, "agent: {kind: mock}", "agent: {kind: mock, env: [GH_REACTIONS_TOKEN]}", 1) +
		"github: {api_key: $GH_REACTIONS_TOKEN, project: a/b}\nreactions: {ci_failure: {provider: github}}\n"
	cfg, problems, _ := checkFrontMatter(t, fm, map[string]string{"JIRA_TOKEN": "t", "GH_REACTIONS_TOKEN": "ghp_x"})
	if cfg != nil || !slices.ContainsFunc(problems, func(p Problem) bool { return p.IsError() && strings.Contains(p.String(), "GH_REACTIONS_TOKEN") }) {
		t.Errorf("agent.env may pass the github: block's token on:\n%s", problemLines(problems))
	}
}

// A reference-style WORKFLOW.md with reactions: (ci_failure and review_comments), a
// github: block and self_review: loads with no warning, and every value is read.
func TestReactions_ReferenceStyleFileLoadsWithoutWarnings(t *testing.T) {
	path, err := filepath.Abs("testdata/reactions/WORKFLOW.md")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(path, Options{Env: exampleEnv(map[string]string{
		"SORTIE_JIRA_ENDPOINT": "https://acme.atlassian.net", "SORTIE_JIRA_API_KEY": "ops@acme.test:tok",
		"SORTIE_JIRA_PROJECT": "ACME", "SORTIE_WORKSPACE_ROOT": "/srv/ws", "GITHUB_TOKEN": "ghp_ref",
	})})
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Warnings) != 0 {
		t.Errorf("warnings:\n%s", problemLines(cfg.Warnings))
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"CI", *cfg.Reactions.CI, CIReaction{ReactionLimits{"github", 3, "comment", "needs-human", time.Minute}, 200}},
		{"Review", *cfg.Reactions.Review, ReviewReaction{ReactionLimits{"github", 4, "label", "sortie-stuck", time.Minute}, 30 * time.Second}},
		{"GitHub", cfg.Reactions.GitHub, CodeHost{APIKey: "ghp_ref", Project: "acme/billing"}},
		{"SelfReview", cfg.SelfReview, SelfReviewConfig{true, 2, []string{"make lint", "make test"}, 5 * time.Minute, 65536, "same"}},
		{"SecretEnv", cfg.SecretEnv, []string{"GITHUB_TOKEN", "SORTIE_JIRA_API_KEY", "SORTIE_JIRA_ENDPOINT"}},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s = %+v, want %+v", c.name, c.got, c.want)
		}
	}
}
