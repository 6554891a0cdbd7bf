package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"sortie/internal/agent"
	"sortie/internal/agent/cgroup"
	"sortie/internal/clock"
	"sortie/internal/config"
	"sortie/internal/confine"
	"sortie/internal/prompt"
	"sortie/internal/runas"
	"sortie/internal/store"
	"sortie/internal/tracker"
	"sortie/internal/workspace"
)

// Options are the parts an Orchestrator is assembled from.
type Options struct {
	// Config returns the current workflow configuration. It is called on the loop and
	// by workers; hot reloads show up through it.
	Config func() *config.Config
	// Reload re-reads WORKFLOW.md synchronously; called at the start of every tick so a
	// missed file event cannot leave a stale config. Optional.
	Reload func() error
	// ConfigError reports why the last WORKFLOW.md edit was rejected (nil when the
	// current file is in force); shown in snapshots. Optional.
	ConfigError func() error
	// ConfigChanges delivers each newly applied configuration. Optional.
	ConfigChanges <-chan *config.Config

	// Tracker, Agent and AgentVersion are the adapters of the configuration in force at
	// start-up (Adapters). AgentVersion is recorded with every run (e.g. the CLI's
	// --version), "" if unknown.
	Tracker      tracker.Tracker
	Agent        agent.Adapter
	AgentVersion string
	// Adapters returns the adapters of a configuration ConfigChanges delivered, called
	// on the loop: the set in force, or a new one when what they are built from
	// changed. An error keeps the set in force (adapters.go). Optional: without it the
	// start-up adapters serve for the daemon's lifetime.
	Adapters func(*config.Config) (Adapters, error)

	Store Store
	// Cluster coordinates this daemon with others on the same PostgreSQL store
	// (cluster.go). Optional: nil when the daemon is alone.
	Cluster Cluster
	Clock   clock.Clock
	Logger  *slog.Logger
	// Environ is the daemon's environment; agents and hooks get a filtered copy.
	Environ []string
	// Sandbox confines local agents (confine.go). Its zero value runs them unconfined.
	Sandbox confine.Sandbox
	// Cgroups, when not nil, gives each local run its own cgroup v2 group, killed whole
	// when the run ends (internal/agent/cgroup). Optional: the supervisor alone owns
	// the process tree without it.
	Cgroups *cgroup.Tree
	// StopRemote stops process group pgid on SSH host host (worker.ssh_hosts), for an
	// agent a previous daemon left running there; an error means it could not be
	// confirmed stopped (the host could not be reached). Optional: without it, remote
	// agents are not stopped at recovery.
	StopRemote func(ctx context.Context, host string, pgid int) error
	// RunAs, when not nil, is the OS user local agents and hooks run as (agent.run_as;
	// the daemon runs as root), in workspaces that user owns.
	RunAs *runas.User
	// Extensions are the agent's MCP tools and their files (workspace.Extensions). Optional.
	Extensions workspace.Extensions
	// Alert sends the daemon's own alerts (an issue blocked, its budget or its retries
	// used up) to the operator's notification backends. Optional; it is called on its
	// own goroutine and must respect ctx.
	Alert func(ctx context.Context, a Alert) error
	// Checkpoints enables structured-workflow checkpoints (checkpoints.go): the
	// daemon's checkpoint component (internal/workflow/checkpoint). Optional: nil when
	// structured workflows are off.
	Checkpoints Checkpoints
	// Activity receives every Activity (activity.go) synchronously, on the loop or a
	// worker goroutine: metrics and the live feed. It must be quick and must not call
	// back into the Orchestrator. Optional.
	Activity func(Activity)
	// Reactions watches handed-off issues' pull requests (reactions.go). Optional:
	// nil when no reaction is configured.
	Reactions Reactions

	// ExitWhenIdle makes Run return once nothing is running, retrying or eligible.
	ExitWhenIdle bool
	// ShutdownTimeout bounds how long Run waits for workers after ctx ends (default 30s).
	ShutdownTimeout time.Duration
	// StallCheckInterval is how often running sessions are checked for stalls (default 1s).
	StallCheckInterval time.Duration
	// Observe, when set, is called on the loop goroutine after each step the loop takes
	// (a tick applied, a worker exit handled, a retry fired, ...). Tests use it to wait
	// for a condition instead of sleeping; it must not block or call back into the
	// Orchestrator.
	Observe func(Observation)
	// ProgressFlushInterval bounds how often a worker writes run progress to the store
	// (default 1s).
	ProgressFlushInterval time.Duration
	// StoreTimeout bounds each call to the store and to the cluster (default
	// DefaultStoreTimeout): a store that stops answering fails the call, logged,
	// instead of stalling the loop or a worker.
	StoreTimeout time.Duration
}

