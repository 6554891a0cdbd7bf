package store

import (
	"errors"
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
	var errs []error
	if s.IssueID == "" {
		errs = append(errs, errors.New("issue id is empty"))
	}
	if s.SessionID == "" {
		errs = append(errs, errors.New("session id is empty"))
	}
	if s.AgentKind == "" {
		errs = append(errs, errors.New("agent kind is empty"))
	}
	return errors.Join(errs...)
}
