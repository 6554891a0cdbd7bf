package fakegithub_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"sortie/internal/testkit/fakegithub"
)

type checkRunsJSON struct {
	TotalCount int `json:"total_count"`
	CheckRuns  []struct {
		ID          int64   `json:"id"`
		Name        string  `json:"name"`
		HeadSHA     string  `json:"head_sha"`
		Status      string  `json:"status"`
		Conclusion  *string `json:"conclusion"`
		StartedAt   *string `json:"started_at"`
		CompletedAt *string `json:"completed_at"`
		HTMLURL     string  `json:"html_url"`
		DetailsURL  string  `json:"details_url"`
		App         struct {
			ID   int64  `json:"id"`
			Slug string `json:"slug"`
		} `json:"app"`
		Output struct {
			Title   *string `json:"title"`
			Summary *string `json:"summary"`
		} `json:"output"`
		PullRequests []struct {
			Number int64 `json:"number"`
		} `json:"pull_requests"`
	} `json:"check_runs"`
}

func (c checkRunsJSON) names() []string {
	out := []string{}
	for _, r := range c.CheckRuns {
		s := r.Name + ":" + r.Status
		if r.Conclusion != nil {
			s += ":" + *r.Conclusion
		}
		out = append(out, s)
	}
	return out
}

// TestCheckRuns_ShapeByShaAndBranch: a commit's check runs are served as GitHub's
// {"total_count", "check_runs"} for its SHA, a short SHA and the branch whose head it
// is; after a push, the branch names the new commit.
func TestCheckRuns_ShapeByShaAndBranch(t *testing.T) {
	now := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	f := fakegithub.New(t, fakegithub.WithClock(func() time.Time { return now }))
	pr := f.AddPullRequest(1, "feature/retry", "main")
	test := f.AddCheckRun(pr.Head.SHA, "test", func(c *fakegithub.CheckRun) { c.Title, c.Summary = "2 failed", "see the log" })
	f.AddCheckRun(pr.Head.SHA, "lint", fakegithub.Completed("success"), fakegithub.ByApp("circleci-checks"))
	f.AddCheckRun(fakegithub.SHA("elsewhere"), "test", fakegithub.Completed("failure"))

	for _, ref := range []string{pr.Head.SHA, pr.Head.SHA[:7], "feature/retry", "heads/feature/retry", "refs/heads/feature/retry"} {
		got, _ := getJSON[checkRunsJSON](t, f, "/repos/octo/hello/commits/"+ref+"/check-runs")
		if want := []string{"lint:completed:success", "test:queued"}; got.TotalCount != 2 || !slices.Equal(got.names(), want) {
			t.Errorf("check runs of %q: total %d, %v; want 2, %v", ref, got.TotalCount, got.names(), want)
		}
	}
	got, r := getJSON[checkRunsJSON](t, f, "/repos/octo/hello/commits/"+pr.Head.SHA+"/check-runs")
	run := got.CheckRuns[1]
	if run.ID != test.ID || run.HeadSHA != pr.Head.SHA || run.App.Slug != "github-actions" || run.App.ID != 15368 ||
		run.StartedAt == nil || *run.StartedAt != "2026-11-28T10:00:00Z" || run.CompletedAt != nil || run.Conclusion != nil ||
		!strings.Contains(run.HTMLURL, "/actions/runs/") || !strings.HasSuffix(run.HTMLURL, "/job/"+itoa(test.ID)) || run.DetailsURL != run.HTMLURL ||
		run.Output.Title == nil || *run.Output.Title != "2 failed" || len(run.PullRequests) != 1 || run.PullRequests[0].Number != 1 {
		t.Errorf("the Actions run: %+v", run)
	}
	var raw struct {
		CheckRuns []map[string]json.RawMessage `json:"check_runs"`
	}
	if err := json.Unmarshal(r.body, &raw); err != nil {
		t.Fatal(err)
	}
	requireKeys(t, "a check run", raw.CheckRuns[0], "id", "name", "node_id", "head_sha", "external_id", "url", "html_url", "details_url",
		"status", "conclusion", "started_at", "completed_at", "output", "check_suite", "app", "pull_requests")
	if lint := got.CheckRuns[0]; lint.App.Slug != "circleci-checks" || strings.Contains(lint.HTMLURL, "/actions/") {
		t.Errorf("another app's run: %+v, want by circleci-checks with a /runs/ page", lint)
	}

	f.Push(1, fakegithub.SHA("second"))
	got, _ = getJSON[checkRunsJSON](t, f, "/repos/octo/hello/commits/feature/retry/check-runs")
	if got.TotalCount != 0 {
		t.Errorf("check runs of the branch after a push: %v, want none (the new head has none)", got.names())
	}
	for _, ref := range []string{fakegithub.SHA("never"), "no-such-branch"} {
		if r := get(t, f, "/repos/octo/hello/commits/"+ref+"/check-runs"); r.status != http.StatusUnprocessableEntity || !strings.Contains(string(r.body), "No commit found for SHA") {
			t.Errorf("check runs of unknown %q: %d %s, want 422 No commit found", ref, r.status, r.body)
		}
	}
}

