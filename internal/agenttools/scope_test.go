package agenttools

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"sortie/internal/agentsock"
	"sortie/internal/config"
	"sortie/internal/workflow/engine"
)

// The session is PROJ-1's (sess); PROJ-2 is a sibling in the same project.

func TestToolService_ASiblingsTransitionIsAScopeViolation(t *testing.T) {
	svc, ft, refreshed := toolService(t, nil)
	for _, id := range []string{"2"} {
		_, e := svc.Tracker(context.Background(), sess, agentsock.TrackerRequest{Operation: "transition_issue", IssueID: id, TargetState: "In Review"})
		if e == nil || e.Kind != KindScopeViolation {
			t.Fatalf("transition of the sibling as %q: %v, want %s", id, e, KindScopeViolation)
		}
		for _, want := range []string{"transition_issue refused", "PROJ-2", "PROJ-1", "only the issue it was started for"} {
			if !strings.Contains(e.Message, want) {
				t.Errorf("refusal %q does not say %q", e.Message, want)
			}
		}
	}
	if got := ft.TransitionsOf("2"); len(got) != 0 {
		t.Fatalf("the sibling was transitioned: %q", got)
	}
	if is, _ := ft.Issue("2"); is.State != "In Progress" {
		t.Fatalf("the sibling's state = %q, want In Progress", is.State)
	}
	if refreshed.Load() != 0 {
		t.Errorf("a refused transition woke the loop")
	}
	// Its own issue.
	for _, id := range []string{"1", "1"} {
		if _, e := svc.Tracker(context.Background(), sess, agentsock.TrackerRequest{Operation: "transition_issue", IssueID: id, TargetState: "In Progress"}); e != nil {
			t.Fatalf("transition of its own issue as %q: %v", id, e)
		}
	}
	if got := ft.TransitionsOf("1"); len(got) != 2 {
		t.Fatalf("own transitions = %q, want 2", got)
	}
}

func TestToolService_ASiblingIsReadWithoutItsComments(t *testing.T) {
	svc, ft, _ := toolService(t, nil)
	ft.AddComment("2", "carol", "The staging password is hunter2.")
	ctx := context.Background()
	call := func(req agentsock.TrackerRequest) (string, *agentsock.Error) {
		data, e := svc.Tracker(ctx, sess, req)
		b, _ := json.Marshal(data)
		return string(b), e
	}
	got, e := call(agentsock.TrackerRequest{Operation: "fetch_issue", IssueID: "2"})
	if e != nil {
		t.Fatal(e)
	}
	if strings.Contains(got, "hunter2") || !strings.Contains(got, `"comments":null`) || !strings.Contains(got, `"title":"two"`) {
		t.Fatalf("fetch_issue of the sibling = %s, want its fields with comments null", got)
	}
	if _, e := call(agentsock.TrackerRequest{Operation: "fetch_comments", IssueID: "2"}); e == nil || e.Kind != KindScopeViolation ||
		!strings.Contains(e.Message, "agent.tracker_reads") {
		t.Fatalf("fetch_comments of the sibling: %v, want %s naming agent.tracker_reads", e, KindScopeViolation)
	}
	if got, _ := call(agentsock.TrackerRequest{Operation: "search_issues"}); strings.Contains(got, "hunter2") {
		t.Fatalf("search_issues shows the sibling's comments: %s", got)
	}
	// Its own issue keeps its comments.
	if got, _ := call(agentsock.TrackerRequest{Operation: "fetch_issue", IssueID: "1"}); !strings.Contains(got, "Confirmed in prod.") {
		t.Fatalf("fetch_issue of its own issue = %s, want its comments", got)
	}
	if got, e := call(agentsock.TrackerRequest{Operation: "fetch_comments", IssueID: "1"}); e != nil || !strings.Contains(got, "Confirmed in prod.") {
		t.Fatalf("fetch_comments of its own issue = %s, %v", got, e)
	}
}

func TestToolService_TrackerReadsProjectShowsSiblingsComments(t *testing.T) {
	svc, ft, _ := toolService(t, func(c *config.Config) { c.Agent.TrackerReads = config.TrackerReadsProject })
	ft.AddComment("2", "carol", "Looks fine.")
	data, e := svc.Tracker(context.Background(), sess, agentsock.TrackerRequest{Operation: "fetch_issue", IssueID: "2"})
	if b, _ := json.Marshal(data); e != nil || !strings.Contains(string(b), "Looks fine.") {
		t.Fatalf("fetch_issue of the sibling under tracker_reads: project = %s, %v", b, e)
	}
	if _, e := svc.Tracker(context.Background(), sess, agentsock.TrackerRequest{Operation: "fetch_comments", IssueID: "2"}); e != nil {
		t.Fatalf("fetch_comments under tracker_reads: project: %v", e)
	}
	// Writes stay the session's own.
	if _, e := svc.Tracker(context.Background(), sess, agentsock.TrackerRequest{Operation: "transition_issue", IssueID: "2", TargetState: "Done"}); e == nil || e.Kind != KindScopeViolation {
		t.Fatalf("transition of the sibling under tracker_reads: project: %v, want %s", e, KindScopeViolation)
	}
}

