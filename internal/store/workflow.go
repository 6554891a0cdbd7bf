package store

import (
	"context"
	"fmt"
	"time"
)

// WorkflowSession is the server-side record of one workflow-tools session
// (spec/workflow-tools-api.md): the newest session token it issued, so that a
// restarted daemon accepts exactly that token and no older one.
type WorkflowSession struct {
	SessionID string // the token's sid
	Workflow  string
	// IssueID and Identifier bind a daemon-run session to its issue; empty in
	// standalone mode.
	IssueID    string
	Identifier string
	Token      string // the newest token issued
	UpdatedAt  time.Time
}

// Validate checks the fields SaveWorkflowSession needs.
func (s WorkflowSession) Validate() error {
	var c checks
	c.empty("session id", s.SessionID)
	c.empty("workflow", s.Workflow)
	c.empty("token", s.Token)
	c.zero("updated at", s.UpdatedAt)
	return c.err()
}

// TraceEvent is one workflow tool call, the mechanical trace of
// workflow-server-behaviour.md §7. It never holds a token.
type TraceEvent struct {
	ID        int64  // assigned by the store, increasing
	SessionID string // traceId
	SpanID    string
	IssueID   string // empty in standalone mode
	RunID     int64  // the run whose agent called, 0 in standalone mode
	Tool      string
	TS        time.Time
	Duration  time.Duration
	OK        bool
	Workflow  string
	Activity  string // the activity of the token presented, or the one entered by next_activity
	AgentID   string
	Error     string
	Warnings  []string
	// Detail is a short tool-specific note for the dashboard, e.g. "→ implement" or
	// "approve-plan: approve (by alice)".
	Detail string
}

// Validate checks the fields AppendTraceEvent needs.
func (e TraceEvent) Validate() error {
	var c checks
	c.empty("session id", e.SessionID)
	c.empty("span id", e.SpanID)
	c.empty("tool", e.Tool)
	c.zero("ts", e.TS)
	return c.err()
}

// Bounded returns e as a store keeps it: Error cut to MaxRunErrorBytes, Detail and
// each warning to MaxEventMessageBytes (Truncate). e's Warnings are not changed.
func (e TraceEvent) Bounded() TraceEvent {
	e.Error = Truncate(e.Error, MaxRunErrorBytes)
	e.Detail = Truncate(e.Detail, MaxEventMessageBytes)
	if e.Warnings != nil {
		w := make([]string, len(e.Warnings))
		for i, x := range e.Warnings {
			w[i] = Truncate(x, MaxEventMessageBytes)
		}
		e.Warnings = w
	}
	return e
}

// CheckpointOption is one answer a human may choose.
type CheckpointOption struct {
	ID          string `json:"id"`
	Label       string `json:"label"`
	Description string `json:"description,omitempty"`
}

// Checkpoint sources: who answered.
const (
	AnswerDashboard   = "dashboard"    // the dashboard's buttons
	AnswerAPI         = "api"          // POST /api/v1/{identifier}/checkpoints/{id}
	AnswerTracker     = "tracker"      // a "/sortie choose <option>" tracker comment
	AnswerAutoAdvance = "auto_advance" // the daemon's timer chose the default option
)

// Checkpoint resolutions: how respond_checkpoint cleared it.
const (
	ResolvedOption       = "option"
	ResolvedAutoAdvance  = "auto_advance"
	ResolvedConditionNot = "condition_not_met"
	ResolvedSuperseded   = "superseded" // re-armed by re-entering its activity
	// ResolvedAbandoned: the daemon ended the session while the checkpoint was
	// pending, because its issue left the active states or was handed off.
	ResolvedAbandoned = "abandoned"
)

// Checkpoint is one issuance of a workflow checkpoint to a session: armed by
// next_activity, answered by a human (or the auto-advance timer), resolved by the
// agent's respond_checkpoint. A checkpoint is pending while Resolution is empty.
type Checkpoint struct {
	ID            int64 // assigned by the store
	SessionID     string
	IssueID       string // empty in standalone mode
	Identifier    string
	RunID         int64
	Workflow      string
	Activity      string
	CheckpointID  string
	Name          string
	Message       string
	Options       []CheckpointOption
	Blocking      bool
	DefaultOption string
	AutoAdvanceMS int64
	Conditional   bool // the checkpoint has a condition: condition_not_met may dismiss it
	IssuedAt      time.Time

	// The human's answer; empty until answered.
	Answer       string
	AnsweredBy   string
	AnswerSource string // one of the Answer* constants
	AnsweredAt   time.Time

	// The agent's respond_checkpoint; empty while pending.
	Resolution string // one of the Resolved* constants
	ResolvedAt time.Time
}

// Pending reports whether the checkpoint still gates its session.
func (c Checkpoint) Pending() bool { return c.Resolution == "" }

