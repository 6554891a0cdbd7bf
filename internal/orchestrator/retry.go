package orchestrator

import (
	"context"
	"time"

	"sortie/internal/config"
	"sortie/internal/store"
	"sortie/internal/tracker"
)

// Retry kinds.
const (
	retryContinuation = string(store.RetryContinuation) // clean exit, issue still active: new session soon
	retryFailure      = string(store.RetryFailure)      // error or stall: exponential backoff
	retryResume       = string(store.RetryResume)       // interrupted by a shutdown or crash: resume at once
)

type retryFire struct {
	issueID string
	gen     uint64
}

type retryFetched struct {
	issueID string
	gen     uint64
	issue   tracker.Issue
	err     error
}

// scheduleRetry (re)places the retry of an issue, persists it, and arms its timer. The
// issue stays claimed until the retry dispatches or is released.
func (o *Orchestrator) scheduleRetry(ctx context.Context, r retryEntry, delay time.Duration) {
	o.armRetry(ctx, r, delay)
	o.log.Info("retry scheduled", "issue_identifier", r.identifier, "kind", r.kind, "attempt", r.attempt,
		"in", delay.String(), "reason", r.reason)
	o.report(Activity{Kind: ActivityRetry, IssueID: r.issueID, Identifier: r.identifier, Result: r.kind,
		Attempt: r.attempt, Message: r.reason, Duration: delay})
}

// armRetry is scheduleRetry without the log line and the activity report: for a retry
// that is re-armed, not a new one.
func (o *Orchestrator) armRetry(ctx context.Context, r retryEntry, delay time.Duration) {
	if old, ok := o.retrying[r.issueID]; ok && old.timer != nil {
		old.timer.Stop()
	}
	if delay < 0 {
		delay = 0
	}
	o.retryGen++
	r.gen = o.retryGen
	r.dueAt = o.clk.Now().Add(delay)
	e := &r
	o.retrying[r.issueID] = e
	if err := o.opts.Store.SaveRetry(ctx, store.Retry{
		// The store numbers attempts from 1 (the run the retry will start), the loop
		// from 0 (the prompt's `attempt`, 0 on a first dispatch).
		IssueID: r.issueID, Identifier: r.identifier, Attempt: r.attempt + 1, DueAt: r.dueAt,
		Error: r.reason, SessionID: r.sessionID, Kind: store.RetryKind(r.kind), SSHHost: r.host,
	}); err != nil {
		o.log.Error("persisting retry failed; it will not survive a restart", "issue_identifier", r.identifier, "error", err)
	}
	id, gen := r.issueID, r.gen
	e.timer = o.clk.AfterFunc(delay, func() {
		select {
		case o.retryFire <- retryFire{issueID: id, gen: gen}:
		case <-ctx.Done():
		}
	})
}

// releaseRetry forgets an issue's retry, in memory and in the store.
func (o *Orchestrator) releaseRetry(ctx context.Context, id string) {
	e, ok := o.retrying[id]
	if !ok {
		return
	}
	if e.timer != nil {
		e.timer.Stop()
	}
	delete(o.retrying, id)
	if err := o.opts.Store.DeleteRetry(ctx, id); err != nil {
		o.log.Warn("deleting persisted retry failed", "issue_id", id, "error", err)
	}
	o.unclaim(ctx, id)
}

// handleRetryFire re-validates a due retry by fetching its issue in the background.
func (o *Orchestrator) handleRetryFire(ctx context.Context, f retryFire) {
	e, ok := o.retrying[f.issueID]
	if !ok || e.gen != f.gen || e.fetching || o.draining {
		return // stale timer: the retry was replaced or released
	}
	if _, running := o.running[f.issueID]; running {
		o.scheduleRetry(ctx, *e, ContinuationDelay)
		return
	}
	e.fetching = true
	o.fetches.Go(func() {
		is, err := o.opts.Tracker.FetchIssueByID(ctx, f.issueID)
		select {
		case o.retryFetch <- retryFetched{issueID: f.issueID, gen: f.gen, issue: is, err: err}:
		case <-ctx.Done():
		}
	})
}

// handleRetryFetched dispatches a retry whose issue is still eligible, releases it when
// the issue is gone, finished or over budget, and reschedules it when no slot is free.
func (o *Orchestrator) handleRetryFetched(ctx context.Context, f retryFetched) {
	e, ok := o.retrying[f.issueID]
	if !ok || e.gen != f.gen {
		return
	}
	e.fetching = false
	cfg := o.opts.Config()
	maxBackoff := cfg.Agent.MaxRetryBackoff
	if f.err != nil {
		if tracker.KindOf(f.err) == tracker.ErrNotFound {
			o.log.Info("retry released: issue no longer exists", "issue_identifier", e.identifier)
			o.releaseRetry(ctx, f.issueID)
			o.endWorkflows(ctx, f.issueID, e.identifier, "deleted")
			return
		}
		next := *e
		next.attempt++
		next.slotWait = false
		next.reason = "fetching the issue for its retry failed: " + f.err.Error()
		o.scheduleRetry(ctx, next, BackoffDelay(next.attempt, maxBackoff))
		return
	}
	o.dispatchRetry(ctx, cfg, e, f.issue)
}

