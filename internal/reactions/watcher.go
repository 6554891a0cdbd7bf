package reactions

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"

	"sortie/internal/clock"
	"sortie/internal/config"
	"sortie/internal/store"
	"sortie/internal/tracker"
	"sortie/internal/tracker/github"
)

// Kinds of reaction, as the store names them.
const (
	KindCI     = store.ReactionCI
	KindReview = store.ReactionReview
)

// CodeHost is the part of the GitHub client (internal/tracker/github) reactions use.
type CodeHost interface {
	FindPullRequest(ctx context.Context, repo, branch string) (github.PullRequest, bool, error)
	PullRequest(ctx context.Context, repo string, number int64) (github.PullRequest, error)
	CI(ctx context.Context, repo, sha string) (github.CIResult, error)
	AttachFailureLog(ctx context.Context, repo string, res *github.CIResult, maxLines int) error
	ChangeRequests(ctx context.Context, repo string, pr int64) (github.ReviewResult, error)
}

// Options are what a Watcher is built from.
type Options struct {
	// Config returns the configuration in force (reactions, self_review, tracker).
	Config func() *config.Config
	// Host returns the code host of the configuration in force, and its repository
	// (owner/repo); nil when reactions are off or the code host cannot be built.
	Host func() (CodeHost, string)
	// Tracker returns the tracker in force: an escalation labels or comments the issue.
	Tracker func() tracker.Tracker
	Store   store.ReactionStore
	Clock   clock.Clock
	Logger  *slog.Logger
	// Report receives every Event (metrics, the activity feed); optional, called on
	// the watcher's goroutine, must be quick.
	Report func(Event)
	// Alert tells the operator an issue was escalated; optional, must not block.
	Alert func(issueID, identifier, title, message string)
}

// Event is something the watcher did, for metrics and the activity feed.
type Event struct {
	Kind       string // KindCI or KindReview
	What       string // "check" (Result: passing, pending, failing, error, none), "offered", "dispatched", "escalated"
	Result     string
	IssueID    string
	Identifier string
	Requests   int
	Message    string
}

// Due is a reaction the scheduler should run: the issue's last session resumed with
// Vars in its first prompt (Section appended when the template does not use them).
type Due struct {
	IssueID, Identifier string
	Kind                string
	Fingerprint         string
	SessionID           string
	Workspace           string
	PR                  int64
	// Vars are the prompt template's extra keys: ci_failure or review_comments.
	Vars map[string]any
	// Section is the prompt text saying the same, for templates that do not use Vars.
	Section string
}

// View is one watched issue as the dashboard and the API show it.
type View struct {
	IssueID       string         `json:"issue_id"`
	Identifier    string         `json:"issue_identifier"`
	Branch        string         `json:"branch,omitempty"`
	PR            int64          `json:"pr_number,omitempty"`
	PRURL         string         `json:"pr_url,omitempty"`
	HeadSHA       string         `json:"head_sha,omitempty"`
	CI            string         `json:"ci"` // unknown, passing, pending, failing
	FailingChecks []string       `json:"failing_checks,omitempty"`
	ReviewState   string         `json:"review"` // unknown, none, changes_requested, waiting (debounce)
	Comments      int            `json:"review_comments"`
	Pending       []string       `json:"pending,omitempty"`  // kinds offered, not yet dispatched
	Attempts      map[string]int `json:"attempts,omitempty"` // reaction runs so far, by kind
	Running       bool           `json:"running,omitempty"`  // a reaction run is under way
	Escalated     bool           `json:"escalated,omitempty"`
	NextCheckAt   time.Time      `json:"next_check_at,omitzero"`
	LastError     string         `json:"last_error,omitempty"`
	HandedOffAt   time.Time      `json:"handed_off_at"`
}

