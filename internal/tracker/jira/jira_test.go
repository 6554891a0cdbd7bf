package jira

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"sortie/internal/testkit/fakejira"
	"sortie/internal/tracker"
)

// fakeClock is a clock a test moves by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *fakeClock { return &fakeClock{t: time.Date(2026, 4, 1, 12, 0, 0, 0, time.UTC)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func flavours() []struct {
	name  string
	cloud bool
} {
	return []struct {
		name  string
		cloud bool
	}{{"cloud", true}, {"datacenter", false}}
}

// A search page as Jira Cloud returns it normalises to the issue model: priority by
// id, lowercased labels, only "is blocked by" links as blockers, ADF flattened, Jira's
// timestamps as RFC 3339; nulls become empty values.
func TestFetchCandidates_NormalisesSearchPage(t *testing.T) {
	two := 2
	cases := []struct {
		name  string
		body  func(testing.TB, string) []byte
		file  string
		want0 func(site string) tracker.Issue
	}{
		{"own", fixture, "search_page.json", func(site string) tracker.Issue {
			return tracker.Issue{
				ID: "20417", Identifier: "SHOP-31", Title: "Checkout drops the discount code on reload",
				Description: "Apply a code, reload the page: the code is gone.",
				Priority:    &two, State: "To Do", URL: site + "/browse/SHOP-31", Labels: []string{"checkout", "regression"},
				Assignee: "Priya Natarajan", IssueType: "Bug", Parent: &tracker.ParentRef{ID: "20400", Identifier: "SHOP-12"},
				BlockedBy: []tracker.BlockerRef{{ID: "20410", Identifier: "SHOP-27", State: "In Review"}},
				CreatedAt: "2026-03-02T09:12:44+01:00", UpdatedAt: "2026-03-04T17:05:03+01:00",
			}
		}},
		{"reference", referenceFixture, "search_single_page.json", func(site string) tracker.Issue {
			return tracker.Issue{
				ID: "10001", Identifier: "PROJ-1", Title: "Implement authentication", Description: "Implement OAuth2 flow",
				Priority: &two, State: "To Do", URL: site + "/browse/PROJ-1", Labels: []string{"feature", "auth"},
				Assignee: "Alice Smith", IssueType: "Story", Parent: &tracker.ParentRef{ID: "10000", Identifier: "PROJ-0"},
				BlockedBy: []tracker.BlockerRef{{ID: "10010", Identifier: "PROJ-10", State: "In Progress"}},
				CreatedAt: "2025-01-15T10:30:00Z", UpdatedAt: "2025-01-16T14:00:00Z",
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			body := c.body(t, c.file)
			f := newFake(t, true)
			if err := f.AddSearchPage(body); err != nil {
				t.Fatal(err)
			}
			// The fake matches JQL by key prefix, so the project is the sample's.
			project := strings.Split(c.want0("").Identifier, "-")[0]
			tr := newFakeTracker(t, f, true, nil, func(cfg *tracker.Config) { cfg.Project = project })

			got, err := tr.FetchCandidateIssues(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 2 {
				t.Fatalf("got %d issues, want 2", len(got))
			}
			if want0 := c.want0(f.URL()); !reflect.DeepEqual(got[0], want0) {
				t.Errorf("issue 0:\ngot  %+v\nwant %+v", got[0], want0)
			}
			if got[1].Description != "" || got[1].Assignee != "" || got[1].Parent != nil || got[1].BlockedBy == nil || got[1].Comments != nil {
				t.Errorf("issue 1 with null fields: %+v", got[1])
			}
			if ua := f.Log()[0].UserAgent; ua != "sortie/test" {
				t.Errorf("User-Agent %q, want sortie/test", ua)
			}
		})
	}
}

func TestFetchCandidates_PagesByTokenOnCloudAndOffsetOnDataCenter(t *testing.T) {
	for _, fl := range flavours() {
		t.Run(fl.name, func(t *testing.T) {
			f := newFake(t, fl.cloud, fakejira.WithPageCap(3)) // the server caps maxResults below what is asked
			for i := range 10 {
				f.AddIssue(fmt.Sprint(10000+i), fmt.Sprintf("PROJ-%d", i), []string{"To Do", "In Progress", "Done"}[i%3])
			}
			f.AddIssue("20000", "OTHER-1", "To Do")
			tr := newFakeTracker(t, f, fl.cloud, nil, func(c *tracker.Config) { c.Options["page_size"] = 5 })

			got, err := tr.FetchCandidateIssues(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			var keys []string
			for _, is := range got {
				keys = append(keys, is.Identifier)
			}
			want := []string{"PROJ-0", "PROJ-1", "PROJ-3", "PROJ-4", "PROJ-6", "PROJ-7", "PROJ-9"}
			if !reflect.DeepEqual(keys, want) {
				t.Fatalf("keys %v, want %v", keys, want)
			}
			if n := f.RequestCount(); n != 3 { // 7 issues, 3 per page
				t.Errorf("%d requests for 7 issues at 3 a page, want 3", n)
			}
		})
	}
}

func TestFetchCandidates_IdlePollCostsOneRequest(t *testing.T) {
	for _, fl := range flavours() {
		t.Run(fl.name, func(t *testing.T) {
			f := newFake(t, fl.cloud)
			f.AddIssue("1", "PROJ-1", "Done")
			tr := newFakeTracker(t, f, fl.cloud, nil)
			for range 3 {
				got, err := tr.FetchCandidateIssues(context.Background())
				if err != nil || len(got) != 0 {
					t.Fatalf("got %v, %v; want no candidates", got, err)
				}
			}
			if n := f.RequestCount(); n != 3 {
				t.Errorf("3 idle polls cost %d requests, want 3", n)
			}
		})
	}
}

func TestFetchCandidates_HugeUnicodePage(t *testing.T) {
	f := newFake(t, true)
	for i := range 2000 {
		f.AddIssue(fmt.Sprint(i+1), fmt.Sprintf("PROJ-%d", i+1), "To Do")
	}
	f.SetField("8", "summary", "日本語 ✓ \u2028 émoji 🚀")
	tr := newFakeTracker(t, f, true, nil, func(c *tracker.Config) { c.Options["page_size"] = 100 })
	got, err := tr.FetchCandidateIssues(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2000 || got[7].Title != "日本語 ✓ \u2028 émoji 🚀" {
		t.Fatalf("got %d issues, title %q", len(got), got[7].Title)
	}
	if n := f.RequestCount(); n != 20 {
		t.Errorf("%d requests, want 20 pages of 100", n)
	}
}

// issueSample is an issue body with its comments in two pages, and what the adapter
// must make of them.
type issueSample struct {
	name                   string
	read                   func(testing.TB, string) []byte
	detail, page1, page2   string
	id, project            string
	wantDesc               string // on Cloud, flattened from ADF
	wantBlocker            tracker.BlockerRef
	wantAuthor2            string // the third comment's author
	wantCreated0           string // the first comment's time
	wantBody1, wantBody1ID string // the second comment's text and id
}

var issueSamples = []issueSample{
	{
		name: "own", read: fixture, detail: "issue_detail.json", page1: "comments_page_1.json", page2: "comments_page_2.json",
		id: "20425", project: "SHOP",
		wantDesc:    "Limit resets per account and per IP:\n\n1. 5 a minute per account\n2. 20 a minute per IP\n\n```http\nHTTP/1.1 429 Too Many Requests\nRetry-After: 60\n```",
		wantBlocker: tracker.BlockerRef{ID: "20420", Identifier: "SHOP-34", State: "To Do"},
		wantAuthor2: "Mei Lin", wantCreated0: "2026-03-06T11:20:00Z", wantBody1: "Agreed, both limits then.", wantBody1ID: "41002",
	},
	{
		name: "reference", read: referenceFixture, detail: "issue_detail.json", page1: "comments_multi_page_1.json", page2: "comments_multi_page_2.json",
		id: "10005", project: "PROJ",
		wantDesc:    "Refactor the persistence layer:\n\n- Extract interfaces\n- Add connection pooling\n\n```go\ndb.Close()\n```",
		wantBlocker: tracker.BlockerRef{ID: "10020", Identifier: "PROJ-20", State: "To Do"},
		wantAuthor2: "Charlie Brown", wantCreated0: "2025-02-01T10:00:00Z", wantBody1: "Second comment.", wantBody1ID: "30002",
	},
}

func TestFetchIssueByID_WithCommentsBothFlavours(t *testing.T) {
	for _, sm := range issueSamples {
		for _, fl := range flavours() {
			t.Run(sm.name+"/"+fl.name, func(t *testing.T) {
				detailBody := sm.read(t, sm.detail)
				f := newFake(t, fl.cloud)
				if err := f.AddIssueJSON(detailBody); err != nil {
					t.Fatal(err)
				}
				// Data Center (v2) sends descriptions and comment bodies as wiki text.
				if !fl.cloud {
					f.SetField(sm.id, "description", "h3. Wiki text kept *as written*")
				}
				for _, name := range []string{sm.page1, sm.page2} {
					var page commentPageJSON
					mustUnmarshal(t, sm.read(t, name), &page)
					if !fl.cloud {
						for _, c := range page.Comments {
							c["body"] = "plain " + c["id"].(string)
						}
					}
					body, err := json.Marshal(page)
					if err != nil {
						t.Fatal(err)
					}
					if err := f.AddCommentPage(sm.id, body); err != nil {
						t.Fatal(err)
					}
				}
				tr := newFakeTracker(t, f, fl.cloud, nil, func(c *tracker.Config) { c.Project = sm.project })

				is, err := tr.FetchIssueByID(context.Background(), sm.id)
				if err != nil {
					t.Fatal(err)
				}
				wantDesc := sm.wantDesc
				if !fl.cloud {
					wantDesc = "h3. Wiki text kept *as written*"
				}
				if is.Description != wantDesc {
					t.Errorf("description %q, want %q", is.Description, wantDesc)
				}
				if len(is.BlockedBy) != 1 || is.BlockedBy[0] != sm.wantBlocker {
					t.Errorf("blocked_by %+v, want [%+v]", is.BlockedBy, sm.wantBlocker)
				}
				if len(is.Comments) != 3 || is.Comments[2].Author != sm.wantAuthor2 || is.Comments[0].CreatedAt != sm.wantCreated0 {
					t.Fatalf("comments %+v", is.Comments)
				}
				if fl.cloud && is.Comments[1].Body != sm.wantBody1 {
					t.Errorf("comment body %q, want %q", is.Comments[1].Body, sm.wantBody1)
				}
				if !fl.cloud && is.Comments[1].Body != "plain "+sm.wantBody1ID {
					t.Errorf("comment body %q", is.Comments[1].Body)
				}
			})
		}
	}
}

type commentPageJSON struct {
	Comments []map[string]any `json:"comments"`
}

func mustUnmarshal(t *testing.T, data []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatal(err)
	}
}

func TestFetchIssueByID_NotFoundOtherProjectAndBadRef(t *testing.T) {
	f := newFake(t, true)
	f.AddIssue("7", "OTHER-7", "To Do")
	tr := newFakeTracker(t, f, true, nil)
	for _, id := range []string{"999", "7", "../../myself", "PROJ-1/transitions", ""} {
		_, err := tr.FetchIssueByID(context.Background(), id)
		if k := tracker.KindOf(err); k != tracker.ErrNotFound {
			t.Errorf("FetchIssueByID(%q): kind %q (%v), want tracker_not_found", id, k, err)
		}
	}
	if n := f.RequestCount(); n != 2 {
		t.Errorf("%d requests, want 2 (malformed refs are refused without a request)", n)
	}
}

func TestFetchStates_UnknownOmittedBothFlavours(t *testing.T) {
	for _, fl := range flavours() {
		t.Run(fl.name, func(t *testing.T) {
			f := newFake(t, fl.cloud)
			f.AddIssue("1", "PROJ-1", "To Do")
			f.AddIssue("2", "PROJ-2", "Done")
			tr := newFakeTracker(t, f, fl.cloud, nil)
			ctx := context.Background()

			byID, err := tr.FetchIssueStatesByIDs(ctx, []string{"1", "2", "404", "PROJ-1", "x\"y"})
			if err != nil {
				t.Fatal(err)
			}
			if want := map[string]string{"1": "To Do", "2": "Done"}; !reflect.DeepEqual(byID, want) {
				t.Errorf("by id %v, want %v", byID, want)
			}
			byKey, err := tr.FetchIssueStatesByIdentifiers(ctx, []string{"PROJ-2", "proj-1", "PROJ-404", "1"})
			if err != nil {
				t.Fatal(err)
			}
			if want := map[string]string{"PROJ-2": "Done", "proj-1": "To Do"}; !reflect.DeepEqual(byKey, want) {
				t.Errorf("by key %v, want %v", byKey, want)
			}
			empty, err := tr.FetchIssueStatesByIDs(ctx, nil)
			if err != nil || len(empty) != 0 {
				t.Errorf("empty lookup: %v, %v", empty, err)
			}
			if n := f.RequestCount(); n != 2 {
				t.Errorf("%d requests, want 2 (an empty lookup sends none)", n)
			}
		})
	}
}

func TestTransition_ByTargetStatusName(t *testing.T) {
	cases := []struct {
		name            string
		read            func(testing.TB, string) []byte
		fixture, target string
		wantID          string // "" when it must fail
		wantInErr       []string
	}{
		{"own", fixture, "transitions.json", "ready for review", "51", nil},
		{"own", fixture, "transitions.json", "In Progress", "21", nil},
		{"own", fixture, "transitions_duplicate_target.json", "Ready for Review", "", []string{"2 transitions", `"Request review"`, `"Escalate to review"`}},
		{"own", fixture, "transitions_no_match.json", "Ready for Review", "", []string{`no transition to "Ready for Review"`, `"In Progress"`, `"Done"`}},
		{"own", fixture, "transitions_empty.json", "Done", "", []string{"no transitions available"}},
		{"reference", referenceFixture, "transitions.json", "human review", "31", nil},
		{"reference", referenceFixture, "transitions.json", "In Progress", "21", nil},
		{"reference", referenceFixture, "transitions_duplicate_target.json", "Human Review", "", []string{"2 transitions", `"Send to Review"`, `"Global Review"`}},
		{"reference", referenceFixture, "transitions_no_match.json", "Human Review", "", []string{`no transition to "Human Review"`, `"In Progress"`, `"Done"`}},
		{"reference", referenceFixture, "transitions_empty.json", "Done", "", []string{"no transitions available"}},
	}
	for _, c := range cases {
		t.Run(c.name+"/"+c.fixture+"/"+c.target, func(t *testing.T) {
			body := c.read(t, c.fixture)
			f := newFake(t, true)
			f.AddIssue("1", "PROJ-1", "To Do")
			if err := f.SetTransitions("1", body); err != nil {
				t.Fatal(err)
			}
			tr := newFakeTracker(t, f, true, nil)

			err := tr.TransitionIssue(context.Background(), "PROJ-1", c.target)
			if c.wantID == "" {
				if tracker.KindOf(err) != tracker.ErrPayload {
					t.Fatalf("err %v, want tracker_payload_error", err)
				}
				for _, s := range c.wantInErr {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q does not mention %s", err, s)
					}
				}
				if n := f.RequestCount(); n != 1 {
					t.Errorf("%d requests, want only the GET", n)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if log := f.Log(); !strings.Contains(log[len(log)-1].Body, `"id":"`+c.wantID+`"`) {
				t.Errorf("POST body %s, want transition %s", log[len(log)-1].Body, c.wantID)
			}
			states, _ := tr.FetchIssueStatesByIdentifiers(context.Background(), []string{"PROJ-1"})
			if !strings.EqualFold(states["PROJ-1"], c.target) {
				t.Errorf("state after transition %q, want %q", states["PROJ-1"], c.target)
			}
		})
	}
}

func TestComment_ADFOnCloudTextOnDataCenter(t *testing.T) {
	for _, fl := range flavours() {
		t.Run(fl.name, func(t *testing.T) {
			f := newFake(t, fl.cloud)
			f.AddIssue("1", "PROJ-1", "To Do")
			tr := newFakeTracker(t, f, fl.cloud, nil)
			text := "Sortie started work.\nSecond line \"quoted\"\n\nNew paragraph ✓"
			if err := tr.CommentIssue(context.Background(), "1", text); err != nil {
				t.Fatal(err)
			}
			got, err := tr.FetchIssueComments(context.Background(), "1")
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 || got[0].Body != text || got[0].Author != "Sortie Bot" {
				t.Fatalf("comments after CommentIssue: %+v", got)
			}
		})
	}
}

func TestErrors_StatusesMapToKinds(t *testing.T) {
	cases := []struct {
		status int
		body   string
		want   tracker.ErrorKind
	}{
		{400, `{"errorMessages":["Error in the JQL Query"]}`, tracker.ErrPayload},
		{401, `{"errorMessages":["not authenticated"]}`, tracker.ErrAuth},
		{403, ``, tracker.ErrAuth},
		{404, `{"errorMessages":["gone"]}`, tracker.ErrNotFound},
		{409, `{}`, tracker.ErrAPI},
		{429, ``, tracker.ErrAPI},
		{500, `oops`, tracker.ErrAPI},
		{502, `<html>bad gateway</html>`, tracker.ErrAPI},
		{503, ``, tracker.ErrAPI},
		{200, `{"issues": [`, tracker.ErrPayload},
		{200, `{"issues": [{"id": "1"}]}`, tracker.ErrPayload},
		{200, `[]`, tracker.ErrPayload},
	}
	for _, c := range cases {
		for _, fl := range flavours() {
			t.Run(fmt.Sprintf("%d/%s/%s", c.status, c.body, fl.name), func(t *testing.T) {
				f := newFake(t, fl.cloud)
				f.SetHook(func(w http.ResponseWriter, r *http.Request) bool {
					w.WriteHeader(c.status)
					_, _ = w.Write([]byte(c.body))
					return true
				})
				tr := newFakeTracker(t, f, fl.cloud, nil)
				_, err := tr.FetchCandidateIssues(context.Background())
				if got := tracker.KindOf(err); got != c.want {
					t.Fatalf("kind %q (%v), want %q", got, err, c.want)
				}
				if strings.Contains(err.Error(), "tok3n") || strings.Contains(err.Error(), dcKey) {
					t.Errorf("error leaks the token: %v", err)
				}
			})
		}
	}
}

func TestErrors_WrongTokenIsAuthErrorWithAction(t *testing.T) {
	f := newFake(t, true)
	tr := newFakeTracker(t, f, true, nil, func(c *tracker.Config) { c.APIKey = "bot@example.com:wrong" })
	_, err := tr.FetchCandidateIssues(context.Background())
	if tracker.KindOf(err) != tracker.ErrAuth || !strings.Contains(err.Error(), "tracker.api_key") {
		t.Fatalf("err %v, want tracker_auth_error naming tracker.api_key", err)
	}
	if tracker.ErrAuth.Retryable() {
		t.Error("auth errors must not be retried")
	}
}

func TestErrors_NetworkFailureIsTransport(t *testing.T) {
	f := newFake(t, true)
	tr := newFakeTracker(t, f, true, nil)
	f.Close()
	_, err := tr.FetchCandidateIssues(context.Background())
	if tracker.KindOf(err) != tracker.ErrTransport {
		t.Fatalf("err %v, want tracker_transport_error", err)
	}
}

func TestRateLimit_RetryAfterHoldsEveryRequestBack(t *testing.T) {
	f := newFake(t, true)
	clock := newClock()
	limited := true
	f.SetHook(func(w http.ResponseWriter, r *http.Request) bool {
		if limited {
			w.Header().Set("Retry-After", "30")
			w.Header().Set("X-RateLimit-Limit", "100")
			w.Header().Set("X-RateLimit-Remaining", "0")
			fakejira.WriteError(w, http.StatusTooManyRequests, "Rate limit exceeded.")
			return true
		}
		w.Header().Set("X-RateLimit-Limit", "100")
		w.Header().Set("X-RateLimit-Remaining", "99")
		return false
	})
	tr := newFakeTracker(t, f, true, clock.Now)
	ctx := context.Background()

	_, err := tr.FetchCandidateIssues(ctx)
	if tracker.KindOf(err) != tracker.ErrAPI || !strings.Contains(err.Error(), "rate limited until 2026-04-01T12:00:30Z") {
		t.Fatalf("first call: %v, want tracker_api_error rate limited until 12:00:30", err)
	}
	rl := tr.RateLimits()
	if len(rl) != 1 || rl[0].Limit != 100 || rl[0].Remaining != 0 || !rl[0].ThrottledUntil.Equal(clock.Now().Add(30*time.Second)) {
		t.Fatalf("RateLimits %+v", rl)
	}
	limited = false
	clock.Advance(29 * time.Second)
	for _, call := range []func() error{
		func() error { _, err := tr.FetchCandidateIssues(ctx); return err },
		func() error { return tr.TransitionIssue(ctx, "1", "Done") },
		func() error { return tr.CommentIssue(ctx, "1", "x") },
	} {
		if err := call(); tracker.KindOf(err) != tracker.ErrAPI || !strings.Contains(err.Error(), "no request sent") {
			t.Errorf("during Retry-After: %v, want tracker_api_error without a request", err)
		}
	}
	if n := f.RequestCount(); n != 1 {
		t.Fatalf("%d requests during Retry-After, want only the first", n)
	}
	clock.Advance(time.Second)
	if _, err := tr.FetchCandidateIssues(ctx); err != nil {
		t.Fatalf("after Retry-After: %v", err)
	}
	if rl := tr.RateLimits(); rl[0].Remaining != 99 || !rl[0].ThrottledUntil.IsZero() {
		t.Errorf("RateLimits after recovery %+v", rl)
	}
}

func TestRateLimit_ResetHeaderWithoutRetryAfterAndSpentBudget(t *testing.T) {
	f := newFake(t, true)
	clock := newClock()
	f.SetHook(func(w http.ResponseWriter, r *http.Request) bool {
		// Budget spent on a successful response: hold back until the reset.
		w.Header().Set("X-RateLimit-Remaining", "0")
		w.Header().Set("X-RateLimit-Reset", "2026-04-01T12:05Z")
		return false
	})
	tr := newFakeTracker(t, f, true, clock.Now)
	if _, err := tr.FetchCandidateIssues(context.Background()); err != nil {
		t.Fatal(err)
	}
	_, err := tr.FetchCandidateIssues(context.Background())
	if !strings.Contains(fmt.Sprint(err), "rate limited until 2026-04-01T12:05:00Z") || f.RequestCount() != 1 {
		t.Fatalf("after a spent budget: %v (%d requests), want a hold until the reset", err, f.RequestCount())
	}
}
