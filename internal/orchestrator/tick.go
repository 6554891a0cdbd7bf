package orchestrator

import (
	"cmp"
	"context"
	"slices"
	"strconv"
	"strings"
	"time"

	"sortie/internal/config"
	"sortie/internal/tracker"
)

// tickResult is what the poller fetched for one tick. The loop applies it.
type tickResult struct {
	started       time.Time
	reloadErr     error
	states        map[string]string // running issue id → state (nil when the fetch failed)
	statesErr     error
	candidates    []tracker.Issue // in dispatch order
	candidatesErr error
	adopted       *adoption // in a cluster: what dead daemons left, taken over
}

// startTick starts one poll in the background, or marks that another is wanted when one
// is already in flight (requests coalesce into a single follow-up).
func (o *Orchestrator) startTick(ctx context.Context) {
	if o.draining {
		return
	}
	if o.tickBusy {
		o.tickAgain = true
		return
	}
	if o.pollTimer != nil {
		o.pollTimer.Stop()
		o.pollTimer = nil
	}
	o.tickBusy = true
	ids := make([]string, 0, len(o.running))
	for id := range o.running {
		ids = append(ids, id)
	}
	awaiting := o.awaitingIssues()
	holdGen := o.holdGen
	o.fetches.Go(func() {
		if len(awaiting) > 0 {
			o.opts.Checkpoints.ReadAnswers(ctx, o.opts.Tracker, awaiting)
		}
		res := tickResult{started: o.clk.Now()}
		if o.opts.Reload != nil {
			res.reloadErr = o.opts.Reload()
		}
		if o.opts.Cluster != nil {
			a := o.adopt(ctx, holdGen)
			res.adopted = &a
		}
		if len(ids) > 0 {
			res.states, res.statesErr = o.opts.Tracker.FetchIssueStatesByIDs(ctx, ids)
		}
		res.candidates, res.candidatesErr = o.opts.Tracker.FetchCandidateIssues(ctx)
		// Sorted here, off the loop: a backlog of thousands takes milliseconds, which the
		// loop would keep the API and the workers waiting for.
		res.candidates = SortForDispatch(res.candidates)
		select {
		case o.ticks <- res:
		case <-ctx.Done():
		}
	})
}

// applyTick reconciles running workers with the tracker, refreshes the candidate list,
// lifts holds the tracker has answered, dispatches, and schedules the next poll.
func (o *Orchestrator) applyTick(ctx context.Context, res tickResult) {
	o.tickBusy = false
	o.ticksDone++
	cfg := o.opts.Config()
	if o.ticksDone%sweepEvery == 0 {
		o.startSweep(ctx, cfg)
	}
	if res.reloadErr != nil {
		o.log.Warn("workflow reload rejected; keeping the last good configuration", "error", res.reloadErr)
		// Every poll re-reads a broken file; it counts as one error until it changes.
		if msg := res.reloadErr.Error(); msg != o.lastReloadErr {
			o.lastReloadErr = msg
			o.report(Activity{Kind: ActivityReloadError, Message: msg})
		}
	} else {
		o.lastReloadErr = ""
	}
	o.reconcile(cfg, res)
	if res.adopted != nil {
		o.applyAdoption(ctx, *res.adopted)
	}
	poll := Activity{Kind: ActivityPoll, Result: "ok", Duration: o.clk.Now().Sub(res.started)}
	if res.candidatesErr != nil {
		poll.Result, poll.Message = "error", res.candidatesErr.Error()
	}
	o.report(poll)
	if res.candidatesErr != nil {
		o.lastPollOK = false
		o.lastError = res.candidatesErr.Error()
		o.log.Warn("fetching candidate issues failed; will retry at the next poll", "error", res.candidatesErr)
	} else {
		o.lastPollOK = true
		o.lastPollAt = o.clk.Now()
		o.candidates = res.candidates // sorted by the poller (SortForDispatch)
		clear(o.dropped)
		o.liftAnsweredHolds(ctx, res.candidates)
		o.forgetOwnWrites()
		o.forgetBudgets()
		o.refreshBudgets(ctx, cfg)
	}
	o.retryRemoteStops(ctx)
	o.dispatch(ctx)
	if o.tickAgain {
		o.tickAgain = false
		o.startTick(ctx)
		return
	}
	o.schedulePoll(ctx, cfg)
}

