package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"sortie/internal/clock"
	"sortie/internal/config"
	"sortie/internal/store"
	"sortie/internal/workflow/engine"
)

// Store is the part of the store the Desk uses.
type Store interface {
	PendingCheckpoints(ctx context.Context) ([]store.Checkpoint, error)
	AnswerCheckpoint(ctx context.Context, a store.CheckpointAnswer) (store.Checkpoint, error)
	LoadWorkflowSessions(ctx context.Context) ([]store.WorkflowSession, error)
	EndIssueWorkflows(ctx context.Context, issueID string, at time.Time) ([]string, error)
}

// Engine is the workflow engine's side of the Desk (*engine.Engine): forgetting an
// issue's sessions in memory, and the hand-off gate (the gates of an issue's workflow
// sessions no human answered, and the trace entry of a hand-off refused for them).
type Engine interface {
	ForgetIssue(issueID string) []string
	HandoffBlockers(ctx context.Context, issueID, want string) ([]engine.Blocker, error)
	TraceHandoffRefused(ctx context.Context, c engine.Caller, bs []engine.Blocker, how string)
}

var _ Engine = (*engine.Engine)(nil)

// Event is something that happened to a checkpoint, for the metrics and the live feed
// (the orchestrator's Activity of kind "checkpoint"): Result is armed, answered,
// resolved or abandoned (store.ResolvedAbandoned).
type Event struct {
	Time       time.Time
	IssueID    string
	Identifier string
	RunID      int64
	Result     string
	Message    string
}

// Options are what a Desk is built from.
type Options struct {
	// Store holds the workflow engine's checkpoints and sessions. Required.
	Store Store
	// Config returns the configuration in force: who may answer in tracker comments
	// (tracker.kind, workflows.answerers). Required.
	Config func() *config.Config
	Clock  clock.Clock  // default clock.Real
	Logger *slog.Logger // default slog.Default
	// DashboardURL is the dashboard's base URL, linked from checkpoint comments.
	// Optional.
	DashboardURL string
	// Report receives every Event synchronously, on whichever goroutine it happened:
	// it must be quick and must not call back into the Desk. Optional.
	Report func(Event)
}

// Answer errors.
var (
	// ErrCheckpointNotFound: the issue has no pending checkpoint with that id.
	ErrCheckpointNotFound = errors.New("no such pending checkpoint")
	// ErrCheckpointAnswered: the checkpoint has an answer already.
	ErrCheckpointAnswered = errors.New("checkpoint already answered")
	// ErrCheckpointsOff: no workflow library is configured.
	ErrCheckpointsOff = errors.New("structured workflows are not configured (workflows.dir)")
)

// OptionError is an answer naming an option the checkpoint does not have.
type OptionError struct {
	Option, Checkpoint string
	Valid              []string
}

func (e *OptionError) Error() string {
	return fmt.Sprintf("%q is not an option of checkpoint %s (options: %s)", e.Option, e.Checkpoint, strings.Join(e.Valid, ", "))
}

// autoAdvanceTimeout bounds the store write of an auto-advance.
const autoAdvanceTimeout = 30 * time.Second

// Desk holds the pending checkpoints of the daemon's issues, kept current by the
// engine's hooks, by answers and by the cluster's sync, so that a snapshot needs no
// database read; it answers them, runs their auto-advance timers and tells the
// orchestrator's loop which issues were answered. Its methods are safe for concurrent
// use. Create it with New; Close it when the daemon stops.
type Desk struct {
	opts Options
	log  *slog.Logger
	clk  clock.Clock
	eng  Engine // nil: no engine (tests); sessions end in the store only, no gate

	// ctx ends with Close: the store writes of auto-advances use it.
	ctx    context.Context
	cancel context.CancelFunc
	// advancing counts the auto-advances under way, for Close to wait for.
	advancing sync.WaitGroup
	// wake has a value when answered is not empty (capacity one: never blocks).
	wake chan struct{}

	mu      sync.Mutex
	closed  bool
	pending map[int64]store.Checkpoint
	timers  map[int64]clock.Timer
	seen    map[string]bool // tracker comments already read, by issue id + "\x00" + comment id
	// readAfter is the last issue id whose comments ReadAnswers read: the next read goes
	// on from the issue after it.
	readAfter string
	// refused are the newest tracker answers refused per issue id (AnswerRefusal), for
	// the issue page; at most maxRefused each.
	refused map[string][]RefusedAnswer
	// gen counts this daemon's changes to pending, so that a cluster's sync from the
	// store (ReadShared) never undoes a change made while it read.
	gen uint64
	// answered are the issues answered since the loop last took them, oldest first,
	// each once.
	answered []string
}

