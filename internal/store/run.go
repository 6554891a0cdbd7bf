package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// MaxReviewMetadataBytes bounds Run.ReviewMetadata and RunEnd.ReviewMetadata. Longer
// metadata is refused, not truncated (a cut JSON document is no longer JSON): the
// caller keeps it below the bound.
const MaxReviewMetadataBytes = 64 << 10

// RunStatus is where a run is in its life. A run is running from StartRun until
// FinishRun or MarkInterrupted gives it one of the terminal statuses; it never changes
// after that.
type RunStatus string

// Run statuses. The terminal ones say how the run ended, not what happens to the issue
// next (that is the retry queue's and the orchestrator's business).
const (
	// StatusRunning: the run started and has not ended. Found at startup, it belongs to
	// a daemon that died.
	StatusRunning RunStatus = "running"
	// StatusSucceeded: the agent finished its turns without error and the issue stays
	// with Sortie (a continuation follows, or the issue left the active states).
	StatusSucceeded RunStatus = "succeeded"
	// StatusHandedOff: the run succeeded and the issue was moved to
	// tracker.handoff_state for humans.
	StatusHandedOff RunStatus = "handed_off"
	// StatusBlocked: the agent stopped itself because it needs a human (a checkpoint, or
	// .sortie/status = blocked); the issue is held until someone answers.
	StatusBlocked RunStatus = "blocked"
	// StatusBudgetExhausted: the daemon stopped the run because the issue used up its
	// budget (agent.max_tokens and the like) during the run.
	StatusBudgetExhausted RunStatus = "budget_exhausted"
	// StatusFailed: the run ended with an error (agent, hook, workspace or tracker);
	// Error says which.
	StatusFailed RunStatus = "failed"
	// StatusTimedOut: a turn exceeded agent.turn_timeout_ms and was killed.
	StatusTimedOut RunStatus = "timed_out"
	// StatusStalled: the agent went silent for longer than agent.stall_timeout_ms and
	// the daemon killed it.
	StatusStalled RunStatus = "stalled"
	// StatusCancelled: the daemon stopped the run because of the issue: it left the
	// active states, became terminal, or an operator stopped it.
	StatusCancelled RunStatus = "cancelled"
	// StatusInterrupted: the daemon itself stopped while the run was in progress, by a
	// shutdown or by dying (crash, kill -9, power loss: then the next daemon finds the
	// run still running, stops its process group and ends it). The issue resumes.
	StatusInterrupted RunStatus = "interrupted"
)

// RunStatuses lists every status, running first.
var RunStatuses = []RunStatus{
	StatusRunning, StatusSucceeded, StatusHandedOff, StatusBlocked, StatusBudgetExhausted,
	StatusFailed, StatusTimedOut, StatusStalled, StatusCancelled, StatusInterrupted,
}

// Valid reports whether s is one of RunStatuses.
func (s RunStatus) Valid() bool {
	for _, v := range RunStatuses {
		if s == v {
			return true
		}
	}
	return false
}

// Terminal reports whether s is a valid status other than running.
func (s RunStatus) Terminal() bool { return s != StatusRunning && s.Valid() }

// Tokens are cumulative token counts.
type Tokens struct {
	Input     int64 `json:"input_tokens"`
	Output    int64 `json:"output_tokens"`
	Total     int64 `json:"total_tokens"`
	CacheRead int64 `json:"cache_read_tokens"`
}

// Add returns the element-wise sum of t and u.
func (t Tokens) Add(u Tokens) Tokens {
	return Tokens{t.Input + u.Input, t.Output + u.Output, t.Total + u.Total, t.CacheRead + u.CacheRead}
}

// Process is the agent program behind a running run. Recovery signals the process group
// PGID of a run left running by a dead daemon (after checking the group still belongs
// to the run: pids are reused).
type Process struct {
	PID  int // 0 when no agent process runs (before the first turn, between turns)
	PGID int // process group of the agent; 0 when none
	// RemotePGID is the agent's process group on its SSH host (Run.SSHHost), 0 when
	// unknown or local: recovery stops it there before the issue resumes.
	RemotePGID int
	CLIVersion string // the agent CLI's version, e.g. "2.1.3"; "" leaves the stored one
}

