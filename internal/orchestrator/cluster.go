package orchestrator

import (
	"context"
	"slices"
	"strings"
	"time"

	"sortie/internal/config"
	"sortie/internal/store"
)

// Cluster coordinates this daemon with the others that share its PostgreSQL store
// (docs/cluster.md). The loop is the same with or without one: it owns its own runs,
// and a claim is what it asks the cluster before it starts a worker. Options.Cluster
// nil means this daemon is alone.
type Cluster interface {
	// Claim takes, or keeps, the lease of c.IssueID for this daemon as a running
	// agent. It fails (ok false, why says which) when another daemon holds a live lease
	// on the issue, when the issue is held for a human, when a dead daemon's run of it
	// is still recorded as running (not taken over yet, or taken over by this daemon
	// but not yet marked interrupted), or when the cluster's caps are reached (full).
	Claim(ctx context.Context, c ClaimRequest) (r ClaimResult, err error)
	// Release drops this daemon's lease of an issue it no longer runs or retries.
	Release(ctx context.Context, issueID string) error
	// Renew extends this daemon's heartbeat and every lease it holds, marks which of
	// them run an agent now (running; the others wait for a retry), and returns the
	// issue ids whose lease it still holds.
	Renew(ctx context.Context, running []string) (held []string, err error)
	// Adopt takes over, for this daemon, the runs left running by daemons whose
	// heartbeat expired and the retries no live lease covers. The caller stops what
	// is left of those runs, marks them interrupted and resumes them.
	Adopt(ctx context.Context) ([]store.Run, []store.Retry, error)
	// Leave releases every lease of this daemon and removes its heartbeat, at a clean
	// shutdown, so the others take over its retries at once.
	Leave(ctx context.Context) error
	// Changed tells the others that something they act on changed now: "hold" (a hold
	// was set or lifted) or "release" (a slot or an issue was freed).
	Changed(ctx context.Context, what string)
	// View is what the cluster looked like at the last renewal, for snapshots.
	View() ClusterView
}

// ClaimRequest is one claim: the issue, its tracker state (per-state caps), and the
// caps that must hold across daemons (0 or below: none).
type ClaimRequest struct {
	IssueID, Identifier, State string
	// ClusterCap is cluster.max_concurrent_agents; StateCap the state's
	// agent.max_concurrent_agents_by_state, -1 when it has none.
	ClusterCap, StateCap int
}

// ClaimResult is the answer to a claim.
type ClaimResult struct {
	OK bool
	// Full is set when the cluster cap refused it, StateFull when its state's cap did:
	// the issue may run once a slot frees.
	Full, StateFull bool
	Why             string
}

// ClusterView is the cluster in a snapshot: its daemons and which issue each runs.
type ClusterView struct {
	Self    string          `json:"self"`
	Leader  string          `json:"leader,omitempty"`
	Daemons []ClusterDaemon `json:"daemons"`
	Leases  []ClusterLease  `json:"leases"`
	// At is when it was read; Error why the last renewal failed.
	At    time.Time `json:"at"`
	Error string    `json:"error,omitempty"`
}

// ClusterDaemon is one daemon of the cluster.
type ClusterDaemon struct {
	ID        string    `json:"id"`
	Host      string    `json:"host"`
	PID       int       `json:"pid"`
	Started   time.Time `json:"started_at"`
	Expires   time.Time `json:"expires_at"`
	Alive     bool      `json:"alive"`
	Running   int       `json:"running"`
	MaxAgents int       `json:"max_concurrent_agents"`
}

// ClusterLease is one issue's lease.
type ClusterLease struct {
	IssueID    string    `json:"issue_id"`
	Identifier string    `json:"issue_identifier"`
	Daemon     string    `json:"daemon"`
	Running    bool      `json:"running"`
	Expires    time.Time `json:"expires_at"`
}

// renewal is the answer of one Cluster.Renew, delivered to the loop.
type renewal struct {
	at time.Time
	// asked are the issues this daemon ran or retried when the renewal started: only
	// they can be missing from held because another daemon took them.
	asked []string
	held  []string
	err   error
}

// adoption is what a tick took over from dead daemons, their processes already
// stopped (stopLeftRuns), for the loop to resume.
type adoption struct {
	runs       []store.Run
	remoteErrs []error
	retries    []store.Retry
	holds      []store.Hold
	holdsOK    bool
	// holdGen is this daemon's change counter of holds when they were read: a sync is
	// skipped when it moved since.
	holdGen uint64
	// syncCheckpoints brings the pending checkpoints in line with the shared ones
	// (Checkpoints.ReadShared); nil when they could not be read.
	syncCheckpoints func()
	err             error
}