// New returns a Desk and the engine buildEngine builds, given the hooks that keep the
// Desk current (engine.Hooks.Armed and Resolved); buildEngine is called once, before New
// returns, and may return a nil Engine (no engine: an issue's sessions are then ended in
// the store only, and no hand-off is gated). See the package doc for why the engine is
// built here.
func New(opts Options, buildEngine func(engine.Hooks) (Engine, error)) (*Desk, error) {
	if opts.Store == nil || opts.Config == nil {
		return nil, errors.New("checkpoint: Store and Config are required")
	}
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	d := &Desk{opts: opts, log: opts.Logger, clk: opts.Clock, wake: make(chan struct{}, 1),
		pending: map[int64]store.Checkpoint{}, timers: map[int64]clock.Timer{}, seen: map[string]bool{}}
	d.ctx, d.cancel = context.WithCancel(context.Background())
	if buildEngine != nil {
		eng, err := buildEngine(engine.Hooks{Armed: d.armed, Resolved: d.resolved})
		if err != nil {
			d.cancel()
			return nil, err
		}
		d.eng = eng
	}
	return d, nil
}

// Close stops every auto-advance timer, cancels the store write of any auto-advance
// already under way and waits for it. After Close nothing the Desk started runs, and
// nothing starts: the engine's hooks, Recover and ReadShared arm no more timers.
// Answers through AnswerCheckpoint or ReadAnswers still work. Close is idempotent.
func (d *Desk) Close() {
	d.mu.Lock()
	d.closed = true
	for id := range d.timers {
		d.stopTimerLocked(id)
	}
	d.mu.Unlock()
	d.cancel()
	d.advancing.Wait()
}

func (d *Desk) report(e Event) {
	if d.opts.Report == nil {
		return
	}
	if e.Time.IsZero() {
		e.Time = d.clk.Now()
	}
	d.opts.Report(e)
}

// armed is the engine's Armed hook: the agent of c entered an activity with
// checkpoints. It schedules the auto-advance of non-blocking ones.
func (d *Desk) armed(c engine.Caller, rows []store.Checkpoint) {
	d.mu.Lock()
	if len(rows) > 0 {
		sid := rows[0].SessionID
		for id, p := range d.pending {
			if p.SessionID == sid {
				delete(d.pending, id)
				d.stopTimerLocked(id)
			}
		}
	}
	for _, r := range rows {
		d.pending[r.ID] = r
		d.scheduleLocked(r)
	}
	d.gen++
	d.mu.Unlock()
	for _, r := range rows {
		d.report(Event{IssueID: c.IssueID, Identifier: c.Identifier, RunID: c.RunID,
			Result: "armed", Message: r.Activity + "/" + r.CheckpointID})
	}
}

// resolved is the engine's Resolved hook: the agent answered respond_checkpoint.
func (d *Desk) resolved(c engine.Caller, row store.Checkpoint) {
	d.mu.Lock()
	delete(d.pending, row.ID)
	d.stopTimerLocked(row.ID)
	d.gen++
	d.mu.Unlock()
	d.report(Event{IssueID: c.IssueID, Identifier: c.Identifier, RunID: c.RunID,
		Result: "resolved", Message: row.CheckpointID + ": " + row.Resolution})
}

func (d *Desk) stopTimerLocked(id int64) {
	if t, ok := d.timers[id]; ok {
		t.Stop()
		delete(d.timers, id)
	}
}

// scheduleLocked arms the timer of an unanswered non-blocking checkpoint.
func (d *Desk) scheduleLocked(r store.Checkpoint) {
	at, ok := r.AutoAdvanceAt()
	if !ok || r.Answered() || d.closed {
		return
	}
	d.stopTimerLocked(r.ID)
	d.timers[r.ID] = d.clk.AfterFunc(at.Sub(d.clk.Now()), func() { d.autoAdvance(r) })
}

// autoAdvance answers r with its default option: its timer fired.
func (d *Desk) autoAdvance(r store.Checkpoint) {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return
	}
	d.advancing.Add(1) // under mu, before Close can start waiting
	d.mu.Unlock()
	defer d.advancing.Done()
	ctx, cancel := context.WithTimeout(d.ctx, autoAdvanceTimeout)
	defer cancel()
	_, err := d.answer(ctx, r, r.DefaultOption, "auto-advance", store.AnswerAutoAdvance)
	if err != nil && !errors.Is(err, ErrCheckpointAnswered) && !errors.Is(err, ErrCheckpointNotFound) {
		d.log.Warn("auto-advancing a checkpoint failed", "issue_identifier", r.Identifier, "checkpoint", r.CheckpointID, "error", err)
	}
}

// Pending lists every pending checkpoint, oldest first: a snapshot's.
func (d *Desk) Pending() []store.CheckpointView {
	rows := d.rows("")
	out := make([]store.CheckpointView, len(rows))
	for i, r := range rows {
		out[i] = r.View()
	}
	return out
}

