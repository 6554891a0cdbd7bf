package github

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"sortie/internal/tracker"
)

// fakeGitHub is an httptest server that behaves like the GitHub REST API on the paths
// the adapter uses: bearer auth, issues (pull requests mixed in), labels, comments,
// dependencies and parents, search, per_page/page pagination with Link headers, weak
// ETags with 304s that cost nothing, and a primary rate limit per resource that counts
// down and refuses when spent.
type fakeGitHub struct {
	t     testing.TB
	srv   *httptest.Server
	owner string
	repo  string
	token string

	mu       sync.Mutex
	issues   map[int64]*fakeIssue
	comments map[int64][]apiComment
	blocked  map[int64][]int64 // issue → blockers
	parent   map[int64]int64
	nextID   int64
	clock    func() time.Time
	limits   map[string]*fakeBudget
	// hook, when set, may answer a request itself (an injected failure); it returns
	// true when it did.
	hook func(w http.ResponseWriter, r *http.Request) bool

	requests int // every request that reached the server
	charged  int // requests charged against a rate limit (not 304s, not refused)
	log      []string
}

type fakeIssue struct {
	apiIssue
	labels []string
	pr     bool
}

type fakeBudget struct {
	limit, remaining int
	reset            time.Time
}

func newFakeGitHub(t testing.TB, clock func() time.Time) *fakeGitHub {
	t.Helper()
	f := &fakeGitHub{
		t: t, owner: "octo", repo: "hello", token: "ghp_test",
		issues: map[int64]*fakeIssue{}, comments: map[int64][]apiComment{},
		blocked: map[int64][]int64{}, parent: map[int64]int64{}, nextID: 1000,
		clock: clock,
		limits: map[string]*fakeBudget{
			"core":   {limit: 5000, remaining: 5000, reset: clock().Add(time.Hour)},
			"search": {limit: 30, remaining: 30, reset: clock().Add(time.Minute)},
		},
	}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

// add creates an issue (or a pull request) with the given labels.
func (f *fakeGitHub) add(num int64, title, state string, labels ...string) *fakeIssue {
	f.mu.Lock()
	defer f.mu.Unlock()
	body := "body of " + title
	fi := &fakeIssue{apiIssue: apiIssue{
		ID: 100 + num, Number: num, Title: title, Body: &body, State: state,
		HTMLURL:       fmt.Sprintf("https://github.com/%s/%s/issues/%d", f.owner, f.repo, num),
		RepositoryURL: fmt.Sprintf("https://api.github.com/repos/%s/%s", f.owner, f.repo),
		CreatedAt:     fmt.Sprintf("2026-01-%02dT00:00:00Z", num%28+1), UpdatedAt: "2026-01-01T00:00:00Z",
	}, labels: labels}
	f.issues[num] = fi
	return fi
}

func (f *fakeGitHub) addPR(num int64, labels ...string) {
	f.add(num, "a pull request", "open", labels...).pr = true
}

func (f *fakeGitHub) issue(num int64) fakeIssue {
	f.mu.Lock()
	defer f.mu.Unlock()
	return *f.issues[num]
}

func (f *fakeGitHub) counts() (requests, charged int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.requests, f.charged
}

func (f *fakeGitHub) setBudget(resource string, limit, remaining int, reset time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.limits[resource] = &fakeBudget{limit: limit, remaining: remaining, reset: reset}
}

func (f *fakeGitHub) setHook(h func(w http.ResponseWriter, r *http.Request) bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hook = h
}

// touch changes an issue the way a person editing it on GitHub would.
func (f *fakeGitHub) touch(num int64, mutate func(*fakeIssue)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	mutate(f.issues[num])
	f.issues[num].UpdatedAt = f.clock().UTC().Format(time.RFC3339)
}

func (f *fakeGitHub) wire(fi *fakeIssue) map[string]any {
	labels := make([]map[string]any, 0, len(fi.labels))
	for i, l := range fi.labels {
		labels = append(labels, map[string]any{"id": 9000 + i, "name": l, "color": "ededed", "default": false})
	}
	m := map[string]any{
		"id": fi.ID, "node_id": "I_" + strconv.FormatInt(fi.ID, 10), "number": fi.Number,
		"title": fi.Title, "body": fi.Body, "state": fi.State, "html_url": fi.HTMLURL,
		"url":            fi.RepositoryURL + "/issues/" + strconv.FormatInt(fi.Number, 10),
		"repository_url": fi.RepositoryURL, "labels": labels, "assignee": nil, "assignees": []any{},
		"type": nil, "locked": false, "comments": len(f.comments[fi.Number]),
		"created_at": fi.CreatedAt, "updated_at": fi.UpdatedAt, "closed_at": nil,
		"state_reason": nil, "user": map[string]any{"login": "reporter"},
	}
	if fi.pr {
		m["pull_request"] = map[string]any{"url": "https://api.github.com/repos/x/y/pulls/1"}
		m["html_url"] = strings.Replace(fi.HTMLURL, "/issues/", "/pull/", 1)
	}
	return m
}

func (f *fakeGitHub) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests++
	f.log = append(f.log, r.Method+" "+r.URL.RequestURI())
	if f.hook != nil {
		hook := f.hook
		f.mu.Unlock()
		done := hook(w, r)
		f.mu.Lock()
		if done {
			return
		}
	}
	if r.Header.Get("User-Agent") == "" || r.Header.Get("Accept") != "application/vnd.github+json" {
		f.fail(w, 400, "missing User-Agent or Accept")
		return
	}
	if r.Header.Get("Authorization") != "Bearer "+f.token {
		f.fail(w, 401, "Bad credentials")
		return
	}
	resource := "core"
	if strings.HasPrefix(r.URL.Path, "/search/") {
		resource = "search"
	}
	b := f.limits[resource]
	if now := f.clock(); !now.Before(b.reset) {
		b.remaining, b.reset = b.limit, now.Add(time.Hour)
	}
	h := w.Header()
	h.Set("X-RateLimit-Limit", strconv.Itoa(b.limit))
	h.Set("X-RateLimit-Reset", strconv.FormatInt(b.reset.Unix(), 10))
	h.Set("X-RateLimit-Resource", resource)
	if b.remaining <= 0 {
		h.Set("X-RateLimit-Remaining", "0")
		f.fail(w, 403, "API rate limit exceeded for user ID 1. If you reach out to GitHub Support for help, please include the request ID.")
		return
	}

	status, body, next := f.route(r)
	if status == 200 && r.Method == http.MethodGet {
		sum := sha256.Sum256(body)
		etag := `W/"` + hex.EncodeToString(sum[:8]) + `"`
		h.Set("ETag", etag)
		if next != "" {
			h.Set("Link", next)
		}
		if r.Header.Get("If-None-Match") == etag {
			// Conditional hit: GitHub does not charge a 304.
			h.Set("X-RateLimit-Remaining", strconv.Itoa(b.remaining))
			w.WriteHeader(http.StatusNotModified)
			return
		}
	}
	b.remaining--
	f.charged++
	h.Set("X-RateLimit-Remaining", strconv.Itoa(b.remaining))
	h.Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

func (f *fakeGitHub) fail(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"message": msg, "documentation_url": "https://docs.github.com/rest"})
}

