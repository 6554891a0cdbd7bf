package orchestrator

import (
	"context"
	"errors"
	"sort"
	"time"

	"sortie/internal/agent"
)

// Snapshot is a consistent picture of the scheduler at one moment, for the status API,
// the dashboard, metrics and the terminal display.
type Snapshot struct {
	GeneratedAt time.Time     `json:"generated_at"`
	StartedAt   time.Time     `json:"started_at"`
	Running     []RunningView `json:"running"`
	Retrying    []RetryView   `json:"retrying"`
	Held        []HeldView    `json:"held"`
	// Totals covers finished runs plus what running sessions have used so far.
	Totals     Totals    `json:"totals"`
	MaxAgents  int       `json:"max_agents"`
	LastPollAt time.Time `json:"last_poll_at"`
	LastPollOK bool      `json:"last_poll_ok"`
	LastError  string    `json:"last_error,omitempty"`
	Draining   bool      `json:"draining"`
	Candidates int       `json:"candidates"`
	// AgentsConfined is true when new local agents run confined by Landlock;
	// NotConfined says why not when false (docs/security.md, "Confinement").
	AgentsConfined bool   `json:"agents_confined"`
	NotConfined    string `json:"not_confined,omitempty"`
	// PollInterval is polling.interval in force: how recent LastPollAt should be.
	PollInterval time.Duration `json:"-"`
	// WorkflowError says why the last edit of WORKFLOW.md was rejected; the previous
	// configuration stays in force until the file is fixed. Empty when the file is good.
	WorkflowError string `json:"workflow_error,omitempty"`
	// Checkpoints are the pending structured-workflow checkpoints, oldest first; an
	// unanswered one of a held issue is what its human is asked.
	Checkpoints []CheckpointView `json:"checkpoints"`
	// Cluster is the whole cluster of daemons sharing this daemon's PostgreSQL store,
	// as of its last lease renewal; nil when the daemon is alone.
	Cluster *ClusterView `json:"cluster,omitempty"`
}

// RunningView describes one running session.
type RunningView struct {
	IssueID     string      `json:"issue_id"`
	Identifier  string      `json:"issue_identifier"`
	Title       string      `json:"title"`
	State       string      `json:"state"`
	Attempt     int         `json:"attempt"`
	Turn        int         `json:"turn"`
	MaxTurns    int         `json:"max_turns"`
	SessionID   string      `json:"session_id"`
	PID         int         `json:"pid,omitempty"`
	Host        string      `json:"host,omitempty"`
	Workspace   string      `json:"workspace_path"`
	StartedAt   time.Time   `json:"started_at"`
	LastEventAt time.Time   `json:"last_event_at"`
	LastEvent   string      `json:"last_event"`
	LastMessage string      `json:"last_message"`
	Tokens      agent.Usage `json:"tokens"`
	CostUSD     float64     `json:"cost_usd"`
	Model       string      `json:"model,omitempty"`
	ToolCalls   int         `json:"tool_calls"`
	APIRequests int         `json:"api_requests"`
	Stopping    string      `json:"stopping,omitempty"`
	RunID       int64       `json:"run_id"`
}

// RetryView describes one issue waiting for a retry.
type RetryView struct {
	IssueID    string    `json:"issue_id"`
	Identifier string    `json:"issue_identifier"`
	Attempt    int       `json:"attempt"`
	Kind       string    `json:"kind"`
	DueAt      time.Time `json:"due_at"`
	Error      string    `json:"error,omitempty"`
}

// HeldView describes an issue waiting for a human.
type HeldView struct {
	IssueID    string    `json:"issue_id"`
	Identifier string    `json:"issue_identifier"`
	Reason     string    `json:"reason"`
	Message    string    `json:"message"`
	State      string    `json:"state"`
	Since      time.Time `json:"since"`
}

// ErrNotRunning is returned by Snapshot when the loop is not running.
var ErrNotRunning = errors.New("orchestrator: not running")

// Snapshot returns the state of the loop. While the loop runs it reads the state
// itself between the loop's steps, with no round trip through the loop's goroutine
// (which would have to be scheduled, twice, on a machine busy with agents); before
// the loop runs and after it stops, it asks the loop, and fails when ctx ends first.
func (o *Orchestrator) Snapshot(ctx context.Context) (Snapshot, error) {
	o.stateMu.RLock()
	if o.serving {
		defer o.stateMu.RUnlock()
		return o.snapshot(), nil
	}
	o.stateMu.RUnlock()
	reply := make(chan Snapshot, 1)
	select {
	case o.snapshots <- reply:
	case <-ctx.Done():
		return Snapshot{}, ctx.Err()
	}
	select {
	case s := <-reply:
		return s, nil
	case <-ctx.Done():
		return Snapshot{}, ctx.Err()
	}
}

