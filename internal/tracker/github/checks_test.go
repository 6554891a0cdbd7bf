package github

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"sortie/internal/tracker"
)

const (
	runsPath   = "/repos/harbor-labs/tidewatch/commits/" + headSHA + "/check-runs"
	statusPath = "/repos/harbor-labs/tidewatch/commits/" + headSHA + "/status"
)

// runsBody is a check-runs page of runs given as "status/conclusion" ("in_progress/",
// "completed/failure", "completed/null").
func runsBody(runs ...string) []byte {
	type run struct {
		ID         int64   `json:"id"`
		Name       string  `json:"name"`
		HeadSHA    string  `json:"head_sha"`
		Status     string  `json:"status"`
		Conclusion *string `json:"conclusion"`
		HTMLURL    string  `json:"html_url"`
		App        struct {
			Slug string `json:"slug"`
		} `json:"app"`
	}
	page := struct {
		TotalCount int   `json:"total_count"`
		CheckRuns  []run `json:"check_runs"`
	}{TotalCount: len(runs), CheckRuns: []run{}}
	for i, r := range runs {
		st, concl, _ := strings.Cut(r, "/")
		x := run{ID: int64(101 + i), Name: fmt.Sprintf("job %d", i+1), HeadSHA: headSHA, Status: st,
			HTMLURL: fmt.Sprintf("https://github.com/harbor-labs/tidewatch/actions/runs/1/job/%d", 101+i)}
		x.App.Slug = "github-actions"
		if concl != "" && concl != "null" {
			x.Conclusion = &concl
		}
		page.CheckRuns = append(page.CheckRuns, x)
	}
	b, _ := json.Marshal(page)
	return b
}

// statusBody is a combined status of statuses given by state.
func statusBody(states ...string) []byte {
	type status struct {
		ID      int64  `json:"id"`
		State   string `json:"state"`
		Context string `json:"context"`
	}
	cs := struct {
		State      string   `json:"state"`
		SHA        string   `json:"sha"`
		TotalCount int      `json:"total_count"`
		Statuses   []status `json:"statuses"`
	}{State: "pending", SHA: headSHA, TotalCount: len(states), Statuses: []status{}}
	for i, s := range states {
		cs.Statuses = append(cs.Statuses, status{ID: int64(201 + i), State: s, Context: fmt.Sprintf("ci/%d", i+1)})
	}
	b, _ := json.Marshal(cs)
	return b
}

// TestCI_Aggregation: every conclusion and status state that matters, alone and mixed.
func TestCI_Aggregation(t *testing.T) {
	cases := []struct {
		name     string
		runs     []string
		statuses []string
		want     CheckState
	}{
		{"nothing yet", nil, nil, CheckPending},
		{"one success", []string{"completed/success"}, nil, CheckPassing},
		{"success neutral skipped", []string{"completed/success", "completed/neutral", "completed/skipped"}, nil, CheckPassing},
		{"failure", []string{"completed/success", "completed/failure"}, nil, CheckFailing},
		{"timed out", []string{"completed/timed_out"}, nil, CheckFailing},
		{"cancelled", []string{"completed/cancelled"}, nil, CheckFailing},
		{"action required", []string{"completed/action_required"}, nil, CheckFailing},
		{"startup failure", []string{"completed/startup_failure"}, nil, CheckFailing},
		{"stale", []string{"completed/success", "completed/stale"}, nil, CheckPending},
		{"completed without conclusion", []string{"completed/null"}, nil, CheckPending},
		{"unknown conclusion", []string{"completed/exploded"}, nil, CheckPending},
		{"queued", []string{"queued/"}, nil, CheckPending},
		{"in progress", []string{"completed/success", "in_progress/"}, nil, CheckPending},
		{"waiting", []string{"waiting/"}, nil, CheckPending},
		{"failure while others run", []string{"in_progress/", "completed/failure"}, nil, CheckFailing},
		{"upper-case from an odd server", []string{"COMPLETED/FAILURE"}, nil, CheckFailing},
		{"statuses only, success", nil, []string{"success", "success"}, CheckPassing},
		{"statuses only, pending", nil, []string{"success", "pending"}, CheckPending},
		{"statuses only, error", nil, []string{"error"}, CheckFailing},
		{"statuses only, failure", nil, []string{"pending", "failure"}, CheckFailing},
		{"runs pass, a status pending", []string{"completed/success"}, []string{"pending"}, CheckPending},
		{"runs pass, a status errors", []string{"completed/success"}, []string{"success", "error"}, CheckFailing},
		{"runs pass, statuses pass", []string{"completed/success"}, []string{"success"}, CheckPassing},
		{"runs pending, a status fails", []string{"in_progress/"}, []string{"failure"}, CheckFailing},
		{"unknown status state", nil, []string{"exploded"}, CheckPending},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newAPIServer(t)
			s.static(runsPath, runsBody(c.runs...))
			s.static(statusPath, statusBody(c.statuses...))
			res, err := newSCMTracker(t, s.URL()).CI(context.Background(), scmRepo, headSHA)
			if err != nil {
				t.Fatal(err)
			}
			if res.State != c.want {
				t.Errorf("state = %s, want %s (failing %v, pending %v)", res.State, c.want, res.Failing, res.Pending)
			}
			if res.Checks != len(c.runs)+len(c.statuses) {
				t.Errorf("checks = %d, want %d", res.Checks, len(c.runs)+len(c.statuses))
			}
		})
	}
}