// stopLeaseLost: another daemon took the issue over (this daemon's lease lapsed).
const stopLeaseLost stopReason = "lease_lost"

// claim asks the cluster for is before a worker starts. Alone, every claim succeeds.
func (o *Orchestrator) claim(ctx context.Context, cfg *config.Config, issueID, identifier, state string) ClaimResult {
	c := o.opts.Cluster
	if c == nil {
		return ClaimResult{OK: true}
	}
	if o.leaseLost(cfg) {
		return ClaimResult{Why: "this daemon could not renew its leases for cluster.lease_ms"}
	}
	stateCap := -1
	if n, ok := cfg.Agent.MaxConcurrentAgentsByState[strings.ToLower(strings.TrimSpace(state))]; ok {
		stateCap = n
	}
	r, err := c.Claim(ctx, ClaimRequest{IssueID: issueID, Identifier: identifier, State: state,
		ClusterCap: cfg.Cluster.MaxConcurrentAgents, StateCap: stateCap})
	if err != nil {
		o.log.Warn("claiming the issue in the cluster failed; not dispatching it now", "issue_identifier", identifier, "error", err)
		return ClaimResult{Why: "claim failed: " + err.Error()}
	}
	if !r.OK {
		o.log.Debug("issue not claimed", "issue_identifier", identifier, "why", r.Why)
	}
	return r
}

// unclaim releases the lease of an issue this daemon neither runs nor retries any more.
func (o *Orchestrator) unclaim(ctx context.Context, issueID string) {
	c := o.opts.Cluster
	if c == nil {
		return
	}
	if _, ok := o.running[issueID]; ok {
		return
	}
	if _, ok := o.retrying[issueID]; ok {
		return
	}
	if err := c.Release(ctx, issueID); err != nil {
		o.log.Warn("releasing the issue's lease failed; it lapses after cluster.lease_ms", "issue_id", issueID, "error", err)
	}
	c.Changed(ctx, "release")
}

// leaseLost reports whether this daemon has failed to renew its leases for longer than
// a lease lasts: the others may have taken its issues over, so it must not run them.
func (o *Orchestrator) leaseLost(cfg *config.Config) bool {
	return o.opts.Cluster != nil && !o.renewedAt.IsZero() && o.clk.Now().Sub(o.renewedAt) > cfg.Cluster.Lease
}

// startRenewals renews the leases every third of cluster.lease_ms, from the loop.
func (o *Orchestrator) scheduleRenewal(ctx context.Context, cfg *config.Config) {
	if o.opts.Cluster == nil || o.draining {
		return
	}
	o.renewTimer = o.clk.AfterFunc(cfg.Cluster.Lease/3, func() {
		select {
		case o.renewDue <- struct{}{}:
		case <-ctx.Done():
		}
	})
}

// renew starts one renewal in the background with the issues running now.
func (o *Orchestrator) renew(ctx context.Context) {
	running := make([]string, 0, len(o.running))
	for id := range o.running {
		running = append(running, id)
	}
	asked := slices.Clone(running)
	for id := range o.retrying {
		asked = append(asked, id)
	}
	c, at := o.opts.Cluster, o.clk.Now()
	o.bg.Go(func() {
		held, err := c.Renew(ctx, running)
		select {
		case o.renewals <- renewal{at: at, asked: asked, held: held, err: err}:
		case <-ctx.Done():
		}
	})
}

// applyRenewal stops the workers and forgets the retries whose lease another daemon
// took, and stops every worker once the leases could not be renewed for a whole lease.
func (o *Orchestrator) applyRenewal(ctx context.Context, r renewal) {
	cfg := o.opts.Config()
	defer o.scheduleRenewal(ctx, cfg)
	if r.err != nil {
		o.log.Warn("renewing this daemon's leases failed", "error", r.err)
		if o.leaseLost(cfg) {
			for _, e := range o.running {
				if e.stop == stopNone {
					o.log.Error("stopping the agent: this daemon's lease lapsed and another daemon may take the issue over",
						"issue_identifier", e.issue.Identifier)
					o.stopWorker(e, stopLeaseLost)
				}
			}
		}
		return
	}
	o.renewedAt = r.at
	for _, id := range r.asked {
		if slices.Contains(r.held, id) {
			continue
		}
		if e, ok := o.running[id]; ok && e.stop == stopNone {
			o.log.Error("stopping the agent: another daemon took the issue over", "issue_identifier", e.issue.Identifier)
			o.stopWorker(e, stopLeaseLost)
		}
		if e, ok := o.retrying[id]; ok && !e.fetching {
			if e.timer != nil {
				e.timer.Stop()
			}
			delete(o.retrying, id) // its row is the new owner's now
			o.log.Warn("retry dropped: another daemon took the issue over", "issue_identifier", e.identifier)
		}
	}
}