// Orchestrator schedules issues onto agent sessions. Create it with New and start it
// with Run; the other methods are safe to call from any goroutine while Run runs.
type Orchestrator struct {
	opts Options
	log  *slog.Logger
	clk  clock.Clock

	warnedBudget sync.Map        // issue id → true once its budget warning went out (budget.go)
	runTmp       confine.TmpPool // finished runs' temporary directories, for the next runs
	hooksLogged  sync.Map        // why hooks run unconfined → true once said (hooks.go)

	// Channels into the loop.
	exits      chan workerExit
	ticks      chan tickResult
	retryFire  chan retryFire
	retryFetch chan retryFetched
	refresh    chan struct{}
	stallCheck chan struct{}
	sweeps     chan sweepResult
	remotes    chan remoteResult // retryRemoteStops → loop
	remoteBusy bool              // a retryRemoteStops attempt is under way
	renewDue   chan struct{}     // time to renew the cluster leases
	renewals   chan renewal      // Cluster.Renew → loop

	// adapters is the set in force (adapters.go): replaced by the loop, read anywhere.
	adapters atomic.Pointer[Adapters]
	// published is what the loop last published for readers on other goroutines
	// (snapshot.go): nil until the state is recovered; ready is closed then.
	published atomic.Pointer[view]
	ready     chan struct{}
	// webhookAt is when the last authentic webhook delivery arrived (unix nanoseconds
	// of the injected clock; 0 for never): written by the HTTP server's goroutines,
	// read by the loop when it schedules the next poll.
	webhookAt atomic.Int64
	// webhookPollAt is when a delivery last made the loop poll (unix nanoseconds), and
	// webhookPollSoon is set while a poll is scheduled for the end of the gap after it
	// (WebhookDelivered).
	webhookPollAt   atomic.Int64
	webhookPollSoon atomic.Bool

	// Loop-owned state. Only the goroutine running loop() touches these: there is no
	// lock, and nothing on another goroutine reads them; readers get the published view.
	stopWatch context.CancelFunc // ends the watch of the tracker in force
	running   map[string]*runningEntry
	retrying  map[string]*retryEntry
	holds     map[string]*hold
	// remoteWaits are the runs of a previous daemon whose agents may still run on an
	// unreachable SSH host, by issue id (remote.go).
	remoteWaits map[string]store.Run
	candidates  []tracker.Issue // from the last successful poll, sorted for dispatch
	dropped     map[string]bool // candidates whose run ended since that poll: skipped until the next

	sessions   map[string]int // finished sessions per issue, for agent.max_sessions
	spent      map[string]spend
	totals     Totals
	hostLoad   map[string]int
	tickBusy   bool
	ticksDone  int
	sweeping   bool
	tickAgain  bool
	pollTimer  clock.Timer
	stallTimer clock.Timer
	retryGen   uint64
	lastPollOK bool
	lastPollAt time.Time
	lastError  string
	draining   bool
	renewTimer clock.Timer
	renewedAt  time.Time // the last successful Cluster.Renew
	holdGen    uint64    // counts changes to holds (a cluster's sync skips a stale read)
	// tmpl is the prompt template of the configuration last rendered, parsed once
	// (template); workers read it, so it is swapped whole.
	tmpl atomic.Pointer[parsedTemplate]

	workers sync.WaitGroup // worker goroutines
	// fetches are the goroutines that fetch for the loop (a poll, a retry's issue, the
	// tracker's change notifications, stopping remote agents): each ends when the work
	// context does, and Run waits for them before it returns.
	fetches sync.WaitGroup
	bg      sync.WaitGroup // cleanups and other background work, waited for at shutdown

	lastReloadErr string // the rejected WORKFLOW.md edit already reported

	own     tracker.OwnWrites // Sortie's own changes to issues, for holds (comments.go)
	started time.Time
}

