package linear

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"sortie/internal/testkit/fakelinear"
	"sortie/internal/tracker"
)

// budgets sets the fake's request budget to remaining of 100 and lets the tracker learn
// it with one poll.
func budgets(t *testing.T, f *fakelinear.Server, tr *Tracker, clk *testClock, remaining int) {
	t.Helper()
	f.SetBudgets(fakelinear.Budget{Limit: 100, Remaining: remaining, Reset: clk.Now().Add(time.Hour)},
		fakelinear.Budget{Limit: 250000, Remaining: 250000, Reset: clk.Now().Add(time.Hour)})
	if _, err := tr.FetchCandidateIssues(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestAgentGraphQL_HeldBelowTheAgentFloorSendsNothing(t *testing.T) {
	f, tr, clk := newTest(t, tracker.Config{})
	is := f.AddIssue("ENG", "mine", "Todo", nil)
	// 15 of 100 left: below the agent's fifth, above polling's twentieth.
	budgets(t, f, tr, clk, 16)
	before := len(f.Log())
	for _, q := range []string{
		`{ issue(id: "` + is.ID + `") { title } }`,
		`mutation { issueUpdate(id: "` + is.ID + `", input: {stateId: "st"}) { success } }`,
		`mutation { commentCreate(input: {issueId: "` + is.ID + `", body: "x"}) { success } }`,
	} {
		_, err := tr.AgentGraphQL(context.Background(), is.ID, is.Identifier, q, nil, nil)
		var rl *RateLimitedError
		if !errors.As(err, &rl) || tracker.KindOf(err) != tracker.ErrAPI {
			t.Fatalf("%s: got %v, want a tracker_api_error wrapping RateLimitedError", q, err)
		}
	}
	if got := f.Log()[before:]; len(got) != 0 {
		t.Fatalf("held agent calls sent %v to Linear, want nothing", got)
	}
	if _, err := tr.FetchCandidateIssues(context.Background()); err != nil {
		t.Fatalf("polling above its own floor: %v", err)
	}
}

func TestAgentGraphQL_BogusStateUpdatesLeavePollingItsBudget(t *testing.T) {
	f, tr, clk := newTest(t, tracker.Config{})
	is := f.AddIssue("ENG", "mine", "Todo", nil)
	budgets(t, f, tr, clk, 30)
	ctx := context.Background()
	for i := range 100 {
		tr.AgentGraphQL(ctx, is.ID, is.Identifier, fmt.Sprintf(`mutation { issueUpdate(id: "%s", input: {stateId: "bogus-%d"}) { success } }`, is.ID, i%26), nil, nil)
	}
	if _, err := tr.FetchCandidateIssues(ctx); err != nil {
		t.Fatalf("polling after 100 agent mutations with bogus states: %v (Linear saw %d requests)", err, len(f.Log()))
	}
}

func TestAgentGraphQL_UnknownStateIDIsAskedOnce(t *testing.T) {
	f, tr, _ := newTest(t, tracker.Config{})
	is := f.AddIssue("ENG", "mine", "Todo", nil)
	ctx := context.Background()
	q := `mutation { issueUpdate(id: "` + is.ID + `", input: {stateId: "bogus"}) { success } }`
	for range 3 {
		_, err := tr.AgentGraphQL(ctx, is.ID, is.Identifier, q, nil, nil)
		var ae *AgentError
		if !errors.As(err, &ae) || ae.Kind != KindInvalidInput || !strings.Contains(ae.Message, "not a workflow state") {
			t.Fatalf("got %v, want invalid_input naming the state", err)
		}
	}
	n := 0
	for _, op := range f.Log() {
		if op == "SortieWorkflowStates" {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("the team's workflow states were asked %d times for one unknown id, want 1 (log %v)", n, f.Log())
	}
}

func TestAgentGraphQL_StateLookupFailureKeepsItsKind(t *testing.T) {
	f, tr, _ := newTest(t, tracker.Config{})
	is := f.AddIssue("ENG", "mine", "Todo", nil)
	f.SetHook(func(w http.ResponseWriter, body []byte) bool {
		if strings.Contains(string(body), "SortieWorkflowStates") {
			fakelinear.WriteError(w, http.StatusInternalServerError, "INTERNAL_SERVER_ERROR", "boom")
			return true
		}
		return false
	})
	_, err := tr.AgentGraphQL(context.Background(), is.ID, is.Identifier,
		`mutation { issueUpdate(id: "`+is.ID+`", input: {stateId: "st"}) { success } }`, nil, nil)
	var ae *AgentError
	if errors.As(err, &ae) || tracker.KindOf(err) != tracker.ErrAPI {
		t.Fatalf("got %v, want Linear's failure as a tracker_api_error, not a refusal", err)
	}
}

func TestAgentGraphQL_CallsPerIssueAreLimited(t *testing.T) {
	f, tr, clk := newTest(t, tracker.Config{})
	is := f.AddIssue("ENG", "mine", "Todo", nil)
	other := f.AddIssue("ENG", "other", "Todo", nil)
	ctx := context.Background()
	q := `{ issue(id: "` + is.ID + `") { title } }`
	for i := range AgentCallLimit.Burst {
		if _, err := tr.AgentGraphQL(ctx, is.ID, is.Identifier, q, nil, nil); err != nil {
			t.Fatalf("call %d within the burst: %v", i+1, err)
		}
	}
	before := len(f.Log())
	_, err := tr.AgentGraphQL(ctx, is.ID, is.Identifier, q, nil, nil)
	var ae *AgentError
	if !errors.As(err, &ae) || ae.Kind != KindRateLimited || !strings.Contains(ae.Message, "next may be sent in 10s") {
		t.Fatalf("past the burst: got %v, want %s saying when", err, KindRateLimited)
	}
	if len(f.Log()) != before {
		t.Fatal("a rate-limited call reached Linear")
	}
	// Another issue's agent has its own bucket; time refills this one.
	if _, err := tr.AgentGraphQL(ctx, other.ID, other.Identifier, `{ issue(id: "`+other.ID+`") { title } }`, nil, nil); err != nil {
		t.Fatalf("another issue: %v", err)
	}
	clk.now = clk.now.Add(AgentCallLimit.Every)
	if _, err := tr.AgentGraphQL(ctx, is.ID, is.Identifier, q, nil, nil); err != nil {
		t.Fatalf("after %s: %v", AgentCallLimit.Every, err)
	}
}

func TestAgentGraphQL_CommentsPerIssueAreLimited(t *testing.T) {
	f, tr, _ := newTest(t, tracker.Config{})
	is := f.AddIssue("ENG", "mine", "Todo", nil)
	q := `mutation { commentCreate(input: {issueId: "` + is.ID + `", body: "progress"}) { success } }`
	for i := range AgentCommentLimit.Burst {
		if _, err := tr.AgentGraphQL(context.Background(), is.ID, is.Identifier, q, nil, nil); err != nil {
			t.Fatalf("comment %d: %v", i+1, err)
		}
	}
	_, err := tr.AgentGraphQL(context.Background(), is.ID, is.Identifier, q, nil, nil)
	var ae *AgentError
	if !errors.As(err, &ae) || ae.Kind != KindRateLimited || !strings.Contains(ae.Message, "comments") {
		t.Fatalf("got %v, want %s for comments", err, KindRateLimited)
	}
	if n := len(f.Comments(is.ID)); n != AgentCommentLimit.Burst {
		t.Fatalf("%d comments posted, want %d", n, AgentCommentLimit.Burst)
	}
}
