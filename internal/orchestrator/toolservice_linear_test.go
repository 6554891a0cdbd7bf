package orchestrator

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"sortie/internal/agentsock"
	"sortie/internal/config"
	"sortie/internal/testkit/fakelinear"
	"sortie/internal/testkit/faketracker"
	"sortie/internal/tracker"
	_ "sortie/internal/tracker/linear"
	"sortie/internal/workflow/engine"
)

// linearService is a ToolService on the Linear adapter against a fake Linear, served on
// a real agent socket, and a client holding a token for issue's session.
func linearService(t *testing.T) (*fakelinear.Server, *fakelinear.Issue, *fakelinear.Issue, *agentsock.Client, *ToolService, *atomic.Int32) {
	t.Helper()
	f := fakelinear.New(t, nil)
	f.AddTeam("ENG", "Engineering")
	mine := f.AddIssue("ENG", "mine", "In Progress", nil)
	other := f.AddIssue("ENG", "other", "Todo", nil)
	cfg := testConfig(t, func(c *config.Config) {
		c.Tracker.Kind, c.Tracker.Endpoint, c.Tracker.APIKey = "linear", f.URL, fakelinear.Key
	})
	trk, err := tracker.New(tracker.Config{Kind: "linear", Endpoint: f.URL, APIKey: fakelinear.Key, Team: "ENG",
		ActiveStates: cfg.Tracker.ActiveStates, TerminalStates: cfg.Tracker.TerminalStates})
	if err != nil {
		t.Fatal(err)
	}
	var refreshed atomic.Int32
	svc := &ToolService{Config: func() *config.Config { return cfg }, Issues: trk, Refresh: func() { refreshed.Add(1) }}
	// A short directory: t.TempDir() paths can exceed the socket path limit.
	dir, err := os.MkdirTemp("", "ls")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	srv, err := agentsock.Listen(filepath.Join(dir, "a.sock"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	srv.Start(svc)
	tok := srv.Grant(agentsock.Session{IssueID: mine.ID, Identifier: mine.Identifier, RunID: 1})
	return f, mine, other, agentsock.Dial(srv.Path(), tok), svc, &refreshed
}

func TestLinearGraphQL_OfferedOnlyWithLinear(t *testing.T) {
	_, _, _, c, _, _ := linearService(t)
	info, err := c.Session(context.Background())
	if err != nil || !info.Capabilities.LinearGraphQL {
		t.Fatalf("a Linear daemon grants linear_graphql: %+v %v", info, err)
	}
	svc, _, _ := toolService(t, nil) // the in-memory tracker
	if svc.Info().Capabilities.LinearGraphQL {
		t.Fatal("linear_graphql granted without a Linear tracker")
	}
	if _, e := svc.LinearGraphQL(context.Background(), sess, agentsock.LinearGraphQLRequest{Query: "{ viewer { id } }"}); e == nil || e.Kind != "unsupported_operation" {
		t.Fatalf("got %v, want unsupported_operation", e)
	}
}

func TestLinearGraphQL_ThroughTheAgentSocket(t *testing.T) {
	f, mine, other, c, svc, refreshed := linearService(t)
	var movedTo string
	svc.AgentMoving = func(id, state string) func(bool) {
		if id == mine.ID {
			movedTo = state
		}
		return func(bool) {}
	}
	ctx := context.Background()

	data, err := c.LinearGraphQL(ctx, agentsock.LinearGraphQLRequest{Query: `query($id: String!) { issue(id: $id) { title } }`,
		Variables: json.RawMessage(`{"id":"` + mine.Identifier + `"}`)})
	if err != nil || !strings.Contains(string(data), `"mine"`) {
		t.Fatalf("query: %s %v", data, err)
	}

	states, _ := c.LinearGraphQL(ctx, agentsock.LinearGraphQLRequest{Query: `{ workflowStates(filter: {team: {key: {eq: "ENG"}}}) { nodes { id name } } }`})
	var ws struct {
		Data struct {
			WorkflowStates struct{ Nodes []struct{ ID, Name string } }
		}
	}
	json.Unmarshal(states, &ws)
	var review string
	for _, s := range ws.Data.WorkflowStates.Nodes {
		if s.Name == "In Review" {
			review = s.ID
		}
	}
	_, err = c.LinearGraphQL(ctx, agentsock.LinearGraphQLRequest{
		Query:     `mutation($s: String!) { issueUpdate(id: "` + mine.ID + `", input: {stateId: $s}) { success } }`,
		Variables: json.RawMessage(`{"s":"` + review + `"}`)})
	if err != nil || movedTo != "In Review" || refreshed.Load() != 1 {
		t.Fatalf("state change: %v, AgentMoved %q, refreshed %d", err, movedTo, refreshed.Load())
	}

	for name, q := range map[string]string{
		"project_scope_violation":  `mutation { commentCreate(input: {issueId: "` + other.ID + `", body: "x"}) { success } }`,
		"forbidden_operation":      `mutation { issueDelete(id: "` + mine.ID + `") { success } }`,
		"project_scope_violation ": `{ issue(id: "` + other.Identifier + `") { title } }`,
		"forbidden_operation ":     `{ webhooks { nodes { secret } } }`,
		"invalid_input":            `query {`,
	} {
		_, err := c.LinearGraphQL(ctx, agentsock.LinearGraphQLRequest{Query: q})
		var e *agentsock.Error
		if !errors.As(err, &e) || e.Kind != strings.TrimSpace(name) {
			t.Errorf("%s: got %v", name, err)
		}
	}
	if len(f.Comments(other.ID)) != 0 {
		t.Fatal("the agent reached another issue")
	}

	// A comment the agent posts is by the daemon's account: it can never answer a
	// checkpoint.
	if _, err := c.LinearGraphQL(ctx, agentsock.LinearGraphQLRequest{
		Query: `mutation { commentCreate(input: {issueId: "` + mine.ID + `", body: "yes"}) { success } }`}); err != nil {
		t.Fatal(err)
	}
	cs, err := svc.Issues.FetchIssueComments(ctx, mine.ID)
	if err != nil || len(cs) != 1 {
		t.Fatalf("comments: %v %v", cs, err)
	}
	acc, _ := tracker.As[tracker.Account](svc.Issues)
	self, err := acc.Self(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if why := answerRefusal(svc.Config(), self, cs[0]); why == "" {
		t.Fatal("a comment posted through linear_graphql would answer a checkpoint")
	}
}

// recordMoves wires svc to the orchestrator's own record of agent moves, and returns
// a reader of it and a way to start a new run (the record forgotten at a worker's exit).
func recordMoves(svc *ToolService) (read func() map[string]string, newRun func(issueID string)) {
	m := &agentMoves{}
	svc.AgentMoving = m.moving
	read = func() map[string]string {
		m.mu.Lock()
		defer m.mu.Unlock()
		return maps.Clone(m.to)
	}
	return read, m.forget
}

func TestLinearGraphQL_AMoveLinearRefusedIsNotTheAgents(t *testing.T) {
	f, mine, _, c, svc, refreshed := linearService(t)
	moves, newRun := recordMoves(svc)
	ctx := context.Background()
	review, done := f.StateID("ENG", "In Review"), f.StateID("ENG", "Done")
	move := func(state string) error {
		_, err := c.LinearGraphQL(ctx, agentsock.LinearGraphQLRequest{
			Query: `mutation { issueUpdate(id: "` + mine.ID + `", input: {stateId: "` + state + `", priority: 2}) { success } }`})
		return err
	}
	if err := move(review); err != nil || moves()[mine.ID] != "In Review" || refreshed.Load() != 1 {
		t.Fatalf("a move made: %v, recorded %v, refreshed %d", err, moves(), refreshed.Load())
	}
	// Linear refuses the next move: the record is back to the run's last move made.
	f.SetHook(func(w http.ResponseWriter, body []byte) bool {
		if strings.Contains(string(body), "issueUpdate") {
			fakelinear.WriteError(w, http.StatusOK, "INVALID_INPUT", "priority must be an int")
			return true
		}
		return false
	})
	move(done)
	if got := moves()[mine.ID]; got != "In Review" || refreshed.Load() != 1 {
		t.Fatalf("after a refused move to Done: recorded %q, refreshed %d; want In Review, 1", got, refreshed.Load())
	}
	// In a new run, a refused move leaves no record: a human's move to Done later is
	// not mistaken for the agent's.
	newRun(mine.ID)
	move(done)
	if got, ok := moves()[mine.ID]; ok {
		t.Fatalf("a refused first move left the record %q", got)
	}
}

func TestToolService_ATransitionTheTrackerRefusedIsNotTheAgents(t *testing.T) {
	svc, ft, refreshed := toolService(t, nil)
	moves, _ := recordMoves(svc)
	ft.FailNext(faketracker.OpTransition, 1, nil)
	_, e := svc.Tracker(context.Background(), sess, agentsock.TrackerRequest{Operation: "transition_issue", IssueID: sess.IssueID, TargetState: "Done"})
	if e == nil {
		t.Fatal("the injected failure was not reported")
	}
	if got, ok := moves()[sess.IssueID]; ok || refreshed.Load() != 0 {
		t.Fatalf("a failed transition left the record %q (refreshed %d)", got, refreshed.Load())
	}
	if _, e := svc.Tracker(context.Background(), sess, agentsock.TrackerRequest{Operation: "transition_issue", IssueID: sess.IssueID, TargetState: "Done"}); e != nil {
		t.Fatal(e)
	}
	if got := moves()[sess.IssueID]; got != "Done" {
		t.Fatalf("a transition made: recorded %q, want Done", got)
	}
}

// TestLinearGraphQL_AMoveOutOfTheActiveStatesWaitsForTheGates: an issueUpdate that takes
// the session's issue to review while a blocking workflow checkpoint has no human answer
// is refused and never reaches Linear; within the active states it is sent.
func TestLinearGraphQL_AMoveOutOfTheActiveStatesWaitsForTheGates(t *testing.T) {
	f, mine, _, c, svc, _ := linearService(t)
	g := &gateChecker{blockers: []engine.Blocker{reviewGate}}
	svc.Workflows = g
	var updates atomic.Int32
	f.SetHook(func(w http.ResponseWriter, body []byte) bool {
		if strings.Contains(string(body), "issueUpdate") {
			updates.Add(1)
		}
		return false
	})
	move := func(state string) error {
		_, err := c.LinearGraphQL(context.Background(), agentsock.LinearGraphQLRequest{
			Query: `mutation { issueUpdate(id: "` + mine.ID + `", input: {stateId: "` + f.StateID("ENG", state) + `"}) { success } }`})
		return err
	}
	var e *agentsock.Error
	if err := move("In Review"); !errors.As(err, &e) || e.Kind != engine.KindHandoffRefused || !strings.Contains(e.Message, "review/approve-pr") {
		t.Fatalf("a move to In Review with an unanswered gate: %v, want %s", err, engine.KindHandoffRefused)
	}
	if n := updates.Load(); n != 0 {
		t.Fatalf("the refused move reached Linear %d times", n)
	}
	g.mu.Lock()
	traced := len(g.traced)
	g.mu.Unlock()
	if traced != 1 {
		t.Fatalf("refused hand-offs traced: %d, want 1", traced)
	}
	if err := move("Todo"); err != nil || updates.Load() != 1 {
		t.Fatalf("a move within the active states: %v, sent %d times", err, updates.Load())
	}
}
