package agenttools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"sortie/internal/agentsock"
	"sortie/internal/clock"
	"sortie/internal/config"
	"sortie/internal/tracker"
	"sortie/internal/workflow/engine"
)

// DefaultTimeout bounds one Tier 2 tool call in the daemon.
const DefaultTimeout = 30 * time.Second

// Options are what a Service is built from. Only Config is required; every other field
// left zero turns its tool off, or takes the default it names.
type Options struct {
	// Config returns the current configuration (project, active states, tracker kind,
	// notify_operator.rate_limit, budgets).
	Config func() *config.Config
	// Tracker is the daemon's tracker: the daemon passes the orchestrator's Tracker(),
	// which follows a reload to the tracker in force. nil means no tracker_api (nor
	// linear_graphql).
	Tracker tracker.Tracker
	// History is the run history served to workspace_history and cost_budget
	// (runs.go); nil means none.
	History RunReader
	// Deliver sends an agent's notification to the operator's backends and says which
	// took it, or why none did; nil means no backend is configured.
	Deliver func(ctx context.Context, sess agentsock.Session, req agentsock.NotifyRequest) (agentsock.NotifyResult, error)
	// Refresh wakes the loop after the agent changed the tracker (a transition), since
	// Sortie's own tracker writes do not notify it. Optional.
	Refresh func()
	// AgentMoving is told when an agent moves its own issue, before the move is sent
	// and the loop woken, so that the agent finishes its turn instead of being stopped
	// for a state change it made itself; what it returns is told whether the tracker
	// made the move (orchestrator.Orchestrator.AgentMoving). Optional.
	AgentMoving func(issueID, state string) (settle func(moved bool))
	// Timeout bounds each call; 0 means DefaultTimeout.
	Timeout time.Duration
	// Workflows answers the workflow tools (*engine.Engine); nil means they are not
	// offered. When it is also a HandoffChecker, an agent's move of its own issue out
	// of the active states waits for the workflow's blocking checkpoints.
	Workflows WorkflowCaller
	// Clock tells the time for notify_operator's rate limit; nil means clock.Real.
	Clock clock.Clock
	// NotifyRateLimited is told when a notify_operator call is refused by the rate
	// limit, with the scope that refused it (NotifyScopeIssue or NotifyScopeGlobal), for
	// the metrics. Optional; it must not block.
	NotifyRateLimited func(scope string)
}

// Service serves the Tier 2 agent tools over the agent socket (an agentsock.Handler):
// tracker_api with the daemon's tracker and credentials, scoped to the configured
// project, notify_operator through the operator's notification backends within its
// rate limit, the workflow tools through the workflow engine, the issue's run history
// and spend, and linear_graphql. Its methods run on the socket's goroutines, never on
// the orchestrator's loop. It is complete once New returns.
type Service struct {
	o           Options
	notifyLimit notifyLimiter
}

// New builds the Service that o describes.
func New(o Options) *Service {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	return &Service{o: o}
}

// agentMoving tells AgentMoving that sess's agent is moving its own issue to state,
// and returns what settles it.
func (t *Service) agentMoving(sess agentsock.Session, state string) func(moved bool) {
	if t.o.AgentMoving == nil {
		return func(bool) {}
	}
	return t.o.AgentMoving(sess.IssueID, state)
}

// refresh wakes the loop, when there is one to wake.
func (t *Service) refresh() {
	if t.o.Refresh != nil {
		t.o.Refresh()
	}
}

// WorkflowCaller runs one workflow tool call for an agent session: *engine.Engine.
type WorkflowCaller interface {
	Call(ctx context.Context, c engine.Caller, tool string, args json.RawMessage) engine.Response
}

// HandoffChecker is the workflow engine's side of the hand-off gate (*engine.Engine),
// as transition_issue and linear_graphql use it: the gates of an issue's workflow
// sessions no human answered, and the trace entry of a hand-off refused for them.
type HandoffChecker interface {
	HandoffBlockers(ctx context.Context, issueID, want string) ([]engine.Blocker, error)
	TraceHandoffRefused(ctx context.Context, c engine.Caller, blockers []engine.Blocker, how string)
}

