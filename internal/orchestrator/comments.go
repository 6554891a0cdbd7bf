package orchestrator

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"sortie/internal/tracker"
)

// commentTimeout bounds one lifecycle comment, on its own detached context.
const commentTimeout = 30 * time.Second

// comment posts a lifecycle comment (tracker.comments.*) on its own goroutine: a slow
// tracker must never hold up the loop or the worker, and a failed comment is logged,
// never fatal.
//
// The comment moves the issue's updated_at (GitHub and Jira), which is what lifts a
// hold; the comment is recorded in o.own, and the issue read back after it, so that
// Sortie's own comment does not pass for a human's answer (ownWrites).
func (o *Orchestrator) comment(is tracker.Issue, lifecycle, text string) {
	o.own.begin(is.ID)
	o.bg.Add(1)
	go func() {
		defer o.bg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), commentTimeout)
		defer cancel()
		if err := o.opts.Tracker.CommentIssue(ctx, is.ID, text); err != nil {
			o.log.Warn("posting the lifecycle comment failed", "issue_identifier", is.Identifier,
				"lifecycle", lifecycle, "error", err)
		} else {
			o.own.posted(is.ID, text)
		}
		o.readBack(ctx, is)
	}()
}

// settleHold reads an issue held after a failed run back from the tracker in the
// background, so that the hold's baseline includes Sortie's own changes during the run:
// the run kept the issue's state and update time as they were at dispatch, before its
// in-progress transition and its comments. (A run that ends with the agent's
// blocked or needs-human-review re-reads the issue itself before it exits.)
func (o *Orchestrator) settleHold(is tracker.Issue) {
	o.own.begin(is.ID)
	o.bg.Add(1)
	go func() {
		defer o.bg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), commentTimeout)
		defer cancel()
		o.readBack(ctx, is)
	}()
}

// readBack ends a write begun with o.own.begin: it reads the issue and records its
// state and update time as Sortie's own doing.
func (o *Orchestrator) readBack(ctx context.Context, is tracker.Issue) {
	got, err := o.opts.Tracker.FetchIssueByID(ctx, is.ID)
	if err != nil {
		// Without the read, the change stays unexplained: the next poll lifts the hold,
		// which costs at most one run, never a loop.
		o.log.Warn("reading the issue back after Sortie's own change failed", "issue_identifier", is.Identifier, "error", err)
		o.own.end(is.ID, nil)
		return
	}
	o.own.end(is.ID, &got)
}

// ownWrites is the ledger of Sortie's own changes to issues, for holds. A hold lifts
// when a human changes the issue (spec/agent-extensions.md: "The issue re-dispatches
// only when the tracker state changes (e.g., a human moves it back ...)"; Sortie also
// counts a comment or an edit), and the tracker's updated_at is how a poll sees a
// change. But Sortie's own comments move updated_at too, and a hold lifted by the
// completion comment of the run that caused it would run the agent again, have it
// block again, comment again, and so on at every poll. So after each of its writes
// Sortie reads the issue back and records the state and updated_at it found: a poll
// that sees one of those is not a human's change (the hold adopts it as its baseline),
// a poll during a write waits for its read-back, and anything else lifts the hold.
//
// The race this leaves: a human's change that lands between Sortie's write and its
// read-back is taken for Sortie's. When the read-back shows a comment by another
// author after Sortie's newest comment, the value is not recorded, so the commonest
// case (someone answering the comment at once) still lifts the hold; an edit in that
// window of milliseconds, or a comment from the very account Sortie posts with, is
// only seen at the human's next change. Trackers that give a write's resulting
// updated_at in its response would close the window; tracker.Tracker does not.
//
// The zero value is ready to use; it is safe for concurrent use.
type ownWrites struct {
	mu      sync.Mutex
	issues  map[string]*ownIssue
	changed chan struct{} // closed and replaced when a write ends (tests wait on it)
}

// ownIssue is what the ledger knows of one issue.
type ownIssue struct {
	inflight int         // writes (and read-backs) begun and not ended
	bodies   []string    // Sortie's newest comments on it, trimmed
	marks    []issueMark // the issue as read back after Sortie's writes, newest last
}

// issueMark is an issue's state and updated_at, verbatim.
type issueMark struct{ state, updatedAt string }

// ownKeep bounds the comments and marks kept per issue: a hold sees at most a few of
// Sortie's writes.
const ownKeep = 8

// ownVerdict is what the ledger says of a change a poll saw.
type ownVerdict int

const (
	notOwn     ownVerdict = iota // a change Sortie did not make: a human's
	ownPending                   // Sortie is writing to the issue; judge at a later poll
	ownWrite                     // the issue as Sortie's own write left it
)

