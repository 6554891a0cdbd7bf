package orchestrator

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"sortie/internal/clock"
	"sortie/internal/config"
	"sortie/internal/store"
	"sortie/internal/tracker"
	"sortie/internal/workflow/engine"
)

// Structured-workflow checkpoints (docs/workflows.md, "Checkpoints and humans"). The
// workflow engine arms a checkpoint when the agent enters its activity; when the agent's
// turn ends with a checkpoint still unanswered, the worker stops and the issue is held
// as awaiting_input: the tracker gets a comment with the options, the notification
// backends an alert, and the dashboard shows the question. A human answers on the
// dashboard, through the API, or with a "/sortie choose <option>" tracker comment; the
// answer is stored, the hold lifts and the agent's session is resumed with a prompt
// that names the answer. Non-blocking checkpoints are answered with their default
// option by the daemon's timer after autoAdvanceMs.

// CheckpointStore is the part of the store the checkpoint flow uses.
type CheckpointStore interface {
	PendingCheckpoints(ctx context.Context) ([]store.Checkpoint, error)
	AnswerCheckpoint(ctx context.Context, a store.CheckpointAnswer) (store.Checkpoint, error)
	LoadWorkflowSessions(ctx context.Context) ([]store.WorkflowSession, error)
	EndIssueWorkflows(ctx context.Context, issueID string, at time.Time) ([]string, error)
}

// SessionForgetter is the workflow engine's side of ending an issue's workflow
// sessions: it forgets them in memory (*engine.Engine).
type SessionForgetter interface {
	ForgetIssue(issueID string) []string
}

var _ SessionForgetter = (*engine.Engine)(nil)

// holdAwaiting is the hold reason of an issue whose checkpoint waits for a human.
const holdAwaiting = "awaiting_input"

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

// CheckpointView is a pending checkpoint in a Snapshot.
type CheckpointView = store.CheckpointView

func checkpointView(c store.Checkpoint) CheckpointView { return c.View() }

// autoAdvanceAt is when a non-blocking checkpoint's default option is taken.
func autoAdvanceAt(c store.Checkpoint) (time.Time, bool) { return c.AutoAdvanceAt() }

// checkpoints is the orchestrator's view of pending checkpoints, kept current by the
// engine's hooks and by answers, so snapshots need no database read. Safe for
// concurrent use.
type checkpoints struct {
	mu      sync.Mutex
	pending map[int64]store.Checkpoint
	timers  map[int64]clock.Timer
	seen    map[string]bool // tracker comment ids already read
	// readAfter is the last issue id whose comments a tick read for answers: the next
	// tick goes on from the issue after it (loop only).
	readAfter string
	engine    SessionForgetter // nil until SetWorkflowSessions
	// refused are the newest tracker answers refused per issue id (answerRefusal), for
	// the issue page; at most maxRefused each.
	refused map[string][]RefusedAnswer
	// gen counts this daemon's changes to pending, so that a cluster's sync from the
	// store (syncCheckpoints) never undoes a change made while it read.
	gen uint64
}

// RefusedAnswer is a "/sortie choose" tracker comment that did not answer a checkpoint
// because its author may not (answerRefusal).
type RefusedAnswer struct {
	Author string    `json:"author"`
	Option string    `json:"option"`
	Reason string    `json:"reason"`
	At     time.Time `json:"at"` // the comment's time, or when it was read
}

// maxRefused bounds the refused answers kept per issue.
const maxRefused = 20

// RefusedAnswers returns the newest tracker answers refused for issueID, oldest first.
// Safe from any goroutine.
func (o *Orchestrator) RefusedAnswers(issueID string) []RefusedAnswer {
	o.cp.mu.Lock()
	defer o.cp.mu.Unlock()
	return slices.Clone(o.cp.refused[issueID])
}

// refuseAnswer records a refused tracker answer.
func (o *Orchestrator) refuseAnswer(issueID string, ra RefusedAnswer) {
	o.cp.mu.Lock()
	defer o.cp.mu.Unlock()
	if o.cp.refused == nil {
		o.cp.refused = map[string][]RefusedAnswer{}
	}
	list := append(o.cp.refused[issueID], ra)
	if len(list) > maxRefused {
		list = list[len(list)-maxRefused:]
	}
	o.cp.refused[issueID] = list
}

