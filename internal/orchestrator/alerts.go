package orchestrator

import (
	"context"
	"time"

	"sortie/internal/tracker"
)

// Alert is one of the daemon's own notifications to the operator.
type Alert struct {
	// Event is blocked, needs_human_review, error, retries_exhausted or
	// budget_exhausted.
	Event    string
	Severity string // info, warning, critical
	Title    string
	Message  string
	Issue    tracker.Issue
	Time     time.Time
}

// alertTimeout bounds the delivery of one alert, retries included.
const alertTimeout = 2 * time.Minute

// alert hands a to the operator's backends on its own goroutine: a slow webhook must
// never hold up the loop. Delivery failures are logged.
func (o *Orchestrator) alert(a Alert) {
	if o.opts.Alert == nil {
		return
	}
	a.Time = o.clk.Now()
	o.bg.Add(1)
	go func() {
		defer o.bg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), alertTimeout)
		defer cancel()
		if err := o.opts.Alert(ctx, a); err != nil {
			o.log.Warn("sending the operator alert failed", "issue_identifier", a.Issue.Identifier, "event", a.Event, "error", err)
		}
	}()
}

// holdAlert is the alert for a new hold; byComment says whether a tracker comment can
// answer a checkpoint (commentsAnswer).
func holdAlert(is tracker.Issue, reason, msg string, byComment bool) Alert {
	a := Alert{Event: reason, Issue: is, Message: msg, Severity: "warning"}
	switch reason {
	case holdBlocked:
		a.Title = is.Identifier + " is blocked and waits for a human"
	case holdHumanReview:
		a.Title, a.Severity = is.Identifier+" is ready for review", "info"
	case holdAwaiting:
		a.Title = is.Identifier + " waits for your answer at a workflow checkpoint"
		a.Message = msg + "\nAnswer on the dashboard, or with a tracker comment: /sortie choose <option>"
		if !byComment {
			a.Message = msg + "\nAnswer on the dashboard or through the API (comments on this tracker do not answer)"
		}
	case holdCheckpointSkipped:
		a.Title = is.Identifier + " was not handed off: a blocking workflow checkpoint has no human answer"
	case holdRetries:
		a.Title, a.Severity = is.Identifier+" failed too many times in a row; Sortie stopped retrying", "critical"
	default:
		a.Title, a.Severity = is.Identifier+" failed with an error retrying cannot fix", "critical"
	}
	return a
}