// Progress is what a run has reached so far. Counters are cumulative for the run.
type Progress struct {
	Turns     int // turns completed
	Tokens    Tokens
	CostUSD   float64 // as the agent CLI reported it, 0 when unknown
	Model     string  // last model seen; "" leaves the stored one
	SessionID string  // the agent session the run continues (for resume); "" leaves the stored one
}

// Run is one worker attempt for one issue: one row of run history. Process and Progress
// are embedded, so r.PGID and r.Tokens read directly.
type Run struct {
	ID           int64
	IssueID      string // the tracker's stable id
	Identifier   string // human-readable key, e.g. PROJ-12
	Attempt      int    // 1-based
	AgentKind    string // adapter kind, e.g. claude-code
	Workspace    string // absolute path of the workspace; "" if not known at start
	SSHHost      string // the host the agent runs on over SSH; "" for local
	WorkflowPath string // the WORKFLOW.md the run was configured by
	Status       RunStatus
	StartedAt    time.Time
	EndedAt      time.Time // zero while running
	Error        string    // why it failed, stopped or was interrupted; "" otherwise
	Process
	Progress
	// DaemonHost and DaemonPID name the daemon that started the run; the store fills
	// them in.
	DaemonHost string
	DaemonPID  int
	// ReviewMetadata is the run's self-review result as FinishRun recorded it (JSON
	// text), "" when there is none (and while the run is running).
	ReviewMetadata string
	// Reaction is the reaction kind that started the run (ReactionCI, ReactionReview):
	// a CI failure or a change request sent back to the agent; "" for any other run.
	Reaction string
}

// SelfReviewVerdict is the final verdict (pass, iterate, none) of the run's
// self-review, "" when none ran or its metadata does not read.
func (r Run) SelfReviewVerdict() string {
	if r.ReviewMetadata == "" {
		return ""
	}
	var m struct {
		FinalVerdict string `json:"final_verdict"`
	}
	if json.Unmarshal([]byte(r.ReviewMetadata), &m) != nil {
		return ""
	}
	return m.FinalVerdict
}

// Validate checks the fields StartRun needs.
func (r Run) Validate() error {
	var c checks
	c.empty("issue id", r.IssueID)
	c.empty("identifier", r.Identifier)
	c.attempt(r.Attempt)
	c.empty("agent kind", r.AgentKind)
	c.zero("started_at", r.StartedAt)
	if r.Reaction != "" && r.Reaction != ReactionCI && r.Reaction != ReactionReview {
		c.add(fmt.Errorf("reaction %q is neither %q nor %q", r.Reaction, ReactionCI, ReactionReview))
	}
	return c.err()
}

// RunEnd is how a run ended: the argument of FinishRun. The embedded Progress is the
// final progress, merged like UpdateRunProgress. Events are the run's last events, not
// yet written: FinishRun appends them (as AppendEvents does) in the same transaction as
// the end, so a run's last turn costs one write, not two.
type RunEnd struct {
	Status  RunStatus // a terminal status
	Error   string
	EndedAt time.Time
	Progress
	Events []Event
	// ReviewMetadata is the run's self-review result: one JSON value of at most
	// MaxReviewMetadataBytes, or "" for none. Validate refuses anything else (it is not
	// truncated), so FinishRun fails and the run stays running: bound it before.
	ReviewMetadata string
}

// Validate checks that e has a terminal status and an end time, and that its review
// metadata, if any, is one JSON value of at most MaxReviewMetadataBytes.
func (e RunEnd) Validate() error {
	if !e.Status.Terminal() {
		return fmt.Errorf("status %q is not a terminal run status (want one of %v)", e.Status, RunStatuses[1:])
	}
	if e.EndedAt.IsZero() {
		return errors.New("ended_at is zero")
	}
	if n := len(e.ReviewMetadata); n > MaxReviewMetadataBytes {
		return fmt.Errorf("review metadata is %d bytes, more than the %d allowed", n, MaxReviewMetadataBytes)
	}
	if e.ReviewMetadata != "" && !json.Valid([]byte(e.ReviewMetadata)) {
		return errors.New("review metadata is not valid JSON")
	}
	return nil
}
