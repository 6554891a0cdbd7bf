package orchestrator

import (
	"context"
	"fmt"
	"strings"
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
// Sortie's own comment does not pass for a human's answer (tracker.OwnWrites).
func (o *Orchestrator) comment(is tracker.Issue, lifecycle, text string) {
	o.own.Begin(is.ID)
	o.bg.Add(1)
	go func() {
		defer o.bg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), commentTimeout)
		defer cancel()
		if err := o.opts.Tracker.CommentIssue(ctx, is.ID, text); err != nil {
			o.log.Warn("posting the lifecycle comment failed", "issue_identifier", is.Identifier,
				"lifecycle", lifecycle, "error", err)
		} else {
			o.own.Posted(is.ID, text)
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
	o.own.Begin(is.ID)
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
		o.own.End(is.ID, nil)
		return
	}
	o.own.End(is.ID, &got)
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