func (w *ownWrites) entry(id string) *ownIssue {
	if w.issues == nil {
		w.issues = map[string]*ownIssue{}
	}
	e, ok := w.issues[id]
	if !ok {
		e = &ownIssue{}
		w.issues[id] = e
	}
	return e
}

// begin records that Sortie is about to change issue id; end must follow.
func (w *ownWrites) begin(id string) {
	w.mu.Lock()
	w.entry(id).inflight++
	w.mu.Unlock()
}

// posted records the text of a comment Sortie posted on issue id.
func (w *ownWrites) posted(id, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	e := w.entry(id)
	e.bodies = append(e.bodies, strings.TrimSpace(text))
	if len(e.bodies) > ownKeep {
		e.bodies = e.bodies[len(e.bodies)-ownKeep:]
	}
}

// end ends a write begun with begin; is is the issue read back after it, nil when the
// read failed.
func (w *ownWrites) end(id string, is *tracker.Issue) {
	w.mu.Lock()
	defer w.mu.Unlock()
	e := w.entry(id)
	e.inflight--
	if is != nil && !answeredSince(is.Comments, e.bodies) {
		e.marks = append(e.marks, issueMark{is.State, is.UpdatedAt})
		if len(e.marks) > ownKeep {
			e.marks = e.marks[len(e.marks)-ownKeep:]
		}
	}
	if w.changed != nil {
		close(w.changed)
		w.changed = nil
	}
}

// answeredSince reports whether someone other than the author of Sortie's newest
// comment (one of ours, by text) commented after it. Without such a comment in cs (a
// tracker that rewrites comment text), it reports false.
func answeredSince(cs []tracker.Comment, ours []string) bool {
	last := -1
	for i, c := range cs {
		if slices.Contains(ours, strings.TrimSpace(c.Body)) {
			last = i
		}
	}
	if last < 0 {
		return false
	}
	for _, c := range cs[last+1:] {
		if c.Author != cs[last].Author {
			return true
		}
	}
	return false
}

// explains judges a poll's view of issue id (its state and updated_at) against
// Sortie's writes.
func (w *ownWrites) explains(id, state, updatedAt string) ownVerdict {
	w.mu.Lock()
	defer w.mu.Unlock()
	e, ok := w.issues[id]
	switch {
	case !ok:
		return notOwn
	case e.inflight > 0:
		return ownPending
	case slices.Contains(e.marks, issueMark{state, updatedAt}):
		return ownWrite
	}
	return notOwn
}

// forget drops what the ledger knows of issues keep rejects and Sortie is not writing
// to, so it does not grow with every issue ever commented on.
func (w *ownWrites) forget(keep func(id string) bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for id, e := range w.issues {
		if e.inflight == 0 && !keep(id) {
			delete(w.issues, id)
		}
	}
}

// idle returns whether no write to issue id is under way, and if one is, a channel
// closed when a write (of any issue) ends.
func (w *ownWrites) idle(id string) (bool, <-chan struct{}) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if e, ok := w.issues[id]; !ok || e.inflight == 0 {
		return true, nil
	}
	if w.changed == nil {
		w.changed = make(chan struct{})
	}
	return false, w.changed
}

// dispatchComment is the on_dispatch comment.
func dispatchComment(kind string, attempt int, runID int64) string {
	return fmt.Sprintf("Sortie session started.\nAgent: %s\nAttempt: %d\nRun: %d", kind, attempt+1, runID)
}

// completionComment is the on_completion comment for a run that ended normally.
func completionComment(ex workerExit, took time.Duration, next string) string {
	var b strings.Builder
	b.WriteString("Sortie session completed")
	switch {
	case ex.softStop != "":
		fmt.Fprintf(&b, " (agent signaled: %s)", ex.softStop)
	case ex.budgetStop != "":
		fmt.Fprintf(&b, " (budget used up: %s)", ex.budgetStop)
	case next != "":
		fmt.Fprintf(&b, " (%s)", next)
	}
	b.WriteString(".\n")
	if ex.sessionID != "" {
		fmt.Fprintf(&b, "Session: %s\n", ex.sessionID)
	}
	fmt.Fprintf(&b, "Duration: %s\nTurns: %d\nTokens: %d", took.Round(time.Second), ex.turns, ex.usage.Total)
	return b.String()
}

// failureComment is the on_failure comment; retry says what happens next.
func failureComment(err error, retry string) string {
	msg := err.Error()
	if r := []rune(msg); len(r) > 200 {
		msg = string(r[:200]) + "…"
	}
	return fmt.Sprintf("Sortie session failed.\nError: %s\nRetry: %s", msg, retry)
}