// TestCI_MixedPayload: a check-runs page and a combined status in GitHub's shapes.
func TestCI_MixedPayload(t *testing.T) {
	s := newAPIServer(t)
	s.static(runsPath, ownFile(t, "check_runs_mixed.json"))
	s.static(statusPath, ownFile(t, "combined_status.json"))
	tr := newSCMTracker(t, s.URL())
	res, err := tr.CI(context.Background(), scmRepo, strings.ToUpper(headSHA))
	if err != nil {
		t.Fatal(err)
	}
	if res.State != CheckFailing || res.SHA != headSHA {
		t.Fatalf("state %s sha %s, want failing %s", res.State, res.SHA, headSHA)
	}
	names := func(cs []Check) []string {
		var out []string
		for _, c := range cs {
			out = append(out, c.Kind+":"+c.Name+":"+c.Conclusion)
		}
		return out
	}
	// Failing check runs stop the status request: the statuses were never read.
	if want := []string{"check_run:test (macos-latest):timed_out", "check_run:test (ubuntu-latest):failure"}; !slices.Equal(names(res.Failing), want) {
		t.Errorf("failing = %v, want %v", names(res.Failing), want)
	}
	if want := []string{"check_run:e2e (chromium):"}; !slices.Equal(names(res.Pending), want) {
		t.Errorf("pending = %v, want %v", names(res.Pending), want)
	}
	f := res.Failing[1]
	if f.ID != 39120345602 || f.App != "github-actions" || f.Status != "completed" || f.State != CheckFailing ||
		f.URL != "https://github.com/harbor-labs/tidewatch/actions/runs/14211876543/job/39120345602" {
		t.Errorf("failing check = %+v", f)
	}
	if h := paths(s.log()); len(h) != 1 || !strings.Contains(h[0], "filter=latest") || !strings.Contains(h[0], "per_page=100") {
		t.Errorf("requests = %v, want only the check runs, latest, 100 a page", h)
	}

	// Statuses in their own right: error is failing, pending is pending, target_url kept.
	s.static(runsPath, runsBody())
	res, err = tr.CI(context.Background(), scmRepo, headSHA)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"status:ci/jenkins: integration:error"}; res.State != CheckFailing || !slices.Equal(names(res.Failing), want) {
		t.Errorf("statuses: %s failing %v, want failing %v", res.State, names(res.Failing), want)
	}
	if want := []string{"status:security/snyk (harbor-labs):pending"}; !slices.Equal(names(res.Pending), want) || res.Pending[0].Status != "pending" {
		t.Errorf("statuses pending = %+v, want %v", res.Pending, want)
	}
	if res.Failing[0].URL != "https://jenkins.harbor-labs.example/job/tidewatch/311/" || res.Failing[0].ID != 31840052102 {
		t.Errorf("status check = %+v", res.Failing[0])
	}
}

