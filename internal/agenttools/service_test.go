package agenttools

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"sortie/internal/agentsock"
	"sortie/internal/config"
	"sortie/internal/testkit/faketracker"
	"sortie/internal/tracker"
)

// toolService is a Service on a fake tracker holding PROJ-1 (the session's issue, sess),
// PROJ-2, PROJ-3 (done) and OTHER-9, under testConfig changed by mutate, with the
// Options changed by opts, and a count of the loop's wake-ups.
func toolService(t *testing.T, mutate func(*config.Config), opts ...func(*Options)) (*Service, *faketracker.Tracker, *atomic.Int32) {
	t.Helper()
	cfg := testConfig(t, mutate)
	ft := faketracker.New("Todo", "In Progress")
	prio := 2
	ft.Put(
		tracker.Issue{ID: "1", Identifier: "PROJ-1", Title: "one", State: "Todo", Priority: &prio, Labels: []string{"backend"}},
		tracker.Issue{ID: "2", Identifier: "PROJ-2", Title: "two", State: "In Progress"},
		tracker.Issue{ID: "3", Identifier: "PROJ-3", Title: "done", State: "Done"},
		tracker.Issue{ID: "9", Identifier: "OTHER-9", Title: "elsewhere", State: "Todo"},
	)
	ft.AddComment("1", "bob", "Confirmed in prod.")
	var refreshed atomic.Int32
	o := Options{Config: func() *config.Config { return cfg }, Tracker: ft, Refresh: func() { refreshed.Add(1) }}
	for _, f := range opts {
		f(&o)
	}
	return New(o), ft, &refreshed
}

var sess = agentsock.Session{IssueID: "1", Identifier: "PROJ-1", RunID: 7}

func asJSON(t *testing.T, v any) map[string]any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	json.Unmarshal(b, &m)
	return m
}

func TestToolService_FetchIssueHasTheSpecShape(t *testing.T) {
	svc, _, _ := toolService(t, nil)
	data, e := svc.Tracker(context.Background(), sess, agentsock.TrackerRequest{Operation: "fetch_issue", IssueID: "2"})
	if e != nil {
		t.Fatal(e)
	}
	m := asJSON(t, data)
	for _, k := range []string{"id", "identifier", "title", "description", "state", "priority", "labels", "assignee",
		"issue_type", "url", "branch_name", "parent", "comments", "blocked_by", "created_at", "updated_at"} {
		if _, ok := m[k]; !ok {
			t.Errorf("fetch_issue lacks %q: %v", k, m)
		}
	}
	// Absent lists are [], absent priority and parent null.
	if l, ok := m["labels"].([]any); !ok || len(l) != 0 {
		t.Errorf("labels = %#v, want []", m["labels"])
	}
	if b, ok := m["blocked_by"].([]any); !ok || len(b) != 0 {
		t.Errorf("blocked_by = %#v, want []", m["blocked_by"])
	}
	if m["priority"] != nil || m["parent"] != nil {
		t.Errorf("priority %v parent %v, want null", m["priority"], m["parent"])
	}
}

func TestToolService_Operations(t *testing.T) {
	svc, ft, refreshed := toolService(t, nil)
	ctx := context.Background()

	data, e := svc.Tracker(ctx, sess, agentsock.TrackerRequest{Operation: "fetch_comments", IssueID: "1"})
	if e != nil {
		t.Fatal(e)
	}
	if b, _ := json.Marshal(data); !strings.Contains(string(b), `"body":"Confirmed in prod."`) || !strings.Contains(string(b), `"author":"bob"`) {
		t.Errorf("fetch_comments = %s", b)
	}

	data, e = svc.Tracker(ctx, sess, agentsock.TrackerRequest{Operation: "search_issues"})
	if e != nil {
		t.Fatal(e)
	}
	b, _ := json.Marshal(data)
	var list []map[string]any
	json.Unmarshal(b, &list)
	if len(list) != 3 { // PROJ-1, PROJ-2, OTHER-9: the active ones; no project configured
		t.Errorf("search_issues = %s, want the 3 active issues", b)
	}

	data, e = svc.Tracker(ctx, sess, agentsock.TrackerRequest{Operation: "transition_issue", IssueID: "1", TargetState: "In Review"})
	if e != nil {
		t.Fatal(e)
	}
	if m := asJSON(t, data); m["transitioned"] != true {
		t.Errorf("transition_issue = %v", m)
	}
	if is, _ := ft.Issue("1"); is.State != "In Review" {
		t.Errorf("state after transition = %q", is.State)
	}
	if refreshed.Load() != 1 {
		t.Errorf("the loop was woken %d times after the transition, want 1", refreshed.Load())
	}
}

