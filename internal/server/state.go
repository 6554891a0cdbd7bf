package server

import (
	"net/http"
	"sync"
	"time"

	"sortie/internal/agent"
	"sortie/internal/orchestrator"
	"sortie/internal/reactions"
	"sortie/internal/tracker"
	"sortie/internal/webhook"
)

// Hold reasons that wait for a human's answer rather than a fix: the issues listed
// under awaiting_input. They are the orchestrator's hold reasons.
const (
	holdBlocked     = "blocked"
	holdHumanReview = "needs_human_review"
	// holdAwaiting is an issue parked on an unanswered workflow checkpoint.
	holdAwaiting = "awaiting_input"
)

// waitsForAnswer reports whether issues held for reason wait for a human's answer.
func waitsForAnswer(reason string) bool {
	return reason == holdBlocked || reason == holdHumanReview || reason == holdAwaiting
}

// stateBody is GET /api/v1/state: stateHead, the running sessions, stateTail. It is
// encoded in parts (appendState) and decoded whole (tests, clients).
type stateBody struct {
	stateHead
	Running []runningJSON `json:"running"`
	stateTail
}

type stateHead struct {
	GeneratedAt   time.Time   `json:"generated_at"`
	StartedAt     time.Time   `json:"started_at"`
	Version       string      `json:"version"`
	UptimeSeconds float64     `json:"uptime_seconds"`
	Counts        stateCounts `json:"counts"`
}

type stateTail struct {
	Retrying      []retryJSON    `json:"retrying"`
	AwaitingInput []awaitingJSON `json:"awaiting_input"`
	// Checkpoints are every pending workflow checkpoint, answered or not, of held and
	// running issues alike, oldest first: a running issue's can be answered before
	// its agent's turn ends.
	Checkpoints []checkpointJSON        `json:"checkpoints"`
	Held        []orchestrator.HeldView `json:"held"`
	Totals      orchestrator.Totals     `json:"totals"`
	Workflow    workflowJSON            `json:"workflow"`
	LastPollAt  *time.Time              `json:"last_poll_at"`
	LastPollOK  bool                    `json:"last_poll_ok"`
	LastError   string                  `json:"last_error"`
	Draining    bool                    `json:"draining"`
	// AgentsConfined is whether new local agents run confined (docs/security.md);
	// NotConfined says why not.
	AgentsConfined bool   `json:"agents_confined"`
	NotConfined    string `json:"not_confined,omitempty"`
	// RateLimits is the tracker API's budget as its last response said, [] for a
	// tracker without one (tracker.RateLimiter).
	RateLimits []tracker.RateLimit `json:"rate_limits"`
	// Webhooks is the last webhook delivery per tracker kind, [] when none has come
	// (or the daemon receives none).
	Webhooks []webhook.Status `json:"webhooks"`
	// Reactions are the handed-off issues whose pull requests Sortie watches
	// (docs/reactions.md), [] when none.
	Reactions []reactions.View `json:"reactions"`
	// Cluster is the daemons sharing this daemon's PostgreSQL store and their leases,
	// as of its last renewal; absent when the daemon is alone.
	Cluster *orchestrator.ClusterView `json:"cluster,omitempty"`
}

type stateCounts struct {
	Running       int `json:"running"`
	Retrying      int `json:"retrying"`
	AwaitingInput int `json:"awaiting_input"`
	Held          int `json:"held"`
	SlotsFree     int `json:"slots_free"`
	MaxAgents     int `json:"max_agents"`
	// Candidates is how many issues the last poll found eligible.
	Candidates int `json:"candidates"`
}

type workflowJSON struct {
	Path string `json:"path"`
	// ReloadError says why the last edit of WORKFLOW.md was rejected; null when the
	// file in force is the file on disk.
	ReloadError *string `json:"reload_error"`
}