// New checks opts and returns an Orchestrator ready to Run.
func New(opts Options) (*Orchestrator, error) {
	if opts.Config == nil || opts.Tracker == nil || opts.Agent == nil || opts.Store == nil {
		return nil, errors.New("orchestrator: Config, Tracker, Agent and Store are required")
	}
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.ShutdownTimeout <= 0 {
		opts.ShutdownTimeout = 30 * time.Second
	}
	if opts.StallCheckInterval <= 0 {
		opts.StallCheckInterval = time.Second
	}
	if opts.ProgressFlushInterval <= 0 {
		opts.ProgressFlushInterval = time.Second
	}
	if opts.StoreTimeout <= 0 {
		opts.StoreTimeout = DefaultStoreTimeout
	}
	opts.Store = boundedStore{s: opts.Store, timeout: opts.StoreTimeout}
	if opts.Cluster != nil {
		opts.Cluster = boundedCluster{c: opts.Cluster, timeout: opts.StoreTimeout}
	}
	o := &Orchestrator{
		opts:        opts,
		log:         opts.Logger,
		clk:         opts.Clock,
		exits:       make(chan workerExit, 64),
		ticks:       make(chan tickResult, 1),
		retryFire:   make(chan retryFire, 64),
		retryFetch:  make(chan retryFetched, 64),
		refresh:     make(chan struct{}, 1),
		ready:       make(chan struct{}),
		stallCheck:  make(chan struct{}, 1),
		sweeps:      make(chan sweepResult, 1),
		remotes:     make(chan remoteResult, 1),
		running:     map[string]*runningEntry{},
		retrying:    map[string]*retryEntry{},
		holds:       map[string]*hold{},
		remoteWaits: map[string]store.Run{},
		sessions:    map[string]int{},
		spent:       map[string]spend{},
		hostLoad:    map[string]int{},
		renewDue:    make(chan struct{}, 1),
		renewals:    make(chan renewal, 1),
	}
	o.adapters.Store(&Adapters{Tracker: opts.Tracker, Agent: opts.Agent, AgentVersion: opts.AgentVersion})
	// From here on every use of o.opts.Tracker reaches the tracker in force, so a hot
	// reload's new tracker needs nothing more; a worker holds the adapters it started
	// with instead.
	o.opts.Tracker = currentTracker{o}
	return o, nil
}

// Refresh asks for a poll and reconcile now. Requests made while one is pending are
// coalesced; it reports whether this call was coalesced into an earlier one.
func (o *Orchestrator) Refresh() (coalesced bool) {
	select {
	case o.refresh <- struct{}{}:
		return false
	default:
		return true
	}
}

// webhookPollGap is the shortest time between two polls caused by webhook deliveries.
// A burst (a label put on twenty issues) is one poll now and one at the end of the gap;
// and someone resending a captured signed delivery under new ids (GitHub and Jira sign
// no timestamp) makes at most four polls a second, not one per request.
const webhookPollGap = 250 * time.Millisecond

// WebhookDelivered tells the scheduler that an authentic tracker webhook delivery
// arrived. A delivery is a hint, never the truth: it only makes the scheduler poll now
// (or, within webhookPollGap of the last poll a delivery caused, at the end of that
// gap), and the poll reads the tracker as every poll does, so a stale or forged body
// can neither start nor stop work. While deliveries keep arriving the scheduler polls
// every polling.webhook_interval_ms instead of polling.interval_ms (pollInterval).
func (o *Orchestrator) WebhookDelivered() {
	now := o.clk.Now()
	o.webhookAt.Store(now.UnixNano())
	if last := o.webhookPollAt.Load(); last != 0 {
		if wait := webhookPollGap - now.Sub(time.Unix(0, last)); wait > 0 {
			if o.webhookPollSoon.CompareAndSwap(false, true) {
				o.clk.AfterFunc(wait, func() {
					o.webhookPollAt.Store(o.clk.Now().UnixNano())
					o.webhookPollSoon.Store(false)
					o.Refresh()
				})
			}
			return
		}
	}
	o.webhookPollAt.Store(now.UnixNano())
	o.Refresh()
}

// Run recovers state from the store, then schedules until ctx ends (or, with
// ExitWhenIdle, until there is nothing left to do). On return every worker has exited
// and its run is recorded.
func (o *Orchestrator) Run(ctx context.Context) error {
	o.started = o.clk.Now()
	if err := o.recover(ctx); err != nil {
		return fmt.Errorf("orchestrator: recovering state: %w", err)
	}
	workCtx, cancelWork := context.WithCancel(context.WithoutCancel(ctx))
	// The work context ends only once every worker has exited (shutdown); the
	// goroutines fetching for the loop end with it, and Run waits for them.
	defer o.fetches.Wait()
	defer cancelWork()

	o.armStallCheck()
	o.watchTracker(workCtx)
	o.startTick(workCtx)
	o.startSweep(workCtx, o.opts.Config())
	if o.opts.Cluster != nil {
		o.renewedAt = o.clk.Now()
		o.renew(workCtx)
	}
	o.publish()

	err := o.loop(ctx, workCtx)
	o.shutdown(workCtx)
	return err
}