func (o *Orchestrator) schedulePoll(ctx context.Context, cfg *config.Config) {
	if o.pollTimer != nil {
		o.pollTimer.Stop()
	}
	o.pollTimer = o.clk.AfterFunc(o.pollInterval(cfg), func() {
		select {
		case o.refresh <- struct{}{}:
		default:
		}
	})
}

// pollInterval is the time to the next poll: polling.interval_ms, or
// polling.webhook_interval_ms when that is longer and a webhook delivery arrived less
// than that long ago. Polling is then the safety net: should deliveries stop, the
// interval is back to polling.interval_ms from the first poll that finds the last
// delivery older than polling.webhook_interval_ms. The short interval stays after a
// failed poll (the delivery's poll may be the one that failed), without a webhook
// secret (a reload removed it), and in a cluster, whose other daemons read the list the
// polling daemon publishes every polling.interval_ms and count an older one as lost.
func (o *Orchestrator) pollInterval(cfg *config.Config) time.Duration {
	d, long := cfg.Polling.Interval, cfg.Polling.WebhookInterval
	at := o.webhookAt.Load()
	if at == 0 || long <= d || !o.lastPollOK || cfg.Tracker.WebhookSecret == "" || o.opts.Cluster != nil {
		return d
	}
	if o.clk.Now().Sub(time.Unix(0, at)) < long {
		return long
	}
	return d
}

// SortForDispatch orders issues for dispatch: priority ascending (none last), then
// oldest created_at (unknown last), then identifier. The input is not modified.
//
// It sorts positions, not the issues themselves: a stable sort moves elements many
// times, and an issue is a large struct, which made sorting a backlog of ten thousand
// the most expensive thing a poll did on the loop.
func SortForDispatch(issues []tracker.Issue) []tracker.Issue {
	order := make([]int32, len(issues))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortStableFunc(order, func(i, j int32) int { return compareForDispatch(&issues[i], &issues[j]) })
	out := make([]tracker.Issue, len(issues))
	for k, i := range order {
		out[k] = issues[i]
	}
	return out
}

// compareForDispatch compares two issues in SortForDispatch's order.
func compareForDispatch(a, b *tracker.Issue) int {
	switch {
	case a.Priority != nil && b.Priority == nil:
		return -1
	case a.Priority == nil && b.Priority != nil:
		return 1
	case a.Priority != nil && b.Priority != nil && *a.Priority != *b.Priority:
		return cmp.Compare(*a.Priority, *b.Priority)
	}
	switch {
	case a.CreatedAt != "" && b.CreatedAt == "":
		return -1
	case a.CreatedAt == "" && b.CreatedAt != "":
		return 1
	case a.CreatedAt != b.CreatedAt:
		return strings.Compare(a.CreatedAt, b.CreatedAt)
	}
	return strings.Compare(a.Identifier, b.Identifier)
}

// Ineligibility reasons, shown by --dry-run and the status API.
const (
	whyMissingFields = "missing id, identifier, title or state"
	whyNotActive     = "state is not active"
	whyTerminal      = "state is terminal"
	whyRunning       = "already running"
	whyRetrying      = "waiting for a retry"
	whyHeld          = "held for a human"
	whyBlocked       = "blocked by "
	whyMissingLabel  = "missing required label "
)

// eligible returns "" when issue may be dispatched now (slots aside), else why not.
func (o *Orchestrator) eligible(cfg *config.Config, is tracker.Issue) string {
	if is.ID == "" || is.Identifier == "" || is.Title == "" || is.State == "" {
		return whyMissingFields
	}
	if tracker.StateIn(is.State, cfg.Tracker.TerminalStates) {
		return whyTerminal
	}
	if !isActive(cfg, is.State) {
		return whyNotActive
	}
	if label, ok := missingLabel(cfg.Tracker.RequiredLabels, is.Labels); ok {
		return whyMissingLabel + strconv.Quote(label)
	}
	if _, ok := o.running[is.ID]; ok {
		return whyRunning
	}
	if _, ok := o.retrying[is.ID]; ok {
		return whyRetrying
	}
	if h, ok := o.holds[is.ID]; ok {
		return whyHeld + " (" + h.reason + ")"
	}
	return blockedBy(cfg, is)
}

