package store

import (
	"time"
)

// Hold keeps an issue from being dispatched until a human acts: the agent asked for
// help, or a run failed in a way retrying cannot fix. The orchestrator decides when a
// hold lifts; the store only keeps it across restarts. At most one per issue.
type Hold struct {
	IssueID    string
	Identifier string
	Reason     string // e.g. blocked, needs_human_review, error
	Message    string // what the agent or the error said, for the dashboard
	// State and IssueUpdatedAt are the issue's tracker state and updated_at (verbatim)
	// when it was held; a change to either means a human has acted.
	State          string
	IssueUpdatedAt string
	Since          time.Time
}

// Validate checks the fields SaveHold needs.
func (h Hold) Validate() error {
	var c checks
	c.empty("issue id", h.IssueID)
	c.empty("identifier", h.Identifier)
	c.empty("reason", h.Reason)
	c.zero("since", h.Since)
	return c.err()
}