func TestToolService_InputErrors(t *testing.T) {
	svc, ft, _ := toolService(t, nil)
	cases := []struct {
		req  agentsock.TrackerRequest
		kind string
	}{
		{agentsock.TrackerRequest{}, "invalid_input"},
		{agentsock.TrackerRequest{Operation: "delete_issue", IssueID: "1"}, "unsupported_operation"},
		{agentsock.TrackerRequest{Operation: "fetch_issue"}, "invalid_input"},
		{agentsock.TrackerRequest{Operation: "fetch_comments", IssueID: "  "}, "invalid_input"},
		{agentsock.TrackerRequest{Operation: "transition_issue", IssueID: "1"}, "invalid_input"},
		{agentsock.TrackerRequest{Operation: "search_issues", IssueID: "1"}, "invalid_input"},
		{agentsock.TrackerRequest{Operation: "fetch_issue", IssueID: "1", TargetState: "Done"}, "invalid_input"},
		{agentsock.TrackerRequest{Operation: "fetch_issue", IssueID: "404"}, "tracker_not_found"},
	}
	for _, c := range cases {
		_, e := svc.Tracker(context.Background(), sess, c.req)
		if e == nil || e.Kind != c.kind {
			t.Errorf("%+v: error %v, want kind %s", c.req, e, c.kind)
		}
	}
	if n := len(ft.Transitions()); n != 0 {
		t.Errorf("bad requests made %d transitions", n)
	}
}

func TestToolService_TrackerErrorsKeepTheirKinds(t *testing.T) {
	svc, ft, _ := toolService(t, nil)
	for _, k := range []tracker.ErrorKind{tracker.ErrAuth, tracker.ErrTransport, tracker.ErrAPI, tracker.ErrPayload} {
		ft.FailNext(faketracker.OpFetchIssue, 1, tracker.Errorf(k, "fetch", "scripted"))
		_, e := svc.Tracker(context.Background(), sess, agentsock.TrackerRequest{Operation: "fetch_issue", IssueID: "1"})
		if e == nil || e.Kind != string(k) {
			t.Errorf("%s: got %v", k, e)
		}
	}
	ft.FailNext(faketracker.OpFetchIssue, 1, context.DeadlineExceeded)
	if _, e := svc.Tracker(context.Background(), sess, agentsock.TrackerRequest{Operation: "fetch_issue", IssueID: "1"}); e == nil || e.Kind != "tracker_transport_error" {
		t.Errorf("deadline: got %v, want tracker_transport_error", e)
	}
	ft.FailNext(faketracker.OpFetchIssue, 1, errors.New("boom"))
	if _, e := svc.Tracker(context.Background(), sess, agentsock.TrackerRequest{Operation: "fetch_issue", IssueID: "1"}); e == nil || e.Kind != "internal_error" {
		t.Errorf("unclassified: got %v, want internal_error", e)
	}
}

func TestToolService_JiraProjectScope(t *testing.T) {
	svc, ft, _ := toolService(t, func(c *config.Config) {
		c.Tracker.Kind, c.Tracker.Project = "jira", "PROJ"
	})
	ctx := context.Background()
	_, e := svc.Tracker(ctx, sess, agentsock.TrackerRequest{Operation: "transition_issue", IssueID: "9", TargetState: "Done"})
	if e == nil || e.Kind != "project_scope_violation" {
		t.Fatalf("transition of OTHER-9: %v, want project_scope_violation", e)
	}
	if n := len(ft.TransitionsOf("9")); n != 0 {
		t.Errorf("OTHER-9 was transitioned %d times despite the scope", n)
	}
	data, e := svc.Tracker(ctx, sess, agentsock.TrackerRequest{Operation: "search_issues"})
	if e != nil {
		t.Fatal(e)
	}
	if b, _ := json.Marshal(data); strings.Contains(string(b), "OTHER-9") {
		t.Errorf("search_issues leaked another project's issue: %s", b)
	}
	if _, e := svc.Tracker(ctx, sess, agentsock.TrackerRequest{Operation: "fetch_issue", IssueID: "1"}); e != nil {
		t.Errorf("PROJ-1 in scope: %v", e)
	}
}

