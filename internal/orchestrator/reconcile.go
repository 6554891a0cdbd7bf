package orchestrator

import (
	"context"
	"time"

	"sortie/internal/config"
	"sortie/internal/tracker"
)

// reconcile applies the tracker states of running issues: a terminal state stops the
// worker and cleans its workspace afterwards, a state that is neither active nor
// terminal stops it without cleanup, an active state is recorded. When the fetch
// failed, every worker keeps running.
func (o *Orchestrator) reconcile(cfg *config.Config, res tickResult) {
	if res.statesErr != nil {
		o.log.Warn("refreshing running issue states failed; workers keep running", "error", res.statesErr)
		return
	}
	o.reconcileLabels(cfg, res)
	for id, state := range res.states {
		e, ok := o.running[id]
		if !ok {
			continue
		}
		if moved := e.progress.agentMove(); moved != "" && tracker.StateIn(state, []string{moved}) {
			// The agent moved its own issue (tracker_api): it is finishing its work, so
			// its turn ends normally and the worker stops after it.
			e.issue.State = state
			if tracker.StateIn(state, cfg.Tracker.TerminalStates) {
				e.cleanup = true
			}
			continue
		}
		if e.reaction != nil && tracker.StateIn(state, []string{cfg.Tracker.HandoffState}) {
			// A reaction run takes its issue back from the hand-off state: until its
			// worker has moved it (or while a poll read before the move is applied),
			// the hand-off state is where it starts, not a human taking it away.
			continue
		}
		if e.progress.snapshot().finishing {
			// Its turns are over and the state change is most likely its own handoff;
			// its exit decides what happens next. A terminal state still gets cleanup.
			if tracker.StateIn(state, cfg.Tracker.TerminalStates) {
				e.cleanup = true
			}
			continue
		}
		switch {
		case tracker.StateIn(state, cfg.Tracker.TerminalStates):
			e.issue.State = state
			if e.stop == stopNone || e.stop == stopInactive {
				o.log.Info("issue reached a terminal state: stopping its agent", "issue_identifier", e.issue.Identifier, "state", state)
				e.cleanup = true
				o.stopWorker(e, stopTerminal)
			}
		case isActive(cfg, state):
			e.issue.State = state
			e.progress.mu.Lock()
			e.progress.state = "" // the poll is newer than the worker's own move
			e.progress.mu.Unlock()
		default:
			e.issue.State = state
			if e.stop == stopNone {
				o.log.Info("issue left the active states: stopping its agent", "issue_identifier", e.issue.Identifier, "state", state)
				o.stopWorker(e, stopInactive)
			}
		}
	}
}

// reconcileLabels stops, without cleanup, the agents of running issues that lost one of
// tracker.required_labels: the poll's candidate list shows them still active but no
// longer routable (Symphony's rule). Issues absent from the list are reconcile's.
func (o *Orchestrator) reconcileLabels(cfg *config.Config, res tickResult) {
	if len(cfg.Tracker.RequiredLabels) == 0 || res.candidatesErr != nil {
		return
	}
	for _, is := range res.candidates {
		e, ok := o.running[is.ID]
		if !ok || e.stop != stopNone || e.progress.snapshot().finishing {
			continue
		}
		if label, missing := missingLabel(cfg.Tracker.RequiredLabels, is.Labels); missing {
			o.log.Info("issue lost a required label: stopping its agent", "issue_identifier", is.Identifier, "label", label)
			o.stopWorker(e, stopInactive)
		}
	}
}

func (o *Orchestrator) stopWorker(e *runningEntry, why stopReason) {
	e.stop = why
	e.cancel()
	if why == stopTerminal || why == stopInactive {
		o.report(Activity{Kind: ActivityReconcile, IssueID: e.issue.ID, Identifier: e.issue.Identifier,
			Result: "stop", Message: string(why)})
	}
}

// checkStalls stops workers whose agent has been silent for longer than
// agent.stall_timeout_ms (≤0 disables). Their exit schedules a backoff retry.
func (o *Orchestrator) checkStalls() {
	cfg := o.opts.Config()
	timeout := cfg.Agent.StallTimeout
	if timeout <= 0 {
		return
	}
	now := o.clk.Now()
	for _, e := range o.running {
		if e.stop != stopNone {
			continue
		}
		last := e.progress.lastEventTime()
		if last.IsZero() {
			last = e.startedAt
		}
		if now.Sub(last) > timeout {
			o.log.Warn("agent stalled: no event within agent.stall_timeout_ms; stopping it",
				"issue_identifier", e.issue.Identifier, "silent_for", now.Sub(last).String())
			o.stopWorker(e, stopStall)
		}
	}
}

