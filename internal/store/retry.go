package store

import (
	"fmt"
	"time"
)

// RetryKind says why an issue is queued for another run.
type RetryKind string

// Retry kinds.
const (
	// RetryContinuation: the last run ended normally and the issue is still active; the
	// next attempt continues the agent session after a short fixed delay.
	RetryContinuation RetryKind = "continuation"
	// RetryFailure: the last run failed, stalled or could not be dispatched; the next
	// attempt waits for an exponential backoff.
	RetryFailure RetryKind = "failure"
	// RetryResume: the last run was interrupted (the daemon stopped); the same attempt
	// resumes its session as soon as the daemon is back.
	RetryResume RetryKind = "resume"
)

// Valid reports whether k is a known kind.
func (k RetryKind) Valid() bool {
	return k == RetryContinuation || k == RetryFailure || k == RetryResume
}

// Retry is one entry of the retry queue: at most one per issue.
type Retry struct {
	IssueID    string
	Identifier string
	Attempt    int       // the attempt the retry will run, 1-based
	DueAt      time.Time // when the retry fires; a past time fires at once after a restart
	Error      string    // why the retry was scheduled, for operators
	SessionID  string    // agent session to resume, "" for a fresh one
	SSHHost    string    // host of the last run, preferred again; "" for none
	Kind       RetryKind
}

// Validate checks the fields SaveRetry needs.
func (r Retry) Validate() error {
	var c checks
	c.empty("issue id", r.IssueID)
	c.empty("identifier", r.Identifier)
	c.attempt(r.Attempt)
	c.zero("due_at", r.DueAt)
	if !r.Kind.Valid() {
		c.add(fmt.Errorf("kind must be %q, %q or %q (got %q)", RetryContinuation, RetryFailure, RetryResume, r.Kind))
	}
	return c.err()
}
