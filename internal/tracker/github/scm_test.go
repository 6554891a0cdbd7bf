package github

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"sortie/internal/tracker"
)

// The reactions tests run against apiServer, a GitHub REST API written here route by
// route: the shared fake (internal/testkit/fakegithub) serves the issues.

const (
	scmToken = "ghp_scm_test"
	scmRepo  = "harbor-labs/tidewatch"
	headSHA  = "9f1c2ab7e4d35c0b8a61f2e9d7c4b3a2e1f0d9c8"
)

// answer is what a route sends: a status, a body, and headers to add.
type answer struct {
	status int
	body   []byte
	header http.Header
}

// apiServer serves routes by path, as GitHub does: bearer auth, an ETag on every 200
// (a hash of the body) and 304 to a request that names it, rate-limit headers whose
// remaining count goes down on every answer but a 304 (GitHub does not charge those),
// 404 with GitHub's message for a path it does not know. Paths under /blob/ are log
// storage: no auth, no ETags, no rate limit. It logs every request.
type apiServer struct {
	t   testing.TB
	srv *httptest.Server

	mu        sync.Mutex
	routes    map[string]func(*http.Request) answer
	remaining int
	hits      []hit
}

// hit is one request as the server saw it.
type hit struct {
	path, query   string
	status        int
	authorization string
	rangeHeader   string
}

func newAPIServer(t testing.TB) *apiServer {
	s := &apiServer{t: t, routes: map[string]func(*http.Request) answer{}, remaining: 5000}
	s.srv = httptest.NewServer(s)
	t.Cleanup(s.srv.Close)
	return s
}

func (s *apiServer) URL() string { return s.srv.URL }

// route serves path with fn.
func (s *apiServer) route(path string, fn func(*http.Request) answer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.routes[path] = fn
}

// static serves path with a fixed 200 body.
func (s *apiServer) static(path string, body []byte) {
	s.route(path, func(*http.Request) answer { return answer{status: 200, body: body} })
}

func (s *apiServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	fn := s.routes[r.URL.Path]
	s.mu.Unlock()
	blob := strings.HasPrefix(r.URL.Path, "/blob/")
	var a answer
	switch {
	case !blob && r.Header.Get("Authorization") != "Bearer "+scmToken:
		a = answer{status: 401, body: []byte(`{"message":"Bad credentials","documentation_url":"https://docs.github.com/rest","status":"401"}`)}
	case fn == nil:
		a = answer{status: 404, body: []byte(`{"message":"Not Found","documentation_url":"https://docs.github.com/rest","status":"404"}`)}
	default:
		a = fn(r)
	}
	for k, v := range a.header {
		w.Header()[k] = v
	}
	if !blob {
		if a.status == 200 {
			sum := sha256.Sum256(a.body)
			etag := `W/"` + hex.EncodeToString(sum[:8]) + `"`
			w.Header().Set("ETag", etag)
			if r.Header.Get("If-None-Match") == etag {
				a = answer{status: http.StatusNotModified}
			}
		}
		s.mu.Lock()
		if a.status != http.StatusNotModified {
			s.remaining--
		}
		w.Header().Set("X-RateLimit-Limit", "5000")
		w.Header().Set("X-RateLimit-Remaining", strconv.Itoa(s.remaining))
		w.Header().Set("X-RateLimit-Reset", strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10))
		w.Header().Set("X-RateLimit-Resource", "core")
		s.mu.Unlock()
		if w.Header().Get("Content-Type") == "" && len(a.body) > 0 {
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
		}
	}
	s.mu.Lock()
	s.hits = append(s.hits, hit{path: r.URL.Path, query: r.URL.RawQuery, status: a.status, authorization: r.Header.Get("Authorization"), rangeHeader: r.Header.Get("Range")})
	s.mu.Unlock()
	w.WriteHeader(a.status)
	_, _ = w.Write(a.body)
}

// log returns the requests so far, and forgets them.
func (s *apiServer) log() []hit {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.hits
	s.hits = nil
	return h
}

func (s *apiServer) budget() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.remaining
}

// newSCMTracker builds a tracker against endpoint as the daemon does.
func newSCMTracker(t testing.TB, endpoint string) *Tracker {
	t.Helper()
	tr, err := New(tracker.Config{Kind: "github", Endpoint: endpoint, APIKey: scmToken, Project: scmRepo, UserAgent: "sortie/test"})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return tr.(*Tracker)
}

func paths(hits []hit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = strconv.Itoa(h.status) + " " + h.path
		if h.query != "" {
			out[i] += "?" + h.query
		}
	}
	return out
}