// watch is one watched issue.
type watch struct {
	store.ReactionWatch
	nextAt            time.Time // when the next check may send requests
	ciDue, reviewDue  time.Time
	pendingStreak     int
	running           bool // a reaction run was dispatched; paused until the next hand-off
	head, prURL       string
	ci                github.CheckState
	failing           []string
	review            string
	comments          int
	lastErr           string
	states            map[string]store.ReactionState // loaded at a check; nil: read them again
	branchErrReported bool
	// reviewChecks counts the review checks (a review-only watch reads the pull
	// request's state every prStateEvery of them).
	reviewChecks int
	// cached is the reaction last built per kind, offered again while it is deferred.
	cached map[string]Due
	// gen counts the changes made to the watch outside a check (a dispatch, a
	// deferral, a run's end): a check that saw an older one puts back only what it
	// looked at, offers nothing, and leaves the states to be read again.
	gen uint64
}

// Watcher watches handed-off issues. Create it with New, load what a previous daemon
// watched with Recover, and start it with Run; the other methods are safe from any
// goroutine.
type Watcher struct {
	opts Options
	log  *slog.Logger
	clk  clock.Clock

	mu      sync.Mutex
	watches map[string]*watch
	due     []Due // offered, oldest first; at most one per issue and kind
	// ops are store writes Watch and Forget asked for, run in order on Run's goroutine.
	ops   []func(context.Context)
	wake  chan struct{}
	dueCh chan struct{}

	remoteSaid sync.Map // SSH hosts whose hand-offs were said to be unwatched
	// syncAt is when the watches are next read from the store (sync); Run's
	// goroutine only.
	syncAt time.Time
}

// New returns a Watcher.
func New(opts Options) *Watcher {
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Watcher{opts: opts, log: opts.Logger, clk: opts.Clock, watches: map[string]*watch{},
		wake: make(chan struct{}, 1), dueCh: make(chan struct{}, 1)}
}

// Recover loads the watches a previous daemon left: a restart forgets none.
func (w *Watcher) Recover(ctx context.Context) error {
	ws, err := w.opts.Store.LoadReactionWatches(ctx)
	if err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.clk.Now()
	for _, rw := range ws {
		w.watches[rw.IssueID] = &watch{ReactionWatch: rw, nextAt: now}
	}
	if len(ws) > 0 {
		w.log.Info("watching the pull requests of handed-off issues again", "issues", len(ws))
	}
	return nil
}

// syncInterval is how often the watches are read from the store again.
const syncInterval = time.Minute

