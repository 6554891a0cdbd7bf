package orchestrator

import (
	"context"
	"errors"
	"fmt"

	"sortie/internal/agent"
	"sortie/internal/config"
	"sortie/internal/tracker"
	"sortie/internal/workspace"
)

// handleExit is where a finished worker's issue goes next: released, retried, held for
// a human, or (when its issue became terminal) its workspace cleaned.
func (o *Orchestrator) handleExit(ctx context.Context, ex workerExit) {
	e := ex.entry
	if cur, ok := o.running[ex.issueID]; !ok || cur != e {
		o.log.Error("exit from an unknown worker ignored", "issue_id", ex.issueID)
		return
	}
	delete(o.running, ex.issueID)
	if e.host != "" {
		o.hostLoad[e.host]--
	}
	cfg := o.opts.Config()
	if ex.outcome != outcomeSkipped {
		o.totals.add(ex.usage, ex.costUSD)
		o.totals.SecondsRunning += o.clk.Now().Sub(e.startedAt).Seconds()
		p := e.progress.snapshot()
		o.totals.ToolCalls += int64(p.toolCalls)
		o.totals.APIRequests += int64(p.apiRequests)
		// Not ++: a poll during the run has already counted its row (CountRuns counts
		// running runs), and counting it twice would end the issue's sessions early.
		o.sessions[ex.issueID] = e.sessionsBefore + 1
		o.spent[ex.issueID] = e.spentBefore.add(ex.usage, ex.costUSD)
	}
	// The cached candidate copy of this issue is stale now (handed off, held, retrying):
	// dispatching from it before the next poll would only be wasted work.
	o.dropCandidate(ex.issueID)
	// A terminal state the worker saw itself after its last turn counts like one a poll
	// saw: no later poll will look at this issue again, so its workspace goes now.
	if ex.outcome == outcomeNormal && tracker.StateIn(ex.lastState, cfg.Tracker.TerminalStates) {
		e.cleanup = true
	}
	if e.cleanup && ex.workspace != "" {
		o.cleanWorkspace(cfg, e.issue, ex.workspace, "cleanup")
	}
	log := o.log.With("issue_identifier", e.issue.Identifier)
	retry := retryEntry{issueID: ex.issueID, identifier: e.issue.Identifier, host: e.host}

	o.watchHandOff(e, ex)
	switch ex.outcome {
	case outcomeSkipped:
		log.Info("not dispatched: the issue is no longer eligible", "state", ex.lastState)
		if e.reaction != nil && o.opts.Reactions != nil {
			// The issue left the hand-off state another way (a human moved it, or it
			// is finished): its pull request is no longer Sortie's to watch.
			o.opts.Reactions.Forget(ex.issueID, tracker.StateIn(ex.lastState, cfg.Tracker.TerminalStates))
		}
	case outcomeCancelled:
		switch e.stop {
		case stopStall:
			o.retryFailure(ctx, cfg, e, ex, retry, "stalled: no agent event within agent.stall_timeout_ms")
		case stopShutdown:
			if ex.notStarted && e.attempt == 0 && e.failures == 0 {
				// Nothing ran and nothing is owed: the next poll finds the issue as before.
				log.Info("not started: shutting down")
				break
			}
			retry.kind, retry.attempt, retry.sessionID = retryResume, e.attempt, ex.sessionID
			retry.failures = e.failures
			retry.reason = "interrupted by shutdown"
			o.scheduleRetry(ctx, retry, 0)
		case stopLeaseLost:
			log.Warn("agent stopped: the issue is another daemon's now")
		default:
			log.Info("agent stopped", "why", string(e.stop))
		}
	case outcomeFailed:
		kind := errorKind(ex.err)
		if retryable(ex.err) {
			log.Warn("run failed", "error", ex.err, "kind", kind)
			held := o.retryFailure(ctx, cfg, e, ex, retry, ex.err.Error())
			if cfg.Tracker.Comments.OnFailure {
				next := fmt.Sprintf("yes (attempt %d)", e.attempt+2)
				if held {
					next = "no — agent.max_retries reached; held for a human"
				}
				o.comment(e.issue, "failure", failureComment(ex.err, next))
			}
		} else {
			if cfg.Tracker.Comments.OnFailure {
				o.comment(e.issue, "failure", failureComment(ex.err, "no — not retryable; held for a human"))
			}
			log.Error("run failed with an error retrying cannot fix; holding the issue until it changes or the workflow is edited",
				"error", ex.err, "kind", kind)
			o.addHold(e.issue, ex, holdError, ex.err.Error())
		}
	case outcomeNormal:
		if cfg.Tracker.Comments.OnCompletion {
			next := ""
			switch {
			case ex.handedOff:
				next = "handed off to " + cfg.Tracker.HandoffState
			case ex.awaiting != nil:
				next = "waiting for a human's answer to checkpoint " + ex.awaiting.CheckpointID
			case ex.softStop == "" && ex.budgetStop == "" && isActive(cfg, ex.lastState) &&
				!tracker.StateIn(ex.lastState, cfg.Tracker.TerminalStates):
				next = "re-queuing"
			}
			o.comment(e.issue, "completion", completionComment(ex, o.clk.Now().Sub(e.startedAt), next))
		}
		switch {
		case ex.awaiting != nil:
			log.Info("agent stopped at a workflow checkpoint; waiting for a human's answer", "checkpoint", ex.awaiting.CheckpointID)
			o.holdForCheckpoint(ctx, e.issue, ex, *ex.awaiting)
		case ex.softStop == "blocked":
			log.Info("agent signalled blocked; waiting for a human")
			o.addHold(e.issue, ex, holdBlocked, "agent signalled blocked")
		case ex.budgetStop != "":
			log.Warn("issue budget used up; not dispatching it again until the budget is raised", "why", ex.budgetStop)
			o.alert(Alert{Event: "budget_exhausted", Severity: "warning", Issue: e.issue,
				Title:   e.issue.Identifier + " used up its budget; Sortie will not run it again until the budget is raised",
				Message: ex.budgetStop})
		case ex.handoffRefused != "":
			log.Warn("run finished; hand-off refused, holding the issue for a human", "why", ex.handoffRefused)
			o.holdHandoffRefused(e.issue, ex)
		case ex.handedOff:
			log.Info("run finished and handed off", "state", ex.lastState)
		case ex.softStop == "needs-human-review":
			// No handoff happened (none configured, it failed, or the issue was no longer
			// active). Retrying would redo finished work; a human decides.
			o.addHold(e.issue, ex, holdHumanReview, "agent signalled needs-human-review")
		case !isActive(cfg, ex.lastState) || tracker.StateIn(ex.lastState, cfg.Tracker.TerminalStates):
			log.Info("run finished; issue left the active states", "state", ex.lastState)
		default:
			retry.kind, retry.attempt, retry.sessionID = retryContinuation, e.attempt+1, ex.sessionID
			retry.reason = "issue still active after the session"
			o.scheduleRetry(ctx, retry, ContinuationDelay)
		}
	}
	o.endWorkflowsAfterExit(ctx, cfg, e, ex)
	o.unclaim(ctx, ex.issueID)
}