func TestCI_FollowsCheckRunPages(t *testing.T) {
	s := newAPIServer(t)
	s.route(runsPath, func(r *http.Request) answer {
		if r.URL.Query().Get("page") == "2" {
			return answer{status: 200, body: ownFile(t, "check_runs_page2.json")}
		}
		next := s.URL() + runsPath + "?filter=latest&page=2&per_page=100"
		return answer{status: 200, body: ownFile(t, "check_runs_page1.json"), header: http.Header{
			"Link": {fmt.Sprintf(`<%s>; rel="next", <%s>; rel="last"`, next, next)},
		}}
	})
	res, err := newSCMTracker(t, s.URL()).CI(context.Background(), scmRepo, headSHA)
	if err != nil {
		t.Fatal(err)
	}
	if res.Checks != 3 || res.State != CheckFailing || len(res.Failing) != 1 || res.Failing[0].Name != "test (ubuntu-latest)" {
		t.Errorf("result = %+v; want 3 checks, the second page's failure", res)
	}
	if h := s.log(); len(h) != 2 || res.Requests != 2 {
		t.Errorf("requests %d, log %v; want the two pages", res.Requests, paths(h))
	}
}

// TestCI_IdlePollsAreFree: once the answers are cached, a poll that finds nothing new
// is answered 304, costs nothing against the rate limit, and says so; while Actions jobs
// run it is one request.
func TestCI_IdlePollsAreFree(t *testing.T) {
	cases := []struct {
		name          string
		runs          []string
		statuses      []string
		want          CheckState
		first, second int // requests on the first and on an idle call
	}{
		{"actions running", []string{"completed/success", "in_progress/"}, nil, CheckPending, 2, 1},
		{"actions failed", []string{"completed/failure"}, nil, CheckFailing, 1, 1},
		{"actions passed", []string{"completed/success"}, nil, CheckPassing, 2, 2},
		{"statuses only", nil, []string{"pending"}, CheckPending, 2, 2},
		{"runs and a pending status", []string{"in_progress/"}, []string{"pending"}, CheckPending, 2, 2},
		{"runs running, statuses passed", []string{"in_progress/"}, []string{"success"}, CheckPending, 2, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newAPIServer(t)
			s.static(runsPath, runsBody(c.runs...))
			s.static(statusPath, statusBody(c.statuses...))
			tr := newSCMTracker(t, s.URL())
			first, err := tr.CI(context.Background(), scmRepo, headSHA)
			if err != nil {
				t.Fatal(err)
			}
			if first.State != c.want || first.Requests != c.first || first.NotModified {
				t.Fatalf("first call: %s, %d requests, not modified %v; want %s, %d, false", first.State, first.Requests, first.NotModified, c.want, c.first)
			}
			s.log()
			budget, sent := s.budget(), tr.sent.Load()
			idle, err := tr.CI(context.Background(), scmRepo, headSHA)
			if err != nil {
				t.Fatal(err)
			}
			if idle.State != c.want || idle.Requests != c.second || !idle.NotModified {
				t.Errorf("idle call: %s, %d requests, not modified %v; want %s, %d, true", idle.State, idle.Requests, idle.NotModified, c.want, c.second)
			}
			for _, h := range s.log() {
				if h.status != http.StatusNotModified {
					t.Errorf("idle call: %s answered %d, want 304", h.path, h.status)
				}
			}
			if s.budget() != budget || tr.sent.Load()-sent != int64(c.second) {
				t.Errorf("idle call spent %d of the budget in %d requests; want none in %d", budget-s.budget(), tr.sent.Load()-sent, c.second)
			}
			for _, rl := range tr.RateLimits() {
				if !rl.ThrottledUntil.IsZero() {
					t.Errorf("rate limit %s throttled until %s after 304s", rl.Resource, rl.ThrottledUntil)
				}
			}
		})
	}
}

