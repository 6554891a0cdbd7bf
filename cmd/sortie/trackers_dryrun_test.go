package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

// --dry-run against a fake GitHub lists each open issue with dispatch or the reason it
// is skipped, and makes no change.
func TestDryRun_GitHubListsCandidatesAndReasons(t *testing.T) {
	t.Parallel()
	var writes int
	gh := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer gh-test-token" {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"message":"Bad credentials"}`)
			return
		}
		if r.Method != http.MethodGet {
			writes++
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-RateLimit-Limit", "5000")
		w.Header().Set("X-RateLimit-Remaining", "4999")
		w.Header().Set("X-RateLimit-Resource", "core")
		switch {
		case strings.HasPrefix(r.URL.Path, "/repos/octo/app/issues") && !strings.Contains(strings.TrimPrefix(r.URL.Path, "/repos/octo/app/issues"), "/"):
			fmt.Fprint(w, `[
  {"id":1001,"number":1,"title":"Ready","state":"open","labels":[{"name":"todo"}],"html_url":"https://github.com/octo/app/issues/1","created_at":"2026-01-01T00:00:00Z","updated_at":"2026-01-02T00:00:00Z","user":{"login":"a"}},
  {"id":1002,"number":2,"title":"Also ready, lower priority","state":"open","labels":[{"name":"todo"}],"html_url":"https://github.com/octo/app/issues/2","created_at":"2026-01-03T00:00:00Z","updated_at":"2026-01-03T00:00:00Z","user":{"login":"a"}},
  {"id":1003,"number":3,"title":"A pull request","state":"open","labels":[{"name":"todo"}],"pull_request":{"url":"x"},"html_url":"https://github.com/octo/app/pull/3","created_at":"2026-01-01T00:00:00Z","updated_at":"2026-01-01T00:00:00Z","user":{"login":"a"}},
  {"id":1004,"number":4,"title":"Being reviewed","state":"open","labels":[{"name":"review"}],"html_url":"https://github.com/octo/app/issues/4","created_at":"2026-01-01T00:00:00Z","updated_at":"2026-01-01T00:00:00Z","user":{"login":"a"}}
]`)
		default:
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `{"message":"Not Found"}`)
		}
	}))
	defer gh.Close()
	dir := t.TempDir()
	wf := writeFile(t, dir, "WORKFLOW.md", fmt.Sprintf(`---
tracker:
  kind: github
  project: octo/app
  api_key: $GH_TEST_TOKEN
  endpoint: %s
  active_states: [todo]
  terminal_states: [done]
  handoff_state: review
agent:
  kind: mock
  max_concurrent_agents: 1
---
Fix {{ .issue.identifier }}.
`, gh.URL))
	r := runSortie(t, dir, testEnv(t.TempDir(), "GH_TEST_TOKEN=gh-test-token"), "--dry-run", wf)
	if r.code != exitOK {
		t.Fatalf("dry run: %s", r)
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^\s*1\s+todo\s+dispatch$`),
		regexp.MustCompile(`(?m)^\s*2\s+todo\s+skip: no free agent slot`),
		regexp.MustCompile(`(?m)^2 candidate issues`),
	} {
		if !want.MatchString(r.stdout) {
			t.Errorf("dry run output does not match %s:\n%s", want, r.stdout)
		}
	}
	if regexp.MustCompile(`(?m)^\s*[34]\s`).MatchString(r.stdout) {
		t.Errorf("a pull request or a handed-off issue was listed:\n%s", r.stdout)
	}
	if writes != 0 {
		t.Errorf("the dry run wrote to the tracker %d times", writes)
	}
}

// The same against a fake Jira Cloud: the JQL names the project and states, and a
// blocked issue is skipped with its blocker.
func TestDryRun_JiraListsCandidatesAndReasons(t *testing.T) {
	t.Parallel()
	var jqls []string
	jira := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if user, pass, ok := r.BasicAuth(); !ok || user != "bot@example.com" || pass != "jira-token" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path != "/rest/api/3/search/jql" {
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `{"errorMessages":["not here"]}`)
			return
		}
		jqls = append(jqls, r.URL.Query().Get("jql"))
		fmt.Fprint(w, `{"isLast": true, "issues": [
  {"id":"10001","key":"PROJ-1","fields":{"summary":"First","status":{"name":"To Do"},"priority":{"id":"2","name":"High"},"labels":[],"created":"2026-01-01T00:00:00.000+0000","updated":"2026-01-02T00:00:00.000+0000","issuelinks":[]}},
  {"id":"10002","key":"PROJ-2","fields":{"summary":"Waits for 3","status":{"name":"To Do"},"priority":{"id":"1","name":"Highest"},"labels":[],"created":"2026-01-01T00:00:00.000+0000","updated":"2026-01-02T00:00:00.000+0000",
    "issuelinks":[{"type":{"name":"Blocks","inward":"is blocked by","outward":"blocks"},"inwardIssue":{"id":"10003","key":"PROJ-3","fields":{"status":{"name":"In Progress"}}}}]}}
]}`)
	}))
	defer jira.Close()
	dir := t.TempDir()
	wf := writeFile(t, dir, "WORKFLOW.md", fmt.Sprintf(`---
tracker:
  kind: jira
  project: PROJ
  api_key: $JIRA_TEST_KEY
  endpoint: %s
  active_states: [To Do]
  terminal_states: [Done]
agent:
  kind: mock
---
Fix {{ .issue.identifier }}.
`, jira.URL))
	r := runSortie(t, dir, testEnv(t.TempDir(), "JIRA_TEST_KEY=bot@example.com:jira-token"), "--dry-run", wf)
	if r.code != exitOK {
		t.Fatalf("dry run: %s", r)
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^\s*PROJ-1\s+To Do\s+dispatch$`),
		regexp.MustCompile(`(?m)^\s*PROJ-2\s+To Do\s+skip: blocked by PROJ-3`),
	} {
		if !want.MatchString(r.stdout) {
			t.Errorf("dry run output does not match %s:\n%s", want, r.stdout)
		}
	}
	if len(jqls) == 0 || !strings.Contains(jqls[0], `project = "PROJ"`) || !strings.Contains(jqls[0], `"To Do"`) {
		t.Errorf("JQL = %q", jqls)
	}
}
