package main

import (
	"strings"
	"testing"
)

// `sortie validate` accepts reactions:, a github: block and self_review: written as the
// reference daemon's files write them, with no warning about them, and never prints the
// github: block's token; a wrong value is an error naming its key.
func TestValidate_ReactionsAndSelfReview(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, dir, "issues.json", "[]")
	const front = "---\ntracker: {kind: file, path: issues.json, active_states: [Todo]}\nagent: {kind: mock}\n" +
		"github: {api_key: $GH_REACTIONS_TOKEN, project: acme/app}\n" +
		"reactions:\n  ci_failure: {provider: github, max_retries: 2, max_log_lines: 50}\n" +
		"  review_comments: {provider: github, max_continuation_turns: 3, debounce_ms: 60000, poll_interval_ms: %s}\n" +
		"self_review: {enabled: true, max_iterations: 3, verification_commands: [make test]}\n---\nDo {{ .issue.title }}.\n"
	env := testEnv(t.TempDir(), "GH_REACTIONS_TOKEN=ghp_hunter2token")

	wf := writeFile(t, dir, "WORKFLOW.md", strings.Replace(front, "%s", "120000", 1))
	r := runSortie(t, "", env, "validate", "--format", "json", wf)
	v := parseValidateJSON(t, r)
	if !v.Valid || r.code != exitOK {
		t.Fatalf("valid = %v, exit %d, want valid and exit %d:\n%s", v.Valid, r.code, exitOK, r)
	}
	for _, w := range v.Warnings {
		t.Errorf("warning %s: %s, want none", w.Field, w.Message)
	}

	bad := writeFile(t, dir, "BAD.md", strings.Replace(front, "%s", "500", 1))
	for _, args := range [][]string{{"validate", bad}, {"validate", "--format", "json", bad}} {
		r := runSortie(t, "", env, args...)
		if r.code != exitFailure || !strings.Contains(r.stdout+r.stderr, "reactions.review_comments.poll_interval_ms") {
			t.Errorf("%v: want exit %d naming reactions.review_comments.poll_interval_ms, got:\n%s", args, exitFailure, r)
		}
	}
	for _, args := range [][]string{{"validate", wf}, {"validate", bad}} {
		if r := runSortie(t, "", env, args...); strings.Contains(r.stdout+r.stderr, "hunter2") {
			t.Errorf("%v printed the token:\n%s", args, r)
		}
	}
}