var _ HandoffChecker = (*engine.Engine)(nil)

// Capabilities are the tools a Service built from o serves, as its Info reports them.
// It needs no Service: the daemon tells each session which tools it is offered before
// the Service, which needs the orchestrator, exists. o.Tracker need only be a tracker
// of the kind the Service will have (the daemon's start-up adapter): linear_graphql
// depends on its type, never its state. o.Config is read at each call.
func Capabilities(o Options) agentsock.Capabilities {
	return agentsock.Capabilities{TrackerAPI: o.Tracker != nil, NotifyOperator: o.Deliver != nil,
		Workflows: o.Workflows != nil, Runs: o.History != nil, LinearGraphQL: linearOf(o) != nil}
}

// Info describes the Tier 2 and workflow tools this daemon serves.
func (t *Service) Info() agentsock.SessionInfo {
	cfg := t.o.Config()
	return agentsock.SessionInfo{
		Capabilities: Capabilities(t.o),
		TrackerKind:  cfg.Tracker.Kind,
		Project:      cfg.Tracker.Project,
	}
}

// Tracker performs one tracker_api operation (spec/agent-extensions.md).
func (t *Service) Tracker(ctx context.Context, sess agentsock.Session, req agentsock.TrackerRequest) (any, *agentsock.Error) {
	if t.o.Tracker == nil {
		return nil, agentsock.Errorf("unsupported_operation", "this daemon serves no tracker_api")
	}
	needsID := req.Operation == "fetch_issue" || req.Operation == "fetch_comments" || req.Operation == "transition_issue"
	switch {
	case req.Operation == "":
		return nil, agentsock.Errorf("invalid_input", "operation is required")
	case req.Operation != "search_issues" && !needsID:
		return nil, agentsock.Errorf("unsupported_operation",
			"unknown operation %q (valid: fetch_issue, fetch_comments, search_issues, transition_issue)", req.Operation)
	case needsID && strings.TrimSpace(req.IssueID) == "":
		return nil, agentsock.Errorf("invalid_input", "issue_id is required for %s", req.Operation)
	case req.Operation == "transition_issue" && strings.TrimSpace(req.TargetState) == "":
		return nil, agentsock.Errorf("invalid_input", "target_state is required for transition_issue")
	case req.Operation == "search_issues" && (req.IssueID != "" || req.TargetState != ""):
		return nil, agentsock.Errorf("invalid_input", "search_issues takes no issue_id or target_state")
	case req.Operation != "transition_issue" && req.TargetState != "":
		return nil, agentsock.Errorf("invalid_input", "target_state is only for transition_issue")
	}
	ctx, cancel := context.WithTimeout(ctx, t.o.Timeout)
	defer cancel()
	cfg := t.o.Config()

	// Another issue of the project is read without its comments unless the operator
	// opened them (agent.tracker_reads: project): a sibling's comments are where its
	// humans answer checkpoints and discuss what the agent should not know.
	allComments := cfg.Agent.TrackerReads == config.TrackerReadsProject
	switch req.Operation {
	case "search_issues":
		issues, err := t.o.Tracker.FetchCandidateIssues(ctx)
		if err != nil {
			return nil, trackerError(err)
		}
		out := make([]issueJSON, 0, len(issues))
		for _, is := range issues {
			if !inProject(cfg, is) {
				continue
			}
			if !allComments && is.ID != sess.IssueID {
				is.Comments = nil
			}
			out = append(out, toIssueJSON(is))
		}
		return out, nil
	case "fetch_comments":
		is, e := t.scoped(ctx, cfg, req.IssueID)
		if e != nil {
			return nil, e
		}
		if !allComments && is.ID != sess.IssueID {
			return nil, agentsock.Errorf(KindScopeViolation,
				"fetch_comments refused: %s is not this session's issue (%s), and agent.tracker_reads is %s, so other issues are read without their comments (an operator can set agent.tracker_reads: project)",
				is.Identifier, sess.Identifier, config.TrackerReadsOwn)
		}
		comments, err := t.o.Tracker.FetchIssueComments(ctx, is.ID)
		if err != nil {
			return nil, trackerError(err)
		}
		if comments == nil {
			comments = []tracker.Comment{}
		}
		return comments, nil
	case "fetch_issue":
		is, e := t.scoped(ctx, cfg, req.IssueID)
		if e != nil {
			return nil, e
		}
		if !allComments && is.ID != sess.IssueID {
			is.Comments = nil
		}
		return toIssueJSON(is), nil
	}
	// transition_issue: the scope is checked before anything changes, and the issue is
	// the session's own, as the tracker resolves the id (a key, a number, a URL-ish
	// alias all name one issue): one agent moving another issue would lift that issue's
	// hold and abandon its checkpoint.
	is, e := t.scoped(ctx, cfg, req.IssueID)
	if e != nil {
		return nil, e
	}
	if is.ID != sess.IssueID {
		return nil, agentsock.Errorf(KindScopeViolation,
			"transition_issue refused: %s is not this session's issue (%s); an agent may change only the issue it was started for",
			is.Identifier, sess.Identifier)
	}
	target := strings.TrimSpace(req.TargetState)
	if e := t.handoffAllowed(ctx, sess, target); e != nil {
		return nil, e
	}
	settle := t.agentMoving(sess, target) // before the transition: a poll may see it at once
	err := t.o.Tracker.TransitionIssue(ctx, sess.IssueID, target)
	settle(err == nil)
	if err != nil {
		return nil, trackerError(err)
	}
	t.refresh()
	return map[string]bool{"transitioned": true}, nil
}