// dispatchRetry starts the worker of a due retry whose issue is is (just fetched, or as
// the last poll saw it), releases the retry when the issue is no longer eligible or has
// used its budget, and keeps it waiting when no slot is free.
func (o *Orchestrator) dispatchRetry(ctx context.Context, cfg *config.Config, e *retryEntry, is tracker.Issue) {
	if why := o.eligibleForRetry(cfg, e, is); why != "" {
		o.log.Info("retry released: issue not eligible", "issue_identifier", e.identifier, "why", why)
		o.releaseRetry(ctx, e.issueID)
		if why == whyNotActive || why == whyTerminal {
			o.endWorkflows(ctx, e.issueID, e.identifier, "left the active states")
		}
		return
	}
	if o.overBudget(cfg, is.ID) {
		o.log.Info("retry released: issue has used its budget", "issue_identifier", e.identifier)
		o.releaseRetry(ctx, e.issueID)
		return
	}
	if o.globalSlots(cfg) <= 0 || o.stateSlots(cfg, is.State) <= 0 {
		o.waitForSlot(ctx, cfg, e, is, "waiting for a free agent slot")
		return
	}
	host, ok := o.pickHost(cfg, e.host)
	if !ok {
		o.waitForSlot(ctx, cfg, e, is, "waiting for an SSH host with a free slot")
		return
	}
	switch c := o.claim(ctx, cfg, is.ID, is.Identifier, is.State); {
	case c.Full || c.StateFull:
		o.waitForSlot(ctx, cfg, e, is, "waiting for a free agent slot in the cluster: "+c.Why)
		return
	case !c.OK:
		o.log.Info("retry released: the issue is not this daemon's to run", "issue_identifier", e.identifier, "why", c.Why)
		o.releaseRetry(ctx, e.issueID)
		return
	}
	// The worker first, then the retry goes: the issue stays claimed throughout.
	o.startWorker(ctx, cfg, is, e.attempt, e.failures, e.sessionID, host)
	o.releaseRetry(ctx, e.issueID)
}

// eligibleForRetry is eligible for the issue of retry e, which itself claims it.
func (o *Orchestrator) eligibleForRetry(cfg *config.Config, e *retryEntry, is tracker.Issue) string {
	delete(o.retrying, e.issueID)
	defer func() { o.retrying[e.issueID] = e }()
	return o.eligible(cfg, is)
}

// waitForSlot keeps a due retry that found no free slot (why says which) waiting for
// one. Waiting is not an attempt: the attempt number, and with it the prompt's
// `attempt`, the run's attempt and the next failure backoff, stay as they were (the
// reference systems count each wait as an attempt, which inflates all three and pushes
// the retry back by up to agent.max_retry_backoff_ms). A waiting retry starts at the
// first free slot, in dispatch order among the candidates (dispatch), and re-reads its
// issue every polling interval meanwhile, which releases it if the issue moved on.
func (o *Orchestrator) waitForSlot(ctx context.Context, cfg *config.Config, e *retryEntry, is tracker.Issue, why string) {
	next := *e
	next.reason, next.slotWait, next.issue = why, true, is
	if e.slotWait {
		o.log.Debug("retry still waiting for a slot", "issue_identifier", e.identifier, "attempt", e.attempt, "why", why)
	} else {
		o.log.Info("retry due but no slot is free; waiting for one", "issue_identifier", e.identifier, "attempt", e.attempt, "why", why)
	}
	o.armRetry(ctx, next, cfg.Polling.Interval)
}

// startWaitingRetry starts, from dispatch, a retry waiting for a slot when one is free
// for it: is is its issue as the last poll saw it, fresher than the retry's own copy.
// Without a slot it does nothing: the retry's timer is not pushed back.
func (o *Orchestrator) startWaitingRetry(ctx context.Context, cfg *config.Config, e *retryEntry, is tracker.Issue) {
	if !e.slotWait || e.fetching || o.stateSlots(cfg, is.State) <= 0 {
		return
	}
	if _, ok := o.pickHost(cfg, e.host); !ok {
		return
	}
	o.dispatchRetry(ctx, cfg, e, is)
}
