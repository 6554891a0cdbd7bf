package agenttools

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"slices"
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

// linearService is a Service on the Linear adapter against a fake Linear, with the
// Options changed by opts, served on a real agent socket: the fake, the session's issue
// and another, a client holding a token for the session, the adapter, and a count of
// the loop's wake-ups.
func linearService(t *testing.T, opts ...func(*Options)) (*fakelinear.Server, *fakelinear.Issue, *fakelinear.Issue, *agentsock.Client, tracker.Tracker, *atomic.Int32) {
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
	o := Options{Config: func() *config.Config { return cfg }, Tracker: trk, Refresh: func() { refreshed.Add(1) }}
	for _, f := range opts {
		f(&o)
	}
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
	srv.Start(New(o))
	tok := srv.Grant(agentsock.Session{IssueID: mine.ID, Identifier: mine.Identifier, RunID: 1})
	return f, mine, other, agentsock.Dial(srv.Path(), tok), trk, &refreshed
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
	moves := &moveLog{}
	f, mine, other, c, trk, refreshed := linearService(t, func(o *Options) { o.AgentMoving = moves.moving })
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
	if got, want := moves.take(), []string{"moving " + mine.ID + " to In Review", "settled " + mine.ID + " to In Review: moved true"}; err != nil ||
		!slices.Equal(got, want) || refreshed.Load() != 1 {
		t.Fatalf("state change: %v, AgentMoving told %q (want %q), refreshed %d", err, got, want, refreshed.Load())
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

	// A comment the agent posts is by the daemon's account, which the orchestrator never
	// takes for a checkpoint's answer (answerRefusal).
	if _, err := c.LinearGraphQL(ctx, agentsock.LinearGraphQLRequest{
		Query: `mutation { commentCreate(input: {issueId: "` + mine.ID + `", body: "yes"}) { success } }`}); err != nil {
		t.Fatal(err)
	}
	cs, err := trk.FetchIssueComments(ctx, mine.ID)
	if err != nil || len(cs) != 1 {
		t.Fatalf("comments: %v %v", cs, err)
	}
	acc, _ := tracker.As[tracker.Account](trk)
	self, err := acc.Self(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !self.Wrote(cs[0]) {
		t.Fatalf("a comment posted through linear_graphql (%+v) is not by the daemon's account %s: it could answer a checkpoint", cs[0], self)
	}
}

// TestLinearGraphQL_AMoveLinearRefusedIsNotTheAgents: AgentMoving is told of each move
// before it is sent and then whether Linear made it, so that the orchestrator puts back
// its record of the agent's moves after one Linear refused (its agentMoves tests); the
// loop is woken only after a move made.
func TestLinearGraphQL_AMoveLinearRefusedIsNotTheAgents(t *testing.T) {
	moves := &moveLog{}
	f, mine, _, c, _, refreshed := linearService(t, func(o *Options) { o.AgentMoving = moves.moving })
	ctx := context.Background()
	review, done := f.StateID("ENG", "In Review"), f.StateID("ENG", "Done")
	move := func(state string) error {
		_, err := c.LinearGraphQL(ctx, agentsock.LinearGraphQLRequest{
			Query: `mutation { issueUpdate(id: "` + mine.ID + `", input: {stateId: "` + state + `", priority: 2}) { success } }`})
		return err
	}
	err := move(review)
	if got, want := moves.take(), []string{"moving " + mine.ID + " to In Review", "settled " + mine.ID + " to In Review: moved true"}; err != nil ||
		!slices.Equal(got, want) || refreshed.Load() != 1 {
		t.Fatalf("a move made: %v, AgentMoving told %q (want %q), refreshed %d", err, got, want, refreshed.Load())
	}
	// Linear refuses the next move: AgentMoving is told it was not made.
	f.SetHook(func(w http.ResponseWriter, body []byte) bool {
		if strings.Contains(string(body), "issueUpdate") {
			fakelinear.WriteError(w, http.StatusOK, "INVALID_INPUT", "priority must be an int")
			return true
		}
		return false
	})
	move(done)
	if got, want := moves.take(), []string{"moving " + mine.ID + " to Done", "settled " + mine.ID + " to Done: moved false"}; !slices.Equal(got, want) || refreshed.Load() != 1 {
		t.Fatalf("after a refused move to Done: AgentMoving told %q (want %q), refreshed %d; want 1", got, want, refreshed.Load())
	}
}

func TestToolService_ATransitionTheTrackerRefusedIsNotTheAgents(t *testing.T) {
	moves := &moveLog{}
	svc, ft, refreshed := toolService(t, nil, func(o *Options) { o.AgentMoving = moves.moving })
	ft.FailNext(faketracker.OpTransition, 1, nil)
	_, e := svc.Tracker(context.Background(), sess, agentsock.TrackerRequest{Operation: "transition_issue", IssueID: sess.IssueID, TargetState: "Done"})
	if e == nil {
		t.Fatal("the injected failure was not reported")
	}
	if got, want := moves.take(), []string{"moving 1 to Done", "settled 1 to Done: moved false"}; !slices.Equal(got, want) || refreshed.Load() != 0 {
		t.Fatalf("a failed transition: AgentMoving told %q (want %q), refreshed %d", got, want, refreshed.Load())
	}
	if _, e := svc.Tracker(context.Background(), sess, agentsock.TrackerRequest{Operation: "transition_issue", IssueID: sess.IssueID, TargetState: "Done"}); e != nil {
		t.Fatal(e)
	}
	if got, want := moves.take(), []string{"moving 1 to Done", "settled 1 to Done: moved true"}; !slices.Equal(got, want) || refreshed.Load() != 1 {
		t.Fatalf("a transition made: AgentMoving told %q (want %q), refreshed %d", got, want, refreshed.Load())
	}
}

// TestLinearGraphQL_AMoveOutOfTheActiveStatesWaitsForTheGates: an issueUpdate that takes
// the session's issue to review while a blocking workflow checkpoint has no human answer
// is refused and never reaches Linear; within the active states it is sent.
func TestLinearGraphQL_AMoveOutOfTheActiveStatesWaitsForTheGates(t *testing.T) {
	g := &gateChecker{blockers: []engine.Blocker{reviewGate}}
	f, mine, _, c, _, _ := linearService(t, func(o *Options) { o.Workflows = g })
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

// TestCapabilities_WithoutAService: what a Service built from some Options serves is
// known from the Options alone, before the Service exists (the daemon tells sessions
// before it has its orchestrator), and is what the Service then says.
func TestCapabilities_WithoutAService(t *testing.T) {
	cfg := testConfig(t, func(c *config.Config) { c.Tracker.Kind = "linear" })
	linearTrk, err := tracker.New(tracker.Config{Kind: "linear", Endpoint: "http://127.0.0.1:1", APIKey: "k", Team: "ENG",
		ActiveStates: cfg.Tracker.ActiveStates, TerminalStates: cfg.Tracker.TerminalStates})
	if err != nil {
		t.Fatal(err)
	}
	deliver := func(context.Context, agentsock.Session, agentsock.NotifyRequest) (agentsock.NotifyResult, error) {
		return agentsock.NotifyResult{}, nil
	}
	current := func() *config.Config { return cfg }
	for _, o := range []Options{
		{Config: current},
		{Config: current, Tracker: linearTrk},
		{Config: current, Tracker: faketracker.New("Todo"), Deliver: deliver},
	} {
		if got, want := Capabilities(o), New(o).Info().Capabilities; got != want {
			t.Errorf("Capabilities = %+v, want the Service's %+v", got, want)
		}
	}
	if !Capabilities(Options{Config: current, Tracker: linearTrk}).LinearGraphQL {
		t.Error("a Linear tracker with tracker.kind linear: no linear_graphql")
	}
}