// TestCI_StatusesAskedWhenTheyMatter: a failing status cached from an earlier poll
// still fails the commit while the check runs are pending and the statuses are not
// asked again; a change in the check runs that passes them asks for the statuses.
func TestCI_StatusesAskedWhenTheyMatter(t *testing.T) {
	s := newAPIServer(t)
	s.static(runsPath, runsBody("in_progress/"))
	s.static(statusPath, statusBody("success"))
	tr := newSCMTracker(t, s.URL())
	if _, err := tr.CI(context.Background(), scmRepo, headSHA); err != nil {
		t.Fatal(err)
	}
	s.static(statusPath, statusBody("failure")) // a status turns while the jobs run
	res, err := tr.CI(context.Background(), scmRepo, headSHA)
	if err != nil || res.State != CheckPending || res.Requests != 1 {
		t.Fatalf("jobs still running: %+v, %v; want pending from one request (the statuses last seen passing)", res, err)
	}
	s.static(runsPath, runsBody("completed/success"))
	res, err = tr.CI(context.Background(), scmRepo, headSHA)
	if err != nil || res.State != CheckFailing || res.Requests != 2 || len(res.Failing) != 1 || res.Failing[0].Kind != KindStatus {
		t.Fatalf("jobs passed: %+v, %v; want failing on the status, from two requests", res, err)
	}
	// The check runs fail too: the cached failing status is still reported, unasked.
	s.static(runsPath, runsBody("completed/failure"))
	s.log()
	res, err = tr.CI(context.Background(), scmRepo, headSHA)
	if err != nil || res.State != CheckFailing || len(res.Failing) != 2 || res.Requests != 1 {
		t.Fatalf("both failing: %+v, %v; want both failures from one request", res, err)
	}
}

func TestCI_Errors(t *testing.T) {
	s := newAPIServer(t)
	s.route(runsPath, func(*http.Request) answer {
		return answer{status: 422, body: []byte(`{"message":"No commit found for SHA: ` + headSHA + `","documentation_url":"https://docs.github.com/rest/checks/runs#list-check-runs-for-a-git-reference","status":"422"}`)}
	})
	tr := newSCMTracker(t, s.URL())
	ctx := context.Background()

	_, err := tr.CI(ctx, scmRepo, "0123456789abcdef0123456789abcdef01234567")
	if tracker.KindOf(err) != tracker.ErrNotFound || !strings.Contains(err.Error(), "harbor-labs/tidewatch") {
		t.Errorf("unknown ref (404): %v, want tracker_not_found naming the repository", err)
	}
	if _, err := tr.CI(ctx, scmRepo, headSHA); tracker.KindOf(err) != tracker.ErrNotFound || !strings.Contains(err.Error(), "not pushed yet") {
		t.Errorf("422 no commit found: %v, want tracker_not_found", err)
	}
	s.route(runsPath, func(*http.Request) answer {
		return answer{status: 422, body: []byte(`{"message":"Validation Failed","status":"422"}`)}
	})
	if _, err := tr.CI(ctx, scmRepo, headSHA); tracker.KindOf(err) != tracker.ErrPayload {
		t.Errorf("other 422: %v, want tracker_payload_error", err)
	}
	s.route(runsPath, func(*http.Request) answer {
		return answer{status: 403, body: []byte(`{"message":"Resource not accessible by personal access token","status":"403"}`)}
	})
	if _, err := tr.CI(ctx, scmRepo, headSHA); tracker.KindOf(err) != tracker.ErrAuth || !strings.Contains(err.Error(), "Checks read") {
		t.Errorf("403: %v, want tracker_auth_error naming the Checks permission", err)
	}
	s.static(runsPath, []byte(`{"total_count": 1, "check_runs": {"id": 1}}`))
	if _, err := tr.CI(ctx, scmRepo, headSHA); tracker.KindOf(err) != tracker.ErrPayload {
		t.Errorf("malformed page: %v, want tracker_payload_error", err)
	}
	s.log()
	for _, sha := range []string{"", "main", "abc", "../../../user", headSHA + "00000000000000000000000000"} {
		if _, err := tr.CI(ctx, scmRepo, sha); tracker.KindOf(err) != tracker.ErrPayload {
			t.Errorf("CI(%q) = %v, want tracker_payload_error", sha, err)
		}
	}
	if _, err := tr.CI(ctx, "harbor-labs", headSHA); tracker.KindOf(err) != tracker.ErrPayload {
		t.Errorf("CI of a bad repository = %v, want tracker_payload_error", err)
	}
	if h := s.log(); len(h) != 0 {
		t.Errorf("bad input sent requests: %v", paths(h))
	}
}
