package linear

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"sortie/internal/tracker"
)

func TestCheckAgentCall_Policy(t *testing.T) {
	const id, ident = "uuid-1", "ENG-1"
	for _, tc := range []struct {
		name, query, vars, kind string
	}{
		{"query", `query { issues(first: 5) { nodes { id title } } }`, ``, ""},
		{"shorthand query", `{ viewer { id } }`, `null`, ""},
		{"comment own issue by id", `mutation { commentCreate(input: {issueId: "uuid-1", body: "hi"}) { success } }`, ``, ""},
		{"comment own issue by identifier in variables", `mutation C($in: CommentCreateInput!) { commentCreate(input: $in) { success } }`, `{"in":{"issueId":"eng-1","body":"x"}}`, ""},
		{"update own state", `mutation($s: String!) { issueUpdate(id: "ENG-1", input: {stateId: $s}) { success } }`, `{"s":"st-1"}`, ""},
		{"comment other issue", `mutation { commentCreate(input: {issueId: "ENG-2", body: "hi"}) { success } }`, ``, KindScopeViolation},
		{"comment other issue via variable", `mutation($i: String!) { commentCreate(input: {issueId: $i, body: "hi"}) { success } }`, `{"i":"uuid-2"}`, KindScopeViolation},
		{"comment default variable", `mutation($i: String = "uuid-2") { commentCreate(input: {issueId: $i, body: "hi"}) { success } }`, ``, KindScopeViolation},
		{"reply to a comment", `mutation { commentCreate(input: {issueId: "uuid-1", body: "x", parentId: "c"}) { success } }`, ``, KindForbidden},
		{"update other issue", `mutation { issueUpdate(id: "uuid-2", input: {title: "x"}) { success } }`, ``, KindScopeViolation},
		{"move to another team", `mutation { issueUpdate(id: "uuid-1", input: {teamId: "t"}) { success } }`, ``, KindForbidden},
		{"trash", `mutation { issueUpdate(id: "uuid-1", input: {trashed: true}) { success } }`, ``, KindForbidden},
		{"delete", `mutation { issueDelete(id: "uuid-1") { success } }`, ``, KindForbidden},
		{"create", `mutation { issueCreate(input: {title: "x", teamId: "t"}) { success } }`, ``, KindForbidden},
		{"fragment at top", `mutation { ...F } fragment F on Mutation { issueDelete(id: "uuid-1") { success } }`, ``, KindForbidden},
		{"subscription", `subscription { issueUpdates { id } }`, ``, KindForbidden},
		{"two operations", `query A { viewer { id } } query B { viewer { id } }`, ``, KindInvalidInput},
		{"duplicate input field", `mutation { commentCreate(input: {issueId: "uuid-1", issueId: "uuid-2", body: "x"}) { success } }`, ``, KindInvalidInput},
		{"duplicate argument", `mutation { issueUpdate(id: "uuid-1", id: "uuid-2", input: {title: "x"}) { success } }`, ``, KindInvalidInput},
		{"does not parse", `query {`, ``, KindInvalidInput},
		{"empty", `  `, ``, KindInvalidInput},
		{"variables not an object", `{ viewer { id } }`, `[1]`, KindInvalidInput},
		{"too long", `{ viewer { id } }` + strings.Repeat(" ", MaxAgentQuery), ``, KindInvalidInput},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := checkAgentCall(tc.query, json.RawMessage(tc.vars), id, ident)
			got := ""
			if err != nil {
				got = err.Kind
			}
			if got != tc.kind {
				t.Fatalf("got %v, want kind %q", err, tc.kind)
			}
		})
	}
}

