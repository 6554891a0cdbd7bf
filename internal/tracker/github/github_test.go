package github

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"sortie/internal/testkit/fakegithub"
	"sortie/internal/tracker"
)

// referenceDir holds sortie 1.9's GitHub REST response bodies, third-party data beside
// the repository (/work/shared/testdata/README.md): read in place when present, as in
// CI, never copied. The package's own bodies, written in the REST API's shapes, are in
// testdata/.
var referenceDir = filepath.FromSlash("../../../../shared/testdata/sortie-1.9/internal/scm/github/testdata")

func readReference(name string) ([]byte, error) {
	return os.ReadFile(filepath.Join(referenceDir, name))
}

// referenceFile reads one reference body, skipping the test, and saying what was
// skipped, when the shared data is not beside the repository.
func referenceFile(t testing.TB, name string) []byte {
	t.Helper()
	data, err := readReference(name)
	if err != nil {
		t.Skipf("skipped: ../shared/testdata/sortie-1.9/internal/scm/github/testdata/%s not present (third-party sortie 1.9 compatibility data, run in CI)", name)
	}
	return data
}

// ownFile reads one of the package's own response bodies from testdata/.
func ownFile(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func ids(issues []tracker.Issue) []string {
	out := make([]string, len(issues))
	for i, is := range issues {
		out[i] = is.ID + ":" + is.State
	}
	return out
}

func TestFetchCandidates_ActiveOpenIssuesOnlyWithoutPullRequests(t *testing.T) {
	clock := newTestClock()
	f := fakegithub.New(t, fakegithub.WithClock(clock.Now))
	f.AddIssue(1, "labelled todo", "open", "todo", "bug")
	f.AddPR(2, "In Progress")
	f.AddIssue(3, "no state label", "open", "enhancement")
	f.AddIssue(4, "open but done", "open", "Done")
	f.AddIssue(5, "closed with a stale active label", "closed", "In Progress")
	f.AddIssue(6, "waiting for a human", "open", "human review")
	f.AddIssue(7, "shouty", "open", "IN PROGRESS", "Área")
	tr := newTestTracker(t, f, clock)

	got, err := tr.FetchCandidateIssues(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"1:Todo", "3:Todo", "7:In Progress"}
	if !slices.Equal(ids(got), want) {
		t.Fatalf("candidates = %v, want %v", ids(got), want)
	}
	if is := got[2]; !slices.Equal(is.Labels, []string{"in progress", "área"}) || is.Comments != nil || is.BlockedBy == nil || is.Identifier != "7" {
		t.Errorf("issue 7 normalised as %+v; want lowercased labels, nil comments, non-nil blocked_by, identifier 7", is)
	}
}

// A page of the list-issues endpoint as GitHub sends it: pull requests mixed in,
// state labels, a closed issue with a stale active label.
func TestFetchCandidates_ListIssuesPayload(t *testing.T) {
	cases := []struct {
		name  string
		read  func(testing.TB, string) []byte
		want  []string // id:state of the candidates, in order
		check func(t *testing.T, got []tracker.Issue)
	}{
		{"own", ownFile, []string{"11:backlog", "13:in-progress"}, func(t *testing.T, got []tracker.Issue) {
			if is := got[0]; is.Description != "Export the week's tide table as CSV.\n\n- one row per reading\n- UTC timestamps" ||
				is.URL != "https://github.com/harbor-labs/tidewatch/issues/11" || is.IssueType != "Feature" || is.Assignee != "" {
				t.Errorf("#11 = %+v", is)
			}
			// A null body is an empty description; the assignee is the assignee field's.
			if is := got[1]; is.Description != "" || is.Assignee != "mkoval" || !slices.Equal(is.Labels, []string{"in-progress", "bug"}) ||
				is.IssueType != "Bug" || is.CreatedAt != "2026-02-02T14:00:00Z" || is.UpdatedAt != "2026-02-05T16:45:00Z" {
				t.Errorf("#13 = %+v", is)
			}
		}},
		{"reference", referenceFile, []string{"1:backlog", "3:in-progress"}, func(t *testing.T, got []tracker.Issue) {
			if got[0].Description != "needs attention" {
				t.Errorf("first candidate = %+v, want #1 in backlog", got[0])
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			body := c.read(t, "issues.json")
			clock := newTestClock()
			f := fakegithub.New(t, fakegithub.WithClock(clock.Now))
			f.SetHook(func(w http.ResponseWriter, r *http.Request) bool {
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write(body)
				return true
			})
			tr := newTestTracker(t, f, clock, func(c *tracker.Config) {
				c.ActiveStates, c.TerminalStates, c.HandoffState = []string{"backlog", "in-progress", "review"}, []string{"done", "wontfix"}, ""
			})
			got, err := tr.FetchCandidateIssues(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			// Not candidates: the pull request, the issue labelled done, the closed one.
			if !slices.Equal(ids(got), c.want) {
				t.Fatalf("candidates = %v, want %v", ids(got), c.want)
			}
			for _, is := range got {
				if is.Comments != nil || is.BlockedBy == nil {
					t.Errorf("#%s: comments %v, blocked_by %v; want nil and non-nil", is.ID, is.Comments, is.BlockedBy)
				}
			}
			c.check(t, got)
		})
	}
}

// One issue body, as the get-issue endpoint returns it, normalises field by field; an
// issue of another repository is named owner/repo#N.
func TestNormalize_IssuePayload(t *testing.T) {
	st := newStates(tracker.Config{ActiveStates: []string{"backlog", "in-progress", "review"}, TerminalStates: []string{"done"}})
	cases := []struct {
		name, file, repo string
		read             func(testing.TB, string) []byte
		want             tracker.Issue
	}{
		{"own", "issue.json", "harbor-labs/tidewatch", ownFile, tracker.Issue{
			ID: "21", Identifier: "21", Title: "Show the next high tide on the dashboard",
			Description: "Users want the **next high tide** at a glance.", State: "review",
			URL: "https://github.com/harbor-labs/tidewatch/issues/21", Labels: []string{"review", "docs"},
			Assignee: "nina-osei", IssueType: "Feature", BlockedBy: []tracker.BlockerRef{},
			CreatedAt: "2026-02-10T08:15:00Z", UpdatedAt: "2026-02-12T13:20:00Z",
		}},
		{"own parent from another repository", "parent.json", "octo/hello", ownFile, tracker.Issue{
			ID: "20", Identifier: "harbor-labs/tidewatch#20", Title: "Dashboard improvements",
			Description: "Groups the dashboard work.", State: "backlog",
			URL: "https://github.com/harbor-labs/tidewatch/issues/20", Labels: []string{}, BlockedBy: []tracker.BlockerRef{},
			CreatedAt: "2026-01-05T08:00:00Z", UpdatedAt: "2026-02-10T08:15:00Z",
		}},
		{"reference", "issue.json", "owner/repo", referenceFile, tracker.Issue{
			ID: "42", Identifier: "42", Title: "Add dark mode support",
			Description: "Users want a **dark mode** option.", State: "in-progress",
			URL: "https://github.com/owner/repo/issues/42", Labels: []string{"in-progress", "ui", "enhancement"},
			Assignee: "alice", IssueType: "Feature", BlockedBy: []tracker.BlockerRef{},
			CreatedAt: "2026-01-01T00:00:00Z", UpdatedAt: "2026-01-02T00:00:00Z",
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a, err := parseIssue(c.read(t, c.file))
			if err != nil {
				t.Fatal(err)
			}
			if got := st.normalize(&a, c.repo); !reflect.DeepEqual(got, c.want) {
				t.Errorf("normalised\n got %+v\nwant %+v", got, c.want)
			}
		})
	}
}

func TestFetchCandidates_FollowsLinkPagesOfOneHundred(t *testing.T) {
	clock := newTestClock()
	f := fakegithub.New(t, fakegithub.WithClock(clock.Now))
	for n := int64(1); n <= 250; n++ {
		f.AddIssue(n, fmt.Sprintf("issue %d", n), "open", "todo")
	}
	f.AddPR(251, "todo")
	tr := newTestTracker(t, f, clock)
	got, err := tr.FetchCandidateIssues(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 250 || got[0].ID != "1" || got[249].ID != "250" {
		t.Fatalf("got %d candidates (first %v), want 250 in order", len(got), ids(got[:1]))
	}
	req := f.Counts().Requests
	if req != 3 {
		t.Errorf("requests = %d, want 3 (pages of 100): %v", req, f.Log())
	}
	for _, l := range f.Log() {
		if !strings.Contains(l, "per_page=100") {
			t.Errorf("request without per_page=100: %s", l)
		}
	}
}

// An idle poll cycle — candidates plus the states of running issues, nothing changed
// on GitHub — must cost at most one request against the rate limit.
func TestIdlePoll_CostsAtMostOneChargedRequest(t *testing.T) {
	for _, filter := range []string{"", "label:todo"} {
		t.Run("filter="+filter, func(t *testing.T) {
			clock := newTestClock()
			f := fakegithub.New(t, fakegithub.WithClock(clock.Now))
			for n := int64(1); n <= 230; n++ {
				f.AddIssue(n, fmt.Sprintf("issue %d", n), "open", "todo")
			}
			f.AddPR(231, "todo")
			tr := newTestTracker(t, f, clock, func(c *tracker.Config) { c.QueryFilter = filter })
			running := []string{"3", "150", "229"}
			cycle := func() {
				t.Helper()
				if _, err := tr.FetchCandidateIssues(context.Background()); err != nil {
					t.Fatal(err)
				}
				if _, err := tr.FetchIssueStatesByIDs(context.Background(), running); err != nil {
					t.Fatal(err)
				}
			}
			cycle() // warms the ETag cache
			before := f.Counts().Charged
			for range 3 {
				clock.Advance(30e9)
				cycle()
			}
			after := f.Counts().Charged
			t.Logf("charged requests in 3 idle cycles: %d", after-before)
			if per := float64(after-before) / 3; per > 1 {
				t.Fatalf("an idle poll cycle cost %.1f charged requests, want at most 1; log: %v", per, f.Log()[len(f.Log())-10:])
			}
		})
	}
}

func TestETag_OnlyTheChangedPageIsCharged(t *testing.T) {
	clock := newTestClock()
	f := fakegithub.New(t, fakegithub.WithClock(clock.Now))
	for n := int64(1); n <= 250; n++ {
		f.AddIssue(n, fmt.Sprintf("issue %d", n), "open", "todo")
	}
	tr := newTestTracker(t, f, clock)
	if _, err := tr.FetchCandidateIssues(context.Background()); err != nil {
		t.Fatal(err)
	}
	f.Touch(240, func(is *fakegithub.Issue) { is.Labels = []string{"Done"} })
	before := f.Counts().Charged
	got, err := tr.FetchCandidateIssues(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if after := f.Counts().Charged; after-before != 1 {
		t.Errorf("charged %d requests after one issue on page 3 changed, want 1", after-before)
	}
	if len(got) != 249 || slices.ContainsFunc(got, func(is tracker.Issue) bool { return is.ID == "240" }) {
		t.Errorf("got %d candidates, want 249 without #240 (now Done)", len(got))
	}
}

// An issue filed behind a full last page lands on a new page, and the full page itself
// is unchanged (304): the next poll must still find it. (Found by the webhook benchmark:
// with exactly 100 open issues, the 101st waited until an issue on page 1 changed.)
func TestETag_AnIssueOnANewPageBehindAFullOneIsFound(t *testing.T) {
	clock := newTestClock()
	f := fakegithub.New(t, fakegithub.WithClock(clock.Now))
	for n := int64(1); n <= 100; n++ {
		f.AddIssue(n, fmt.Sprintf("issue %d", n), "open", "todo")
	}
	tr := newTestTracker(t, f, clock)
	for range 2 { // the second poll is all 304s and looks for a page after the full one
		if got, err := tr.FetchCandidateIssues(context.Background()); err != nil || len(got) != 100 {
			t.Fatalf("candidates = %d, %v; want 100", len(got), err)
		}
	}
	f.AddIssue(101, "filed just now", "open", "todo")
	got, err := tr.FetchCandidateIssues(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 101 || !slices.ContainsFunc(got, func(is tracker.Issue) bool { return is.Identifier == "101" }) {
		t.Fatalf("candidates after #101 was filed = %d, want 101 with #101", len(got))
	}
	// Once seen, an idle poll costs nothing: two pages, both 304.
	before := f.Counts()
	if _, err := tr.FetchCandidateIssues(context.Background()); err != nil {
		t.Fatal(err)
	}
	if after := f.Counts(); after.Charged != before.Charged || after.NotModified-before.NotModified != 2 {
		t.Errorf("an idle poll: %d charged, %d answered 304; want 0 charged and 2 (the two pages) 304", after.Charged-before.Charged, after.NotModified-before.NotModified)
	}
}

func TestStates_LabelsThenOpenClosedFallbacks(t *testing.T) {
	clock := newTestClock()
	f := fakegithub.New(t, fakegithub.WithClock(clock.Now))
	cases := []struct {
		state  string
		labels []string
		want   string
	}{
		{"open", nil, "Todo"},
		{"open", []string{"bug"}, "Todo"},
		{"open", []string{"in progress"}, "In Progress"},
		{"open", []string{"done", "todo"}, "Todo"}, // active wins over terminal
		{"open", []string{"Human Review"}, "Human Review"},
		{"open", []string{"cancelled"}, "Cancelled"},
		{"closed", nil, "Done"},
		{"closed", []string{"Cancelled"}, "Cancelled"},
		{"closed", []string{"human review"}, "Human Review"},
		{"closed", []string{"In Progress"}, "Done"}, // closing stops work
	}
	var all []string
	for i, c := range cases {
		n := int64(i + 1)
		f.AddIssue(n, "t", c.state, c.labels...)
		all = append(all, fmt.Sprint(n))
	}
	f.AddPR(99, "todo")
	tr := newTestTracker(t, f, clock)
	got, err := tr.FetchIssueStatesByIDs(context.Background(), append(all, "99", "404", "not-a-number"))
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range cases {
		if s := got[fmt.Sprint(i+1)]; s != c.want {
			t.Errorf("%s issue labelled %v: state %q, want %q", c.state, c.labels, s, c.want)
		}
	}
	for _, id := range []string{"99", "404", "not-a-number"} {
		if s, ok := got[id]; ok {
			t.Errorf("id %s: got state %q, want it omitted", id, s)
		}
	}
}

func TestTransition_SwapsLabelsAndClosesOrReopens(t *testing.T) {
	cases := []struct {
		name             string
		state            string
		labels           []string
		target           string
		wantLabels       []string
		wantState        string
		wantNoRequest    bool
		wantErr          tracker.ErrorKind
		wantStateOfIssue string
	}{
		{name: "active to active", state: "open", labels: []string{"bug", "Todo"}, target: "in progress",
			wantLabels: []string{"bug", "In Progress"}, wantState: "open"},
		{name: "active to terminal closes", state: "open", labels: []string{"In Progress", "bug"}, target: "Done",
			wantLabels: []string{"bug", "Done"}, wantState: "closed"},
		{name: "terminal to active reopens", state: "closed", labels: []string{"done"}, target: "Todo",
			wantLabels: []string{"Todo"}, wantState: "open"},
		{name: "to handoff stays open", state: "open", labels: []string{"In Progress", "todo"}, target: "Human Review",
			wantLabels: []string{"Human Review"}, wantState: "open"},
		{name: "already there sends nothing", state: "open", labels: []string{"x", "In Progress"}, target: "In Progress",
			wantLabels: []string{"x", "In Progress"}, wantState: "open", wantNoRequest: true},
		{name: "unknown target", state: "open", labels: []string{"todo"}, target: "Shipped", wantErr: tracker.ErrPayload},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			clock := newTestClock()
			f := fakegithub.New(t, fakegithub.WithClock(clock.Now))
			f.AddIssue(5, "héllo", c.state, c.labels...)
			tr := newTestTracker(t, f, clock)
			err := tr.TransitionIssue(context.Background(), "5", c.target)
			if c.wantErr != "" {
				if tracker.KindOf(err) != c.wantErr {
					t.Fatalf("err = %v, want kind %s", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			fi, _ := f.Issue(5)
			if !slices.Equal(fi.Labels, c.wantLabels) || fi.State != c.wantState {
				t.Errorf("after transition: labels %v state %s, want %v %s", fi.Labels, fi.State, c.wantLabels, c.wantState)
			}
			patched := slices.ContainsFunc(f.Log(), func(l string) bool { return strings.HasPrefix(l, "PATCH") })
			if patched == c.wantNoRequest {
				t.Errorf("PATCH sent = %v, want %v: %v", patched, !c.wantNoRequest, f.Log())
			}
			st, err := tr.FetchIssueStatesByIDs(context.Background(), []string{"5"})
			if err != nil || !strings.EqualFold(st["5"], c.target) {
				t.Errorf("state after transition = %q (%v), want %q", st["5"], err, c.target)
			}
		})
	}
}

func TestComments_ListPagesAndCreateUnicode(t *testing.T) {
	clock := newTestClock()
	f := fakegithub.New(t, fakegithub.WithClock(clock.Now))
	f.AddIssue(1, "日本語のタイトル 🚀", "open", "todo")
	tr := newTestTracker(t, f, clock)
	ctx := context.Background()
	got, err := tr.FetchIssueComments(ctx, "1")
	if err != nil || got == nil || len(got) != 0 {
		t.Fatalf("comments of an issue without any = %v, %v; want empty, non-nil", got, err)
	}
	for i := range 130 {
		if err := tr.CommentIssue(ctx, "#1", fmt.Sprintf("комментарий %d ✓ <b>", i)); err != nil {
			t.Fatal(err)
		}
	}
	got, err = tr.FetchIssueComments(ctx, "1")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 130 || got[0].Body != "комментарий 0 ✓ <b>" || got[129].Author != "sortie-bot" || got[0].ID == "" {
		t.Fatalf("got %d comments, first %+v", len(got), got[0])
	}
	if err := tr.CommentIssue(ctx, "999", "x"); tracker.KindOf(err) != tracker.ErrNotFound {
		t.Errorf("comment on a missing issue: %v, want tracker_not_found", err)
	}
}

func TestFetchIssueByID_CommentsBlockersParent(t *testing.T) {
	clock := newTestClock()
	f := fakegithub.New(t, fakegithub.WithClock(clock.Now))
	f.AddIssue(1, "Ünïcødé 🎉", "open", "In Progress")
	f.AddIssue(2, "blocker", "open", "todo")
	f.AddIssue(3, "closed blocker", "closed")
	f.AddIssue(7, "epic", "open")
	f.AddPR(8)
	f.SetBlockedBy(1, 2, 3)
	f.SetParent(1, 7)
	tr := newTestTracker(t, f, clock)
	ctx := context.Background()
	is, err := tr.FetchIssueByID(ctx, "1")
	if err != nil {
		t.Fatal(err)
	}
	if is.Title != "Ünïcødé 🎉" || is.Comments == nil || is.Parent == nil || is.Parent.ID != "7" {
		t.Errorf("issue = %+v; want the unicode title, empty comments, parent 7", is)
	}
	want := []tracker.BlockerRef{{ID: "2", Identifier: "2", State: "Todo"}, {ID: "3", Identifier: "3", State: "Done"}}
	if !slices.Equal(is.BlockedBy, want) {
		t.Errorf("blocked_by = %v, want %v", is.BlockedBy, want)
	}

	// No parent, and no dependencies API (older GitHub Enterprise): skipped.
	f.SetHook(func(w http.ResponseWriter, r *http.Request) bool {
		if strings.Contains(r.URL.Path, "/dependencies/") {
			w.WriteHeader(404)
			_, _ = w.Write([]byte(`{"message":"Not Found"}`))
			return true
		}
		return false
	})
	is, err = tr.FetchIssueByID(ctx, "2")
	if err != nil || is.Parent != nil || is.BlockedBy == nil || len(is.BlockedBy) != 0 {
		t.Errorf("issue 2 = %+v, %v; want no parent and empty blocked_by", is, err)
	}
	for _, id := range []string{"8", "404", "abc"} {
		if _, err := tr.FetchIssueByID(ctx, id); tracker.KindOf(err) != tracker.ErrNotFound {
			t.Errorf("FetchIssueByID(%s) = %v, want tracker_not_found", id, err)
		}
	}
}

func TestErrors_StatusAndPayloadMapping(t *testing.T) {
	cases := []struct {
		name   string
		status int
		body   string
		header map[string]string
		want   tracker.ErrorKind
	}{
		{"bad credentials", 401, `{"message":"Bad credentials"}`, nil, tracker.ErrAuth},
		{"forbidden", 403, `{"message":"Resource not accessible by personal access token"}`, nil, tracker.ErrAuth},
		{"not found", 404, `{"message":"Not Found"}`, nil, tracker.ErrNotFound},
		{"gone", 410, `{"message":"Issues are disabled for this repo"}`, nil, tracker.ErrNotFound},
		{"validation", 422, `{"message":"Validation Failed"}`, nil, tracker.ErrPayload},
		{"too many", 429, `{"message":"slow down"}`, map[string]string{"Retry-After": "5"}, tracker.ErrAPI},
		{"primary limit", 403, `{"message":"API rate limit exceeded"}`, map[string]string{"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "1775048400"}, tracker.ErrAPI},
		{"secondary limit", 403, `{"message":"You have exceeded a secondary rate limit."}`, nil, tracker.ErrAPI},
		{"server error", 500, `{"message":"Server Error"}`, nil, tracker.ErrAPI},
		{"bad gateway html", 502, `<html>bad gateway</html>`, nil, tracker.ErrAPI},
		{"unavailable", 503, ``, nil, tracker.ErrAPI},
		{"malformed json", 200, `[{"number": 1, "title": `, nil, tracker.ErrPayload},
		{"wrong shape", 200, `{"message":"an object, not a list"}`, nil, tracker.ErrPayload},
		{"unconditional 304", 304, ``, nil, tracker.ErrPayload},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			clock := newTestClock()
			f := fakegithub.New(t, fakegithub.WithClock(clock.Now))
			f.SetHook(func(w http.ResponseWriter, r *http.Request) bool {
				for k, v := range c.header {
					w.Header().Set(k, v)
				}
				w.WriteHeader(c.status)
				_, _ = w.Write([]byte(c.body))
				return true
			})
			tr := newTestTracker(t, f, clock)
			_, err := tr.FetchCandidateIssues(context.Background())
			if tracker.KindOf(err) != c.want {
				t.Fatalf("err = %v, want kind %s", err, c.want)
			}
			if strings.Contains(err.Error(), fakegithub.Token) {
				t.Errorf("error leaks the token: %v", err)
			}
		})
	}
}

func TestErrors_TransportAndTimeout(t *testing.T) {
	clock := newTestClock()
	f := fakegithub.New(t, fakegithub.WithClock(clock.Now))
	tr := newTestTracker(t, f, clock)
	f.SetHook(func(w http.ResponseWriter, r *http.Request) bool {
		<-r.Context().Done() // hang until the client gives up
		return true
	})
	ctx, cancel := context.WithTimeout(context.Background(), 50e6)
	defer cancel()
	if _, err := tr.FetchCandidateIssues(ctx); tracker.KindOf(err) != tracker.ErrTransport {
		t.Errorf("hung server: %v, want tracker_transport_error", err)
	}
	f.SetHook(nil)
	f.Close()
	if _, err := tr.FetchCandidateIssues(context.Background()); tracker.KindOf(err) != tracker.ErrTransport {
		t.Errorf("closed server: %v, want tracker_transport_error", err)
	}
}

func TestRequests_CarryAuthUserAgentAndAPIVersion(t *testing.T) {
	clock := newTestClock()
	f := fakegithub.New(t, fakegithub.WithClock(clock.Now))
	var seen http.Header
	f.SetHook(func(w http.ResponseWriter, r *http.Request) bool { seen = r.Header.Clone(); return false })
	tr := newTestTracker(t, f, clock)
	if _, err := tr.FetchCandidateIssues(context.Background()); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{"Authorization": "Bearer ghp_test", "User-Agent": "sortie/test", "X-Github-Api-Version": apiVersion, "Accept": "application/vnd.github+json"} {
		if got := seen.Get(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
}

func TestPagination_RefusesLinkToAnotherHost(t *testing.T) {
	clock := newTestClock()
	f := fakegithub.New(t, fakegithub.WithClock(clock.Now))
	f.SetHook(func(w http.ResponseWriter, r *http.Request) bool {
		w.Header().Set("Link", `<https://evil.example/repos/octo/hello/issues?page=2>; rel="next"`)
		_, _ = w.Write([]byte(`[]`))
		return true
	})
	tr := newTestTracker(t, f, clock)
	_, err := tr.FetchCandidateIssues(context.Background())
	if tracker.KindOf(err) != tracker.ErrPayload || !strings.Contains(err.Error(), "evil.example") {
		t.Fatalf("err = %v, want tracker_payload_error naming the foreign host", err)
	}
}

func TestHugePageOfUnicodeIssues(t *testing.T) {
	clock := newTestClock()
	f := fakegithub.New(t, fakegithub.WithClock(clock.Now))
	big := strings.Repeat("ユニコード本文 — ✓ ", 4000) // ~100 KB per body
	for n := int64(1); n <= 100; n++ {
		f.AddIssue(n, fmt.Sprintf("タイトル %d 🚀", n), "open", "todo")
		f.Touch(n, func(is *fakegithub.Issue) { is.Body = big })
	}
	tr := newTestTracker(t, f, clock)
	got, err := tr.FetchCandidateIssues(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 100 || got[99].Description != big || got[99].Title != "タイトル 100 🚀" {
		t.Fatalf("got %d issues; the last one's title %q", len(got), got[len(got)-1].Title)
	}
}

func TestValidateProject(t *testing.T) {
	good := []string{"octo/hello", "my-org/repo.name_2", " a/b ", "Octo-Cat/.github"}
	for _, p := range good {
		if err := ValidateProject(p); err != nil {
			t.Errorf("ValidateProject(%q) = %v, want ok", p, err)
		}
	}
	bad := map[string]string{
		"":                              "is required",
		"octo":                          "owner/repo",
		"octo/":                         "owner/repo",
		"/hello":                        "owner/repo",
		"octo/hello/issues":             "exactly one slash",
		"https://github.com/octo/hello": "not a URL",
		"github.com/octo/hello":         "not a URL",
		"octo/hello.git":                ".git",
		"oc to/hello":                   "owner",
		"octo/hel lo":                   "repository name",
		"-octo/hello":                   "owner",
		"octo/..":                       "repository name",
	}
	for p, want := range bad {
		err := ValidateProject(p)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.HasPrefix(err.Error(), "config: tracker.project: ") {
			t.Errorf("ValidateProject(%q) = %v, want an error naming tracker.project and saying %q", p, err, want)
		}
	}
}

func TestNew_ConfigErrors(t *testing.T) {
	base := tracker.Config{Kind: "github", APIKey: "tok", Project: "o/r"}
	cases := []struct {
		name   string
		mutate func(*tracker.Config)
		want   tracker.ErrorKind
		text   string
	}{
		{"missing token", func(c *tracker.Config) { c.APIKey = " " }, tracker.ErrMissingAPIKey, "tracker.api_key"},
		{"missing project", func(c *tracker.Config) { c.Project = "" }, tracker.ErrMissingProject, "tracker.project"},
		{"bad project", func(c *tracker.Config) { c.Project = "just-a-name" }, tracker.ErrMissingProject, "owner/repo"},
		{"bad endpoint", func(c *tracker.Config) { c.Endpoint = "api.github.com" }, tracker.ErrPayload, "tracker.endpoint"},
		{"token with spaces", func(c *tracker.Config) { c.APIKey = "Bearer tok" }, tracker.ErrAuth, "whitespace"},
	}
	for _, c := range cases {
		cfg := base
		c.mutate(&cfg)
		_, err := tracker.New(cfg)
		if tracker.KindOf(err) != c.want || !strings.Contains(err.Error(), c.text) {
			t.Errorf("%s: err = %v, want kind %s mentioning %q", c.name, err, c.want, c.text)
		}
	}
	tr, err := tracker.New(tracker.Config{Kind: "github", APIKey: "tok", Project: "o/r", Endpoint: "https://ghe.example.com/api/v3/"})
	if err != nil {
		t.Fatal(err)
	}
	if u := tr.(*Tracker).listURL(); !strings.HasPrefix(u, "https://ghe.example.com/api/v3/repos/o/r/issues?") {
		t.Errorf("GHES list URL = %s", u)
	}
}

// fullPage looks further only where a page may follow: never past MaxPages, nor past a
// search's total_count or its 1,000-result cap (GitHub answers 422 there).
func TestFullPage_LooksFurtherOnlyWhereAPageMayFollow(t *testing.T) {
	items := func(n int) string { return "[" + strings.TrimSuffix(strings.Repeat("{},", n), ",") + "]" }
	search := func(total, n int) string { return fmt.Sprintf(`{"total_count":%d,"items":%s}`, total, items(n)) }
	cases := []struct {
		url, body string
		want      bool
	}{
		{"https://api.github.com/repos/o/r/issues?per_page=100", items(100), true},
		{"https://api.github.com/repos/o/r/issues?per_page=100", items(99), false},
		{"https://api.github.com/repos/o/r/issues", items(30), true}, // GitHub's default per_page
		{fmt.Sprintf("https://api.github.com/repos/o/r/issues?per_page=100&page=%d", MaxPages), items(100), false},
		{"https://api.github.com/search/issues?per_page=100&page=2", search(250, 100), true},
		{"https://api.github.com/search/issues?per_page=100&page=2", search(200, 100), false},
		{"https://api.github.com/search/issues?per_page=100&page=10", search(5000, 100), false}, // the 1,000-result cap
		{"https://api.github.com/repos/o/r/issues?per_page=100", `{"message":"x"}`, false},
	}
	for _, c := range cases {
		if got := fullPage(c.url, []byte(c.body)); got != c.want {
			t.Errorf("fullPage(%s, %.40s…) = %v, want %v", c.url, c.body, got, c.want)
		}
	}
}