// loop is the single writer of scheduling state. It takes one step at a time, each
// without a lock, and publishes the state for readers after each.
func (o *Orchestrator) loop(ctx, workCtx context.Context) error {
	var answered <-chan struct{} // nil without checkpoints: never ready
	if o.opts.Checkpoints != nil {
		answered = o.opts.Checkpoints.Answered()
	}
	var reacting <-chan struct{} // nil without reactions: never ready
	if o.opts.Reactions != nil {
		reacting = o.opts.Reactions.Due()
	}
	for {
		if o.opts.ExitWhenIdle && o.idle() {
			o.log.Info("nothing running, retrying or eligible: exiting")
			return nil
		}
		var step Observation
		select {
		case <-ctx.Done():
			return nil
		case ex := <-o.exits:
			o.handleExit(workCtx, ex)
			o.dispatch(workCtx)
			step = Observation{Step: StepExit, IssueID: ex.issueID}
		case res := <-o.ticks:
			o.applyTick(workCtx, res)
			step = Observation{Step: StepTick}
		case f := <-o.retryFire:
			o.handleRetryFire(workCtx, f)
			step = Observation{Step: StepRetryFired, IssueID: f.issueID}
		case f := <-o.retryFetch:
			o.handleRetryFetched(workCtx, f)
			step = Observation{Step: StepRetryFetched, IssueID: f.issueID}
		case <-o.refresh:
			o.startTick(workCtx)
			step = Observation{Step: StepRefresh}
		case <-o.stallCheck:
			o.checkStalls()
			o.armStallCheck()
			step = Observation{Step: StepStallCheck}
		case <-answered:
			id, ok := o.opts.Checkpoints.NextAnswered()
			if !ok {
				continue
			}
			o.checkpointAnswered(workCtx, id)
			o.dispatch(workCtx)
			step = Observation{Step: StepAnswer, IssueID: id}
		case <-reacting:
			o.react(workCtx)
			step = Observation{Step: StepReaction}
		case res := <-o.sweeps:
			o.applySweep(res)
			step = Observation{Step: StepSweep}
		case <-o.renewDue:
			o.renew(workCtx)
			continue
		case r := <-o.renewals:
			o.applyRenewal(workCtx, r)
			o.dispatch(workCtx)
			step = Observation{Step: StepRenewal}
		case res := <-o.remotes:
			o.applyRemoteStops(workCtx, res)
			o.dispatch(workCtx)
			step = Observation{Step: StepRemote}
		case cfg, ok := <-o.opts.ConfigChanges:
			if !ok {
				o.opts.ConfigChanges = nil
				continue
			}
			o.configChanged(workCtx, cfg)
			step = Observation{Step: StepConfig}
		}
		v := o.publish()
		if o.opts.Observe != nil {
			step.Snapshot = o.compose(v)
			o.opts.Observe(step)
		}
	}
}

// idle reports whether nothing is running, retrying, being fetched or eligible.
func (o *Orchestrator) idle() bool {
	if len(o.running) > 0 || len(o.retrying) > 0 || len(o.remoteWaits) > 0 || o.tickBusy || o.sweeping || !o.lastPollOK {
		return false
	}
	cfg := o.opts.Config()
	for _, is := range o.candidates {
		if !o.dropped[is.ID] && o.eligible(cfg, is) == "" && !o.overBudget(cfg, is.ID) {
			return false
		}
	}
	return true
}

// armStallCheck schedules the next check of running sessions for stalls. Loop only:
// the loop arms it again after each check, and shutdown stops it.
func (o *Orchestrator) armStallCheck() {
	o.stallTimer = o.clk.AfterFunc(o.opts.StallCheckInterval, func() {
		select {
		case o.stallCheck <- struct{}{}:
		default:
		}
	})
}

// configChanged puts the adapters of cfg, a newly applied configuration, in force and
// lifts error holds: a new configuration may have fixed what failed.
func (o *Orchestrator) configChanged(ctx context.Context, cfg *config.Config) {
	o.applyAdapters(ctx, cfg)
	lifted := 0
	for id, h := range o.holds {
		if h.reason == holdError || h.reason == holdRetries {
			o.liftHold(id, "workflow configuration changed")
			lifted++
		}
	}
	if lifted > 0 {
		o.Refresh()
	}
}

// parsedTemplate is the prompt template of one configuration, or why it did not parse.
type parsedTemplate struct {
	cfg  *config.Config
	tmpl *prompt.Template
	err  error
}

// template returns the parsed prompt template of cfg, parsing it once per config.
// Workers call it: two parsing the same new config at once both parse it, and the
// second's result replaces the first's, an equal one.
func (o *Orchestrator) template(cfg *config.Config) (*prompt.Template, error) {
	if p := o.tmpl.Load(); p != nil && p.cfg == cfg {
		return p.tmpl, p.err
	}
	t, err := prompt.ParseEngine(cfg.Path, cfg.Prompt, cfg.PromptLine, prompt.Engine(cfg.PromptEngine))
	o.tmpl.Store(&parsedTemplate{cfg: cfg, tmpl: t, err: err})
	return t, err
}