// missingLabel returns the first of required (tracker.required_labels, lower-cased and
// trimmed) that labels lacks. Labels compare case- and whitespace-insensitively, and a
// blank required label matches no label (Symphony's rule).
func missingLabel(required, labels []string) (string, bool) {
	for _, want := range required {
		found := want != "" && slices.ContainsFunc(labels, func(l string) bool {
			return strings.EqualFold(strings.TrimSpace(l), want)
		})
		if !found {
			return want, true
		}
	}
	return "", false
}

// blockedBy returns "" when no blocker is unfinished or the issue's state does not
// wait for blockers (tracker.blocked_states), else the reason naming them.
func blockedBy(cfg *config.Config, is tracker.Issue) string {
	if bs := cfg.Tracker.BlockedStates; bs != nil && !tracker.StateIn(is.State, bs) {
		return ""
	}
	var open []string
	for _, b := range is.BlockedBy {
		if b.State == "" || !tracker.StateIn(b.State, cfg.Tracker.TerminalStates) {
			name := b.Identifier
			if name == "" {
				name = b.ID
			}
			open = append(open, name)
		}
	}
	if len(open) == 0 {
		return ""
	}
	return whyBlocked + strings.Join(open, ", ")
}

// isActive reports whether state is an active state. An empty active list means every
// non-terminal state is active.
func isActive(cfg *config.Config, state string) bool {
	if len(cfg.Tracker.ActiveStates) == 0 {
		return !tracker.StateIn(state, cfg.Tracker.TerminalStates)
	}
	return tracker.StateIn(state, cfg.Tracker.ActiveStates)
}

// dispatch starts workers for eligible candidates while slots remain. A candidate whose
// retry waits for a slot (waitForSlot) takes its turn in the same order, as its retry.
func (o *Orchestrator) dispatch(ctx context.Context) {
	if o.draining || !o.lastPollOK {
		return
	}
	cfg := o.opts.Config()
	for _, is := range o.candidates {
		if o.globalSlots(cfg) <= 0 {
			return
		}
		if o.dropped[is.ID] {
			continue
		}
		if r, ok := o.retrying[is.ID]; ok {
			o.startWaitingRetry(ctx, cfg, r, is)
			continue
		}
		if o.eligible(cfg, is) != "" || o.overBudget(cfg, is.ID) {
			continue
		}
		if o.stateSlots(cfg, is.State) <= 0 {
			continue
		}
		host, ok := o.pickHost(cfg, "")
		if !ok {
			return
		}
		if c := o.claim(ctx, cfg, is.ID, is.Identifier, is.State); !c.OK {
			if c.Full {
				return
			}
			continue
		}
		o.startWorker(ctx, cfg, is, 0, 0, "", host)
	}
}

func (o *Orchestrator) globalSlots(cfg *config.Config) int {
	return cfg.Agent.MaxConcurrentAgents - len(o.running)
}

// stateSlots returns the free slots for issues in state, honouring
// agent.max_concurrent_agents_by_state (a missing entry means only the global limit).
func (o *Orchestrator) stateSlots(cfg *config.Config, state string) int {
	key := strings.ToLower(strings.TrimSpace(state))
	limit, ok := cfg.Agent.MaxConcurrentAgentsByState[key]
	if !ok {
		return o.globalSlots(cfg)
	}
	n := 0
	for _, e := range o.running {
		if strings.ToLower(strings.TrimSpace(e.issue.State)) == key {
			n++
		}
	}
	return limit - n
}

// forgetBudgets drops the session counts and token spend of issues that are neither
// candidates nor claimed: refreshBudgets reloads them from the store if they come back,
// and without this the two maps grow by one entry per issue for the daemon's lifetime.
func (o *Orchestrator) forgetBudgets() {
	keep := make(map[string]bool, len(o.candidates))
	for _, is := range o.candidates {
		keep[is.ID] = true
	}
	claimed := func(id string) bool {
		_, r := o.running[id]
		_, q := o.retrying[id]
		_, h := o.holds[id]
		return keep[id] || r || q || h
	}
	for id := range o.sessions {
		if !claimed(id) {
			delete(o.sessions, id)
		}
	}
	for id := range o.spent {
		if !claimed(id) {
			delete(o.spent, id)
		}
	}
}
