package fakelinear_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"sortie/internal/testkit/fakelinear"
)

var clock0 = time.Date(2026, 3, 30, 14, 20, 0, 0, time.UTC)

func fixed() time.Time { return clock0 }

type gqlResponse struct {
	Data   map[string]any `json:"data"`
	Errors []struct {
		Message    string         `json:"message"`
		Extensions map[string]any `json:"extensions"`
	} `json:"errors"`
}

func (r gqlResponse) code() string {
	if len(r.Errors) == 0 {
		return ""
	}
	c, _ := r.Errors[0].Extensions["code"].(string)
	return c
}

// post sends a GraphQL document with plain net/http, as any client would.
func post(t *testing.T, s *fakelinear.Server, key, query string, vars map[string]any) (*http.Response, gqlResponse) {
	t.Helper()
	body, err := json.Marshal(map[string]any{"query": query, "variables": vars})
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, s.URL, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out gqlResponse
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("decoding the answer (status %d): %v", resp.StatusCode, err)
	}
	return resp, out
}

// ok posts with the right key and fails the test on any error.
func ok(t *testing.T, s *fakelinear.Server, query string, vars map[string]any) map[string]any {
	t.Helper()
	resp, out := post(t, s, fakelinear.Key, query, vars)
	if resp.StatusCode != http.StatusOK || len(out.Errors) > 0 {
		t.Fatalf("status %d errors %+v, want data", resp.StatusCode, out.Errors)
	}
	return out.Data
}

// path walks a decoded JSON value by object keys.
func path(v any, keys ...string) any {
	for _, k := range keys {
		m, _ := v.(map[string]any)
		v = m[k]
	}
	return v
}

func identifiers(conn any) []string {
	var ids []string
	nodes, _ := path(conn, "nodes").([]any)
	for _, n := range nodes {
		id, _ := path(n, "identifier").(string)
		ids = append(ids, id)
	}
	return ids
}

func TestAuthorization(t *testing.T) {
	s := fakelinear.New(t, fixed)
	const q = `{ viewer { id email } }`
	for _, key := range []string{"", "lin_api_wrong", "Bearer " + fakelinear.Key} {
		resp, out := post(t, s, key, q, nil)
		if resp.StatusCode != http.StatusBadRequest || out.code() != "AUTHENTICATION_ERROR" || out.Data != nil {
			t.Errorf("key %q: status %d code %q data %v, want 400 AUTHENTICATION_ERROR and no data", key, resp.StatusCode, out.code(), out.Data)
		}
	}
	if got := path(ok(t, s, q, nil), "viewer", "email"); got != "sortie@example.com" {
		t.Errorf("viewer email with the right key = %v, want sortie@example.com", got)
	}
	s.SetKey("lin_api_other")
	if _, out := post(t, s, fakelinear.Key, q, nil); out.code() != "AUTHENTICATION_ERROR" {
		t.Errorf("old key after SetKey: code %q, want AUTHENTICATION_ERROR", out.code())
	}
	if resp, out := post(t, s, "lin_api_other", q, nil); resp.StatusCode != http.StatusOK || out.code() != "" {
		t.Errorf("new key after SetKey: status %d code %q, want 200 and no error", resp.StatusCode, out.code())
	}
}

func header(t *testing.T, resp *http.Response, name string) int64 {
	t.Helper()
	v := resp.Header.Get(name)
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		t.Fatalf("header %s = %q, want a number", name, v)
	}
	return n
}

func TestRateLimitHeadersAndBudget(t *testing.T) {
	s := fakelinear.New(t, fixed)
	const q = `{ viewer { id } }`
	r1, _ := post(t, s, fakelinear.Key, q, nil)
	r2, _ := post(t, s, fakelinear.Key, q, nil)
	if got := header(t, r1, "X-RateLimit-Requests-Limit"); got != 5000 {
		t.Errorf("requests limit = %d, want 5000", got)
	}
	if got := header(t, r1, "X-RateLimit-Complexity-Limit"); got != 250000 {
		t.Errorf("complexity limit = %d, want 250000", got)
	}
	if a, b := header(t, r1, "X-RateLimit-Requests-Remaining"), header(t, r2, "X-RateLimit-Requests-Remaining"); a != 4999 || b != 4998 {
		t.Errorf("requests remaining after 1 and 2 requests = %d, %d, want 4999, 4998", a, b)
	}
	if a, b := header(t, r1, "X-RateLimit-Complexity-Remaining"), header(t, r2, "X-RateLimit-Complexity-Remaining"); !(a < 250000 && b < a) {
		t.Errorf("complexity remaining after 1 and 2 requests = %d, %d, want decreasing below 250000", a, b)
	}
	if got := header(t, r1, "X-RateLimit-Requests-Reset"); got != clock0.Add(time.Hour).UnixMilli() {
		t.Errorf("requests reset = %d, want an hour on, %d (ms)", got, clock0.Add(time.Hour).UnixMilli())
	}
	// The last request of the budget is served; the next is rate limited.
	reset := clock0.Add(time.Hour)
	s.SetBudgets(fakelinear.Budget{Limit: 5000, Remaining: 1, Reset: reset}, fakelinear.Budget{Limit: 250000, Remaining: 250000, Reset: reset})
	if resp, out := post(t, s, fakelinear.Key, q, nil); resp.StatusCode != http.StatusOK || out.code() != "" {
		t.Fatalf("last request of the budget: status %d code %q, want served", resp.StatusCode, out.code())
	}
	resp, out := post(t, s, fakelinear.Key, q, nil)
	if resp.StatusCode != http.StatusBadRequest || out.code() != "RATELIMITED" || header(t, resp, "X-RateLimit-Requests-Remaining") != 0 {
		t.Errorf("request over the budget: status %d code %q remaining %q, want 400 RATELIMITED with 0 remaining",
			resp.StatusCode, out.code(), resp.Header.Get("X-RateLimit-Requests-Remaining"))
	}
}