// handoffAllowed refuses the agent's move of its own issue out of the active states
// (to review, done, anything a human takes from there) while one of the issue's
// workflow sessions has a blocking checkpoint on its path that no human answered: the
// same gate as the run's own hand-off (checkpoint.Desk.HandoffRefusal). The
// refusal is the error handoff_refused, and is in the session's
// trace.
func (t *Service) handoffAllowed(ctx context.Context, sess agentsock.Session, target string) *agentsock.Error {
	hc, ok := t.o.Workflows.(HandoffChecker)
	if !ok || t.o.Config == nil {
		return nil
	}
	cfg := t.o.Config()
	if staysActive(cfg, target) {
		return nil
	}
	bs, err := hc.HandoffBlockers(ctx, sess.IssueID, cfg.Workflows.Workflow)
	if err != nil {
		return agentsock.Errorf(engine.KindHandoffRefused, "transition_issue to %q refused: the workflow's checkpoints could not be checked (%v)", target, err)
	}
	if len(bs) == 0 {
		return nil
	}
	hc.TraceHandoffRefused(ctx, engine.Caller{IssueID: sess.IssueID, Identifier: sess.Identifier, RunID: sess.RunID}, bs,
		fmt.Sprintf("tracker_api transition_issue to %q", target))
	return agentsock.Errorf(engine.KindHandoffRefused,
		"transition_issue to %q refused: it leaves the active states while no human has answered the workflow's blocking checkpoint(s) %s. Go through the workflow's activities and end your turn at each checkpoint so that a human answers it",
		target, engine.ListBlockers(bs))
}

// staysActive reports whether moving an issue to target keeps it among the states the
// operator listed as active, so that no human's checkpoint is skipped by the move. Only
// an explicit tracker.active_states counts: with none listed every non-terminal state is
// active (the orchestrator's isActive), and a move to "In Review" must still wait for the
// humans; nor does the hand-off state, whatever the list says.
func staysActive(cfg *config.Config, target string) bool {
	t := cfg.Tracker
	return tracker.StateIn(target, t.ActiveStates) && !tracker.StateIn(target, t.TerminalStates) &&
		(t.HandoffState == "" || !strings.EqualFold(strings.TrimSpace(target), strings.TrimSpace(t.HandoffState)))
}