// retryFailure schedules a backoff retry after a failed run, or holds the issue when
// it has failed agent.max_retries times in a row: a permanently failing issue must not
// spend money forever.
// It reports whether the issue was held.
func (o *Orchestrator) retryFailure(ctx context.Context, cfg *config.Config, e *runningEntry, ex workerExit, retry retryEntry, reason string) (held bool) {
	failures := e.failures + 1
	if limit := cfg.Agent.MaxRetries; limit > 0 && failures > limit {
		o.log.Error("run failed; agent.max_retries consecutive failures reached, holding the issue for a human",
			"issue_identifier", e.issue.Identifier, "failures", failures, "error", reason)
		o.addHold(e.issue, ex, holdRetries, fmt.Sprintf("%d consecutive failed runs; last: %s", failures, reason))
		return true
	}
	retry.kind, retry.attempt, retry.failures, retry.reason = retryFailure, e.attempt+1, failures, reason
	o.scheduleRetry(ctx, retry, BackoffDelay(retry.attempt, cfg.Agent.MaxRetryBackoff))
	return false
}

// errorKind names the spec error kind of err, if it has one.
func errorKind(err error) string {
	var ce *workspace.ConfigError
	if errors.As(err, &ce) {
		return "config_error"
	}
	if k := agent.KindOf(err); k != "" {
		return string(k)
	}
	if k := tracker.KindOf(err); k != "" {
		return string(k)
	}
	return ""
}

// retryable classifies a worker error. Unclassified errors are retryable.
func retryable(err error) bool {
	var ce *workspace.ConfigError
	if errors.As(err, &ce) {
		return false
	}
	if k := agent.KindOf(err); k != "" {
		return k.Retryable()
	}
	if k := tracker.KindOf(err); k != "" {
		return k.Retryable()
	}
	return true
}