// TestCheckRuns_FilterLatestPagesAndETag: a re-run supersedes the run of the same name
// unless filter=all; pages and Link; a 304 until SetCheckRun changes the body.
func TestCheckRuns_FilterLatestPagesAndETag(t *testing.T) {
	f := fakegithub.New(t)
	sha := fakegithub.SHA("c1")
	f.AddCheckRun(sha, "test", fakegithub.Completed("failure"))
	rerun := f.AddCheckRun(sha, "test", fakegithub.InProgress())
	f.AddCheckRun(sha, "build", fakegithub.Completed("success"))
	f.AddCheckRun(sha, "vet", fakegithub.Completed("skipped"))

	base := "/repos/octo/hello/commits/" + sha + "/check-runs"
	for _, tc := range []struct {
		query string
		want  []string
	}{
		{"", []string{"vet:completed:skipped", "build:completed:success", "test:in_progress"}},
		{"?filter=all", []string{"vet:completed:skipped", "build:completed:success", "test:in_progress", "test:completed:failure"}},
		{"?check_name=test&filter=all", []string{"test:in_progress", "test:completed:failure"}},
		{"?status=completed", []string{"vet:completed:skipped", "build:completed:success"}},
	} {
		got, _ := getJSON[checkRunsJSON](t, f, base+tc.query)
		if !slices.Equal(got.names(), tc.want) || got.TotalCount != len(tc.want) {
			t.Errorf("GET check-runs%s: total %d, %v; want %v", tc.query, got.TotalCount, got.names(), tc.want)
		}
	}
	page, r := getJSON[checkRunsJSON](t, f, base+"?filter=all&per_page=3&page=2")
	if page.TotalCount != 4 || !slices.Equal(page.names(), []string{"test:completed:failure"}) || r.header.Get("Link") != "" {
		t.Errorf("page 2 of 3: total %d, %v, Link %q; want total 4, the oldest run, no Link", page.TotalCount, page.names(), r.header.Get("Link"))
	}
	if _, r := getJSON[checkRunsJSON](t, f, base+"?filter=all&per_page=3"); !strings.Contains(r.header.Get("Link"), `rel="next"`) || !strings.Contains(r.header.Get("Link"), "page=2") {
		t.Errorf("page 1 of 2: Link %q, want a next link to page 2", r.header.Get("Link"))
	}

	revalidate(t, f, base, func() { f.SetCheckRun(rerun.ID, "completed", "success") })
	got, _ := getJSON[checkRunsJSON](t, f, base+"?check_name=test")
	if run := got.CheckRuns[0]; run.Status != "completed" || run.Conclusion == nil || *run.Conclusion != "success" || run.CompletedAt == nil {
		t.Errorf("after SetCheckRun: %+v, want completed, success, with completed_at", run)
	}
	revalidate(t, f, base, func() { f.AddCheckRun(sha, "docs") })
}

// TestCheckRuns_StateRules: the fake refuses a check run GitHub could not have.
func TestCheckRuns_StateRules(t *testing.T) {
	f := fakegithub.New(t)
	sha := fakegithub.SHA("c")
	for name, add := range map[string]func(){
		"completed without a conclusion": func() { f.AddCheckRun(sha, "x", fakegithub.Completed("")) },
		"an unknown conclusion":          func() { f.AddCheckRun(sha, "x", fakegithub.Completed("passed")) },
		"a conclusion while queued":      func() { f.SetCheckRun(f.AddCheckRun(sha, "x").ID, "queued", "failure") },
		"a branch name for a SHA":        func() { f.AddCheckRun("main", "x") },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			add()
		}()
	}
}