func TestFindPullRequest_ByHeadBranch(t *testing.T) {
	s := newAPIServer(t)
	var query url.Values
	body := ownFile(t, "pulls_head.json")
	s.route("/repos/harbor-labs/tidewatch/pulls", func(r *http.Request) answer {
		query = r.URL.Query()
		return answer{status: 200, body: body}
	})
	tr := newSCMTracker(t, s.URL())

	pr, ok, err := tr.FindPullRequest(context.Background(), scmRepo, "sortie/21-next-high-tide")
	if err != nil || !ok {
		t.Fatalf("FindPullRequest = %v, %v; want found", ok, err)
	}
	for k, want := range map[string]string{"head": "harbor-labs:sortie/21-next-high-tide", "state": "open", "sort": "created", "direction": "desc"} {
		if got := query.Get(k); got != want {
			t.Errorf("query %s = %q, want %q", k, got, want)
		}
	}
	want := PullRequest{
		Number: 58, State: "open", HeadRef: "sortie/21-next-high-tide", HeadSHA: headSHA, HeadRepo: scmRepo, BaseRef: "main",
		URL: "https://github.com/harbor-labs/tidewatch/pull/58", UpdatedAt: time.Date(2026, 4, 2, 9, 45, 3, 0, time.UTC),
	}
	if pr != want {
		t.Errorf("pull request\n got %+v\nwant %+v", pr, want)
	}
}

func TestFindPullRequest_NoneFound(t *testing.T) {
	cases := []struct {
		name, branch, body string
	}{
		{"empty list", "sortie/7-nothing", `[]`},
		// A server that ignores the head filter must not hand back another branch's PR.
		{"filter ignored", "sortie/7-nothing", string(ownFile(t, "pulls_head.json"))},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newAPIServer(t)
			s.static("/repos/harbor-labs/tidewatch/pulls", []byte(c.body))
			pr, ok, err := newSCMTracker(t, s.URL()).FindPullRequest(context.Background(), scmRepo, c.branch)
			if err != nil || ok {
				t.Fatalf("FindPullRequest = %+v, %v, %v; want none, no error", pr, ok, err)
			}
		})
	}
}

func TestFindPullRequest_ForkHeadAndBadInput(t *testing.T) {
	s := newAPIServer(t)
	var head string
	s.route("/repos/harbor-labs/tidewatch/pulls", func(r *http.Request) answer {
		head = r.URL.Query().Get("head")
		return answer{status: 200, body: []byte(`[]`)}
	})
	tr := newSCMTracker(t, s.URL())
	if _, _, err := tr.FindPullRequest(context.Background(), scmRepo, "nina-osei:fix-tz"); err != nil || head != "nina-osei:fix-tz" {
		t.Errorf("fork branch: head filter %q, err %v; want nina-osei:fix-tz", head, err)
	}
	s.log()
	for _, c := range []struct{ repo, branch string }{
		{scmRepo, ""}, {scmRepo, "a b"}, {scmRepo, "../x"}, {scmRepo, "-x"}, {"tidewatch", "main"}, {"a/b/c", "main"}, {"https://github.com/a/b", "main"},
	} {
		_, _, err := tr.FindPullRequest(context.Background(), c.repo, c.branch)
		if tracker.KindOf(err) != tracker.ErrPayload {
			t.Errorf("FindPullRequest(%q, %q) = %v, want tracker_payload_error", c.repo, c.branch, err)
		}
	}
	if h := s.log(); len(h) != 0 {
		t.Errorf("bad input sent requests: %v", paths(h))
	}
}

func TestPullRequest_SingleAndNotFound(t *testing.T) {
	s := newAPIServer(t)
	s.static("/repos/harbor-labs/tidewatch/pulls/58", ownFile(t, "pull.json"))
	tr := newSCMTracker(t, s.URL())
	pr, err := tr.PullRequest(context.Background(), "harbor-labs/tidewatch.git", 58)
	if err != nil {
		t.Fatal(err)
	}
	if pr.Number != 58 || pr.HeadSHA != headSHA || pr.Merged || pr.Draft || pr.State != "open" || pr.BaseRef != "main" {
		t.Errorf("pull request = %+v", pr)
	}
	_, err = tr.PullRequest(context.Background(), scmRepo, 59)
	if tracker.KindOf(err) != tracker.ErrNotFound || !strings.Contains(err.Error(), "harbor-labs/tidewatch") || strings.Contains(err.Error(), "tracker.project (") {
		t.Errorf("missing pull request: %v; want tracker_not_found naming the repository", err)
	}
}

// The repository comes from .sortie/scm.json, which the agent writes: the code-host
// calls read tracker.project's only, and ask GitHub nothing about another.
func TestCodeHost_OnlyTrackerProject(t *testing.T) {
	s := newAPIServer(t)
	tr := newSCMTracker(t, s.URL())
	ctx := context.Background()
	other := "someone-else/private-repo"
	if _, _, err := tr.FindPullRequest(ctx, other, "main"); err == nil || !strings.Contains(err.Error(), "is not tracker.project") {
		t.Errorf("FindPullRequest on another repository: %v, want refused", err)
	}
	if _, err := tr.CI(ctx, other, strings.Repeat("a", 40)); err == nil {
		t.Errorf("CI on another repository: want refused")
	}
	if _, err := tr.JobLogTail(ctx, other, 1, 10); err == nil {
		t.Errorf("JobLogTail on another repository: want refused")
	}
	if _, err := tr.ChangeRequests(ctx, other, 1); err == nil {
		t.Errorf("ChangeRequests on another repository: want refused")
	}
	if n := len(s.log()); n != 0 {
		t.Errorf("GitHub was asked %d times about another repository", n)
	}
	if _, _, err := tr.FindPullRequest(ctx, strings.ToUpper(scmRepo), "main"); err != nil && strings.Contains(err.Error(), "is not tracker.project") {
		t.Errorf("tracker.project in other case refused: %v", err)
	}
}