// SetWorkflowSessions gives the orchestrator the workflow engine, so that ending an
// issue's workflow sessions (endWorkflows) also forgets them in the engine's memory;
// without it they are ended in the store only, and the engine forgets them at its next
// restart. Call it before Run.
func (o *Orchestrator) SetWorkflowSessions(f SessionForgetter) {
	o.cp.mu.Lock()
	o.cp.engine = f
	o.cp.mu.Unlock()
}

// endWorkflows ends the workflow sessions of an issue that left the active states or
// was handed off (why says which): a later run of the issue must start its workflow
// afresh, not be held on, or told the answer to, the question of a session no agent
// will continue. Its pending checkpoints are resolved as abandoned (an answer already
// given stays, as the issue's history, with the trace), its sessions stop binding it and
// their tokens stop verifying, and its auto-advance timers stop. A store error is
// logged; the in-memory state is dropped regardless.
func (o *Orchestrator) endWorkflows(ctx context.Context, issueID, identifier, why string) {
	if o.opts.Checkpoints == nil {
		return
	}
	o.cp.mu.Lock()
	eng := o.cp.engine
	o.cp.mu.Unlock()
	// The engine first: a call still under way could otherwise save its session back.
	var forgotten []string
	if eng != nil {
		forgotten = eng.ForgetIssue(issueID)
	}
	ended, err := o.opts.Checkpoints.EndIssueWorkflows(ctx, issueID, o.clk.Now())
	if err != nil {
		o.log.Error("ending the workflow sessions of an issue failed; after a restart its old checkpoints may hold it again",
			"issue_identifier", identifier, "error", err)
	}
	dropped := o.dropPending(issueID)
	if len(ended)+len(forgotten)+len(dropped) == 0 {
		return
	}
	o.log.Info("workflow sessions ended", "issue_identifier", identifier, "why", why,
		"sessions", max(len(ended), len(forgotten)), "pending_checkpoints", len(dropped))
	for _, c := range dropped {
		o.report(Activity{Kind: ActivityCheckpoint, IssueID: issueID, Identifier: identifier,
			Result: store.ResolvedAbandoned, Message: c.CheckpointID + ": " + why})
	}
}