// adopt takes over what dead daemons left (in the background, from a tick): their
// runs' processes are stopped here, off the loop, and the runs handed to applyAdoption.
// holdGen is the loop's hold change counter, read on the loop when the tick starts.
func (o *Orchestrator) adopt(ctx context.Context, holdGen uint64) adoption {
	a := adoption{holdGen: holdGen}
	a.runs, a.retries, a.err = o.opts.Cluster.Adopt(ctx)
	if a.err != nil {
		return a
	}
	a.remoteErrs = o.stopLeftRuns(ctx, a.runs)
	holds, err := o.opts.Store.LoadHolds(ctx)
	a.holds, a.holdsOK = holds, err == nil
	if o.opts.Checkpoints != nil {
		a.syncCheckpoints, _ = o.opts.Checkpoints.ReadShared(ctx) // unread: the next poll syncs
	}
	return a
}

// applyAdoption resumes the adopted runs and retries, and brings the holds in memory in
// line with the shared ones: set or lifted on another daemon, or on its dashboard.
func (o *Orchestrator) applyAdoption(ctx context.Context, a adoption) {
	if a.err != nil {
		o.log.Warn("taking over the work of dead daemons failed; will try again at the next poll", "error", a.err)
		return
	}
	now := o.clk.Now()
	for _, r := range a.retries {
		if _, ok := o.running[r.IssueID]; ok {
			continue
		}
		o.log.Warn("took over the retry of a daemon that stopped", "issue_identifier", r.Identifier)
		o.scheduleRetry(ctx, o.retryFromStore(ctx, r), r.DueAt.Sub(now))
	}
	if err := o.resumeLeftRuns(ctx, a.runs, a.remoteErrs); err != nil {
		o.log.Error("marking taken-over runs interrupted failed", "error", err)
	}
	if a.syncCheckpoints != nil {
		a.syncCheckpoints()
	}
	if !a.holdsOK || a.holdGen != o.holdGen {
		return
	}
	shared := make(map[string]store.Hold, len(a.holds))
	for _, h := range a.holds {
		shared[h.IssueID] = h
		if _, ok := o.holds[h.IssueID]; !ok {
			o.holds[h.IssueID] = holdFromStore(h)
		}
	}
	for id, h := range o.holds {
		if _, ok := shared[id]; !ok && h.reason != holdRemote {
			delete(o.holds, id)
			o.log.Info("hold lifted on another daemon", "issue_identifier", h.identifier)
		}
	}
}

// boundedCluster gives every call to the cluster's store a deadline, as boundedStore
// does the store's.
type boundedCluster struct {
	c       Cluster
	timeout time.Duration
}

func (b boundedCluster) Claim(ctx context.Context, c ClaimRequest) (ClaimResult, error) {
	return bounded(ctx, b.timeout, func(ctx context.Context) (ClaimResult, error) { return b.c.Claim(ctx, c) })
}

func (b boundedCluster) Release(ctx context.Context, issueID string) error {
	return bounded0(ctx, b.timeout, func(ctx context.Context) error { return b.c.Release(ctx, issueID) })
}

func (b boundedCluster) Renew(ctx context.Context, running []string) ([]string, error) {
	return bounded(ctx, b.timeout, func(ctx context.Context) ([]string, error) { return b.c.Renew(ctx, running) })
}

func (b boundedCluster) Adopt(ctx context.Context) ([]store.Run, []store.Retry, error) {
	ctx, cancel := context.WithTimeout(ctx, b.timeout)
	defer cancel()
	return b.c.Adopt(ctx)
}

func (b boundedCluster) Leave(ctx context.Context) error {
	return bounded0(ctx, b.timeout, b.c.Leave)
}

func (b boundedCluster) Changed(ctx context.Context, what string) {
	ctx, cancel := context.WithTimeout(ctx, b.timeout)
	defer cancel()
	b.c.Changed(ctx, what)
}

func (b boundedCluster) View() ClusterView { return b.c.View() }