func TestAgentGraphQL_RunsAgainstLinearWithTheDaemonsKey(t *testing.T) {
	f, tr, _ := newTest(t, tracker.Config{})
	is := f.AddIssue("ENG", "mine", "Todo", nil)
	other := f.AddIssue("ENG", "not mine", "Todo", nil)
	ctx := context.Background()

	out, err := tr.AgentGraphQL(ctx, is.ID, is.Identifier, `query($id: String!) { issue(id: $id) { identifier title } }`, json.RawMessage(`{"id":"`+other.ID+`"}`), nil)
	if err != nil || !strings.Contains(string(out), `"not mine"`) {
		t.Fatalf("a query reads: %s %v", out, err)
	}

	// A state change by id: moving is told the state's name before the mutation.
	var review string
	raw, _ := tr.AgentGraphQL(ctx, is.ID, is.Identifier, `{ workflowStates(filter: {team: {key: {eq: "ENG"}}}) { nodes { id name } } }`, nil, nil)
	var states struct {
		Data struct {
			WorkflowStates struct {
				Nodes []struct{ ID, Name string }
			}
		}
	}
	json.Unmarshal(raw, &states)
	for _, s := range states.Data.WorkflowStates.Nodes {
		if s.Name == "In Review" {
			review = s.ID
		}
	}
	var moved string
	out, err = tr.AgentGraphQL(ctx, is.ID, is.Identifier, `mutation($s: String!) { issueUpdate(id: "`+is.Identifier+`", input: {stateId: $s}) { success issue { state { name } } } }`,
		json.RawMessage(`{"s":"`+review+`"}`), func(s string) { moved = s })
	if err != nil || moved != "In Review" {
		t.Fatalf("state change: moved %q, %s, %v", moved, out, err)
	}
	if _, st := f.Issue(is.ID); st != "In Review" {
		t.Fatalf("state: %q", st)
	}

	// A comment is posted as the daemon's account, so it never passes for a person's.
	if _, err := tr.AgentGraphQL(ctx, is.ID, is.Identifier, `mutation { commentCreate(input: {issueId: "`+is.ID+`", body: "/sortie choose approve"}) { success } }`, nil, nil); err != nil {
		t.Fatal(err)
	}
	cs, _ := tr.FetchIssueComments(ctx, is.ID)
	self, _ := tr.Self(ctx)
	if len(cs) != 1 || !self.Wrote(cs[0]) {
		t.Fatalf("the agent's comment %+v must be Self's (%+v)", cs, self)
	}

	_, err = tr.AgentGraphQL(ctx, is.ID, is.Identifier, `mutation { commentCreate(input: {issueId: "`+other.ID+`", body: "x"}) { success } }`, nil, nil)
	var ae *AgentError
	if !errors.As(err, &ae) || ae.Kind != KindScopeViolation {
		t.Fatalf("other issue: %v", err)
	}
	if len(f.Comments(other.ID)) != 0 {
		t.Fatal("a comment reached another issue")
	}

	// Linear's errors about the agent's query are the agent's to read.
	out, err = tr.AgentGraphQL(ctx, is.ID, is.Identifier, `{ issue(id: "nope") { id } }`, nil, nil)
	if err != nil || !strings.Contains(string(out), "Entity not found") {
		t.Fatalf("GraphQL errors are returned: %s %v", out, err)
	}
	// A session issue outside the scope may not be written.
	alien := f.AddIssue("OPS", "alien", "Todo", nil)
	_, err = tr.AgentGraphQL(ctx, alien.ID, alien.Identifier, `mutation { commentCreate(input: {issueId: "`+alien.ID+`", body: "x"}) { success } }`, nil, nil)
	if !errors.Is(err, tracker.ErrOutOfProject) {
		t.Fatalf("out-of-scope session issue: %v", err)
	}
}

func TestAgentGraphQL_ResponseIsBounded(t *testing.T) {
	f, tr, _ := newTest(t, tracker.Config{})
	big := strings.Repeat("x", MaxAgentResponse/40)
	for range 50 {
		f.AddIssue("ENG", big, "Todo", nil)
	}
	is := f.AddIssue("ENG", "mine", "Todo", nil)
	_, err := tr.AgentGraphQL(context.Background(), is.ID, is.Identifier, `{ issues(first: 100) { nodes { title } } }`, nil, nil)
	var ae *AgentError
	if !errors.As(err, &ae) || ae.Kind != KindResponseTooLong {
		t.Fatalf("got %v, want %s", err, KindResponseTooLong)
	}
}