// runningJSON is one running session: every field of orchestrator.RunningView, under
// the same names, and how long it has run.
type runningJSON struct {
	IssueID        string      `json:"issue_id"`
	Identifier     string      `json:"issue_identifier"`
	Title          string      `json:"title"`
	State          string      `json:"state"`
	Attempt        int         `json:"attempt"`
	Turn           int         `json:"turn"`
	MaxTurns       int         `json:"max_turns"`
	SessionID      string      `json:"session_id"`
	PID            int         `json:"pid"`
	Host           string      `json:"host"`
	Workspace      string      `json:"workspace_path"`
	StartedAt      time.Time   `json:"started_at"`
	ElapsedSeconds float64     `json:"elapsed_seconds"`
	LastEventAt    *time.Time  `json:"last_event_at"`
	LastEvent      string      `json:"last_event"`
	LastMessage    string      `json:"last_message"`
	Tokens         agent.Usage `json:"tokens"`
	CostUSD        float64     `json:"cost_usd"`
	Model          string      `json:"model"`
	ToolCalls      int         `json:"tool_calls"`
	APIRequests    int         `json:"api_requests"`
	Stopping       string      `json:"stopping"`
	RunID          int64       `json:"run_id"`
	Reaction       string      `json:"reaction"`
	SelfReview     int         `json:"self_review_iteration"`
}

func runningOf(v orchestrator.RunningView, now time.Time) runningJSON {
	return runningJSON{
		IssueID: v.IssueID, Identifier: v.Identifier, Title: v.Title, State: v.State, Attempt: v.Attempt,
		Turn: v.Turn, MaxTurns: v.MaxTurns, SessionID: v.SessionID, PID: v.PID, Host: v.Host,
		Workspace: v.Workspace, StartedAt: v.StartedAt, ElapsedSeconds: seconds(now.Sub(v.StartedAt)),
		LastEventAt: optTime(v.LastEventAt), LastEvent: v.LastEvent, LastMessage: v.LastMessage,
		Tokens: v.Tokens, CostUSD: v.CostUSD, Model: v.Model, ToolCalls: v.ToolCalls,
		APIRequests: v.APIRequests, Stopping: v.Stopping, RunID: v.RunID, Reaction: v.Reaction, SelfReview: v.SelfReview,
	}
}

// retryJSON is one queued retry: orchestrator.RetryView and the seconds until it is
// due (negative when overdue).
type retryJSON struct {
	IssueID      string    `json:"issue_id"`
	Identifier   string    `json:"issue_identifier"`
	Attempt      int       `json:"attempt"`
	Kind         string    `json:"kind"`
	DueAt        time.Time `json:"due_at"`
	DueInSeconds float64   `json:"due_in_seconds"`
	Error        string    `json:"error"`
}

func retryOf(v orchestrator.RetryView, now time.Time) retryJSON {
	return retryJSON{IssueID: v.IssueID, Identifier: v.Identifier, Attempt: v.Attempt, Kind: v.Kind,
		DueAt: v.DueAt, DueInSeconds: seconds(v.DueAt.Sub(now)), Error: v.Error}
}

// awaitingJSON is an issue waiting for a human's answer.
type awaitingJSON struct {
	IssueID    string    `json:"issue_id"`
	Identifier string    `json:"issue_identifier"`
	Reason     string    `json:"reason"`
	Question   string    `json:"question"`
	State      string    `json:"state"`
	Since      time.Time `json:"since"`
	// Checkpoint is the workflow checkpoint asked, with the options and the URL that
	// answer it; null for the holds whose agent stopped itself.
	Checkpoint *checkpointJSON `json:"checkpoint"`
}

// awaitingInput lists the questions that wait for a human's answer, in the order of
// the holds (oldest first): the holds whose agent stopped itself (blocked,
// needs_human_review), whose question is what the agent wrote, and one entry per
// unanswered checkpoint of each issue held as awaiting_input. An awaiting_input hold
// whose checkpoints are all answered is resuming and asks nothing more.
func awaitingInput(snap orchestrator.Snapshot, cps []checkpointJSON) []awaitingJSON {
	out := []awaitingJSON{}
	for _, h := range snap.Held {
		switch h.Reason {
		case holdBlocked, holdHumanReview:
			out = append(out, awaitingJSON{IssueID: h.IssueID, Identifier: h.Identifier, Reason: h.Reason,
				Question: h.Message, State: h.State, Since: h.Since})
		case holdAwaiting:
			for i := range cps {
				c := &cps[i]
				if c.Answer != "" || (c.IssueID != h.IssueID && (c.IssueID != "" || c.Identifier != h.Identifier)) {
					continue
				}
				q := c.Message
				if q == "" {
					q = c.Name
				}
				out = append(out, awaitingJSON{IssueID: h.IssueID, Identifier: h.Identifier, Reason: h.Reason,
					Question: q, State: h.State, Since: h.Since, Checkpoint: c})
			}
		}
	}
	return out
}