// dropPending forgets the pending checkpoints of an issue, their auto-advance timers
// and the tracker comments read for them, and returns the checkpoints.
func (o *Orchestrator) dropPending(issueID string) []store.Checkpoint {
	o.cp.mu.Lock()
	defer o.cp.mu.Unlock()
	var out []store.Checkpoint
	for id, c := range o.cp.pending {
		if c.IssueID == issueID {
			out = append(out, c)
			delete(o.cp.pending, id)
			o.cp.gen++
			o.stopTimerLocked(id)
		}
	}
	for key := range o.cp.seen {
		if strings.HasPrefix(key, issueID+"\x00") {
			delete(o.cp.seen, key)
		}
	}
	slices.SortFunc(out, func(a, b store.Checkpoint) int { return int(a.ID - b.ID) })
	return out
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

// CheckpointsArmed is the engine's Armed hook: the agent of c entered an activity
// with checkpoints. It schedules the auto-advance of non-blocking ones.
func (o *Orchestrator) CheckpointsArmed(c engine.Caller, rows []store.Checkpoint) {
	o.cp.mu.Lock()
	if len(rows) > 0 {
		sid := rows[0].SessionID
		for id, p := range o.cp.pending {
			if p.SessionID == sid {
				delete(o.cp.pending, id)
				o.stopTimerLocked(id)
			}
		}
	}
	for _, r := range rows {
		o.cp.pending[r.ID] = r
		o.scheduleAutoAdvanceLocked(r)
	}
	o.cp.gen++
	o.cp.mu.Unlock()
	for _, r := range rows {
		o.report(Activity{Kind: ActivityCheckpoint, IssueID: c.IssueID, Identifier: c.Identifier, RunID: c.RunID,
			Result: "armed", Message: r.Activity + "/" + r.CheckpointID})
	}
}

// CheckpointResolved is the engine's Resolved hook: the agent answered respond_checkpoint.
func (o *Orchestrator) CheckpointResolved(c engine.Caller, row store.Checkpoint) {
	o.cp.mu.Lock()
	delete(o.cp.pending, row.ID)
	o.stopTimerLocked(row.ID)
	o.cp.gen++
	o.cp.mu.Unlock()
	o.report(Activity{Kind: ActivityCheckpoint, IssueID: c.IssueID, Identifier: c.Identifier, RunID: c.RunID,
		Result: "resolved", Message: row.CheckpointID + ": " + row.Resolution})
}

func (o *Orchestrator) stopTimerLocked(id int64) {
	if t, ok := o.cp.timers[id]; ok {
		t.Stop()
		delete(o.cp.timers, id)
	}
}

// scheduleAutoAdvanceLocked arms the timer of an unanswered non-blocking checkpoint.
func (o *Orchestrator) scheduleAutoAdvanceLocked(r store.Checkpoint) {
	at, ok := autoAdvanceAt(r)
	if !ok || r.Answered() {
		return
	}
	o.stopTimerLocked(r.ID)
	o.cp.timers[r.ID] = o.clk.AfterFunc(at.Sub(o.clk.Now()), func() {
		_, err := o.answer(context.Background(), r, r.DefaultOption, "auto-advance", store.AnswerAutoAdvance)
		if err != nil && !errors.Is(err, ErrCheckpointAnswered) && !errors.Is(err, ErrCheckpointNotFound) {
			o.log.Warn("auto-advancing a checkpoint failed", "issue_identifier", r.Identifier, "checkpoint", r.CheckpointID, "error", err)
		}
	})
}

// pendingFor returns the pending checkpoints of an issue, oldest first.
func (o *Orchestrator) pendingFor(issueID string) []store.Checkpoint {
	o.cp.mu.Lock()
	defer o.cp.mu.Unlock()
	var out []store.Checkpoint
	for _, c := range o.cp.pending {
		if c.IssueID == issueID {
			out = append(out, c)
		}
	}
	slices.SortFunc(out, func(a, b store.Checkpoint) int { return a.IssuedAt.Compare(b.IssuedAt) })
	return out
}

// pendingViews lists every pending checkpoint for a snapshot, oldest first.
func (o *Orchestrator) pendingViews() []CheckpointView {
	o.cp.mu.Lock()
	rows := make([]store.Checkpoint, 0, len(o.cp.pending))
	for _, c := range o.cp.pending {
		rows = append(rows, c)
	}
	o.cp.mu.Unlock()
	slices.SortFunc(rows, func(a, b store.Checkpoint) int {
		if c := a.IssuedAt.Compare(b.IssuedAt); c != 0 {
			return c
		}
		return int(a.ID - b.ID)
	})
	out := make([]CheckpointView, len(rows))
	for i, r := range rows {
		out[i] = checkpointView(r)
	}
	return out
}

// AnswerCheckpoint records a human's answer to the pending checkpoint checkpointID of
// the issue identifier: by names who answered, source how (store.AnswerDashboard,
// AnswerAPI, AnswerTracker). The issue's agent is resumed with the answer. It is safe
// to call from any goroutine.
func (o *Orchestrator) AnswerCheckpoint(ctx context.Context, identifier, checkpointID, option, by, source string) (CheckpointView, error) {
	if o.opts.Checkpoints == nil {
		return CheckpointView{}, ErrCheckpointsOff
	}
	var row store.Checkpoint
	found := false
	for _, c := range o.pendingViewsRows() {
		if strings.EqualFold(c.Identifier, identifier) && c.CheckpointID == checkpointID {
			row, found = c, true
			break
		}
	}
	if !found {
		return CheckpointView{}, fmt.Errorf("%s has no pending checkpoint %q: %w", identifier, checkpointID, ErrCheckpointNotFound)
	}
	got, err := o.answer(ctx, row, option, by, source)
	if err != nil {
		return CheckpointView{}, err
	}
	return checkpointView(got), nil
}

func (o *Orchestrator) pendingViewsRows() []store.Checkpoint {
	o.cp.mu.Lock()
	defer o.cp.mu.Unlock()
	rows := make([]store.Checkpoint, 0, len(o.cp.pending))
	for _, c := range o.cp.pending {
		rows = append(rows, c)
	}
	slices.SortFunc(rows, func(a, b store.Checkpoint) int { return a.IssuedAt.Compare(b.IssuedAt) })
	return rows
}

// answer validates and stores an answer, then wakes the loop to resume the agent.
func (o *Orchestrator) answer(ctx context.Context, row store.Checkpoint, option, by, source string) (store.Checkpoint, error) {
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
	got, err := o.opts.Checkpoints.AnswerCheckpoint(ctx, store.CheckpointAnswer{SessionID: row.SessionID, CheckpointID: row.CheckpointID,
		Option: option, By: by, Source: source, At: o.clk.Now()})
	switch {
	case errors.Is(err, store.ErrConflict):
		return store.Checkpoint{}, fmt.Errorf("%s: checkpoint %s was answered already (%w)", row.Identifier, row.CheckpointID, ErrCheckpointAnswered)
	case errors.Is(err, store.ErrNotFound):
		return store.Checkpoint{}, fmt.Errorf("%s: checkpoint %s is no longer pending (%w)", row.Identifier, row.CheckpointID, ErrCheckpointNotFound)
	case err != nil:
		return store.Checkpoint{}, fmt.Errorf("recording the answer: %w", err)
	}
	o.cp.mu.Lock()
	if _, ok := o.cp.pending[got.ID]; ok {
		o.cp.pending[got.ID] = got
		o.cp.gen++
	}
	o.stopTimerLocked(got.ID)
	o.cp.mu.Unlock()
	o.log.Info("checkpoint answered", "issue_identifier", row.Identifier, "checkpoint", row.CheckpointID,
		"option", option, "by", by, "source", source)
	o.report(Activity{Kind: ActivityCheckpoint, IssueID: row.IssueID, Identifier: row.Identifier,
		Result: "answered", Message: fmt.Sprintf("%s: %s (by %s via %s)", row.CheckpointID, option, by, source)})
	select {
	case o.answers <- row.IssueID:
	default:
		// The loop is busy; wake it without blocking the caller.
		go func() { o.answers <- row.IssueID }()
	}
	return got, nil
}

// checkpointAnswered runs on the loop after an answer: a held issue is resumed at once.
// A running issue's worker sees the answer after its turn; an issue whose worker is
// just exiting is resumed by handleExit, which re-checks the answer.
func (o *Orchestrator) checkpointAnswered(ctx context.Context, issueID string) {
	h, ok := o.holds[issueID]
	if !ok || h.reason != holdAwaiting {
		return
	}
	for _, c := range o.pendingFor(issueID) {
		if !c.Answered() {
			return // another checkpoint of the issue still waits
		}
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
	for _, c := range o.pendingFor(issueID) {
		if !c.Answered() {
			return c, true
		}
	}
	return store.Checkpoint{}, false
}

// holdForCheckpoint parks an issue whose run ended on an unanswered checkpoint, or
// resumes it at once when the answer arrived while the run was ending.
func (o *Orchestrator) holdForCheckpoint(ctx context.Context, is tracker.Issue, ex workerExit, cp store.Checkpoint) {
	if _, still := o.awaitingCheckpoint(is.ID); !still {
		o.resumeAfterAnswer(ctx, is.ID, is.Identifier)
		return
	}
	msg := checkpointQuestion(cp)
	o.addHold(is, ex, holdAwaiting, msg)
	o.comment(is, "checkpoint", checkpointComment(cp, is.Identifier, o.dashboardURL(is.Identifier), commentsAnswer(o.opts.Config())))
}

// dashboardURL is where a human answers, "" when unknown.
func (o *Orchestrator) dashboardURL(identifier string) string {
	if o.opts.DashboardURL == "" {
		return ""
	}
	return strings.TrimSuffix(o.opts.DashboardURL, "/") + "/issues/" + url.PathEscape(identifier)
}

// checkpointQuestion is the hold message: the checkpoint's question and its options.
func checkpointQuestion(cp store.Checkpoint) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s\nOptions: ", cp.Name, cp.Message)
	for i, op := range cp.Options {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s (%s)", op.ID, op.Label)
	}
	return b.String()
}

// checkpointCommentPrefix starts every checkpoint comment.
const checkpointCommentPrefix = "Sortie checkpoint:"

// commentsAnswer reports whether a "/sortie choose" comment on cfg's tracker can answer
// a checkpoint: never with the file tracker (answerRefusal), whose issues file anything
// on the machine may write.
func commentsAnswer(cfg *config.Config) bool { return cfg.Tracker.Kind != "file" }

// checkpointComment is the tracker comment that asks a human to answer: with a
// "/sortie choose" reply when the tracker's comments can answer (byComment), else on
// the dashboard or through the API, which it names.
func checkpointComment(cp store.Checkpoint, identifier, link string, byComment bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s\n\n%s\n\nOptions:\n", checkpointCommentPrefix, cp.Name, cp.Message)
	for _, op := range cp.Options {
		fmt.Fprintf(&b, "- %s: %s", op.ID, op.Label)
		if op.Description != "" {
			fmt.Fprintf(&b, " (%s)", op.Description)
		}
		b.WriteByte('\n')
	}
	example := "<option>"
	if len(cp.Options) > 0 {
		example = cp.Options[0].ID
	}
	switch {
	case byComment:
		fmt.Fprintf(&b, "\nTo answer, reply with a comment whose first line is: /sortie choose <option>")
		if len(cp.Options) > 0 {
			fmt.Fprintf(&b, " (for example: /sortie choose %s)", example)
		}
		if link != "" {
			fmt.Fprintf(&b, "\nOr answer on the dashboard: %s", link)
		}
	default:
		b.WriteString("\nComments on this tracker do not answer checkpoints. To answer, ")
		if link != "" {
			fmt.Fprintf(&b, "choose an option on the dashboard: %s\nOr ", link)
		}
		fmt.Fprintf(&b, "send POST /api/v1/%s/checkpoints/%s with {\"option_id\": %q} and the operator token (Authorization: Bearer $(sortie status --token)).",
			url.PathEscape(identifier), url.PathEscape(cp.CheckpointID), example)
	}
	if at, ok := autoAdvanceAt(cp); ok {
		fmt.Fprintf(&b, "\nWithout an answer, Sortie chooses %s at %s.", cp.DefaultOption, at.UTC().Format(time.RFC3339))
	}
	return b.String()
}

// answerNote tells a resumed agent the answers to its pending checkpoints, and its
// newest session token; "" when there is nothing to say.
func (o *Orchestrator) answerNote(ctx context.Context, issueID string) string {
	if o.opts.Checkpoints == nil {
		return ""
	}
	var answered []store.Checkpoint
	for _, c := range o.pendingFor(issueID) {
		if c.Answered() {
			answered = append(answered, c)
		}
	}
	if len(answered) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("## Checkpoint answers\n\n")
	for _, c := range answered {
		who := c.AnsweredBy
		if c.AnswerSource == store.AnswerAutoAdvance {
			fmt.Fprintf(&b, "- Checkpoint %q (activity %s) auto-advanced to its default option %q: call respond_checkpoint(checkpoint_id=%q, auto_advance=true).\n",
				c.CheckpointID, c.Activity, c.Answer, c.CheckpointID)
			continue
		}
		fmt.Fprintf(&b, "- Checkpoint %q (activity %s) was answered by %s: option %q. Call respond_checkpoint(checkpoint_id=%q, option_id=%q).\n",
			c.CheckpointID, c.Activity, who, c.Answer, c.CheckpointID, c.Answer)
	}
	if tok := o.newestToken(ctx, answered[0].SessionID); tok != "" {
		fmt.Fprintf(&b, "\nYour newest workflow session_token is:\n%s\n", tok)
	}
	b.WriteString("\nThen continue the workflow from the checkpoint's activity, following the chosen option's effect.\n")
	return b.String()
}

func (o *Orchestrator) newestToken(ctx context.Context, sid string) string {
	sessions, err := o.opts.Checkpoints.LoadWorkflowSessions(ctx)
	if err != nil {
		o.log.Warn("reading workflow sessions failed", "error", err)
		return ""
	}
	for _, s := range sessions {
		if s.SessionID == sid {
			return s.Token
		}
	}
	return ""
}

// recoverCheckpoints loads pending checkpoints after a restart and re-arms the
// auto-advance timers (past-due ones fire at once).
func (o *Orchestrator) recoverCheckpoints(ctx context.Context) error {
	if o.opts.Checkpoints == nil {
		return nil
	}
	rows, err := o.opts.Checkpoints.PendingCheckpoints(ctx)
	if err != nil {
		return err
	}
	o.cp.mu.Lock()
	defer o.cp.mu.Unlock()
	for _, r := range rows {
		if r.IssueID == "" {
			continue // a standalone session's
		}
		o.cp.pending[r.ID] = r
		o.scheduleAutoAdvanceLocked(r)
	}
	return nil
}

// chooseRE matches a tracker answer: a comment whose first line is
// "/sortie choose <option>".
var chooseRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\s*/sortie\s+choose\s+(\S+)\s*$`) })

// parseChoose returns the option of a "/sortie choose" comment.
func parseChoose(body string) (string, bool) {
	first, _, _ := strings.Cut(strings.TrimLeft(body, " \t\r\n"), "\n")
	m := chooseRE().FindStringSubmatch(strings.TrimRight(first, "\r"))
	if m == nil {
		return "", false
	}
	return strings.Trim(m[1], "`*_\"'"), true
}

