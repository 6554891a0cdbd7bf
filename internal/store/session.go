package store

import (
	"time"
)

// Session is the last agent session of an issue, kept so a restarted daemon can resume
// it in the same workspace.
type Session struct {
	IssueID   string
	SessionID string
	AgentKind string
	Workspace string
	UpdatedAt time.Time // set by the store when saved
}

// Validate checks the fields SaveSession needs.
func (s Session) Validate() error {
	var c checks
	c.empty("issue id", s.IssueID)
	c.empty("session id", s.SessionID)
	c.empty("agent kind", s.AgentKind)
	return c.err()
}