func (o *Orchestrator) addHold(is tracker.Issue, ex workerExit, reason, msg string) {
	state := ex.lastState
	if state == "" {
		state = is.State
	}
	h := &hold{issueID: is.ID, identifier: is.Identifier, reason: reason, message: msg,
		state: state, updatedAt: ex.updatedAt, since: o.clk.Now()}
	o.holds[is.ID] = h
	o.holdGen++
	o.persistHold(h)
	if reason == holdError || reason == holdRetries {
		// The baseline of a failed run is the issue as it was at dispatch.
		o.settleHold(is)
	}
	o.report(Activity{Kind: ActivityHold, IssueID: is.ID, Identifier: is.Identifier, Result: reason, Message: msg})
	o.alert(holdAlert(is, reason, msg, o.commentsAnswer()))
}

func (o *Orchestrator) liftHold(id, why string) {
	h, ok := o.holds[id]
	if !ok {
		return
	}
	delete(o.holds, id)
	o.holdGen++
	o.log.Info("hold lifted", "issue_identifier", h.identifier, "why", why)
	o.deleteHold(id)
	if c := o.opts.Cluster; c != nil {
		c.Changed(context.Background(), "hold")
	}
}

// cleanWorkspace removes the workspace at the path the run recorded (not one recomputed
// from a possibly changed config), in the background.
// action names it in the activity report: cleanup (a run's issue became terminal) or
// sweep_cleanup (the periodic sweep found one).
func (o *Orchestrator) cleanWorkspace(cfg *config.Config, is tracker.Issue, path, action string) {
	mgr, err := o.workspaces(cfg)
	if err != nil {
		o.log.Warn("cannot clean workspace", "path", path, "error", err)
		return
	}
	ad := o.adapters.Load()
	o.bg.Add(1)
	go func() {
		defer o.bg.Done()
		if err := mgr.Remove(context.Background(), path, workspace.Issue{ID: is.ID, Identifier: is.Identifier}); err != nil {
			o.log.Warn("removing workspace failed", "path", path, "error", err)
			return
		}
		o.log.Info("workspace removed: issue is terminal", "issue_identifier", is.Identifier, "path", path)
		if o.opts.Reactions != nil && is.ID != "" {
			o.opts.Reactions.Forget(is.ID, true)
		}
		o.report(Activity{Kind: ActivityReconcile, IssueID: is.ID, Identifier: is.Identifier, Result: action, Message: path})
		o.removeIssueState(cfg, ad, is, path)
	}()
}

// removeIssueState removes what the agent's CLI kept of a terminal issue between its
// sessions on this machine (agent.IssueStateRemover), once its workspace is gone. The
// sweep knows an issue by its identifier only; the ids come from its runs then. Runs
// on SSH hosts kept their state there, out of reach.
func (o *Orchestrator) removeIssueState(cfg *config.Config, ad *Adapters, is tracker.Issue, path string) {
	if ad == nil {
		return
	}
	remover, ok := ad.Agent.(agent.IssueStateRemover)
	if !ok {
		return
	}
	ids := map[string]bool{}
	if is.ID != "" {
		ids[is.ID] = true
	} else {
		runs, err := o.opts.Store.RunsForIdentifier(context.Background(), is.Identifier, 100)
		if err != nil {
			o.log.Warn("finding a terminal issue's runs to remove its agent state failed", "issue_identifier", is.Identifier, "error", err)
			return
		}
		for _, r := range runs {
			if r.SSHHost == "" && r.Workspace == path {
				ids[r.IssueID] = true
			}
		}
	}
	for id := range ids {
		env := agentEnvFor(cfg, o.opts.Environ, map[string]string{"SORTIE_ISSUE_ID": id, "SORTIE_WORKSPACE": path})
		if err := remover.RemoveIssueState(o.opts.RunAs.Env(env), path, o.opts.RunAs); err != nil {
			o.log.Warn("removing a terminal issue's agent state failed", "issue_identifier", is.Identifier, "error", err)
		}
	}
}

func (o *Orchestrator) dropCandidate(id string) {
	for _, is := range o.candidates {
		if is.ID == id {
			// Marked, not removed: removing shifts the rest of the list, a backlog's
			// worth of large structs, on every exit, which held the loop (and the API
			// waiting on it) for milliseconds. The next poll's list replaces it.
			if o.dropped == nil {
				o.dropped = map[string]bool{}
			}
			o.dropped[id] = true
			return
		}
	}
}