// sync makes the watches the store's: in a cluster, another daemon's hand-offs are
// watched here too (and a newer hand-off's session is the one to resume), and a watch
// another daemon ended (merged, escalated) ends here. A watch made here since the read
// began, or still to be written, stays.
func (w *Watcher) sync(ctx context.Context) {
	readAt := w.clk.Now()
	sctx, cancel := context.WithTimeout(ctx, storeTimeout)
	ws, err := w.opts.Store.LoadReactionWatches(sctx)
	cancel()
	if err != nil {
		w.log.Warn("reading the watched pull requests from the store failed", "error", err)
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	stored := make(map[string]bool, len(ws))
	now := w.clk.Now()
	for _, rw := range ws {
		stored[rw.IssueID] = true
		cur := w.watches[rw.IssueID]
		switch {
		case cur == nil:
			w.watches[rw.IssueID] = &watch{ReactionWatch: rw, nextAt: now}
		case rw.HandedOffAt.After(cur.HandedOffAt) && !cur.running:
			// Handed off again by another daemon: its session is the one to resume.
			w.watches[rw.IssueID] = &watch{ReactionWatch: rw, nextAt: now, head: cur.head, prURL: cur.prURL}
			w.dropDueLocked(rw.IssueID)
		}
	}
	if len(w.ops) > 0 {
		return // writes of ours not made yet: what the store lacks may be on its way
	}
	for id, cur := range w.watches {
		if !stored[id] && !cur.running && cur.HandedOffAt.Before(readAt) {
			delete(w.watches, id)
			w.dropDueLocked(id)
		}
	}
}

// Watch starts watching an issue a run just handed off, or watches it anew after a
// reaction run: the session to resume is the one that handed it off. It never blocks.
func (w *Watcher) Watch(rw store.ReactionWatch) {
	if !w.enabled() {
		return
	}
	w.mu.Lock()
	now := w.clk.Now()
	if rw.HandedOffAt.IsZero() {
		rw.HandedOffAt = now
	}
	old := w.watches[rw.IssueID]
	if old != nil && rw.Branch == "" {
		rw.Branch, rw.PRNumber = old.Branch, old.PRNumber
	}
	nw := &watch{ReactionWatch: rw, nextAt: now}
	if old != nil {
		nw.head, nw.prURL = old.head, old.prURL // states: read again from the store
	}
	w.watches[rw.IssueID] = nw
	w.dropDueLocked(rw.IssueID)
	w.ops = append(w.ops, w.saveOp(rw, 0))
	w.mu.Unlock()
	w.poke()
}

// SkipRemote notes that an issue handed off from an SSH host is not watched: its
// workspace is not on this machine. Said once per host.
func (w *Watcher) SkipRemote(identifier, host string) {
	if !w.enabled() {
		return
	}
	if _, said := w.remoteSaid.LoadOrStore(host, true); !said {
		w.log.Warn("handed-off issues of runs on SSH hosts are not watched for reactions: their workspaces are not on this machine",
			"issue_identifier", identifier, "host", host)
	}
}

// Forget stops watching an issue (it became terminal, or it is being worked on
// again without a reaction). Its reaction states stay unless the issue is gone.
// It never blocks: the store is written on the watcher's goroutine.
func (w *Watcher) Forget(issueID string, terminal bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, ok := w.watches[issueID]
	if !ok && !terminal {
		return
	}
	delete(w.watches, issueID)
	w.dropDueLocked(issueID)
	w.ops = append(w.ops, func(ctx context.Context) {
		var err error
		if terminal {
			err = w.opts.Store.DeleteReactions(ctx, issueID)
		} else {
			err = w.opts.Store.DeleteReactionWatch(ctx, issueID)
		}
		if err != nil {
			w.log.Warn("forgetting a watched pull request failed", "issue_id", issueID, "error", err)
		}
	})
	w.poke()
}

// Due has a value when Next may return a reaction; the scheduler selects on it.
func (w *Watcher) Due() <-chan struct{} { return w.dueCh }

// Next takes the oldest reaction offered and not yet taken.
func (w *Watcher) Next() (Due, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.due) == 0 {
		return Due{}, false
	}
	d := w.due[0]
	w.due = w.due[1:]
	if len(w.due) > 0 {
		w.signalDue()
	}
	return d, true
}

// Dispatched records that the scheduler starts d's run: it marks d's fingerprint
// dispatched in the store, once for all daemons and restarts. false means the run
// must not start: another daemon (or an earlier run) already acted on it, or the store
// could not say.
func (w *Watcher) Dispatched(ctx context.Context, d Due) bool {
	ok, err := w.opts.Store.MarkReactionDispatched(ctx, d.IssueID, d.Kind, d.Fingerprint, w.clk.Now())
	if err != nil {
		w.log.Error("recording a reaction's dispatch failed; not running it now", "issue_identifier", d.Identifier,
			"kind", d.Kind, "error", err)
		w.retryLater(d.IssueID)
		return false
	}
	w.mu.Lock()
	if wt := w.watches[d.IssueID]; wt != nil {
		// Paused until the run ends (a hand-off, or Ended); the states as the store
		// has them now are read at the next check.
		wt.running = ok
		wt.states = nil
		wt.gen++
		if !ok {
			wt.nextAt = latest(wt.nextAt, w.clk.Now().Add(baseInterval(w.opts.Config())))
		}
	}
	w.mu.Unlock()
	if ok {
		w.report(Event{Kind: d.Kind, What: "dispatched", IssueID: d.IssueID, Identifier: d.Identifier})
	}
	return ok
}