// rows returns the pending checkpoints of issueID ("": of every issue), oldest first.
func (d *Desk) rows(issueID string) []store.Checkpoint {
	d.mu.Lock()
	out := make([]store.Checkpoint, 0, len(d.pending))
	for _, c := range d.pending {
		if issueID == "" || c.IssueID == issueID {
			out = append(out, c)
		}
	}
	d.mu.Unlock()
	slices.SortFunc(out, func(a, b store.Checkpoint) int {
		if c := a.IssuedAt.Compare(b.IssuedAt); c != 0 {
			return c
		}
		return int(a.ID - b.ID)
	})
	return out
}

// Awaiting returns the oldest pending checkpoint of the issue that no one has
// answered: the reason to end its run after a turn, and to keep it held.
func (d *Desk) Awaiting(issueID string) (store.Checkpoint, bool) {
	for _, c := range d.rows(issueID) {
		if !c.Answered() {
			return c, true
		}
	}
	return store.Checkpoint{}, false
}

// AnswerCheckpoint records a human's answer to the pending checkpoint checkpointID of
// the issue identifier: by names who answered, source how (store.AnswerDashboard,
// AnswerAPI, AnswerTracker). It fails with ErrCheckpointNotFound,
// ErrCheckpointAnswered or an *OptionError. The issue is then announced on Answered.
// A nil Desk (structured workflows off) answers ErrCheckpointsOff.
func (d *Desk) AnswerCheckpoint(ctx context.Context, identifier, checkpointID, option, by, source string) (store.CheckpointView, error) {
	if d == nil {
		return store.CheckpointView{}, ErrCheckpointsOff
	}
	for _, c := range d.rows("") {
		if strings.EqualFold(c.Identifier, identifier) && c.CheckpointID == checkpointID {
			got, err := d.answer(ctx, c, option, by, source)
			if err != nil {
				return store.CheckpointView{}, err
			}
			return got.View(), nil
		}
	}
	return store.CheckpointView{}, fmt.Errorf("%s has no pending checkpoint %q: %w", identifier, checkpointID, ErrCheckpointNotFound)
}

// answer validates and stores an answer, then announces the issue on Answered.
func (d *Desk) answer(ctx context.Context, row store.Checkpoint, option, by, source string) (store.Checkpoint, error) {
	valid := make([]string, len(row.Options))
	for i, op := range row.Options {
		valid[i] = op.ID
	}
	if !slices.Contains(valid, option) {
		return store.Checkpoint{}, &OptionError{Option: option, Checkpoint: row.CheckpointID, Valid: valid}
	}
	if by == "" {
		by = source
	}
	got, err := d.opts.Store.AnswerCheckpoint(ctx, store.CheckpointAnswer{SessionID: row.SessionID, CheckpointID: row.CheckpointID,
		Option: option, By: by, Source: source, At: d.clk.Now()})
	switch {
	case errors.Is(err, store.ErrConflict):
		return store.Checkpoint{}, fmt.Errorf("%s: checkpoint %s was answered already (%w)", row.Identifier, row.CheckpointID, ErrCheckpointAnswered)
	case errors.Is(err, store.ErrNotFound):
		return store.Checkpoint{}, fmt.Errorf("%s: checkpoint %s is no longer pending (%w)", row.Identifier, row.CheckpointID, ErrCheckpointNotFound)
	case err != nil:
		return store.Checkpoint{}, fmt.Errorf("recording the answer: %w", err)
	}
	d.mu.Lock()
	if _, ok := d.pending[got.ID]; ok {
		d.pending[got.ID] = got
		d.gen++
	}
	d.stopTimerLocked(got.ID)
	d.mu.Unlock()
	d.log.Info("checkpoint answered", "issue_identifier", row.Identifier, "checkpoint", row.CheckpointID,
		"option", option, "by", by, "source", source)
	d.report(Event{IssueID: row.IssueID, Identifier: row.Identifier,
		Result: "answered", Message: fmt.Sprintf("%s: %s (by %s via %s)", row.CheckpointID, option, by, source)})
	d.announce(row.IssueID)
	return got, nil
}

// announce adds issueID to the answered issues and wakes the loop. It never blocks
// and starts nothing: an announcement the loop has not taken yet is not lost, and
// announcing an issue twice before the loop takes it announces it once.
func (d *Desk) announce(issueID string) {
	d.mu.Lock()
	if !slices.Contains(d.answered, issueID) {
		d.answered = append(d.answered, issueID)
	}
	d.mu.Unlock()
	d.signal()
}

func (d *Desk) signal() {
	select {
	case d.wake <- struct{}{}:
	default: // a wake-up is pending already
	}
}