// snapshotTime is the moment a snapshot describes: elapsed and due times are measured
// from it, so one response is consistent with itself.
func (s *Server) snapshotTime(snap orchestrator.Snapshot) time.Time {
	if snap.GeneratedAt.IsZero() {
		return s.now()
	}
	return snap.GeneratedAt
}

// handleState is GET /api/v1/state: the scheduler's state now.
func (s *Server) handleState(w http.ResponseWriter, r *http.Request) {
	snap, err := s.snapshot(r.Context())
	if err != nil {
		s.snapshotFailed(w, r, err)
		return
	}
	now := s.snapshotTime(snap)
	head, tail := stateParts(snap, now, s.opts.Version, s.opts.WorkflowPath)
	tail.RateLimits = []tracker.RateLimit{}
	if s.opts.RateLimits != nil {
		if rl := s.opts.RateLimits(); rl != nil {
			tail.RateLimits = rl
		}
	}
	tail.Webhooks = []webhook.Status{}
	if s.opts.Webhooks != nil {
		if ws := s.opts.Webhooks.Status(); ws != nil {
			tail.Webhooks = ws
		}
	}
	tail.Reactions = []reactions.View{}
	if s.opts.Reactions != nil {
		if rv := s.opts.Reactions(); rv != nil {
			tail.Reactions = rv
		}
	}
	bp := statePool.Get().(*[]byte)
	b, err := appendState((*bp)[:0], head, snap.Running, now, tail)
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, errorBody{errorDetail{"internal_error", "encoding the state failed: " + err.Error()}})
		return
	}
	b = append(b, '\n')
	writeBody(w, http.StatusOK, b)
	if cap(b) <= 4<<20 { // do not keep one huge response's buffer
		*bp = b[:0]
		statePool.Put(bp)
	}
}

// statePool holds the buffers state responses are encoded into: a few hundred KB
// each with hundreds of sessions, reused rather than regrown per request.
var statePool = sync.Pool{New: func() any { return new([]byte) }}

// stateParts builds the parts of GET /api/v1/state around the running list.
func stateParts(snap orchestrator.Snapshot, now time.Time, version, workflowPath string) (stateHead, stateTail) {
	head := stateHead{GeneratedAt: now, StartedAt: snap.StartedAt, Version: version}
	if !snap.StartedAt.IsZero() {
		head.UptimeSeconds = seconds(now.Sub(snap.StartedAt))
	}
	cps := checkpointsOf(snap.Checkpoints)
	tail := stateTail{
		Retrying: make([]retryJSON, len(snap.Retrying)), AwaitingInput: awaitingInput(snap, cps), Checkpoints: cps,
		Held: snap.Held, Totals: snap.Totals, Workflow: workflowJSON{Path: workflowPath},
		LastPollAt: optTime(snap.LastPollAt), LastPollOK: snap.LastPollOK, LastError: snap.LastError,
		Draining: snap.Draining, AgentsConfined: snap.AgentsConfined, NotConfined: snap.NotConfined,
	}
	if tail.Held == nil {
		tail.Held = []orchestrator.HeldView{}
	}
	if snap.Cluster != nil {
		tail.Cluster = clusterOf(*snap.Cluster)
	}
	for i, v := range snap.Retrying {
		tail.Retrying[i] = retryOf(v, now)
	}
	if snap.WorkflowError != "" {
		msg := snap.WorkflowError
		tail.Workflow.ReloadError = &msg
	}
	head.Counts = stateCounts{
		Running: len(snap.Running), Retrying: len(tail.Retrying), AwaitingInput: len(tail.AwaitingInput),
		Held: len(tail.Held), SlotsFree: max(snap.MaxAgents-len(snap.Running), 0), MaxAgents: snap.MaxAgents,
		Candidates: snap.Candidates,
	}
	return head, tail
}

// clusterOf is the cluster object of the state: v with [] for no daemons or leases,
// never null. v is a copy; the snapshot's slices are shared, not changed.
func clusterOf(v orchestrator.ClusterView) *orchestrator.ClusterView {
	if v.Daemons == nil {
		v.Daemons = []orchestrator.ClusterDaemon{}
	}
	if v.Leases == nil {
		v.Leases = []orchestrator.ClusterLease{}
	}
	return &v
}
