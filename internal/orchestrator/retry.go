package orchestrator

import (
	"context"
	"time"

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
	o.log.Info("retry scheduled", "issue_identifier", r.identifier, "kind", r.kind, "attempt", r.attempt,
		"in", delay.String(), "reason", r.reason)
	o.report(Activity{Kind: ActivityRetry, IssueID: r.issueID, Identifier: r.identifier, Result: r.kind,
		Attempt: r.attempt, Message: r.reason, Duration: delay})
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
	go func() {
		is, err := o.opts.Tracker.FetchIssueByID(ctx, f.issueID)
		select {
		case o.retryFetch <- retryFetched{issueID: f.issueID, gen: f.gen, issue: is, err: err}:
		case <-ctx.Done():
		}
	}()
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
			return
		}
		next := *e
		next.attempt++
		next.reason = "fetching the issue for its retry failed: " + f.err.Error()
		o.scheduleRetry(ctx, next, BackoffDelay(next.attempt, maxBackoff))
		return
	}
	is := f.issue
	// The retry itself claims the issue; judge eligibility without it.
	delete(o.retrying, f.issueID)
	why := o.eligible(cfg, is)
	o.retrying[f.issueID] = e
	if why != "" {
		o.log.Info("retry released: issue not eligible", "issue_identifier", e.identifier, "why", why)
		o.releaseRetry(ctx, f.issueID)
		return
	}
	if o.overBudget(cfg, is.ID) {
		o.log.Info("retry released: issue has used its budget", "issue_identifier", e.identifier)
		o.releaseRetry(ctx, f.issueID)
		return
	}
	if o.globalSlots(cfg) <= 0 || o.stateSlots(cfg, is.State) <= 0 {
		next := *e
		next.attempt++
		next.reason = "no free agent slot"
		o.scheduleRetry(ctx, next, BackoffDelay(next.attempt, maxBackoff))
		return
	}
	host, ok := o.pickHost(cfg, e.host)
	if !ok {
		next := *e
		next.reason = "no SSH host with a free slot"
		o.scheduleRetry(ctx, next, BackoffDelay(next.attempt+1, maxBackoff))
		return
	}
	attempt, failures, session := e.attempt, e.failures, e.sessionID
	o.releaseRetry(ctx, f.issueID)
	o.startWorker(ctx, cfg, is, attempt, failures, session, host)
}