// KindScopeViolation is the tracker_api error kind of a call outside the agent's
// reach: an issue of another project (spec/agent-extensions.md, "Project scoping"), a
// change to another issue than the session's, or another issue's comments under
// agent.tracker_reads: own. The spec has this one kind for scope; linear_graphql uses
// it too.
const KindScopeViolation = "project_scope_violation"

// scoped fetches an issue and refuses one outside tracker.project. A Jira key of
// another project is refused before anything is asked of Jira.
func (t *Service) scoped(ctx context.Context, cfg *config.Config, id string) (tracker.Issue, *agentsock.Error) {
	if cfg.Tracker.Kind == "jira" && strings.Contains(id, "-") && !inProject(cfg, tracker.Issue{Identifier: strings.TrimSpace(id)}) {
		return tracker.Issue{}, agentsock.Errorf(KindScopeViolation,
			"issue %s is not in the configured project %s", id, cfg.Tracker.Project)
	}
	is, err := t.o.Tracker.FetchIssueByID(ctx, id)
	if err != nil {
		return tracker.Issue{}, trackerError(err)
	}
	if !inProject(cfg, is) {
		return tracker.Issue{}, agentsock.Errorf(KindScopeViolation,
			"issue %s is not in the configured project %s", is.Identifier, cfg.Tracker.Project)
	}
	return is, nil
}

// inProject is the tool-level project check, a second line behind the tracker's own
// scoping (spec: "Project scoping"). Jira keys carry their project (PROJ-12); a GitHub
// issue of another repository than tracker.project is named owner/repo#N by the
// adapter (from its repository_url); without a project there is no scope to check.
func inProject(cfg *config.Config, is tracker.Issue) bool {
	project := strings.TrimSpace(cfg.Tracker.Project)
	if project == "" {
		return true
	}
	switch cfg.Tracker.Kind {
	case "jira":
		prefix, _, ok := strings.Cut(is.Identifier, "-")
		return ok && strings.EqualFold(prefix, project)
	case "github":
		return !strings.Contains(is.Identifier, "#")
	}
	return true
}

// Notify delivers a notify_operator call within notify_operator.rate_limit: a call the
// limit refuses is the error rate_limited and reaches no backend (notifylimit.go). A
// message every backend filters out is not an error, but the answer says it was not
// delivered and why.
func (t *Service) Notify(ctx context.Context, sess agentsock.Session, req agentsock.NotifyRequest) (agentsock.NotifyResult, *agentsock.Error) {
	var none agentsock.NotifyResult
	if t.o.Deliver == nil {
		return none, agentsock.Errorf("unsupported_operation", "no notification backend is configured")
	}
	msg := strings.TrimSpace(req.Message)
	switch n := utf8.RuneCountInString(msg); {
	case msg == "":
		return none, agentsock.Errorf("invalid_input", "message is required")
	case n > 4000:
		return none, agentsock.Errorf("invalid_input", "message is %d characters; the limit is 4000", n)
	case utf8.RuneCountInString(req.Title) > 200:
		return none, agentsock.Errorf("invalid_input", "title is longer than 200 characters")
	}
	switch req.Severity {
	case "", "info", "warning", "critical":
	default:
		return none, agentsock.Errorf("invalid_input", "severity %q is not one of info, warning, critical", req.Severity)
	}
	if e := t.limitNotify(sess); e != nil {
		return none, e
	}
	ctx, cancel := context.WithTimeout(ctx, t.o.Timeout)
	defer cancel()
	res, err := t.o.Deliver(ctx, sess, req)
	if err != nil {
		return none, agentsock.Errorf("notify_error", "%v", err)
	}
	return res, nil
}

// limitNotify spends one message of the session's issue and of the daemon under the
// notify_operator.rate_limit in force, or says which limit refuses the call and until
// when. A message spent is not given back when delivery fails: the limit is on what
// reaches the operator's backends, tries included.
func (t *Service) limitNotify(sess agentsock.Session) *agentsock.Error {
	var limit config.NotifyRateLimit
	if t.o.Config != nil {
		if cfg := t.o.Config(); cfg != nil {
			limit = cfg.NotifyOperator.RateLimit
		}
	}
	r := t.notifyLimit.take(sess.IssueID, t.o.Clock.Now(), limit)
	if r == nil {
		return nil
	}
	if t.o.NotifyRateLimited != nil {
		t.o.NotifyRateLimited(r.scope)
	}
	return r.toolError()
}