func TestUnknownFieldIsValidationError(t *testing.T) {
	s := fakelinear.New(t, fixed)
	s.AddTeam("ENG", "Engineering")
	s.AddIssue("ENG", "one", "Todo", nil)
	for _, q := range []string{
		`{ issues { nodes { id sprintPoints } } }`,
		`{ cycles { nodes { id } } }`,
		`{ issues(filter: {estimate: {eq: 3}}) { nodes { id } } }`,
	} {
		resp, out := post(t, s, fakelinear.Key, q, nil)
		if resp.StatusCode != http.StatusBadRequest || out.code() != "GRAPHQL_VALIDATION_FAILED" || out.Data != nil {
			t.Errorf("%s: status %d code %q data %v, want 400 GRAPHQL_VALIDATION_FAILED and no data", q, resp.StatusCode, out.code(), out.Data)
		}
	}
}

func TestCursorPaging(t *testing.T) {
	s := fakelinear.New(t, fixed)
	s.AddTeam("ENG", "Engineering")
	var want []string
	for i := range 7 {
		want = append(want, s.AddIssue("ENG", "issue "+strconv.Itoa(i), "Todo", nil).Identifier)
	}
	const q = `query Page($after: String) {
		issues(first: 3, after: $after) { nodes { identifier } pageInfo { hasNextPage endCursor } }
	}`
	var got []string
	var after any
	pages := 0
	for {
		conn := path(ok(t, s, q, map[string]any{"after": after}), "issues")
		ids := identifiers(conn)
		got = append(got, ids...)
		pages++
		if pages > 10 {
			t.Fatalf("paging does not end; so far %v", got)
		}
		more := path(conn, "pageInfo", "hasNextPage")
		if more == false {
			if len(ids) != 1 {
				t.Errorf("last page = %v, want the one remaining issue", ids)
			}
			break
		}
		if more != true || len(ids) != 3 {
			t.Fatalf("page %d: %v hasNextPage %v, want 3 issues and true", pages, ids, more)
		}
		after = path(conn, "pageInfo", "endCursor")
		if c, _ := after.(string); c == "" {
			t.Fatalf("page %d: endCursor %v, want a cursor", pages, after)
		}
	}
	if !slices.Equal(got, want) || pages != 3 {
		t.Errorf("paged %d pages: %v, want 3 pages of %v, each issue once in order", pages, got, want)
	}
	if _, out := post(t, s, fakelinear.Key, q, map[string]any{"after": "not-a-cursor"}); out.code() != "INVALID_INPUT" {
		t.Errorf("unknown cursor: code %q, want INVALID_INPUT", out.code())
	}
}