// gateChecker is a workflow engine and HandoffChecker with scripted blockers.
type gateChecker struct {
	mu       sync.Mutex
	blockers []engine.Blocker
	err      error
	traced   []string // how, per refused hand-off
	asked    []string // want, per HandoffBlockers call
}

func (g *gateChecker) Call(context.Context, engine.Caller, string, json.RawMessage) engine.Response {
	return engine.Response{}
}

func (g *gateChecker) HandoffBlockers(_ context.Context, _, want string) ([]engine.Blocker, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.asked = append(g.asked, want)
	return g.blockers, g.err
}

func (g *gateChecker) TraceHandoffRefused(_ context.Context, _ engine.Caller, _ []engine.Blocker, how string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.traced = append(g.traced, how)
}

var reviewGate = engine.Blocker{SessionID: "sid-1", Workflow: "work-package", Activity: "review", Checkpoint: "approve-pr"}

func TestToolService_OwnMoveOutOfTheActiveStatesWaitsForTheGates(t *testing.T) {
	g := &gateChecker{blockers: []engine.Blocker{reviewGate}}
	svc, ft, _ := toolService(t, func(c *config.Config) { c.Workflows.Workflow = "work-package" }, func(o *Options) { o.Workflows = g })
	ctx := context.Background()
	_, e := svc.Tracker(ctx, sess, agentsock.TrackerRequest{Operation: "transition_issue", IssueID: "1", TargetState: "In Review"})
	if e == nil || e.Kind != engine.KindHandoffRefused || !strings.Contains(e.Message, "review/approve-pr") {
		t.Fatalf("own move to In Review with an unanswered gate: %v, want %s naming it", e, engine.KindHandoffRefused)
	}
	if len(g.traced) != 1 || !strings.Contains(g.traced[0], `transition_issue to "In Review"`) || g.asked[0] != "work-package" {
		t.Fatalf("traced %q asked %q, want the refusal traced, workflows.workflow asked for", g.traced, g.asked)
	}
	if got := ft.TransitionsOf("1"); len(got) != 0 {
		t.Fatalf("own issue transitioned %q despite the gate", got)
	}
	// Within the active states the gate does not apply; once answered, the move is made.
	if _, e := svc.Tracker(ctx, sess, agentsock.TrackerRequest{Operation: "transition_issue", IssueID: "1", TargetState: "In Progress"}); e != nil {
		t.Fatalf("a move within the active states: %v", e)
	}
	g.blockers = nil
	if _, e := svc.Tracker(ctx, sess, agentsock.TrackerRequest{Operation: "transition_issue", IssueID: "1", TargetState: "In Review"}); e != nil {
		t.Fatalf("own move once the gates are answered: %v", e)
	}
}

// With no tracker.active_states listed, every non-terminal state counts as active for
// dispatch, but a move to "In Review" is still a hand-off for the gate: it waits for the
// workflow's humans; so does a move to tracker.handoff_state even when it is listed.
func TestToolService_GateHoldsWithoutListedActiveStates(t *testing.T) {
	for name, tweak := range map[string]func(*config.Config){
		"no active_states listed": func(c *config.Config) { c.Tracker.ActiveStates = nil },
		"handoff_state listed as active": func(c *config.Config) {
			c.Tracker.ActiveStates = append(c.Tracker.ActiveStates, "In Review")
			c.Tracker.HandoffState = "In Review"
		},
	} {
		t.Run(name, func(t *testing.T) {
			svc, ft, _ := toolService(t, func(c *config.Config) { c.Workflows.Workflow = "work-package"; tweak(c) },
				func(o *Options) { o.Workflows = &gateChecker{blockers: []engine.Blocker{reviewGate}} })
			_, e := svc.Tracker(context.Background(), sess, agentsock.TrackerRequest{Operation: "transition_issue", IssueID: "1", TargetState: "In Review"})
			if e == nil || e.Kind != engine.KindHandoffRefused {
				t.Fatalf("own move to In Review with an unanswered gate: %v, want %s", e, engine.KindHandoffRefused)
			}
			if got := ft.TransitionsOf("1"); len(got) != 0 {
				t.Fatalf("own issue transitioned %q despite the gate", got)
			}
		})
	}
}
