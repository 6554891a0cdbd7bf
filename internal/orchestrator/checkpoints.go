package orchestrator

import (
	"context"

	"sortie/internal/config"
	"sortie/internal/store"
	"sortie/internal/tracker"
)

// Structured-workflow checkpoints (docs/workflows.md, "Checkpoints and humans"). What a
// checkpoint is, who may answer it and how, its comment, its auto-advance and the
// hand-off gate are the checkpoint component's (internal/workflow/checkpoint, given as
// Options.Checkpoints); the orchestrator holds and resumes. When an agent's turn ends
// with a checkpoint still unanswered, the worker stops and the issue is held as
// awaiting_input: the tracker gets the component's comment, the notification backends
// an alert, and the dashboard shows the question. When the component says the issue
// was answered (Checkpoints.Answered), the loop lifts the hold and resumes the agent's
// session with a prompt that names the answer (Checkpoints.AnswerNote).

// Checkpoints is the daemon's checkpoint component as the orchestrator uses it
// (*checkpoint.Desk of internal/workflow/checkpoint satisfies it). It is defined here,
// in store types and plain values, so that the orchestrator does not depend on the
// workflow engine. Its methods are safe from any goroutine.
type Checkpoints interface {
	// Pending lists every pending checkpoint, oldest first: a snapshot's.
	Pending() []store.CheckpointView
	// Awaiting returns the oldest pending checkpoint of the issue no one answered.
	Awaiting(issueID string) (store.Checkpoint, bool)
	// Answered has a value when NextAnswered may have an answered issue; the loop
	// selects on it. Answering never blocks on the loop.
	Answered() <-chan struct{}
	// NextAnswered takes the oldest issue answered since the loop last took it.
	NextAnswered() (issueID string, ok bool)
	// ReadAnswers reads the tracker comments of issues held awaiting an answer (some of
	// awaiting per call) for "/sortie choose" answers. It makes tracker requests (trk:
	// the tracker in force): the tick goroutine calls it.
	ReadAnswers(ctx context.Context, trk tracker.Tracker, awaiting []string)
	// Question is the hold message of an issue held at cp.
	Question(cp store.Checkpoint) string
	// Comment is the tracker comment that asks a human to answer cp.
	Comment(cp store.Checkpoint, identifier string) string
	// CommentsAnswer reports whether a tracker comment can answer a checkpoint under
	// the configuration in force.
	CommentsAnswer() bool
	// AnswerNote is what a resumed agent is told of the answers to its checkpoints.
	AnswerNote(ctx context.Context, issueID string) string
	// WorkflowHint adds the workflow to run (workflows.workflow) to a run's first
	// prompt when the run is served the workflow tools (host: its SSH host).
	WorkflowHint(workflow, host, rendered string) string
	// HandoffRefusal says why the issue may not be handed to humans now, "" when it
	// may (workflow: workflows.workflow of the run; how: what would hand it off).
	HandoffRefusal(ctx context.Context, issueID, identifier string, runID int64, workflow, host, how string) string
	// EndIssue ends the issue's workflow sessions and drops its pending checkpoints.
	EndIssue(ctx context.Context, issueID, identifier, why string)
	// Recover loads the pending checkpoints at start-up.
	Recover(ctx context.Context) error
	// ReadShared reads a cluster's shared pending checkpoints (off the loop) and
	// returns the function that syncs them in (on the loop).
	ReadShared(ctx context.Context) (apply func(), err error)
}

// CheckpointView is a pending checkpoint in a Snapshot.
type CheckpointView = store.CheckpointView

// holdAwaiting is the hold reason of an issue whose checkpoint waits for a human.
const holdAwaiting = "awaiting_input"

// holdCheckpointSkipped is the hold reason of an issue whose run would have handed it
// to humans while a blocking checkpoint on its workflow's path had no human answer.
const holdCheckpointSkipped = "checkpoint_skipped"

// pendingViews lists every pending checkpoint for a snapshot, oldest first; never nil.
func (o *Orchestrator) pendingViews() []CheckpointView {
	if o.opts.Checkpoints == nil {
		return []CheckpointView{}
	}
	return o.opts.Checkpoints.Pending()
}

// commentsAnswer reports whether a tracker comment can answer a checkpoint, for the
// alert of an issue held at one.
func (o *Orchestrator) commentsAnswer() bool {
	return o.opts.Checkpoints != nil && o.opts.Checkpoints.CommentsAnswer()
}

// endWorkflows ends the workflow sessions of an issue that left the active states or
// was handed off (why says which): Checkpoints.EndIssue.
func (o *Orchestrator) endWorkflows(ctx context.Context, issueID, identifier, why string) {
	if o.opts.Checkpoints != nil {
		o.opts.Checkpoints.EndIssue(ctx, issueID, identifier, why)
	}
}

// endWorkflowsAfterExit ends the workflow sessions of an issue whose run handed it off,
// or ended with it out of the active states, and which nothing claims any more.
func (o *Orchestrator) endWorkflowsAfterExit(ctx context.Context, cfg *config.Config, e *runningEntry, ex workerExit) {
	_, retrying := o.retrying[ex.issueID]
	_, held := o.holds[ex.issueID]
	if retrying || held {
		return
	}
	left := ex.lastState != "" && (!isActive(cfg, ex.lastState) || tracker.StateIn(ex.lastState, cfg.Tracker.TerminalStates))
	switch {
	case ex.handedOff:
		o.endWorkflows(ctx, ex.issueID, e.issue.Identifier, "handed off")
	case e.stop == stopTerminal || e.stop == stopInactive:
		o.endWorkflows(ctx, ex.issueID, e.issue.Identifier, "left the active states")
	case (ex.outcome == outcomeNormal || ex.outcome == outcomeSkipped) && left:
		o.endWorkflows(ctx, ex.issueID, e.issue.Identifier, "left the active states")
	}
}

