package orchestrator

import (
	"context"
	"sync"
	"time"

	"sortie/internal/agent"
	"sortie/internal/store"
	"sortie/internal/tracker"
)

// stopReason says why the loop cancelled a running worker; it decides what happens
// when that worker exits.
type stopReason string

const (
	stopNone     stopReason = ""
	stopStall    stopReason = "stall"    // no agent event for agent.stall_timeout_ms: retry with backoff
	stopTerminal stopReason = "terminal" // issue reached a terminal state: clean the workspace
	stopInactive stopReason = "inactive" // issue left the active states: release
	stopShutdown stopReason = "shutdown" // daemon stopping: resume after restart
)

// runningEntry is the loop's record of one running worker.
type runningEntry struct {
	issue       tracker.Issue
	attempt     int // retry counter: 0 on a first dispatch
	failures    int // consecutive failed runs before this one (agent.max_retries)
	startedAt   time.Time
	host        string
	cancel      context.CancelFunc
	stop        stopReason
	cleanup     bool // remove the workspace once the worker exits
	resumeFrom  string
	reaction    *Reaction // the reaction this run answers, nil for none
	spentBefore spend     // what the issue had used before this run, for its budgets
	// sessionsBefore is the issue's run count before this run, for agent.max_sessions.
	sessionsBefore int
	progress       *progress
}

// retryEntry is an issue waiting for its retry timer. It keeps the issue claimed.
type retryEntry struct {
	issueID    string
	identifier string
	attempt    int
	failures   int // consecutive failed runs so far
	dueAt      time.Time
	kind       string // "continuation", "failure", "resume"
	reason     string
	sessionID  string
	host       string
	gen        uint64
	timer      interface{ Stop() bool }
	fetching   bool
	// slotWait is set once the retry was due and found no free slot: it waits for one
	// (waitForSlot), with issue as last fetched.
	slotWait bool
	issue    tracker.Issue
}

// hold keeps an issue from being dispatched until a human acts: the agent signalled
// blocked or needs-human-review with no handoff, or a run failed in a way retrying cannot
// fix. It lifts when a human changes the issue's tracker state or update time (Sortie's
// own changes move the baseline instead: tracker.OwnWrites), when the issue leaves the active
// states, or (for errors) when the workflow configuration changes.
type hold struct {
	issueID    string
	identifier string
	reason     string // "blocked", "needs_human_review", "error"
	message    string
	state      string
	updatedAt  string
	since      time.Time
}

// progress is what a worker reports about its run while it runs. The worker writes it
// on every agent event; the loop and snapshots read it. It is telemetry, not scheduling
// state, so a mutex (not the loop) guards it.
type progress struct {
	mu sync.Mutex
	progressData
}

// progressData is the content of progress, copied out under its lock.
type progressData struct {
	workspace   string
	sessionID   string
	pid         int
	remotePGID  int // the agent's process group on its SSH host, once announced
	turn        int
	maxTurns    int
	lastEventAt time.Time
	// turnStartedAt is when the current turn's agent was started: silence is counted
	// from it or the last event, whichever is later.
	turnStartedAt time.Time
	lastEvent     agent.EventType
	lastMessage   string
	usage         agent.Usage
	costUSD       float64
	model         string
	toolCalls     int
	apiRequests   int
	runID         int64
	// state is the tracker state the worker moved the issue to (in-progress, handoff),
	// newer than the loop's copy until the next poll; "" when it moved nothing.
	state string
	// finishing is set once the turns are over: the worker is handing off and
	// recording, and a state change seen now is its own doing, not a reason to stop it.
	finishing bool
	// movedTo is the state the run's agent moved its issue to itself (AgentMoving),
	// "" when none.
	movedTo string
	// selfReview is the self-review iteration under way, 0 when none.
	selfReview int
}

// agentMove is the state the run's agent moved its issue to itself, "" when none.
func (p *progress) agentMove() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.movedTo
}

func (p *progress) snapshot() progressData {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.progressData
}

// outcome is how a worker run ended.
type outcome string

const (
	outcomeNormal    outcome = "normal"    // turns ended without error
	outcomeFailed    outcome = "failed"    // an error ended the run
	outcomeCancelled outcome = "cancelled" // the loop stopped it
	outcomeSkipped   outcome = "skipped"   // revalidation found nothing to do; no run row
)

// workerExit is a worker's final report. The loop processes it only after every event
// the worker produced has been accounted (the worker sends it last).
type workerExit struct {
	issueID    string
	entry      *runningEntry
	outcome    outcome
	err        error
	softStop   string // "blocked", "needs-human-review" or ""
	budgetStop string // why a budget stopped the run, "" if none
	// awaiting is the unanswered workflow checkpoint the run stopped on, if any.
	awaiting  *store.Checkpoint
	handedOff bool
	// handoffRefused says why the run did not hand its issue off: a blocking workflow
	// checkpoint on the path had no human answer (checkpoints.go, refuseHandoff).
	handoffRefused string
	// notStarted: cancelled before the run had a row (while the issue was re-read).
	notStarted bool
	lastState  string
	updatedAt  string
	sessionID  string
	turns      int
	usage      agent.Usage
	costUSD    float64
	workspace  string
	// reviewMetadata is the self-review's result (JSON), "" when none ran.
	reviewMetadata string
}

// Totals are the token and time totals of finished runs since the daemon started.
type Totals struct {
	InputTokens     int64   `json:"input_tokens"`
	OutputTokens    int64   `json:"output_tokens"`
	TotalTokens     int64   `json:"total_tokens"`
	CacheReadTokens int64   `json:"cache_read_tokens"`
	CostUSD         float64 `json:"cost_usd"`
	SecondsRunning  float64 `json:"seconds_running"`
	ToolCalls       int64   `json:"tool_calls"`
	APIRequests     int64   `json:"api_requests"`
}

func (t *Totals) add(u agent.Usage, cost float64) {
	t.InputTokens += u.Input
	t.OutputTokens += u.Output
	t.TotalTokens += u.Total
	t.CacheReadTokens += u.CacheRead
	t.CostUSD += cost
}

// lastEventTime is when the agent last showed life: its last event, or the start of
// its current turn if that came later.
func (p *progress) lastEventTime() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.turnStartedAt.After(p.lastEventAt) {
		return p.turnStartedAt
	}
	return p.lastEventAt
}

// Hold reasons.
const (
	holdBlocked     = "blocked"
	holdHumanReview = "needs_human_review"
	holdError       = "error"
	holdRetries     = "retries_exhausted"
	// holdRemote: a previous daemon's agent may still run on an SSH host Sortie could
	// not reach to stop it; only reaching the host lifts it (remote.go).
	holdRemote = "remote_unreachable"
)