type combinedJSON struct {
	State      string `json:"state"`
	SHA        string `json:"sha"`
	TotalCount int    `json:"total_count"`
	Statuses   []struct {
		ID          int64   `json:"id"`
		Context     string  `json:"context"`
		State       string  `json:"state"`
		Description *string `json:"description"`
		TargetURL   *string `json:"target_url"`
		CreatedAt   string  `json:"created_at"`
		UpdatedAt   string  `json:"updated_at"`
	} `json:"statuses"`
}

// TestStatus_CombinedStateRules: failure when any context's latest status is error or
// failure, pending when any is pending or there are none, success when all succeed.
func TestStatus_CombinedStateRules(t *testing.T) {
	for _, tc := range []struct {
		name   string
		add    [][2]string // context, state, in order
		want   string
		counts int
	}{
		{"none", nil, "pending", 0},
		{"all success", [][2]string{{"ci", "success"}, {"scan", "success"}}, "success", 2},
		{"one pending", [][2]string{{"ci", "success"}, {"scan", "pending"}}, "pending", 2},
		{"one error", [][2]string{{"ci", "success"}, {"scan", "error"}}, "failure", 2},
		{"failure beats pending", [][2]string{{"ci", "pending"}, {"scan", "failure"}}, "failure", 2},
		{"a later status supersedes", [][2]string{{"ci", "failure"}, {"ci", "pending"}, {"ci", "success"}}, "success", 1},
		{"a later failure supersedes", [][2]string{{"ci", "success"}, {"ci", "failure"}}, "failure", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := fakegithub.New(t)
			sha := fakegithub.SHA("c")
			f.AddPullRequest(1, "b", "main", fakegithub.HeadSHA(sha))
			for _, a := range tc.add {
				f.AddStatus(sha, a[0], a[1])
			}
			got, r := getJSON[combinedJSON](t, f, "/repos/octo/hello/commits/b/status")
			if got.State != tc.want || got.TotalCount != tc.counts || len(got.Statuses) != tc.counts || got.SHA != sha {
				t.Errorf("combined status: %+v, want state %s over %d contexts of %s", got, tc.want, tc.counts, sha)
			}
			requireKeys(t, "the combined status", keys(t, r.body), "state", "statuses", "sha", "total_count", "repository", "commit_url", "url")
		})
	}
}

// TestStatus_ListNewestFirstAndPages: /statuses lists every status, newest first, with
// its creator; the combined status pages its statuses; a new status moves both ETags.
func TestStatus_ListNewestFirstAndPages(t *testing.T) {
	f := fakegithub.New(t)
	sha := fakegithub.SHA("c")
	f.AddStatus(sha, "ci", "pending")
	f.AddStatus(sha, "ci", "failure", func(s *fakegithub.Status) { s.Description = "3 tests failed" })
	f.AddStatus(sha, "scan", "success")

	list, r := getJSON[[]struct {
		Context     string  `json:"context"`
		State       string  `json:"state"`
		Description *string `json:"description"`
		Creator     *struct {
			Login string `json:"login"`
		} `json:"creator"`
	}](t, f, "/repos/octo/hello/commits/"+sha+"/statuses")
	var got []string
	for _, s := range list {
		got = append(got, s.Context+":"+s.State)
	}
	if want := []string{"scan:success", "ci:failure", "ci:pending"}; !slices.Equal(got, want) {
		t.Errorf("GET statuses: %v, want newest first %v", got, want)
	}
	if list[1].Description == nil || *list[1].Description != "3 tests failed" || list[0].Description != nil || list[0].Creator == nil {
		t.Errorf("GET statuses: %s, want the failure's description, null for none, and a creator", r.body)
	}
	requireKeys(t, "a status", itemKeys(t, r.body), "url", "avatar_url", "id", "node_id", "state", "description", "target_url", "context", "created_at", "updated_at", "creator")

	page, r := getJSON[combinedJSON](t, f, "/repos/octo/hello/commits/"+sha+"/status?per_page=1")
	if page.TotalCount != 2 || len(page.Statuses) != 1 || page.State != "failure" || r.header.Get("Link") == "" {
		t.Errorf("combined status, per_page=1: %+v with Link %q; want 1 of 2 contexts, failure, a Link", page, r.header.Get("Link"))
	}
	revalidate(t, f, "/repos/octo/hello/commits/"+sha+"/statuses", func() { f.AddStatus(sha, "ci", "success") })
	revalidate(t, f, "/repos/octo/hello/commits/"+sha+"/status", func() { f.AddStatus(sha, "scan", "error") })
}