// checkpointAnswered runs on the loop after an answer: a held issue is resumed at once.
// A running issue's worker sees the answer after its turn; an issue whose worker is
// just exiting is resumed by handleExit, which re-checks the answer.
func (o *Orchestrator) checkpointAnswered(ctx context.Context, issueID string) {
	h, ok := o.holds[issueID]
	if !ok || h.reason != holdAwaiting {
		return
	}
	if _, still := o.awaitingCheckpoint(issueID); still {
		return // another checkpoint of the issue still waits
	}
	o.liftHold(issueID, "checkpoint answered")
	o.resumeAfterAnswer(ctx, issueID, h.identifier)
}

// resumeAfterAnswer schedules the continuation that resumes the agent's session.
func (o *Orchestrator) resumeAfterAnswer(ctx context.Context, issueID, identifier string) {
	r := retryEntry{issueID: issueID, identifier: identifier, kind: retryContinuation, reason: "checkpoint answered"}
	if runs, err := o.opts.Store.RunsForIssue(ctx, issueID, 1); err == nil && len(runs) > 0 {
		r.attempt, r.sessionID, r.host = runs[0].Attempt, runs[0].SessionID, runs[0].SSHHost
	}
	o.scheduleRetry(ctx, r, 0)
}

// awaitingCheckpoint returns the first pending checkpoint of the issue no one has
// answered: the reason to end the run after a turn.
func (o *Orchestrator) awaitingCheckpoint(issueID string) (store.Checkpoint, bool) {
	if o.opts.Checkpoints == nil {
		return store.Checkpoint{}, false
	}
	return o.opts.Checkpoints.Awaiting(issueID)
}

// holdForCheckpoint parks an issue whose run ended on an unanswered checkpoint, or
// resumes it at once when the answer arrived while the run was ending.
func (o *Orchestrator) holdForCheckpoint(ctx context.Context, is tracker.Issue, ex workerExit, cp store.Checkpoint) {
	if _, still := o.awaitingCheckpoint(is.ID); !still {
		o.resumeAfterAnswer(ctx, is.ID, is.Identifier)
		return
	}
	o.addHold(is, ex, holdAwaiting, o.opts.Checkpoints.Question(cp))
	o.comment(is, "checkpoint", o.opts.Checkpoints.Comment(cp, is.Identifier))
}

// awaitingIssues lists the issues held at a checkpoint, whose tracker comments the
// tick reads for answers (Checkpoints.ReadAnswers picks those it reads). Loop only.
func (o *Orchestrator) awaitingIssues() []string {
	if o.opts.Checkpoints == nil {
		return nil
	}
	var ids []string
	for id, h := range o.holds {
		if h.reason == holdAwaiting {
			ids = append(ids, id)
		}
	}
	return ids
}

// answerNote tells a resumed agent the answers to its pending checkpoints, and its
// newest session token; "" when there is nothing to say.
func (o *Orchestrator) answerNote(ctx context.Context, issueID string) string {
	if o.opts.Checkpoints == nil {
		return ""
	}
	return o.opts.Checkpoints.AnswerNote(ctx, issueID)
}

// workflowHint adds to a run's first prompt the workflow workflows.workflow names, when
// the workflow tools are served to the run.
func (o *Orchestrator) workflowHint(cfg *config.Config, host, rendered string) string {
	if o.opts.Checkpoints == nil {
		return rendered
	}
	return o.opts.Checkpoints.WorkflowHint(cfg.Workflows.Workflow, host, rendered)
}

// refuseHandoff runs the hand-off gate on a run that is about to hand its issue to
// humans: a transition to tracker.handoff_state, or needs-human-review. It reports
// whether the hand-off was refused (ex.handoffRefused says why).
func (w *worker) refuseHandoff(ctx context.Context, ex *workerExit) bool {
	cfg := w.cfg
	if w.o.opts.Checkpoints == nil || ex.softStop == "blocked" || ex.budgetStop != "" || ex.awaiting != nil {
		return false
	}
	moving := cfg.Tracker.HandoffState != "" && isActive(cfg, ex.lastState) && !tracker.StateIn(ex.lastState, cfg.Tracker.TerminalStates)
	if !moving && ex.softStop != "needs-human-review" {
		return false
	}
	how := "the run ended with needs-human-review"
	if moving {
		how = "the run ended and would move the issue to " + cfg.Tracker.HandoffState
	}
	ex.handoffRefused = w.o.opts.Checkpoints.HandoffRefusal(ctx, w.issue.ID, w.issue.Identifier, w.runID, cfg.Workflows.Workflow, w.e.host, how)
	return ex.handoffRefused != ""
}

// holdHandoffRefused holds an issue whose hand-off was refused, for a human.
func (o *Orchestrator) holdHandoffRefused(is tracker.Issue, ex workerExit) {
	o.addHold(is, ex, holdCheckpointSkipped, ex.handoffRefused)
}
