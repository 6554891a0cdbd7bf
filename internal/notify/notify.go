package notify

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// Events a Notification can carry. EventAgent is a notify_operator call; the others are
// the daemon's own alerts.
const (
	EventAgent            = "agent"
	EventBlocked          = "blocked"
	EventNeedsReview      = "needs_human_review"
	EventBudgetExhausted  = "budget_exhausted"
	EventBudgetWarning    = "budget_warning" // agent.budget_warn_ratio of a budget used
	EventRetriesExhausted = "retries_exhausted"
	EventFailed           = "failed"
	EventAwaitingInput    = "awaiting_input" // a workflow checkpoint waits for a human's answer
)

// Events lists every event, in the order the documentation gives them.
var Events = []string{EventAgent, EventBlocked, EventNeedsReview, EventAwaitingInput, EventBudgetWarning, EventBudgetExhausted, EventRetriesExhausted, EventFailed}

// Severities, from least to most urgent.
const (
	SeverityInfo     = "info"
	SeverityWarning  = "warning"
	SeverityCritical = "critical"
)

// Severities lists every severity, least urgent first.
var Severities = []string{SeverityInfo, SeverityWarning, SeverityCritical}

// DefaultSeverity is the severity of a Notification that gives none: info for an agent's
// notification and needs_human_review, warning for blocked, awaiting_input, budget_warning and budget_exhausted,
// critical for retries_exhausted and failed. docs/notifications.md promises operators this mapping so that
// min_severity filters daemon alerts predictably.
func DefaultSeverity(event string) string {
	switch event {
	case EventBlocked, EventBudgetWarning, EventBudgetExhausted, EventAwaitingInput:
		return SeverityWarning
	case EventRetriesExhausted, EventFailed:
		return SeverityCritical
	}
	return SeverityInfo
}

// severityRank orders severities for min_severity; -1 means unknown.
func severityRank(s string) int { return slices.Index(Severities, s) }

// Size caps applied before a notification is encoded. Longer values are cut on a UTF-8
// boundary and marked as truncated, so one chatty agent cannot post megabytes.
const (
	maxMessageBytes = 4 << 10
	maxTitleBytes   = 256
	maxFieldBytes   = 512 // issue id, identifier and URL
)

// ErrInvalidNotification is wrapped by Send when the Notification itself is unusable
// (unknown event or severity, empty message); nothing was sent.
var ErrInvalidNotification = errors.New("invalid notification")

// Notification is one message for the operator.
type Notification struct {
	// Event is one of Events.
	Event string
	// Severity is one of Severities; empty means DefaultSeverity(Event).
	Severity string
	// Title is a short summary (optional); Message is the body (required). Message is
	// cut to 4 KiB and Title to 256 bytes.
	Title, Message string
	// IssueID, IssueIdentifier and IssueURL name the issue concerned, when there is one.
	IssueID, IssueIdentifier, IssueURL string
	// Time is when it happened; zero means the time of Send.
	Time time.Time
}

// Notifier sends Notifications to the configured backends. Build one with Parse. It is
// safe for concurrent use and holds no state between calls besides idle connections.
type Notifier struct {
	backends []*backend
	client   *http.Client
	// sleep waits between attempts; tests replace it so no test really waits.
	sleep func(ctx context.Context, d time.Duration) error
	// now is the clock for Notification.Time defaults and Retry-After dates.
	now func() time.Time
}

// Enabled reports whether at least one backend is configured. A nil Notifier is not
// enabled.
func (n *Notifier) Enabled() bool { return n != nil && len(n.backends) > 0 }

// Backends returns the backend names, in the order of the notifications list.
func (n *Notifier) Backends() []string {
	if n == nil {
		return nil
	}
	names := make([]string, len(n.backends))
	for i, b := range n.backends {
		names[i] = b.name
	}
	return names
}

// Recipients returns the names of the backends whose min_severity and events filters
// accept msg: the ones Send would post it to.
func (n *Notifier) Recipients(msg Notification) []string {
	if n == nil {
		return nil
	}
	var names []string
	for _, b := range n.backends {
		if b.accepts(msg) {
			names = append(names, b.name)
		}
	}
	return names
}

// Filtered says why msg would reach no backend, naming each backend and the filter
// that turns it away, or returns "" when at least one backend accepts it (or when
// there are no backends at all: Enabled says that).
func (n *Notifier) Filtered(msg Notification) string {
	if !n.Enabled() || len(n.Recipients(msg)) > 0 {
		return ""
	}
	sev := msg.Severity
	if sev == "" {
		sev = DefaultSeverity(msg.Event)
	}
	why := make([]string, 0, len(n.backends))
	for _, b := range n.backends {
		if severityRank(sev) < b.minRank {
			why = append(why, fmt.Sprintf("%s takes severity %s and above", b.name, Severities[b.minRank]))
		} else {
			why = append(why, fmt.Sprintf("%s takes only the events %s", b.name, strings.Join(b.events, ", ")))
		}
	}
	return fmt.Sprintf("no notification backend takes this message (severity %s, event %s): %s", sev, msg.Event, strings.Join(why, "; "))
}