// Answered reports whether a human (or the timer) has answered it.
func (c Checkpoint) Answered() bool { return c.Answer != "" }

// Validate checks the fields ArmCheckpoints needs.
func (c Checkpoint) Validate() error {
	var ch checks
	ch.empty("session id", c.SessionID)
	ch.empty("workflow", c.Workflow)
	ch.empty("activity", c.Activity)
	ch.empty("checkpoint id", c.CheckpointID)
	ch.zero("issued at", c.IssuedAt)
	return ch.err()
}

// CheckpointAnswer is a human's answer to a pending checkpoint.
type CheckpointAnswer struct {
	SessionID    string
	CheckpointID string
	Option       string
	By           string
	Source       string
	At           time.Time
}

// Validate checks the fields AnswerCheckpoint needs. By may be empty (the
// auto-advance timer).
func (a CheckpointAnswer) Validate() error {
	var c checks
	c.empty("session id", a.SessionID)
	c.empty("checkpoint id", a.CheckpointID)
	c.empty("option", a.Option)
	switch a.Source {
	case AnswerDashboard, AnswerAPI, AnswerTracker, AnswerAutoAdvance:
	default:
		c.add(fmt.Errorf("source must be one of %s, %s, %s, %s (got %q)",
			AnswerDashboard, AnswerAPI, AnswerTracker, AnswerAutoAdvance, a.Source))
	}
	c.zero("at", a.At)
	return c.err()
}

// WorkflowReader is the read side of the workflow records.
type WorkflowReader interface {
	// LoadWorkflowSessions returns every workflow session, oldest update first.
	LoadWorkflowSessions(ctx context.Context) ([]WorkflowSession, error)
	// TraceEvents returns the newest limit trace events of a session, oldest of them first.
	TraceEvents(ctx context.Context, sessionID string, limit int) ([]TraceEvent, error)
	// RunTraceEvents returns the newest limit trace events recorded during a run,
	// oldest of them first.
	RunTraceEvents(ctx context.Context, runID int64, limit int) ([]TraceEvent, error)
	// PendingCheckpoints returns every pending checkpoint of every session, oldest
	// issuance first.
	PendingCheckpoints(ctx context.Context) ([]Checkpoint, error)
	// IssueCheckpoints returns the newest limit checkpoints of an issue, pending or
	// not, oldest of them first: its checkpoint decisions.
	IssueCheckpoints(ctx context.Context, issueID string, limit int) ([]Checkpoint, error)
}

// WorkflowStore persists workflow sessions, their trace and their checkpoints.
type WorkflowStore interface {
	WorkflowReader
	// SaveWorkflowSession inserts or replaces the record of s.SessionID.
	SaveWorkflowSession(ctx context.Context, s WorkflowSession) error
	// DeleteWorkflowSession forgets a session and its pending checkpoints.
	DeleteWorkflowSession(ctx context.Context, sessionID string) error
	// EndIssueWorkflows ends every workflow session of an issue (one that left the
	// active states or was handed off), in one transaction: their pending checkpoints
	// are resolved as ResolvedAbandoned at at (answers already given are kept), and
	// their session records are deleted, so that no token of theirs verifies after a
	// restart. Resolved checkpoints and the trace stay, as the issue's history. It
	// returns the ids of the sessions ended, sessions without a record but with a
	// pending checkpoint included.
	EndIssueWorkflows(ctx context.Context, issueID string, at time.Time) ([]string, error)
	// AppendTraceEvent stores one event and returns its id. Each session keeps at
	// most MaxTraceEventsPerSession events; older ones are trimmed.
	AppendTraceEvent(ctx context.Context, e TraceEvent) (int64, error)
	// ArmCheckpoints records the checkpoints next_activity issued to a session. Every
	// checkpoint of the session still pending is resolved as superseded first; an
	// answer already given to a superseded checkpoint with the same activity and
	// checkpoint id carries over to its new issuance. It returns the armed rows with
	// their ids and carried answers.
	ArmCheckpoints(ctx context.Context, sessionID string, cps []Checkpoint) ([]Checkpoint, error)
	// AnswerCheckpoint records a human's answer to a pending, unanswered checkpoint.
	// It fails with ErrNotFound when the session has no pending checkpoint with that
	// id, and with ErrConflict when it was answered already.
	AnswerCheckpoint(ctx context.Context, a CheckpointAnswer) (Checkpoint, error)
	// ResolveCheckpoint records the agent's respond_checkpoint. ErrNotFound when no
	// such checkpoint is pending.
	ResolveCheckpoint(ctx context.Context, sessionID, checkpointID, resolution string, at time.Time) (Checkpoint, error)
}

// MaxTraceEventsPerSession bounds each session's stored trace.
const MaxTraceEventsPerSession = 5000