// snapshot builds a Snapshot on the loop.
func (o *Orchestrator) snapshot() Snapshot {
	cfg := o.opts.Config()
	s := Snapshot{
		GeneratedAt: o.clk.Now(), StartedAt: o.started, Totals: o.totals,
		MaxAgents: cfg.Agent.MaxConcurrentAgents, LastPollAt: o.lastPollAt, LastPollOK: o.lastPollOK,
		LastError: o.lastError, Draining: o.draining, Candidates: len(o.candidates) - len(o.dropped), PollInterval: cfg.Polling.Interval,
		Running: []RunningView{}, Retrying: []RetryView{}, Held: []HeldView{},
	}
	s.AgentsConfined, s.NotConfined = o.opts.Sandbox.confined(cfg)
	if o.opts.ConfigError != nil {
		if err := o.opts.ConfigError(); err != nil {
			s.WorkflowError = err.Error()
		}
	}
	for _, e := range o.running {
		p := e.progress.snapshot()
		state := e.issue.State
		if p.state != "" {
			state = p.state
		}
		s.Running = append(s.Running, RunningView{
			IssueID: e.issue.ID, Identifier: e.issue.Identifier, Title: e.issue.Title, State: state,
			Attempt: e.attempt, Turn: p.turn, MaxTurns: p.maxTurns, SessionID: p.sessionID, PID: p.pid,
			Host: e.host, Workspace: p.workspace, StartedAt: e.startedAt, LastEventAt: p.lastEventAt,
			LastEvent: string(p.lastEvent), LastMessage: p.lastMessage, Tokens: p.usage, CostUSD: p.costUSD,
			Model: p.model, ToolCalls: p.toolCalls, APIRequests: p.apiRequests, Stopping: string(e.stop),
			RunID: p.runID,
		})
		s.Totals.add(p.usage, p.costUSD)
		s.Totals.SecondsRunning += s.GeneratedAt.Sub(e.startedAt).Seconds()
		s.Totals.ToolCalls += int64(p.toolCalls)
		s.Totals.APIRequests += int64(p.apiRequests)
	}
	for _, r := range o.retrying {
		s.Retrying = append(s.Retrying, RetryView{IssueID: r.issueID, Identifier: r.identifier,
			Attempt: r.attempt, Kind: r.kind, DueAt: r.dueAt, Error: r.reason})
	}
	for _, h := range o.holds {
		s.Held = append(s.Held, HeldView{IssueID: h.issueID, Identifier: h.identifier, Reason: h.reason,
			Message: h.message, State: h.state, Since: h.since})
	}
	sort.Slice(s.Running, func(i, j int) bool { return s.Running[i].StartedAt.Before(s.Running[j].StartedAt) })
	sort.Slice(s.Retrying, func(i, j int) bool { return s.Retrying[i].DueAt.Before(s.Retrying[j].DueAt) })
	sort.Slice(s.Held, func(i, j int) bool { return s.Held[i].Since.Before(s.Held[j].Since) })
	s.Checkpoints = o.pendingViews()
	if c := o.opts.Cluster; c != nil {
		v := c.View()
		s.Cluster = &v
	}
	return s
}

// Step names what the loop just did, in an Observation.
type Step string

// Loop steps.
const (
	StepTick         Step = "tick"          // a poll's results were applied
	StepExit         Step = "exit"          // a worker's exit was handled
	StepRetryFired   Step = "retry_fired"   // a retry timer fired
	StepRetryFetched Step = "retry_fetched" // a retry's issue was re-read and acted on
	StepRefresh      Step = "refresh"       // a poll was requested
	StepStallCheck   Step = "stall_check"   // running sessions were checked for stalls
	StepConfig       Step = "config"        // a new workflow configuration was applied
	StepSweep        Step = "sweep"         // terminal issues' workspaces were looked for and removed
	StepRemote       Step = "remote"        // an attempt to stop agents left on SSH hosts came back
	StepAnswer       Step = "answer"        // a checkpoint answer was acted on
	StepRenewal      Step = "renewal"       // the cluster leases were renewed
)

// Observation reports one step of the loop and the state right after it.
type Observation struct {
	Step     Step
	IssueID  string
	Snapshot Snapshot
}
