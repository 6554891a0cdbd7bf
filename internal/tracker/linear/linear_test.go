package linear

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"sortie/internal/testkit/fakelinear"
	"sortie/internal/tracker"
)

// testClock is a settable clock shared by the fake and the adapter.
type testClock struct {
	mu  sync.Mutex
	now time.Time
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

func newTest(t *testing.T, cfg tracker.Config) (*fakelinear.Server, *Tracker, *testClock) {
	t.Helper()
	clk := &testClock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	f := fakelinear.New(t, clk.Now)
	f.AddTeam("ENG", "Engineering")
	f.AddTeam("OPS", "Operations")
	if cfg.Project == "" && cfg.Team == "" {
		cfg.Team = "ENG"
	}
	if cfg.APIKey == "" {
		cfg.APIKey = fakelinear.Key
	}
	cfg.Kind, cfg.Endpoint = "linear", f.URL
	tr, err := newTracker(cfg)
	if err != nil {
		t.Fatalf("newTracker: %v", err)
	}
	tr.now = clk.Now
	return f, tr, clk
}

func TestNew_ConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  tracker.Config
		kind tracker.ErrorKind
		want string
	}{
		{"no scope", tracker.Config{APIKey: "k"}, tracker.ErrMissingProject, "tracker.project_slug or tracker.team_key"},
		{"bad team", tracker.Config{APIKey: "k", Team: "E-NG"}, tracker.ErrMissingProject, "tracker.team_key"},
		{"bad project", tracker.Config{APIKey: "k", Project: "a b"}, tracker.ErrMissingProject, "tracker.project_slug"},
		{"no key", tracker.Config{Team: "ENG"}, tracker.ErrMissingAPIKey, "$LINEAR_API_KEY"},
		{"key with space", tracker.Config{Team: "ENG", APIKey: "lin_api_x y"}, tracker.ErrAuth, "whitespace"},
		{"bad endpoint", tracker.Config{Team: "ENG", APIKey: "k", Endpoint: "ftp://x"}, tracker.ErrPayload, "tracker.endpoint"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.cfg)
			if tracker.KindOf(err) != tc.kind || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New: got %v, want kind %s mentioning %q", err, tc.kind, tc.want)
			}
			if strings.Contains(err.Error(), "lin_api_x") {
				t.Fatalf("the error shows the key: %v", err)
			}
		})
	}
}