// Workflow runs a workflow tool for the session the token names: the engine binds the
// workflow sessions an agent starts to its issue. The call is bounded by Timeout.
func (t *Service) Workflow(ctx context.Context, sess agentsock.Session, tool string, args json.RawMessage) (agentsock.WorkflowResult, *agentsock.Error) {
	if t.o.Workflows == nil {
		return agentsock.WorkflowResult{}, agentsock.Errorf("unsupported_operation", "this daemon serves no workflow tools (workflows.dir is not configured)")
	}
	ctx, cancel := context.WithTimeout(ctx, t.o.Timeout)
	defer cancel()
	resp := t.o.Workflows.Call(ctx, engine.Caller{IssueID: sess.IssueID, Identifier: sess.Identifier, RunID: sess.RunID}, tool, args)
	body, err := json.Marshal(resp.Body)
	if err != nil {
		return agentsock.WorkflowResult{}, agentsock.Errorf("internal_error", "encoding the %s answer: %v", tool, err)
	}
	return agentsock.WorkflowResult{IsError: resp.IsError, Body: body, Meta: resp.Meta}, nil
}

// trackerError maps a tracker failure to the tool's error kinds; a call that ran out
// of time is a transport error (spec).
func trackerError(err error) *agentsock.Error {
	if errors.Is(err, tracker.ErrOutOfProject) {
		return agentsock.Errorf(KindScopeViolation, "%v", err)
	}
	switch k := tracker.KindOf(err); k {
	case tracker.ErrAuth, tracker.ErrNotFound, tracker.ErrPayload, tracker.ErrTransport, tracker.ErrAPI:
		return agentsock.Errorf(string(k), "%v", err)
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return agentsock.Errorf("tracker_transport_error", "%v", err)
	}
	return agentsock.Errorf("internal_error", "%v", err)
}

// issueJSON is an issue as tracker_api returns it: absent lists are [] and absent
// priority, parent and comments are null (spec: fetch_issue).
type issueJSON struct {
	ID          string               `json:"id"`
	Identifier  string               `json:"identifier"`
	Title       string               `json:"title"`
	Description string               `json:"description"`
	State       string               `json:"state"`
	Priority    *int                 `json:"priority"`
	Labels      []string             `json:"labels"`
	Assignee    string               `json:"assignee"`
	IssueType   string               `json:"issue_type"`
	URL         string               `json:"url"`
	BranchName  string               `json:"branch_name"`
	Parent      *tracker.ParentRef   `json:"parent"`
	Comments    []tracker.Comment    `json:"comments"`
	BlockedBy   []tracker.BlockerRef `json:"blocked_by"`
	CreatedAt   string               `json:"created_at"`
	UpdatedAt   string               `json:"updated_at"`
}

func toIssueJSON(is tracker.Issue) issueJSON {
	j := issueJSON{
		ID: is.ID, Identifier: is.Identifier, Title: is.Title, Description: is.Description, State: is.State,
		Priority: is.Priority, Labels: is.Labels, Assignee: is.Assignee, IssueType: is.IssueType, URL: is.URL,
		BranchName: is.BranchName, Parent: is.Parent, Comments: is.Comments, BlockedBy: is.BlockedBy,
		CreatedAt: is.CreatedAt, UpdatedAt: is.UpdatedAt,
	}
	if j.Labels == nil {
		j.Labels = []string{}
	}
	if j.BlockedBy == nil {
		j.BlockedBy = []tracker.BlockerRef{}
	}
	return j
}

var (
	_ agentsock.Handler         = (*Service)(nil)
	_ agentsock.WorkflowHandler = (*Service)(nil)
)
