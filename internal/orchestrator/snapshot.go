package orchestrator

import (
	"context"
	"slices"
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
	// Reaction is the reaction this run answers (ci, review), "" for none;
	// SelfReview the self-review iteration under way, 0 when none.
	Reaction   string `json:"reaction,omitempty"`
	SelfReview int    `json:"self_review_iteration,omitempty"`
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

// view is what the loop publishes after each step for readers on other goroutines
// (Snapshot): a copy of its state, never changed once published. Only each running
// session's progress is read live, from its worker (progress has a lock of its own).
type view struct {
	base    Snapshot // without Running; Totals are the finished runs'
	running []runningRef
}

// runningRef is a running session as the loop last saw it, and its worker's progress.
type runningRef struct {
	RunningView // the loop's part: issue, attempt, host, start, stopping
	progress    *progress
}

// Snapshot returns the state of the scheduler as of the loop's last step, with each
// running session's progress as of now. It takes no lock the loop holds and never waits
// for a step: the loop publishes a copy of its state after each. Before Run has
// recovered the state and published it once, it waits for that, and fails when ctx
// ends first; after Run, it returns the last state published (draining).
func (o *Orchestrator) Snapshot(ctx context.Context) (Snapshot, error) {
	v := o.published.Load()
	if v == nil {
		select {
		case <-o.ready:
			v = o.published.Load()
		case <-ctx.Done():
			return Snapshot{}, ctx.Err()
		}
	}
	return o.compose(v), nil
}

// publish copies the loop's state into a new view and makes it the one readers get.
// Loop only.
func (o *Orchestrator) publish() *view {
	v := &view{base: Snapshot{
		StartedAt: o.started, Totals: o.totals, LastPollAt: o.lastPollAt, LastPollOK: o.lastPollOK,
		LastError: o.lastError, Draining: o.draining, Candidates: len(o.candidates) - len(o.dropped),
		Retrying: make([]RetryView, 0, len(o.retrying)), Held: make([]HeldView, 0, len(o.holds)),
	}}
	for _, e := range o.running {
		rv := RunningView{
			IssueID: e.issue.ID, Identifier: e.issue.Identifier, Title: e.issue.Title, State: e.issue.State,
			Attempt: e.attempt, Host: e.host, StartedAt: e.startedAt, Stopping: string(e.stop),
		}
		if e.reaction != nil {
			rv.Reaction = e.reaction.Kind
		}
		v.running = append(v.running, runningRef{progress: e.progress, RunningView: rv})
	}
	for _, r := range o.retrying {
		v.base.Retrying = append(v.base.Retrying, RetryView{IssueID: r.issueID, Identifier: r.identifier,
			Attempt: r.attempt, Kind: r.kind, DueAt: r.dueAt, Error: r.reason})
	}
	for _, h := range o.holds {
		v.base.Held = append(v.base.Held, HeldView{IssueID: h.issueID, Identifier: h.identifier, Reason: h.reason,
			Message: h.message, State: h.state, Since: h.since})
	}
	sort.Slice(v.running, func(i, j int) bool { return v.running[i].StartedAt.Before(v.running[j].StartedAt) })
	sort.Slice(v.base.Retrying, func(i, j int) bool { return v.base.Retrying[i].DueAt.Before(v.base.Retrying[j].DueAt) })
	sort.Slice(v.base.Held, func(i, j int) bool { return v.base.Held[i].Since.Before(v.base.Held[j].Since) })
	first := o.published.Load() == nil
	o.published.Store(v)
	if first {
		close(o.ready) // Snapshots waiting for the recovered state go on
	}
	return v
}

// compose builds a Snapshot from a published view, the running sessions' progress
// and what is read anywhere (the configuration, checkpoints, the cluster). Each call
// returns slices of its own.
func (o *Orchestrator) compose(v *view) Snapshot {
	cfg := o.opts.Config()
	s := v.base
	s.GeneratedAt = o.clk.Now()
	s.MaxAgents, s.PollInterval = cfg.Agent.MaxConcurrentAgents, cfg.Polling.Interval
	s.Retrying, s.Held = slices.Clone(s.Retrying), slices.Clone(s.Held)
	s.AgentsConfined, s.NotConfined = o.opts.Sandbox.Confined(cfg)
	if o.opts.ConfigError != nil {
		if err := o.opts.ConfigError(); err != nil {
			s.WorkflowError = err.Error()
		}
	}
	s.Running = make([]RunningView, 0, len(v.running))
	for _, r := range v.running {
		p := r.progress.snapshot()
		rv := r.RunningView
		if p.state != "" {
			rv.State = p.state
		}
		rv.Turn, rv.MaxTurns, rv.SessionID, rv.PID, rv.Workspace = p.turn, p.maxTurns, p.sessionID, p.pid, p.workspace
		rv.LastEventAt, rv.LastEvent, rv.LastMessage = p.lastEventAt, string(p.lastEvent), p.lastMessage
		rv.Tokens, rv.CostUSD, rv.Model, rv.ToolCalls, rv.APIRequests, rv.RunID = p.usage, p.costUSD, p.model, p.toolCalls, p.apiRequests, p.runID
		rv.SelfReview = p.selfReview
		s.Running = append(s.Running, rv)
		s.Totals.add(p.usage, p.costUSD)
		s.Totals.SecondsRunning += s.GeneratedAt.Sub(rv.StartedAt).Seconds()
		s.Totals.ToolCalls += int64(p.toolCalls)
		s.Totals.APIRequests += int64(p.apiRequests)
	}
	s.Checkpoints = o.pendingViews()
	if c := o.opts.Cluster; c != nil {
		cv := c.View()
		s.Cluster = &cv
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
	StepReaction     Step = "reaction"      // reactions offered were dispatched or deferred
)

// Observation reports one step of the loop and the state right after it.
type Observation struct {
	Step     Step
	IssueID  string
	Snapshot Snapshot
}
