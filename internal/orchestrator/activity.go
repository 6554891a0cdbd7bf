package orchestrator

import (
	"time"

	"sortie/internal/agent"
)

// Activity is one thing that happened, reported synchronously through
// Options.Activity as it happens: the source of the Prometheus metrics (which must
// count every event) and of the dashboard's live feed (which may drop some). Each kind
// fills only the fields that concern it.
type Activity struct {
	Kind       ActivityKind `json:"kind"`
	Time       time.Time    `json:"time"`
	IssueID    string       `json:"issue_id,omitempty"`
	Identifier string       `json:"issue_identifier,omitempty"`
	RunID      int64        `json:"run_id,omitempty"`

	// ActivityAgentEvent: the agent's event, and for token_usage the tokens it added
	// since the previous one of the run (Delta), attributed to Event.Model.
	Event *agent.Event `json:"event,omitempty"`
	Delta agent.Usage  `json:"delta,omitempty"`

	// ActivityTurn: how the turn ended (turn_completed, turn_failed, ...).
	// ActivityRunFinished: the run's history status (succeeded, handed_off, stalled...).
	// ActivityRetry: the retry's trigger (failure, continuation, resume, stall).
	// ActivityHold: the hold's reason. ActivityPoll: ok or error.
	// ActivityReconcile: stop, cleanup or sweep_cleanup.
	// ActivityCheckpoint: armed, answered or resolved.
	Result   string        `json:"result,omitempty"`
	Duration time.Duration `json:"duration,omitempty"` // run, turn or poll duration
	Message  string        `json:"message,omitempty"`
	Attempt  int           `json:"attempt,omitempty"`
	CostUSD  float64       `json:"cost_usd,omitempty"`
	Model    string        `json:"model,omitempty"`
}

// ActivityKind names an Activity.
type ActivityKind string

// Activity kinds.
const (
	ActivityDispatch    ActivityKind = "dispatch"     // a worker started for an issue
	ActivityAgentEvent  ActivityKind = "agent_event"  // an agent event of a running session
	ActivityTurn        ActivityKind = "turn"         // a turn ended
	ActivityRunFinished ActivityKind = "run_finished" // a run ended and was recorded
	ActivityHandoff     ActivityKind = "handoff"      // Result: success or error
	ActivityReaction    ActivityKind = "reaction"     // a reaction run dispatched; Result: ci or review
	ActivitySelfReview  ActivityKind = "self_review"  // a run's self-review ended; Result: passed, cap_reached or error
	ActivityRetry       ActivityKind = "retry"        // a retry was scheduled
	ActivityHold        ActivityKind = "hold"         // an issue is held for a human
	ActivityPoll        ActivityKind = "poll"         // a poll of the tracker finished
	ActivityReconcile   ActivityKind = "reconcile"    // a worker stopped or a workspace cleaned by reconciliation
	ActivityReloadError ActivityKind = "reload_error" // a WORKFLOW.md edit was rejected
	ActivityCheckpoint  ActivityKind = "checkpoint"   // Result: armed, answered or resolved
)

// report hands a to Options.Activity. Callers are the loop and the workers; the
// function must be quick and must not call back into the Orchestrator.
func (o *Orchestrator) report(a Activity) {
	if o.opts.Activity == nil {
		return
	}
	if a.Time.IsZero() {
		a.Time = o.clk.Now()
	}
	o.opts.Activity(a)
}

// usageDelta is what cur adds to prev, never negative.
func usageDelta(prev, cur agent.Usage) agent.Usage {
	return agent.Usage{
		Input: max(cur.Input-prev.Input, 0), Output: max(cur.Output-prev.Output, 0),
		Total: max(cur.Total-prev.Total, 0), CacheRead: max(cur.CacheRead-prev.CacheRead, 0),
	}
}