// awaitingIssues picks the issues held at a checkpoint whose tracker comments this tick
// reads for answers: at most maxCommentReads, going round them in id order from where
// the previous tick stopped. With more of them than one tick reads, each is still read
// every few polls and none starves. Loop only.
func (o *Orchestrator) awaitingIssues() []string {
	var ids []string
	for id, h := range o.holds {
		if h.reason == holdAwaiting {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	if len(ids) <= maxCommentReads {
		return ids
	}
	start, _ := slices.BinarySearch(ids, o.cp.readAfter+"\x00") // the first id after the cursor
	batch := make([]string, 0, maxCommentReads)
	for i := range maxCommentReads {
		batch = append(batch, ids[(start+i)%len(ids)])
	}
	o.cp.readAfter = batch[len(batch)-1]
	return batch
}

// maxCommentReads bounds the issues whose comments one tick reads: one tracker request
// each, every poll.
const maxCommentReads = 20

// readAnswers reads the tracker comments of issues awaiting an answer and records the
// first "/sortie choose" of each that came after its checkpoint. It runs on the tick
// goroutine; answers wake the loop.
func (o *Orchestrator) readAnswers(ctx context.Context, ids []string) {
	if len(ids) == 0 {
		return
	}
	self, err := o.trackerSelf(ctx)
	if err != nil {
		// Fail closed: a comment of Sortie's own account must never pass for a human's
		// answer, so none is read until the account is known. The next tick asks again.
		o.log.Warn("checkpoint answers in tracker comments wait until Sortie knows the tracker account it writes as",
			"error", err)
		return
	}
	for _, id := range ids {
		pending := o.pendingFor(id)
		if len(pending) == 0 {
			continue
		}
		comments, err := o.opts.Tracker.FetchIssueComments(ctx, id)
		if err != nil {
			o.log.Warn("reading tracker comments for checkpoint answers failed", "issue_identifier", pending[0].Identifier, "error", err)
			continue
		}
		asked := false // a checkpoint comment of Sortie's came before
		for _, cm := range comments {
			if strings.HasPrefix(cm.Body, checkpointCommentPrefix) {
				asked = true
			}
			option, ok := parseChoose(cm.Body)
			if !ok || o.commentSeen(id, cm.ID) {
				continue
			}
			at, err := time.Parse(time.RFC3339, cm.CreatedAt)
			if why := answerRefusal(o.opts.Config(), self, cm); why != "" {
				o.log.Warn("a tracker comment's checkpoint answer was refused", "issue_identifier", pending[0].Identifier,
					"author", cm.Author, "option", option, "reason", why)
				when := at
				if err != nil {
					when = o.clk.Now()
				}
				o.refuseAnswer(id, RefusedAnswer{Author: cm.Author, Option: option, Reason: why, At: when})
				continue
			}
			// A comment counts when it came after the checkpoint: by its time, or,
			// without one (a hand-edited issues file), by coming after Sortie's question.
			for _, cp := range pending {
				if cp.Answered() || (err == nil && at.Before(cp.IssuedAt.Truncate(time.Second))) || (err != nil && !asked) {
					continue
				}
				_, aerr := o.answer(ctx, cp, option, cm.Author, store.AnswerTracker)
				var oe *OptionError
				if errors.As(aerr, &oe) {
					// Posted here, on the tick's goroutine, not through o.comment: the
					// loop may be shutting down and waiting for its background work.
					reply := fmt.Sprintf("Sortie: %q is not an option of checkpoint %s. Choose one of: %s (reply /sortie choose <option>).",
						option, cp.CheckpointID, strings.Join(oe.Valid, ", "))
					if err := o.opts.Tracker.CommentIssue(ctx, id, reply); err != nil {
						o.log.Warn("replying to an invalid checkpoint answer failed", "issue_identifier", cp.Identifier, "error", err)
					}
				} else if aerr != nil {
					o.log.Warn("recording a tracker answer failed", "issue_identifier", cp.Identifier, "error", aerr)
				}
				break
			}
		}
	}
}

// commentSeen marks a comment read and reports whether it had been.
func (o *Orchestrator) commentSeen(issueID, commentID string) bool {
	key := issueID + "\x00" + commentID
	o.cp.mu.Lock()
	defer o.cp.mu.Unlock()
	if o.cp.seen[key] {
		return true
	}
	o.cp.seen[key] = true
	return false
}

// workflowHint adds to a run's first prompt the workflow workflows.workflow names, when
// the workflow tools are served to the run: not to agents on SSH hosts, which cannot
// reach the daemon's agent socket.
func (o *Orchestrator) workflowHint(cfg *config.Config, host, rendered string) string {
	if o.opts.Checkpoints == nil || cfg.Workflows.Workflow == "" || host != "" {
		return rendered
	}
	id := cfg.Workflows.Workflow
	return strings.TrimRight(rendered, " \t\r\n") + "\n\n## Structured workflow\n\n" +
		fmt.Sprintf("Work through this issue with the workflow %q of the workflow tools. If you have no workflow session for this issue yet, "+
			"call start_session(workflow_id=%q) and follow the bootstrap it describes; otherwise continue your session with your newest session_token. "+
			"When an activity has a checkpoint, read it with get_checkpoint and end your turn: a human answers it, and you are resumed with the answer.\n", id, id)
}

// answererAssociations are the GitHub author associations whose comments answer
// checkpoints when workflows.answerers is not set: people with a say in the repository.
var answererAssociations = []string{"OWNER", "MEMBER", "COLLABORATOR"}

// trackerSelf is the account the tracker in force writes as, or the zero Identity
// when the tracker cannot say (the file tracker, whose comments never answer).
func (o *Orchestrator) trackerSelf(ctx context.Context) (tracker.Identity, error) {
	acc, ok := tracker.As[tracker.Account](o.Adapters().Tracker)
	if !ok {
		return tracker.Identity{}, nil
	}
	return acc.Self(ctx)
}

// answerRefusal says why a "/sortie choose" comment may not answer a checkpoint, or ""
// when it may. A checkpoint is a human's decision, and on a public repository anyone
// can comment, the agent's own prompt injector included: with the file tracker,
// comments never answer (the dashboard and the API do); a comment by self, the account
// Sortie writes as, or by any app's bot account never does; with workflows.answerers,
// only those logins or emails do; on GitHub without it, only the repository's owners,
// members and collaborators. The agent itself cannot comment: tracker_api has no such
// operation, and the agent holds no tracker credential.
func answerRefusal(cfg *config.Config, self tracker.Identity, cm tracker.Comment) string {
	switch {
	case cfg.Tracker.Kind == "file":
		return "with the file tracker, checkpoints are answered on the dashboard or through the API only"
	case self.Wrote(cm):
		return fmt.Sprintf("the comment is by %s, the tracker account Sortie itself writes as (tracker.api_key's)", self)
	case cm.AuthorBot:
		return fmt.Sprintf("%q is an app's bot account, not a person", cm.Author)
	case len(cfg.Workflows.Answerers) > 0:
		if !slices.ContainsFunc(cfg.Workflows.Answerers, func(a string) bool {
			// By login or e-mail, never by the displayed name, which on Jira anyone
			// can set to an answerer's login or address.
			return (cm.AuthorLogin != "" && strings.EqualFold(a, cm.AuthorLogin)) ||
				(cm.AuthorEmail != "" && strings.EqualFold(a, cm.AuthorEmail))
		}) {
			return fmt.Sprintf("%q is not in workflows.answerers", cm.Author)
		}
	case cfg.Tracker.Kind == "github":
		if !slices.Contains(answererAssociations, strings.ToUpper(cm.AuthorAssociation)) {
			return fmt.Sprintf("%q is %s on the repository, not OWNER, MEMBER or COLLABORATOR (list who may answer in workflows.answerers)",
				cm.Author, cmp.Or(cm.AuthorAssociation, "NONE"))
		}
	}
	return ""
}

// HandoffChecker is the workflow engine's side of the hand-off gate (*engine.Engine):
// the gates of an issue's workflow sessions no human answered, and the trace entry of
// a hand-off refused for them.
type HandoffChecker interface {
	HandoffBlockers(ctx context.Context, issueID, want string) ([]engine.Blocker, error)
	TraceHandoffRefused(ctx context.Context, c engine.Caller, bs []engine.Blocker, how string)
}

var _ HandoffChecker = (*engine.Engine)(nil)

// holdCheckpointSkipped is the hold reason of an issue whose run would have handed it
// to humans while a blocking checkpoint on its workflow's path had no human answer.
const holdCheckpointSkipped = "checkpoint_skipped"

// handoffRefusal says why the issue of c may not be handed to humans now (how: what
// would hand it off, for the trace), or "" when it may: the issue's workflow sessions
// (and, with workflows.workflow set and the workflow tools served to the run, the
// session the agent was told to start) leave no gate (workflow.Gate) without a human's
// answer. The refusal is recorded in the trace of each session concerned. When the
// check cannot be made, the hand-off is refused too: a hold costs a human a look, a
// hand-off around a checkpoint costs the checkpoint.
func (o *Orchestrator) handoffRefusal(ctx context.Context, cfg *config.Config, c engine.Caller, host, how string) string {
	if o.opts.Checkpoints == nil {
		return ""
	}
	o.cp.mu.Lock()
	hc, _ := o.cp.engine.(HandoffChecker)
	o.cp.mu.Unlock()
	if hc == nil {
		return ""
	}
	want := cfg.Workflows.Workflow
	if host != "" {
		want = "" // an agent on an SSH host is not served the workflow tools (workflowHint)
	}
	bs, err := hc.HandoffBlockers(ctx, c.IssueID, want)
	if err != nil {
		o.log.Error("the workflow's checkpoints could not be checked before a hand-off; not handing off", "issue_identifier", c.Identifier, "error", err)
		return fmt.Sprintf("not handed off: the workflow's checkpoints could not be checked (%v); fix the cause and move the issue on yourself, or back to an active state", err)
	}
	if len(bs) == 0 {
		return ""
	}
	why := engine.DescribeBlockers(bs)
	o.log.Warn("hand-off refused: a blocking workflow checkpoint has no human answer", "issue_identifier", c.Identifier, "how", how, "why", why)
	hc.TraceHandoffRefused(ctx, c, bs, how)
	return why
}

// refuseHandoff runs the hand-off gate on a run that is about to hand its issue to
// humans: a transition to tracker.handoff_state, or needs-human-review. It reports
// whether the hand-off was refused (ex.handoffRefused says why).
func (w *worker) refuseHandoff(ctx context.Context, ex *workerExit) bool {
	cfg := w.cfg
	if ex.softStop == "blocked" || ex.budgetStop != "" || ex.awaiting != nil {
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
	c := engine.Caller{IssueID: w.issue.ID, Identifier: w.issue.Identifier, RunID: w.runID}
	ex.handoffRefused = w.o.handoffRefusal(ctx, cfg, c, w.e.host, how)
	return ex.handoffRefused != ""
}

// holdHandoffRefused holds an issue whose hand-off was refused, for a human.
func (o *Orchestrator) holdHandoffRefused(is tracker.Issue, ex workerExit) {
	o.addHold(is, ex, holdCheckpointSkipped, ex.handoffRefused)
}