// Deferred gives d back: the scheduler could not run it now (why). The next check
// offers it again while the failure stands.
func (w *Watcher) Deferred(d Due, why string) {
	w.log.Debug("reaction deferred", "issue_identifier", d.Identifier, "kind", d.Kind, "why", why)
	w.retryLater(d.IssueID)
}

// Views lists the watched issues, by hand-off time.
func (w *Watcher) Views() []View {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]View, 0, len(w.watches))
	for _, wt := range w.watches {
		v := View{IssueID: wt.IssueID, Identifier: wt.Identifier, Branch: wt.Branch, PR: int64(wt.PRNumber),
			PRURL: wt.prURL, HeadSHA: wt.head, CI: string(wt.ci), FailingChecks: slices.Clone(wt.failing),
			ReviewState: wt.review, Comments: wt.comments, Running: wt.running, NextCheckAt: wt.nextAt,
			LastError: wt.lastErr, HandedOffAt: wt.HandedOffAt}
		if v.CI == "" {
			v.CI = "unknown"
		}
		if v.ReviewState == "" {
			v.ReviewState = "unknown"
		}
		for k, st := range wt.states {
			if st.Attempts > 0 {
				if v.Attempts == nil {
					v.Attempts = map[string]int{}
				}
				v.Attempts[k] = st.Attempts
			}
			v.Escalated = v.Escalated || st.Escalated
		}
		for _, d := range w.due {
			if d.IssueID == wt.IssueID {
				v.Pending = append(v.Pending, d.Kind)
			}
		}
		out = append(out, v)
	}
	slices.SortFunc(out, func(a, b View) int { return a.HandedOffAt.Compare(b.HandedOffAt) })
	return out
}

// Run checks the watched pull requests until ctx ends.
func (w *Watcher) Run(ctx context.Context) {
	var timer clock.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		next := w.checkDue(ctx)
		if ctx.Err() != nil {
			return
		}
		if timer != nil {
			timer.Stop()
			timer = nil
		}
		if !next.IsZero() {
			timer = w.clk.AfterFunc(max(next.Sub(w.clk.Now()), 0), w.poke)
		}
		select {
		case <-ctx.Done():
			return
		case <-w.wake:
		}
	}
}

// checkDue checks every watched issue whose time has come, one at a time, and returns
// when the next one is due (zero: none is watched).
func (w *Watcher) checkDue(ctx context.Context) time.Time {
	for ctx.Err() == nil {
		w.runOps(ctx)
		cfg := w.opts.Config()
		if !cfg.Reactions.Enabled() {
			// Off: look again in a while, in case a reload turns reactions on.
			return w.clk.Now().Add(time.Minute)
		}
		now := w.clk.Now()
		if !now.Before(w.syncAt) {
			w.sync(ctx)
			w.syncAt = now.Add(syncInterval)
		}
		w.mu.Lock()
		var pick *watch
		var next time.Time
		for _, wt := range w.watches {
			if wt.running {
				continue
			}
			if !wt.nextAt.After(now) && (pick == nil || wt.nextAt.Before(pick.nextAt)) {
				pick = wt
			}
			if next.IsZero() || wt.nextAt.Before(next) {
				next = wt.nextAt
			}
		}
		w.mu.Unlock()
		if pick == nil {
			return next
		}
		w.check(ctx, cfg, pick)
	}
	return time.Time{}
}

func (w *Watcher) enabled() bool {
	cfg := w.opts.Config()
	return cfg != nil && cfg.Reactions.Enabled()
}

// retryLater makes the issue's next check come one interval from now.
func (w *Watcher) retryLater(issueID string) {
	cfg := w.opts.Config()
	w.mu.Lock()
	if wt := w.watches[issueID]; wt != nil {
		wt.running = false
		wt.gen++
		wt.nextAt = latest(wt.nextAt, w.clk.Now().Add(baseInterval(cfg)))
	}
	w.mu.Unlock()
	w.poke()
}

