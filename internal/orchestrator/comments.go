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
func (o *Orchestrator) comment(is tracker.Issue, lifecycle, text string) {
	o.bg.Add(1)
	go func() {
		defer o.bg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), commentTimeout)
		defer cancel()
		if err := o.opts.Tracker.CommentIssue(ctx, is.ID, text); err != nil {
			o.log.Warn("posting the lifecycle comment failed", "issue_identifier", is.Identifier,
				"lifecycle", lifecycle, "error", err)
		}
	}()
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