func TestParseProject_AcceptsSlugURLAndSlugID(t *testing.T) {
	for in, want := range map[string]string{
		"8e8d1fcd6c4c":            "8e8d1fcd6c4c",
		"my-project-8e8d1fcd6c4c": "8e8d1fcd6c4c",
		"https://linear.app/acme/project/my-project-8e8d1fcd6c4c/overview": "8e8d1fcd6c4c",
		"": "",
	} {
		got, err := ParseProject(in)
		if err != nil || got != want {
			t.Errorf("ParseProject(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

func TestFetchCandidates_PagesAcrossCursorsAndFiltersStates(t *testing.T) {
	f, tr, _ := newTest(t, tracker.Config{})
	var want []string
	for i := range PageSize*2 + 7 {
		st := "Todo"
		if i%3 == 1 {
			st = "In Progress"
		}
		if i%5 == 0 {
			st = "Done"
		}
		is := f.AddIssue("ENG", fmt.Sprintf("issue %d", i), st, nil)
		if st != "Done" {
			want = append(want, is.Identifier)
		}
	}
	f.AddIssue("OPS", "other team", "Todo", nil)
	got, err := tr.FetchCandidateIssues(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, is := range got {
		ids = append(ids, is.Identifier)
	}
	if !slices.Equal(ids, want) {
		t.Fatalf("candidates: got %d %v, want %d %v", len(ids), ids, len(want), want)
	}
	if pages := strings.Count(strings.Join(f.Log(), " "), "SortieCandidates"); pages != 2 {
		t.Fatalf("want 2 pages (the active issues fit in 2 pages of %d), got %d: %v", PageSize, pages, f.Log())
	}
}

func TestFetchCandidates_ScopedByProject(t *testing.T) {
	f, tr, _ := newTest(t, tracker.Config{Project: "https://linear.app/acme/project/rocket-abc123def456"})
	in := f.AddIssue("ENG", "in project", "Todo", func(is *fakelinear.Issue) { is.ProjectSlug = "abc123def456" })
	f.AddIssue("OPS", "in project, other team", "In Progress", func(is *fakelinear.Issue) { is.ProjectSlug = "abc123def456" })
	f.AddIssue("ENG", "no project", "Todo", nil)
	f.AddIssue("ENG", "other project", "Todo", func(is *fakelinear.Issue) { is.ProjectSlug = "ffffffffffff" })
	got, err := tr.FetchCandidateIssues(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].ID != in.ID {
		t.Fatalf("want the 2 issues of the project, got %+v", got)
	}
}

// tracker.assignee (Symphony's): only the worker's issues are candidates, named as
// "me" (the key's user), by e-mail (case ignored) or by user id.
func TestFetchCandidates_OnlyTheAssigneesIssues(t *testing.T) {
	for _, tc := range []struct{ name, assignee, want string }{
		{"me", "me", "mine"},
		{"e-mail", "Alice@Example.com", "alice's"},
		{"nobody set", "", "mine alice's nobody's"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, tr, _ := newTest(t, tracker.Config{})
			alice, me := f.AddUser("Alice Doe", "alice", "alice@example.com"), f.Viewer().ID
			f.AddIssue("ENG", "mine", "Todo", func(is *fakelinear.Issue) { is.AssigneeID = me })
			f.AddIssue("ENG", "alice's", "Todo", func(is *fakelinear.Issue) { is.AssigneeID = alice.ID })
			f.AddIssue("ENG", "nobody's", "Todo", nil)
			tr.assignee = tc.assignee
			got, err := tr.FetchCandidateIssues(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			var titles []string
			for _, is := range got {
				titles = append(titles, is.Title)
			}
			if strings.Join(titles, " ") != tc.want {
				t.Errorf("candidates for tracker.assignee %q = %q, want %q", tc.assignee, titles, tc.want)
			}
		})
	}
	// By user id, through New as the daemon builds it.
	f, _, _ := newTest(t, tracker.Config{})
	bob := f.AddUser("Bob", "bob", "bob@example.com")
	f.AddIssue("ENG", "bob's", "Todo", func(is *fakelinear.Issue) { is.AssigneeID = bob.ID })
	f.AddIssue("ENG", "other", "Todo", nil)
	tr, err := newTracker(tracker.Config{Kind: "linear", Endpoint: f.URL, APIKey: fakelinear.Key, Team: "ENG", Assignee: bob.ID})
	if err != nil {
		t.Fatal(err)
	}
	got, err := tr.FetchCandidateIssues(context.Background())
	if err != nil || len(got) != 1 || got[0].Title != "bob's" {
		t.Fatalf("candidates for Bob's id = %+v, %v; want bob's issue only", got, err)
	}
}

func TestFetchIssueByID_NormalisesEverything(t *testing.T) {
	f, tr, _ := newTest(t, tracker.Config{})
	alice := f.AddUser("Alice Doe", "alice", "alice@example.com")
	blocker := f.AddIssue("ENG", "blocker", "In Progress", nil)
	parent := f.AddIssue("ENG", "parent", "Todo", nil)
	is := f.AddIssue("ENG", "Fix the thing", "Todo", func(is *fakelinear.Issue) {
		is.Description = "details"
		is.Priority = 2
		is.Labels = []string{"Backend", "Bug"}
		is.AssigneeID = alice.ID
		is.ParentID = parent.ID
	})
	related := f.AddIssue("ENG", "related", "Todo", nil)
	f.Block(blocker.ID, is.ID)
	f.Relate("related", related.ID, is.ID)
	f.Block(is.ID, related.ID) // is blocks related: not a blocker of is
	f.AddComment(is.ID, alice.ID, "", "first")
	f.AddComment(is.ID, "", "GitHub", "linked a PR")

	got, err := tr.FetchIssueByID(context.Background(), is.Identifier)
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != is.ID || got.Identifier != "ENG-3" || got.Title != "Fix the thing" || got.Description != "details" ||
		got.State != "Todo" || got.URL != is.URL || got.BranchName != is.BranchName || got.Assignee != "Alice Doe" {
		t.Fatalf("issue fields: %+v", got)
	}
	if got.Priority == nil || *got.Priority != 2 {
		t.Fatalf("priority: got %v, want 2", got.Priority)
	}
	if !slices.Equal(got.Labels, []string{"backend", "bug"}) {
		t.Fatalf("labels: %v", got.Labels)
	}
	if len(got.BlockedBy) != 1 || got.BlockedBy[0] != (tracker.BlockerRef{ID: blocker.ID, Identifier: blocker.Identifier, State: "In Progress"}) {
		t.Fatalf("blocked_by: %+v", got.BlockedBy)
	}
	if got.Parent == nil || got.Parent.Identifier != parent.Identifier {
		t.Fatalf("parent: %+v", got.Parent)
	}
	if got.CreatedAt == "" || got.UpdatedAt == "" {
		t.Fatalf("timestamps missing: %+v", got)
	}
	if len(got.Comments) != 2 {
		t.Fatalf("comments: %+v", got.Comments)
	}
	c := got.Comments[0]
	if c.Author != "Alice Doe" || c.AuthorID != alice.ID || c.AuthorLogin != "alice" || c.AuthorEmail != "alice@example.com" || c.AuthorBot || c.Body != "first" {
		t.Fatalf("comment by a person: %+v", c)
	}
	if b := got.Comments[1]; !b.AuthorBot || b.Author != "GitHub" {
		t.Fatalf("comment by an integration: %+v", b)
	}
}

func TestFetchIssueByID_OutOfScopeAndMissing(t *testing.T) {
	f, tr, _ := newTest(t, tracker.Config{})
	other := f.AddIssue("OPS", "elsewhere", "Todo", nil)
	_, err := tr.FetchIssueByID(context.Background(), other.ID)
	if tracker.KindOf(err) != tracker.ErrNotFound || !errors.Is(err, tracker.ErrOutOfProject) {
		t.Fatalf("other team: got %v, want tracker_not_found wrapping ErrOutOfProject", err)
	}
	_, err = tr.FetchIssueByID(context.Background(), "ENG-999")
	if tracker.KindOf(err) != tracker.ErrNotFound || errors.Is(err, tracker.ErrOutOfProject) {
		t.Fatalf("missing: got %v, want tracker_not_found", err)
	}
}

func TestPriority_LinearZeroIsNone(t *testing.T) {
	for p, want := range map[float64]int{0: -1, 1: 1, 2: 2, 3: 3, 4: 4, 5: -1, 2.5: -1, -1: -1} {
		got := priority(&p)
		if (want < 0) != (got == nil) || (got != nil && *got != want) {
			t.Errorf("priority(%v) = %v, want %d (-1: none)", p, got, want)
		}
	}
}

func TestStatesByIDsAndIdentifiers(t *testing.T) {
	f, tr, _ := newTest(t, tracker.Config{})
	a := f.AddIssue("ENG", "a", "Todo", nil)
	b := f.AddIssue("ENG", "b", "Done", nil)
	o := f.AddIssue("OPS", "o", "Todo", nil)
	byID, err := tr.FetchIssueStatesByIDs(context.Background(), []string{a.ID, b.ID, o.ID, "nope", a.ID})
	if err != nil {
		t.Fatal(err)
	}
	if len(byID) != 2 || byID[a.ID] != "Todo" || byID[b.ID] != "Done" {
		t.Fatalf("by ids: %v", byID)
	}
	byIdent, err := tr.FetchIssueStatesByIdentifiers(context.Background(), []string{"eng-1", b.Identifier, o.Identifier, "garbage"})
	if err != nil {
		t.Fatal(err)
	}
	if len(byIdent) != 2 || byIdent["eng-1"] != "Todo" || byIdent[b.Identifier] != "Done" {
		t.Fatalf("by identifiers: %v", byIdent)
	}
	n := len(f.Log())
	if got, _ := tr.FetchIssueStatesByIDs(context.Background(), nil); len(got) != 0 || len(f.Log()) != n {
		t.Fatalf("no ids must send no request")
	}
}

func TestTransition_ByWorkflowStateIDCachedAndRefreshedOnMiss(t *testing.T) {
	f, tr, _ := newTest(t, tracker.Config{})
	is := f.AddIssue("ENG", "a", "Todo", nil)
	ctx := context.Background()
	if err := tr.TransitionIssue(ctx, is.ID, "in progress"); err != nil {
		t.Fatal(err)
	}
	if _, st := f.Issue(is.ID); st != "In Progress" {
		t.Fatalf("state after transition: %q", st)
	}
	if err := tr.TransitionIssue(ctx, is.ID, "In Review"); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(strings.Join(f.Log(), " "), "SortieWorkflowStates"); n != 1 {
		t.Fatalf("the team's states are looked up once and cached, got %d lookups", n)
	}
	// A state added after the cache was filled is found by asking again.
	f.AddState("ENG", "Human Review", "started")
	if err := tr.TransitionIssue(ctx, is.ID, "Human Review"); err != nil {
		t.Fatal(err)
	}
	if _, st := f.Issue(is.ID); st != "Human Review" {
		t.Fatalf("state: %q", st)
	}
	// Already there: nothing is written.
	before := strings.Count(strings.Join(f.Log(), " "), "SortieMove")
	if err := tr.TransitionIssue(ctx, is.ID, "human review"); err != nil {
		t.Fatal(err)
	}
	if after := strings.Count(strings.Join(f.Log(), " "), "SortieMove"); after != before {
		t.Fatalf("a transition to the current state sent a mutation")
	}
	err := tr.TransitionIssue(ctx, is.ID, "Nowhere")
	if tracker.KindOf(err) != tracker.ErrPayload || !strings.Contains(err.Error(), "Todo") {
		t.Fatalf("unknown state: got %v, want tracker_payload_error listing the team's states", err)
	}
	other := f.AddIssue("OPS", "o", "Todo", nil)
	if err := tr.TransitionIssue(ctx, other.ID, "Done"); !errors.Is(err, tracker.ErrOutOfProject) {
		t.Fatalf("out of scope: %v", err)
	}
	if _, st := f.Issue(other.ID); st != "Todo" {
		t.Fatalf("an issue of another team was moved")
	}
}

func TestComments_WriteAndReadBackAsSelf(t *testing.T) {
	f, tr, _ := newTest(t, tracker.Config{})
	is := f.AddIssue("ENG", "a", "Todo", nil)
	ctx := context.Background()
	if err := tr.CommentIssue(ctx, is.ID, "hello from sortie"); err != nil {
		t.Fatal(err)
	}
	cs, err := tr.FetchIssueComments(ctx, is.Identifier)
	if err != nil || len(cs) != 1 || cs[0].Body != "hello from sortie" {
		t.Fatalf("comments: %+v %v", cs, err)
	}
	self, err := tr.Self(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if self.ID != f.Viewer().ID || !self.Wrote(cs[0]) {
		t.Fatalf("Self %+v must have written %+v", self, cs[0])
	}
	n := len(f.Log())
	if _, err := tr.Self(ctx); err != nil || len(f.Log()) != n {
		t.Fatalf("Self is asked once")
	}
}

func TestAuthError_NeverShowsTheKey(t *testing.T) {
	f, tr, _ := newTest(t, tracker.Config{})
	f.SetKey("lin_api_other")
	_, err := tr.FetchCandidateIssues(context.Background())
	if tracker.KindOf(err) != tracker.ErrAuth || !strings.Contains(err.Error(), "tracker.api_key") {
		t.Fatalf("got %v, want tracker_auth_error naming tracker.api_key", err)
	}
	if strings.Contains(err.Error(), fakelinear.Key) {
		t.Fatalf("the error shows the key: %v", err)
	}
}

func TestGraphQLErrorsIn200AreErrors(t *testing.T) {
	f, tr, _ := newTest(t, tracker.Config{})
	f.SetHook(func(w http.ResponseWriter, _ []byte) bool {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"data":{"issues":null},"errors":[{"message":"Something broke","extensions":{"code":"INTERNAL_SERVER_ERROR"}}]}`))
		return true
	})
	if _, err := tr.FetchCandidateIssues(context.Background()); err == nil || !strings.Contains(err.Error(), "Something broke") {
		t.Fatalf("got %v, want the GraphQL error", err)
	}
	f.SetHook(func(w http.ResponseWriter, _ []byte) bool {
		fakelinear.WriteError(w, 400, "GRAPHQL_VALIDATION_FAILED", `Cannot query field "branchName" on type "Issue".`)
		return true
	})
	if _, err := tr.FetchCandidateIssues(context.Background()); tracker.KindOf(err) != tracker.ErrPayload || !strings.Contains(err.Error(), "API may have changed") {
		t.Fatalf("got %v, want tracker_payload_error", err)
	}
	f.SetHook(func(w http.ResponseWriter, _ []byte) bool {
		w.WriteHeader(502)
		return true
	})
	if _, err := tr.FetchCandidateIssues(context.Background()); tracker.KindOf(err) != tracker.ErrAPI {
		t.Fatalf("got %v, want tracker_api_error", err)
	}
}

func TestPagination_CapAndMissingCursor(t *testing.T) {
	f, tr, _ := newTest(t, tracker.Config{})
	f.SetHook(func(w http.ResponseWriter, _ []byte) bool {
		w.Write([]byte(`{"data":{"issues":{"nodes":[],"pageInfo":{"hasNextPage":true,"endCursor":"c"}}}}`))
		return true
	})
	_, err := tr.FetchCandidateIssues(context.Background())
	if tracker.KindOf(err) != tracker.ErrPayload || !strings.Contains(err.Error(), "narrow the scope") {
		t.Fatalf("endless paging: got %v", err)
	}
	f.SetHook(func(w http.ResponseWriter, _ []byte) bool {
		w.Write([]byte(`{"data":{"issues":{"nodes":[],"pageInfo":{"hasNextPage":true,"endCursor":null}}}}`))
		return true
	})
	if _, err := tr.FetchCandidateIssues(context.Background()); tracker.KindOf(err) != tracker.ErrMissingEndCursor {
		t.Fatalf("missing cursor: got %v", err)
	}
}

func TestRateLimit_RefusedIsHeldUntilReset(t *testing.T) {
	f, tr, clk := newTest(t, tracker.Config{})
	f.AddIssue("ENG", "a", "Todo", nil)
	reset := clk.Now().Add(10 * time.Minute)
	f.SetBudgets(fakelinear.Budget{Limit: 100, Remaining: 0, Reset: reset}, fakelinear.Budget{Limit: 10000, Remaining: 10000, Reset: reset})
	_, err := tr.FetchCandidateIssues(context.Background())
	var rl *RateLimitedError
	if tracker.KindOf(err) != tracker.ErrAPI || !errors.As(err, &rl) || !rl.Until.Equal(reset.Truncate(time.Millisecond)) {
		t.Fatalf("got %v (%+v), want a rate-limit error until %v", err, rl, reset)
	}
	n := len(f.Log())
	sent := f.Log()
	if _, err := tr.FetchCandidateIssues(context.Background()); !errors.As(err, &rl) {
		t.Fatalf("second call: %v", err)
	}
	if len(f.Log()) != n {
		t.Fatalf("a request was sent while rate limited: %v", sent)
	}
	if lim := tr.RateLimits(); len(lim) != 2 || lim[0].Resource != "requests" || lim[0].ThrottledUntil.IsZero() {
		t.Fatalf("RateLimits: %+v", lim)
	}
	clk.Advance(11 * time.Minute)
	if _, err := tr.FetchCandidateIssues(context.Background()); err != nil {
		t.Fatalf("after the reset: %v", err)
	}
}

func TestRateLimit_BacksOffBeforeTheLimit(t *testing.T) {
	f, tr, clk := newTest(t, tracker.Config{})
	reset := clk.Now().Add(5 * time.Minute)
	// 5 requests left of 100: below the 1/20 floor after this one.
	f.SetBudgets(fakelinear.Budget{Limit: 100, Remaining: 6, Reset: reset}, fakelinear.Budget{Limit: 10000, Remaining: 10000, Reset: reset})
	if _, err := tr.FetchCandidateIssues(context.Background()); err != nil {
		t.Fatal(err)
	}
	_, err := tr.FetchCandidateIssues(context.Background())
	var rl *RateLimitedError
	if !errors.As(err, &rl) || rl.Budget != "requests" {
		t.Fatalf("got %v, want to be held back before the limit", err)
	}
	// Complexity: held back when less than twice the last query's cost is left.
	f2, tr2, clk2 := newTest(t, tracker.Config{})
	f2.SetBudgets(fakelinear.Budget{Limit: 5000, Remaining: 5000, Reset: clk2.Now().Add(time.Hour)},
		fakelinear.Budget{Limit: 100000, Remaining: 4, Reset: clk2.Now().Add(time.Hour)})
	tr2.FetchCandidateIssues(context.Background())
	if _, err := tr2.FetchCandidateIssues(context.Background()); !errors.As(err, &rl) {
		t.Fatalf("complexity: got %v, want held back", err)
	}
}

func TestRateLimit_429WithRetryAfter(t *testing.T) {
	f, tr, clk := newTest(t, tracker.Config{})
	f.SetHook(func(w http.ResponseWriter, _ []byte) bool {
		w.Header().Set("Retry-After", "30")
		w.WriteHeader(http.StatusTooManyRequests)
		return true
	})
	_, err := tr.FetchCandidateIssues(context.Background())
	var rl *RateLimitedError
	if !errors.As(err, &rl) || rl.RetryAfter(clk.Now()) != 30*time.Second {
		t.Fatalf("got %v, want a rate-limit error retrying after 30s", err)
	}
	f.SetHook(nil)
	clk.Advance(31 * time.Second)
	if _, err := tr.FetchCandidateIssues(context.Background()); err != nil {
		t.Fatalf("after Retry-After: %v", err)
	}
}

func TestRegistered(t *testing.T) {
	if !slices.Contains(tracker.Kinds(), "linear") {
		t.Fatal("kind linear is not registered")
	}
	tr, err := tracker.New(tracker.Config{Kind: "linear", Team: "eng", APIKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := tracker.As[tracker.Account](tr); !ok {
		t.Fatal("no Account")
	}
	if _, ok := tracker.As[tracker.RateLimiter](tr); !ok {
		t.Fatal("no RateLimiter")
	}
}
