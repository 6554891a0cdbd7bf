package store

import "time"

// CheckpointView is a pending workflow checkpoint as the daemon shows it: in a
// snapshot (/api/v1/state), on the issue page and in the answer to a POST. It lives
// here, beside Checkpoint, so that the orchestrator, the HTTP server and the
// checkpoint component (internal/workflow/checkpoint) share it without any of them
// importing the workflow engine.
type CheckpointView struct {
	ID            int64              `json:"id"`
	IssueID       string             `json:"issue_id"`
	Identifier    string             `json:"issue_identifier"`
	SessionID     string             `json:"session_id"`
	Workflow      string             `json:"workflow"`
	Activity      string             `json:"activity"`
	CheckpointID  string             `json:"checkpoint_id"`
	Name          string             `json:"name"`
	Message       string             `json:"message"`
	Options       []CheckpointOption `json:"options"`
	Blocking      bool               `json:"blocking"`
	DefaultOption string             `json:"default_option,omitempty"`
	// AutoAdvanceAt is when the daemon answers a non-blocking checkpoint with its
	// default option; zero for blocking ones.
	AutoAdvanceAt time.Time `json:"auto_advance_at,omitzero"`
	IssuedAt      time.Time `json:"issued_at"`
	Answer        string    `json:"answer,omitempty"`
	AnsweredBy    string    `json:"answered_by,omitempty"`
	AnswerSource  string    `json:"answer_source,omitempty"`
	AnsweredAt    time.Time `json:"answered_at,omitzero"`
}

// View is c as the daemon shows it: never a nil Options, and the time it auto-advances.
func (c Checkpoint) View() CheckpointView {
	v := CheckpointView{ID: c.ID, IssueID: c.IssueID, Identifier: c.Identifier, SessionID: c.SessionID, Workflow: c.Workflow,
		Activity: c.Activity, CheckpointID: c.CheckpointID, Name: c.Name, Message: c.Message, Options: c.Options,
		Blocking: c.Blocking, DefaultOption: c.DefaultOption, IssuedAt: c.IssuedAt, Answer: c.Answer,
		AnsweredBy: c.AnsweredBy, AnswerSource: c.AnswerSource, AnsweredAt: c.AnsweredAt}
	if v.Options == nil {
		v.Options = []CheckpointOption{}
	}
	if at, ok := c.AutoAdvanceAt(); ok {
		v.AutoAdvanceAt = at
	}
	return v
}

// AutoAdvanceAt is when the daemon takes the default option of a non-blocking
// checkpoint; false for one that never auto-advances.
func (c Checkpoint) AutoAdvanceAt() (time.Time, bool) {
	if c.Blocking || c.DefaultOption == "" || c.AutoAdvanceMS <= 0 {
		return time.Time{}, false
	}
	return c.IssuedAt.Add(time.Duration(c.AutoAdvanceMS) * time.Millisecond), true
}