func TestToolService_Notify(t *testing.T) {
	svc, _, _ := toolService(t, nil)
	if _, e := svc.Notify(context.Background(), sess, agentsock.NotifyRequest{Message: "hi"}); e == nil || e.Kind != "unsupported_operation" {
		t.Errorf("without backends: %v", e)
	}
	var got []agentsock.NotifyRequest
	svc, _, _ = toolService(t, nil, func(o *Options) {
		o.Deliver = func(_ context.Context, s agentsock.Session, r agentsock.NotifyRequest) (agentsock.NotifyResult, error) {
			if s != sess {
				t.Errorf("session = %+v", s)
			}
			got = append(got, r)
			return agentsock.NotifyResult{Delivered: true, Backends: []string{"ops"}}, nil
		}
	})
	res, e := svc.Notify(context.Background(), sess, agentsock.NotifyRequest{Message: "need a decision", Severity: "warning"})
	if e != nil {
		t.Fatal(e)
	}
	if !res.Delivered || len(res.Backends) != 1 {
		t.Errorf("result = %+v, want delivered to ops", res)
	}
	if _, e := svc.Notify(context.Background(), sess, agentsock.NotifyRequest{Message: strings.Repeat("é", 4000)}); e != nil {
		t.Errorf("4000 non-ASCII characters: %v (the limit is in characters, as the sidecar counts)", e)
	}
	for _, bad := range []agentsock.NotifyRequest{{}, {Message: " "}, {Message: "x", Severity: "loud"}, {Message: strings.Repeat("x", 4001)},
		{Message: "x", Title: strings.Repeat("t", 201)}} {
		if _, e := svc.Notify(context.Background(), sess, bad); e == nil || e.Kind != "invalid_input" {
			t.Errorf("%.20v: %v, want invalid_input", bad, e)
		}
	}
	if len(got) != 2 || got[0].Severity != "warning" {
		t.Errorf("delivered %+v", got)
	}
	if info := svc.Info(); !info.Capabilities.TrackerAPI || !info.Capabilities.NotifyOperator {
		t.Errorf("info = %+v", info)
	}
	failing, _, _ := toolService(t, nil, func(o *Options) {
		o.Deliver = func(context.Context, agentsock.Session, agentsock.NotifyRequest) (agentsock.NotifyResult, error) {
			return agentsock.NotifyResult{}, errors.New("slack said 500")
		}
	})
	if _, e := failing.Notify(context.Background(), sess, agentsock.NotifyRequest{Message: "x"}); e == nil || e.Kind != "notify_error" {
		t.Errorf("failed delivery: %v", e)
	}
}

// TestToolService_JiraCrossProjectKeyIsAScopeViolation: a key of another project is
// project_scope_violation (spec), not tracker_not_found, even when the daemon's Jira
// would not find it.
func TestToolService_JiraCrossProjectKeyIsAScopeViolation(t *testing.T) {
	svc, _, _ := toolService(t, func(c *config.Config) {
		c.Tracker.Kind, c.Tracker.Project = "jira", "PROJ"
	})
	for _, op := range []string{"fetch_issue", "fetch_comments"} {
		_, e := svc.Tracker(context.Background(), sess, agentsock.TrackerRequest{Operation: op, IssueID: "SECRET-404"})
		if e == nil || e.Kind != "project_scope_violation" {
			t.Errorf("%s SECRET-404: %v, want project_scope_violation", op, e)
		}
	}
}

// TestToolService_GitHubIssueOfAnotherRepositoryIsOutOfScope: an issue the GitHub
// adapter found in another repository (named owner/repo#N from its repository_url) is
// refused.
func TestToolService_GitHubIssueOfAnotherRepositoryIsOutOfScope(t *testing.T) {
	svc, ft, _ := toolService(t, func(c *config.Config) {
		c.Tracker.Kind, c.Tracker.Project = "github", "acme/app"
	})
	ft.Put(tracker.Issue{ID: "77", Identifier: "evil/repo#77", Title: "moved", State: "Todo"})
	_, e := svc.Tracker(context.Background(), sess, agentsock.TrackerRequest{Operation: "transition_issue", IssueID: "77", TargetState: "Done"})
	if e == nil || e.Kind != "project_scope_violation" {
		t.Fatalf("transition of evil/repo#77: %v, want project_scope_violation", e)
	}
	if n := len(ft.TransitionsOf("77")); n != 0 {
		t.Errorf("evil/repo#77 was transitioned %d times despite the scope", n)
	}
}