// SecretEnv returns the sorted names of the environment variables referenced by the
// backends' URLs and header values. All of them are credentials, whatever the key that
// held them is called, so callers can keep them out of agent and hook environments.
func (n *Notifier) SecretEnv() []string {
	if n == nil {
		return nil
	}
	var names []string
	for _, b := range n.backends {
		for _, e := range b.envNames {
			if !slices.Contains(names, e) {
				names = append(names, e)
			}
		}
	}
	slices.Sort(names)
	return names
}

// Send posts msg to every backend whose filters accept it, concurrently, and waits for
// all of them. Each backend gets its own timeout per attempt and its own retries (see
// docs/notifications.md). It returns nil when every selected backend accepted msg,
// including when no backend was selected; an error wrapping ErrInvalidNotification when
// msg is unusable; otherwise a *DeliveryError naming each backend that failed. Cancelling
// ctx stops every delivery and its retries.
func (n *Notifier) Send(ctx context.Context, msg Notification) error {
	msg, err := n.normalise(msg)
	if err != nil {
		return err
	}
	if !n.Enabled() {
		return nil
	}
	var selected []*backend
	for _, b := range n.backends {
		if b.accepts(msg) {
			selected = append(selected, b)
		}
	}
	errs := make([]*BackendError, len(selected))
	var wg sync.WaitGroup
	for i, b := range selected {
		wg.Go(func() { errs[i] = n.deliver(ctx, b, msg) })
	}
	wg.Wait()
	de := &DeliveryError{Selected: len(selected)}
	for _, e := range errs {
		if e != nil {
			de.Failed = append(de.Failed, e)
		}
	}
	if len(de.Failed) == 0 {
		return nil
	}
	return de
}

// normalise validates msg and applies the defaults and size caps.
func (n *Notifier) normalise(msg Notification) (Notification, error) {
	if !slices.Contains(Events, msg.Event) {
		return msg, fmt.Errorf("notify: %w: event %q is not one of %s", ErrInvalidNotification, clip(msg.Event, 64), strings.Join(Events, ", "))
	}
	if msg.Severity == "" {
		msg.Severity = DefaultSeverity(msg.Event)
	}
	if severityRank(msg.Severity) < 0 {
		return msg, fmt.Errorf("notify: %w: severity %q is not one of %s", ErrInvalidNotification, clip(msg.Severity, 64), strings.Join(Severities, ", "))
	}
	if strings.TrimSpace(msg.Message) == "" {
		return msg, fmt.Errorf("notify: %w: message is empty", ErrInvalidNotification)
	}
	msg.Message = truncate(msg.Message, maxMessageBytes)
	msg.Title = truncate(msg.Title, maxTitleBytes)
	msg.IssueID = truncate(msg.IssueID, maxFieldBytes)
	msg.IssueIdentifier = truncate(msg.IssueIdentifier, maxFieldBytes)
	msg.IssueURL = truncate(msg.IssueURL, maxFieldBytes)
	if msg.Time.IsZero() && n != nil {
		msg.Time = n.now()
	}
	return msg, nil
}

// DeliveryError is Send's error when at least one selected backend did not accept the
// notification. Its text names each failed backend with scheme://host only.
type DeliveryError struct {
	// Selected is how many backends the notification was meant for.
	Selected int
	// Failed holds one entry per failed backend, in configuration order.
	Failed []*BackendError
}

func (e *DeliveryError) Error() string {
	parts := make([]string, len(e.Failed))
	for i, f := range e.Failed {
		parts[i] = f.Error()
	}
	return fmt.Sprintf("notify: %d of %d backends failed: %s", len(e.Failed), e.Selected, strings.Join(parts, "; "))
}

// Unwrap returns the backend errors, so errors.Is(err, context.Canceled) works.
func (e *DeliveryError) Unwrap() []error {
	errs := make([]error, len(e.Failed))
	for i, f := range e.Failed {
		errs[i] = f
	}
	return errs
}

// BackendError is one backend's failure to deliver. No field holds a URL path, query or
// header value.
type BackendError struct {
	// Backend is the backend's name; Target is its URL reduced to scheme://host.
	Backend, Target string
	// Status is the last HTTP status received, or 0 if none was.
	Status int
	// Attempts is how many requests were made.
	Attempts int
	// Cause describes the last failure, redacted.
	Cause string
	// err is context.Canceled or context.DeadlineExceeded when ctx ended the delivery.
	err error
}

func (e *BackendError) Error() string {
	s := fmt.Sprintf("%s (%s): %s", e.Backend, e.Target, e.Cause)
	if e.Attempts > 1 {
		s += fmt.Sprintf(" (after %d attempts)", e.Attempts)
	}
	return s
}

// Unwrap returns the context error that stopped the delivery, if any.
func (e *BackendError) Unwrap() error { return e.err }