func jsonBody(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

func errBody(msg string) []byte { return jsonBody(map[string]string{"message": msg}) }

// route answers an authorised request: status, body and Link header.
func (f *fakeGitHub) route(r *http.Request) (int, []byte, string) {
	prefix := "/repos/" + f.owner + "/" + f.repo
	p := r.URL.Path
	if p == "/search/issues" && r.Method == http.MethodGet {
		return f.search(r)
	}
	if p == "/user" && r.Method == http.MethodGet {
		return 200, jsonBody(fakeBot), ""
	}
	if !strings.HasPrefix(p, prefix+"/") {
		return 404, errBody("Not Found"), ""
	}
	parts := strings.Split(strings.TrimPrefix(p, prefix+"/"), "/")
	if parts[0] != "issues" {
		return 404, errBody("Not Found"), ""
	}
	if len(parts) == 1 && r.Method == http.MethodGet {
		var list []*fakeIssue
		for _, fi := range f.issues {
			if st := r.URL.Query().Get("state"); st == "all" || st == fi.State || st == "" && fi.State == "open" {
				list = append(list, fi)
			}
		}
		return f.page(r, list)
	}
	num, err := strconv.ParseInt(parts[1], 10, 64)
	fi := f.issues[num]
	if err != nil || fi == nil {
		return 404, errBody("Not Found"), ""
	}
	switch {
	case len(parts) == 2 && r.Method == http.MethodGet:
		return 200, jsonBody(f.wire(fi)), ""
	case len(parts) == 2 && r.Method == http.MethodPatch:
		var patch struct {
			Labels      *[]string `json:"labels"`
			State       *string   `json:"state"`
			StateReason *string   `json:"state_reason"`
		}
		if err := json.NewDecoder(r.Body).Decode(&patch); err != nil {
			return 400, errBody("Problems parsing JSON"), ""
		}
		if patch.State != nil && *patch.State != "open" && *patch.State != "closed" {
			return 422, errBody("Validation Failed"), ""
		}
		if patch.Labels != nil {
			fi.labels = slices.Clone(*patch.Labels)
		}
		if patch.State != nil {
			fi.State = *patch.State
		}
		fi.UpdatedAt = f.clock().UTC().Format(time.RFC3339)
		return 200, jsonBody(f.wire(fi)), ""
	case len(parts) == 3 && parts[2] == "comments" && r.Method == http.MethodGet:
		cs := f.comments[num]
		items := make([]any, len(cs))
		for i := range cs {
			items[i] = cs[i]
		}
		return f.pageAny(r, items)
	case len(parts) == 3 && parts[2] == "comments" && r.Method == http.MethodPost:
		var c struct {
			Body *string `json:"body"`
		}
		if err := json.NewDecoder(r.Body).Decode(&c); err != nil || c.Body == nil {
			return 422, errBody("Validation Failed"), ""
		}
		f.nextID++
		nc := apiComment{ID: f.nextID, User: &fakeBot, Body: c.Body, CreatedAt: f.clock().UTC().Format(time.RFC3339)}
		f.comments[num] = append(f.comments[num], nc)
		return 201, jsonBody(nc), ""
	case len(parts) == 3 && parts[2] == "parent" && r.Method == http.MethodGet:
		pn, ok := f.parent[num]
		if !ok {
			return 404, errBody("Not Found"), ""
		}
		return 200, jsonBody(f.wire(f.issues[pn])), ""
	case len(parts) == 4 && parts[2] == "dependencies" && parts[3] == "blocked_by" && r.Method == http.MethodGet:
		var list []*fakeIssue
		for _, bn := range f.blocked[num] {
			list = append(list, f.issues[bn])
		}
		return f.page(r, list)
	}
	return 404, errBody("Not Found"), ""
}

// fakeBot is the account the fake's token belongs to (GET /user), the author of the
// comments the adapter posts.
var fakeBot = apiUser{Login: "sortie-bot", ID: 4242, Type: "User"}

func (f *fakeGitHub) search(r *http.Request) (int, []byte, string) {
	q := r.URL.Query().Get("q")
	var want []string
	for _, term := range strings.Fields(q) {
		if l, ok := strings.CutPrefix(term, "label:"); ok {
			want = append(want, strings.Trim(l, `"`))
		}
	}
	var items []any
	for _, n := range f.sortedNumbers() {
		fi := f.issues[n]
		if fi.pr && strings.Contains(q, "is:issue") || strings.Contains(q, "is:open") && fi.State != "open" {
			continue
		}
		ok := true
		for _, l := range want {
			ok = ok && slices.ContainsFunc(fi.labels, func(x string) bool { return strings.EqualFold(x, l) })
		}
		if ok {
			items = append(items, f.wire(fi))
		}
	}
	if items == nil {
		items = []any{}
	}
	return 200, jsonBody(map[string]any{"total_count": len(items), "incomplete_results": false, "items": items}), ""
}

func (f *fakeGitHub) sortedNumbers() []int64 {
	var nums []int64
	for n := range f.issues {
		nums = append(nums, n)
	}
	slices.Sort(nums)
	return nums
}

func (f *fakeGitHub) page(r *http.Request, list []*fakeIssue) (int, []byte, string) {
	slices.SortFunc(list, func(a, b *fakeIssue) int { return int(a.Number - b.Number) })
	items := make([]any, len(list))
	for i, fi := range list {
		items[i] = f.wire(fi)
	}
	return f.pageAny(r, items)
}

// pageAny cuts items into per_page pages (default 30, at most 100) and links the next.
func (f *fakeGitHub) pageAny(r *http.Request, items []any) (int, []byte, string) {
	q := r.URL.Query()
	per, _ := strconv.Atoi(q.Get("per_page"))
	if per <= 0 {
		per = 30
	}
	per = min(per, 100)
	page, _ := strconv.Atoi(q.Get("page"))
	page = max(page, 1)
	lo := min((page-1)*per, len(items))
	hi := min(lo+per, len(items))
	out := items[lo:hi]
	if out == nil {
		out = []any{}
	}
	link := ""
	if hi < len(items) {
		q.Set("page", strconv.Itoa(page+1))
		last := (len(items) + per - 1) / per
		u := f.srv.URL + r.URL.Path + "?" + q.Encode()
		q.Set("page", strconv.Itoa(last))
		link = fmt.Sprintf(`<%s>; rel="next", <%s>; rel="last"`, u, f.srv.URL+r.URL.Path+"?"+q.Encode())
	}
	return 200, jsonBody(out), link
}

// testClock is a settable clock shared by the fake and the tracker.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func newTestClock() *testClock {
	return &testClock{now: time.Date(2026, 4, 1, 12, 0, 0, 0, time.UTC)}
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// newTestTracker builds a tracker against f through the registry, as the daemon does,
// with the shared clock.
func newTestTracker(t testing.TB, f *fakeGitHub, clock *testClock, mutate ...func(*tracker.Config)) *Tracker {
	t.Helper()
	cfg := tracker.Config{
		Kind: "github", Endpoint: f.srv.URL, APIKey: f.token, Project: f.owner + "/" + f.repo,
		ActiveStates: []string{"Todo", "In Progress"}, TerminalStates: []string{"Done", "Cancelled"},
		HandoffState: "Human Review", UserAgent: "sortie/test",
	}
	for _, m := range mutate {
		m(&cfg)
	}
	tr, err := tracker.New(cfg)
	if err != nil {
		t.Fatalf("tracker.New: %v", err)
	}
	g := tr.(*Tracker)
	g.now = clock.Now
	c := f.srv.Client()
	c.CheckRedirect = g.client.CheckRedirect // the adapter's own redirect policy
	g.client = c
	return g
}