// liftAnsweredHolds lifts holds whose issue a human changed in the tracker (state or
// update time) and forgets holds whose issue is no longer a candidate (it left the
// active states: when it comes back, it is dispatched afresh, its workflow sessions
// ended). A change Sortie made
// itself, such as its own comment on the run that caused the hold, becomes the hold's
// new baseline instead (tracker.OwnWrites).
func (o *Orchestrator) liftAnsweredHolds(ctx context.Context, candidates []tracker.Issue) {
	if len(o.holds) == 0 {
		return
	}
	seen := make(map[string]tracker.Issue, len(candidates))
	for _, is := range candidates {
		seen[is.ID] = is
	}
	for id, h := range o.holds {
		is, ok := seen[id]
		switch {
		case h.reason == holdRemote:
			// Only reaching the SSH host and stopping the agent there lifts it (remote.go).
		case !ok:
			o.liftHold(id, "issue left the active states")
			o.endWorkflows(ctx, id, h.identifier, "left the active states")
		case h.reason == holdAwaiting:
			// Only an answer lifts it (checkpoints.go); the checkpoint's own comment
			// updates the issue.
		case is.State == h.state && is.UpdatedAt == h.updatedAt:
		case olderThan(is.UpdatedAt, h.updatedAt):
			// The poll read the issue before the change the hold already counts.
		default:
			switch o.own.Explains(id, is.State, is.UpdatedAt) {
			case tracker.OwnPending:
				// Sortie is changing the issue itself; the next poll decides.
			case tracker.OwnWrite:
				h.state, h.updatedAt = is.State, is.UpdatedAt
				o.persistHold(h)
			default:
				if is.State != h.state {
					o.liftHold(id, "issue state changed to "+is.State)
				} else {
					o.liftHold(id, "issue was updated")
				}
			}
		}
	}
}

// olderThan reports whether updated_at a is before b, both RFC 3339; false when
// either does not parse.
func olderThan(a, b string) bool {
	ta, errA := time.Parse(time.RFC3339Nano, a)
	tb, errB := time.Parse(time.RFC3339Nano, b)
	return errA == nil && errB == nil && ta.Before(tb)
}

// forgetOwnWrites drops the ledger of Sortie's own writes for issues no longer
// running, retrying or held.
func (o *Orchestrator) forgetOwnWrites() {
	o.own.Forget(func(id string) bool {
		_, r := o.running[id]
		_, q := o.retrying[id]
		_, h := o.holds[id]
		return r || q || h
	})
}

// refreshBudgets loads, for the current candidates, the finished-session counts and
// token spend that agent.max_sessions and agent.max_tokens are checked against. On a
// store error the previous figures are kept.
func (o *Orchestrator) refreshBudgets(ctx context.Context, cfg *config.Config) {
	ids := make([]string, 0, len(o.candidates))
	for _, is := range o.candidates {
		ids = append(ids, is.ID)
	}
	o.loadBudgets(ctx, cfg, ids)
}

// loadBudgets loads the finished-session counts and token spend of ids from the store.
// On a store error the previous figures are kept.
func (o *Orchestrator) loadBudgets(ctx context.Context, cfg *config.Config, ids []string) {
	if cfg.Agent.MaxSessions <= 0 && !hasSpendBudget(cfg) {
		return
	}
	if len(ids) == 0 {
		return
	}
	if cfg.Agent.MaxSessions > 0 {
		counts, err := o.opts.Store.CountRuns(ctx, ids)
		if err != nil {
			o.log.Warn("counting sessions for agent.max_sessions failed; using the previous counts", "error", err)
		} else {
			for _, id := range ids {
				o.sessions[id] = counts[id]
			}
		}
	}
	if hasSpendBudget(cfg) {
		totals, err := o.opts.Store.IssueTotals(ctx, ids)
		if err != nil {
			o.log.Warn("reading the issues' spend for agent.max_tokens and agent.max_cost_usd failed; using the previous figures", "error", err)
		} else {
			for _, id := range ids {
				o.spent[id] = spend{tokens: totals[id].Tokens, reportedUSD: totals[id].CostUSD}
			}
		}
	}
}

// overBudget returns whether issue id has used up agent.max_sessions, agent.max_tokens
// or agent.max_cost_usd.
func (o *Orchestrator) overBudget(cfg *config.Config, id string) bool {
	if cfg.Agent.MaxSessions > 0 && o.sessions[id] >= cfg.Agent.MaxSessions {
		return true
	}
	return o.spent[id].exceeded(cfg) != ""
}

// AgentMoving records that the agent running issueID is moving it to state itself,
// through tracker_api or linear_graphql: reconciliation then lets the agent finish its
// turn rather than stopping it for its own change. The worker still stops after that
// turn, since the issue left the active states. Call it before the move is sent (a
// poll may see the move at once), then call what it returns with whether the tracker
// made the move: a move not made puts back the record held before. It is safe to call
// from any goroutine: the record is the run's (its progress), found through the state
// the loop published, so a next run of the issue starts afresh.
func (o *Orchestrator) AgentMoving(issueID, state string) (settle func(moved bool)) {
	var p *progress
	if v := o.published.Load(); v != nil {
		for _, r := range v.running {
			if r.IssueID == issueID {
				p = r.progress
				break
			}
		}
	}
	if p == nil {
		return func(bool) {} // no run of the issue here: nothing to let finish
	}
	p.mu.Lock()
	prev := p.movedTo
	p.movedTo = state
	p.mu.Unlock()
	return func(moved bool) {
		if moved {
			return
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.movedTo == state { // else a later move is recorded: it settles itself
			p.movedTo = prev
		}
	}
}