func TestIssueFilters(t *testing.T) {
	s := fakelinear.New(t, fixed)
	s.AddTeam("ENG", "Engineering")
	s.AddTeam("OPS", "Operations")
	ann := s.AddUser("Ann", "ann", "ann@example.com")
	me := s.Viewer().ID
	assign := func(id string) func(*fakelinear.Issue) { return func(is *fakelinear.Issue) { is.AssigneeID = id } }
	s.AddIssue("ENG", "mine todo", "Todo", assign(me))                    // ENG-1
	s.AddIssue("ENG", "ann's in progress", "In Progress", assign(ann.ID)) // ENG-2
	s.AddIssue("ENG", "nobody's todo", "Todo", nil)                       // ENG-3
	s.AddIssue("OPS", "mine in progress", "In Progress", assign(me))      // OPS-1
	s.AddIssue("OPS", "ann's done", "Done", assign(ann.ID))               // OPS-2

	const q = `query Q($filter: IssueFilter) { issues(filter: $filter) { nodes { identifier } } }`
	for _, c := range []struct {
		name   string
		filter map[string]any
		want   []string
	}{
		{"team key", map[string]any{"team": map[string]any{"key": map[string]any{"eq": "OPS"}}}, []string{"OPS-1", "OPS-2"}},
		{"state name", map[string]any{"state": map[string]any{"name": map[string]any{"eq": "Todo"}}}, []string{"ENG-1", "ENG-3"}},
		{"state names in", map[string]any{"state": map[string]any{"name": map[string]any{"in": []any{"In Progress", "Done"}}}}, []string{"ENG-2", "OPS-1", "OPS-2"}},
		{"assignee isMe", map[string]any{"assignee": map[string]any{"isMe": map[string]any{"eq": true}}}, []string{"ENG-1", "OPS-1"}},
		{"assignee email", map[string]any{"assignee": map[string]any{"email": map[string]any{"eq": "ann@example.com"}}}, []string{"ENG-2", "OPS-2"}},
		{"assignee id", map[string]any{"assignee": map[string]any{"id": map[string]any{"eq": ann.ID}}}, []string{"ENG-2", "OPS-2"}},
		{"team and state and assignee", map[string]any{
			"team":     map[string]any{"key": map[string]any{"eq": "ENG"}},
			"state":    map[string]any{"name": map[string]any{"eq": "Todo"}},
			"assignee": map[string]any{"isMe": map[string]any{"eq": true}},
		}, []string{"ENG-1"}},
	} {
		if got := identifiers(path(ok(t, s, q, map[string]any{"filter": c.filter}), "issues")); !slices.Equal(got, c.want) {
			t.Errorf("filter by %s = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestMutationsChangeState(t *testing.T) {
	s := fakelinear.New(t, fixed)
	s.AddTeam("ENG", "Engineering")
	is := s.AddIssue("ENG", "work", "Todo", nil)

	const update = `mutation M($id: String!, $stateId: String!) {
		issueUpdate(id: $id, input: {stateId: $stateId}) { success issue { identifier state { name } } }
	}`
	data := ok(t, s, update, map[string]any{"id": is.ID, "stateId": s.StateID("ENG", "In Progress")})
	if path(data, "issueUpdate", "success") != true || path(data, "issueUpdate", "issue", "state", "name") != "In Progress" {
		t.Errorf("issueUpdate answered %v, want success and state In Progress", data)
	}
	if _, state := s.Issue(is.ID); state != "In Progress" {
		t.Errorf("Issue() state after issueUpdate = %q, want In Progress", state)
	}
	// A state of no team of the issue is not found and changes nothing.
	s.AddTeam("OPS", "Operations")
	_, out := post(t, s, fakelinear.Key, update, map[string]any{"id": is.ID, "stateId": s.StateID("OPS", "Done")})
	if _, state := s.Issue(is.ID); out.code() != "INVALID_INPUT" || state != "In Progress" {
		t.Errorf("issueUpdate to another team's state: code %q state %q, want INVALID_INPUT and In Progress kept", out.code(), state)
	}

	const comment = `mutation C($input: CommentCreateInput!) { commentCreate(input: $input) { success comment { id body } } }`
	data = ok(t, s, comment, map[string]any{"input": map[string]any{"issueId": is.Identifier, "body": "Started **work**."}})
	cs := s.Comments(is.ID)
	if len(cs) != 1 || cs[0].Body != "Started **work**." || cs[0].UserID != s.Viewer().ID {
		t.Fatalf("Comments() after commentCreate = %+v, want one comment by the viewer with the body", cs)
	}
	if path(data, "commentCreate", "comment", "id") != cs[0].ID {
		t.Errorf("commentCreate answered %v, want the stored comment's id %s", data, cs[0].ID)
	}
}

func TestHookInjectsFailure(t *testing.T) {
	s := fakelinear.New(t, fixed)
	s.AddTeam("ENG", "Engineering")
	is := s.AddIssue("ENG", "work", "Todo", nil)
	s.SetHook(func(w http.ResponseWriter, body []byte) bool {
		if !strings.Contains(string(body), "issueUpdate") {
			return false
		}
		fakelinear.WriteError(w, http.StatusServiceUnavailable, "INTERNAL_SERVER_ERROR", "injected")
		return true
	})
	const update = `mutation M($id: String!, $stateId: String!) { issueUpdate(id: $id, input: {stateId: $stateId}) { success } }`
	vars := map[string]any{"id": is.ID, "stateId": s.StateID("ENG", "Done")}
	resp, out := post(t, s, fakelinear.Key, update, vars)
	if resp.StatusCode != http.StatusServiceUnavailable || len(out.Errors) != 1 || out.Errors[0].Message != "injected" {
		t.Errorf("hooked request: status %d errors %+v, want 503 with the injected error", resp.StatusCode, out.Errors)
	}
	if _, state := s.Issue(is.ID); state != "Todo" {
		t.Errorf("state after the failed update = %q, want Todo unchanged", state)
	}
	if got := path(ok(t, s, `{ issue(id: "ENG-1") { identifier } }`, nil), "issue", "identifier"); got != "ENG-1" {
		t.Errorf("a request the hook declines = %v, want served normally", got)
	}
	s.SetHook(nil)
	ok(t, s, update, vars)
	if _, state := s.Issue(is.ID); state != "Done" {
		t.Errorf("state after SetHook(nil) and the update = %q, want Done", state)
	}
}
