package fakegithub_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"sortie/internal/testkit/fakegithub"
)

// codeHost is a fake with one of everything the code-host routes serve, and their paths.
func codeHost(t *testing.T, opts ...fakegithub.Option) (*fakegithub.Server, []string) {
	t.Helper()
	f := fakegithub.New(t, opts...)
	pr := f.AddPullRequest(1, "feature", "main")
	run := f.AddCheckRun(pr.Head.SHA, "test", fakegithub.Completed("failure"))
	f.SetJobLog(run.ID, fakegithub.ActionsLog("##[error]boom"))
	f.AddStatus(pr.Head.SHA, "ci", "pending")
	rv := f.AddReview(1, fakegithub.User{Login: "erin"}, "CHANGES_REQUESTED", "no")
	f.AddReviewComment(1, rv.ID, fakegithub.User{Login: "erin"}, "a.go", line(3), nil, "here")
	return f, []string{
		"/repos/octo/hello/pulls?head=octo:feature",
		"/repos/octo/hello/pulls/1",
		"/repos/octo/hello/pulls/1/reviews",
		"/repos/octo/hello/pulls/1/reviews/" + itoa(rv.ID),
		"/repos/octo/hello/pulls/1/reviews/" + itoa(rv.ID) + "/comments",
		"/repos/octo/hello/pulls/1/comments",
		"/repos/octo/hello/commits/feature/check-runs",
		"/repos/octo/hello/commits/" + pr.Head.SHA + "/status",
		"/repos/octo/hello/commits/" + pr.Head.SHA + "/statuses",
		"/repos/octo/hello/actions/jobs/" + itoa(run.ID) + "/logs",
	}
}

// TestCodeHostRoutes_AuthRateLimitAndCounts: every code-host route wants the token,
// is charged to core, refuses when core is spent, and is counted and logged.
func TestCodeHostRoutes_AuthRateLimitAndCounts(t *testing.T) {
	f, paths := codeHost(t)
	for _, p := range paths {
		before := f.Counts()
		r := get(t, f, p, "Authorization", "Bearer wrong")
		if r.status != http.StatusUnauthorized {
			t.Errorf("GET %s with a wrong token: %d, want 401", p, r.status)
		}
		r = get(t, f, p)
		if r.status != http.StatusOK && r.status != http.StatusFound {
			t.Errorf("GET %s: %d %s, want 200 (302 for logs)", p, r.status, r.body)
		}
		if r.header.Get("X-RateLimit-Resource") != "core" || r.header.Get("X-RateLimit-Remaining") == "" {
			t.Errorf("GET %s: rate-limit headers %q/%q, want core and a remaining count", p, r.header.Get("X-RateLimit-Resource"), r.header.Get("X-RateLimit-Remaining"))
		}
		if c := f.Counts(); c.Requests != before.Requests+2 || c.Charged != before.Charged+1 {
			t.Errorf("GET %s: counts went from %+v to %+v, want 2 requests, 1 charged", p, before, c)
		}
		if lg := f.Log(); lg[len(lg)-1] != "GET "+p {
			t.Errorf("GET %s: last logged %q", p, lg[len(lg)-1])
		}
	}
	f.SetBudget("core", 5000, 0, time.Now().Add(time.Hour))
	for _, p := range paths {
		if r := get(t, f, p); r.status != http.StatusForbidden || r.header.Get("X-RateLimit-Remaining") != "0" {
			t.Errorf("GET %s with core spent: %d, remaining %q; want 403, 0", p, r.status, r.header.Get("X-RateLimit-Remaining"))
		}
	}
}

// TestCodeHostMutatorsWhilePolling: a test may push, report checks and statuses and
// review while a client polls every route; run with -race.
func TestCodeHostMutatorsWhilePolling(t *testing.T) {
	f, paths := codeHost(t)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		client := &http.Client{CheckRedirect: func(req *http.Request, _ []*http.Request) error {
			req.Header.Del("Authorization")
			return nil
		}}
		for ctx.Err() == nil {
			for _, p := range paths {
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, f.URL()+p, nil)
				req.Header.Set("Authorization", "Bearer "+fakegithub.Token)
				req.Header.Set("Accept", "application/vnd.github+json")
				req.Header.Set("User-Agent", "poller")
				if resp, err := client.Do(req); err == nil {
					resp.Body.Close()
				}
			}
		}
	})
	for i := range 20 {
		sha := fakegithub.SHA(fmt.Sprint("push ", i))
		f.Push(1, sha)
		run := f.AddCheckRun(sha, "test", fakegithub.InProgress())
		f.SetCheckRun(run.ID, "completed", "failure")
		f.SetJobLog(run.ID, fakegithub.FailedJobLog("go test ./...", fmt.Sprint("--- FAIL ", i)))
		f.AddStatus(sha, "ci", "failure")
		rv := f.AddReview(1, fakegithub.User{Login: "erin"}, "CHANGES_REQUESTED", fmt.Sprint("round ", i))
		f.AddReviewComment(1, rv.ID, fakegithub.User{Login: "erin"}, "a.go", line(i+1), nil, "again")
	}
	cancel()
	wg.Wait()
	if f.LogRedirectAuthLeaks() != 0 {
		t.Errorf("LogRedirectAuthLeaks = %d, want 0: the poller drops the token on redirect", f.LogRedirectAuthLeaks())
	}
	got, _ := getJSON[checkRunsJSON](t, f, "/repos/octo/hello/commits/feature/check-runs")
	if len(got.CheckRuns) != 1 || got.CheckRuns[0].HeadSHA != fakegithub.SHA("push 19") {
		t.Errorf("check runs of the branch after 20 pushes: %v, want the last push's one run", got.names())
	}
}