// Answered has a value when an issue's checkpoint was answered and NextAnswered has the
// issue: the orchestrator's loop selects on it. Its capacity is one; a value may be
// left over after NextAnswered took the last issue, so NextAnswered may then report
// none.
func (d *Desk) Answered() <-chan struct{} { return d.wake }

// NextAnswered takes the oldest issue answered since the loop last took it. When more
// are left, Answered has a value again.
func (d *Desk) NextAnswered() (issueID string, ok bool) {
	d.mu.Lock()
	if len(d.answered) == 0 {
		d.mu.Unlock()
		return "", false
	}
	issueID = d.answered[0]
	d.answered = slices.Delete(d.answered, 0, 1)
	more := len(d.answered) > 0
	d.mu.Unlock()
	if more {
		d.signal()
	}
	return issueID, true
}

// EndIssue ends the workflow sessions of an issue that left the active states or was
// handed off (why says which): a later run of the issue must start its workflow afresh,
// not be held on, or told the answer to, the question of a session no agent will
// continue. Its pending checkpoints are resolved as abandoned (an answer already given
// stays, as the issue's history, with the trace), its sessions stop binding it and
// their tokens stop verifying, and its auto-advance timers stop. A store error is
// logged; the in-memory state is dropped regardless.
func (d *Desk) EndIssue(ctx context.Context, issueID, identifier, why string) {
	// The engine first: a call still under way could otherwise save its session back.
	var forgotten []string
	if d.eng != nil {
		forgotten = d.eng.ForgetIssue(issueID)
	}
	ended, err := d.opts.Store.EndIssueWorkflows(ctx, issueID, d.clk.Now())
	if err != nil {
		d.log.Error("ending the workflow sessions of an issue failed; after a restart its old checkpoints may hold it again",
			"issue_identifier", identifier, "error", err)
	}
	dropped := d.drop(issueID)
	if len(ended)+len(forgotten)+len(dropped) == 0 {
		return
	}
	d.log.Info("workflow sessions ended", "issue_identifier", identifier, "why", why,
		"sessions", max(len(ended), len(forgotten)), "pending_checkpoints", len(dropped))
	for _, c := range dropped {
		d.report(Event{IssueID: issueID, Identifier: identifier, Result: store.ResolvedAbandoned, Message: c.CheckpointID + ": " + why})
	}
}

// drop forgets the pending checkpoints of an issue, their auto-advance timers and the
// tracker comments read for them, and returns the checkpoints.
func (d *Desk) drop(issueID string) []store.Checkpoint {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []store.Checkpoint
	for id, c := range d.pending {
		if c.IssueID == issueID {
			out = append(out, c)
			delete(d.pending, id)
			d.gen++
			d.stopTimerLocked(id)
		}
	}
	for key := range d.seen {
		if strings.HasPrefix(key, issueID+"\x00") {
			delete(d.seen, key)
		}
	}
	slices.SortFunc(out, func(a, b store.Checkpoint) int { return int(a.ID - b.ID) })
	return out
}

// Recover loads the pending checkpoints at start-up and re-arms their auto-advance
// timers (past-due ones fire at once).
func (d *Desk) Recover(ctx context.Context) error {
	rows, err := d.opts.Store.PendingCheckpoints(ctx)
	if err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, r := range rows {
		if r.IssueID == "" {
			continue // a standalone session's
		}
		d.pending[r.ID] = r
		d.scheduleLocked(r)
	}
	return nil
}

// ReadShared reads the pending checkpoints of a cluster's shared store, and returns
// the function that brings the Desk in line with them: armed, answered or resolved by
// another daemon's agents, dashboard or API. Answered on another daemon, a
// checkpoint's held issue is resumed there; here it is only shown. apply does nothing
// when the Desk changed between the read and apply (the next read syncs). It reads
// off the loop; the loop calls apply.
func (d *Desk) ReadShared(ctx context.Context) (apply func(), err error) {
	d.mu.Lock()
	gen := d.gen
	d.mu.Unlock()
	rows, err := d.opts.Store.PendingCheckpoints(ctx)
	if err != nil {
		return nil, err
	}
	return func() { d.sync(gen, rows) }, nil
}

func (d *Desk) sync(gen uint64, rows []store.Checkpoint) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.gen != gen {
		return // changed here while it was read
	}
	shared := make(map[int64]bool, len(rows))
	for _, r := range rows {
		if r.IssueID == "" {
			continue // a standalone session's
		}
		shared[r.ID] = true
		old, ok := d.pending[r.ID]
		d.pending[r.ID] = r
		switch {
		case !ok:
			d.scheduleLocked(r)
		case r.Answered() && !old.Answered():
			d.stopTimerLocked(r.ID)
		}
	}
	for id := range d.pending {
		if !shared[id] {
			d.stopTimerLocked(id)
			delete(d.pending, id)
		}
	}
}