func latest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// Ended tells the watcher that d's run ended without handing the issue off again
// (blocked, held, failed, stopped): the watch goes on. started says whether the agent
// got the failure at all; when it did not (the run failed before its first turn), the
// dispatch is taken back in the store, so the failure is offered again, and counts no
// attempt.
func (w *Watcher) Ended(d Due, started bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	wt := w.watches[d.IssueID]
	if wt != nil {
		wt.running = false
		wt.states = nil
		wt.gen++
		wt.nextAt = latest(wt.nextAt, w.clk.Now())
	}
	if !started {
		w.ops = append(w.ops, func(ctx context.Context) {
			if err := w.opts.Store.ReleaseReactionDispatch(ctx, d.IssueID, d.Kind, d.Fingerprint); err != nil {
				w.log.Error("taking back a reaction that never reached the agent failed; it is not sent again",
					"issue_identifier", d.Identifier, "kind", d.Kind, "error", err)
			}
		})
	}
	w.poke()
}

func (w *Watcher) poke() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *Watcher) signalDue() {
	select {
	case w.dueCh <- struct{}{}:
	default:
	}
}

// offerLocked queues d, replacing an older offer of the same issue and kind. w.mu is
// held.
func (w *Watcher) offerLocked(d Due) {
	w.due = slices.DeleteFunc(w.due, func(o Due) bool { return o.IssueID == d.IssueID && o.Kind == d.Kind })
	w.due = append(w.due, d)
	w.signalDue()
}

func (w *Watcher) dropDueLocked(issueID string) {
	w.due = slices.DeleteFunc(w.due, func(o Due) bool { return o.IssueID == issueID })
}

// runOps runs the store writes queued by Watch and Forget, in order.
func (w *Watcher) runOps(ctx context.Context) {
	w.mu.Lock()
	ops := w.ops
	w.ops = nil
	w.mu.Unlock()
	for _, op := range ops {
		octx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
		op(octx)
		cancel()
	}
}

// storeTimeout bounds one store call of the watcher's.
const storeTimeout = 30 * time.Second

// saveOp is the op that writes rw; a failed write is tried again at the next check (at
// most maxSaveTries times): until it is written, sync keeps the watch.
func (w *Watcher) saveOp(rw store.ReactionWatch, tries int) func(context.Context) {
	return func(ctx context.Context) {
		err := w.opts.Store.SaveReactionWatch(ctx, rw)
		if err == nil {
			return
		}
		if tries+1 >= maxSaveTries {
			w.log.Error("persisting a watched pull request failed; a restart would forget it", "issue_identifier", rw.Identifier, "error", err)
			return
		}
		w.log.Warn("persisting a watched pull request failed; trying again", "issue_identifier", rw.Identifier, "error", err)
		w.mu.Lock()
		w.ops = append(w.ops, w.saveOp(rw, tries+1))
		w.mu.Unlock()
	}
}

// maxSaveTries bounds the writes of one watch.
const maxSaveTries = 10

func (w *Watcher) persist(ctx context.Context, rw store.ReactionWatch) {
	if err := w.opts.Store.SaveReactionWatch(ctx, rw); err != nil {
		w.log.Error("persisting a watched pull request failed; a restart would forget it", "issue_identifier", rw.Identifier, "error", err)
	}
}

func (w *Watcher) report(e Event) {
	if w.opts.Report != nil {
		w.opts.Report(e)
	}
}

// baseInterval is the shortest poll interval of the reactions on: the unit of the
// per-issue request budget.
func baseInterval(cfg *config.Config) time.Duration {
	d := time.Duration(0)
	if c := cfg.Reactions.CI; c != nil {
		d = c.PollInterval
	}
	if r := cfg.Reactions.Review; r != nil && (d == 0 || r.PollInterval < d) {
		d = r.PollInterval
	}
	if d <= 0 {
		d = time.Minute
	}
	return d
}
