package tracker

import (
	"errors"
	"fmt"
)

// ErrorKind classifies a tracker failure. The values are the spec's words.
type ErrorKind string

// Tracker error kinds.
const (
	ErrUnsupportedKind  ErrorKind = "unsupported_tracker_kind"
	ErrMissingAPIKey    ErrorKind = "missing_tracker_api_key"
	ErrMissingProject   ErrorKind = "missing_tracker_project"
	ErrAuth             ErrorKind = "tracker_auth_error"
	ErrNotFound         ErrorKind = "tracker_not_found"
	ErrPayload          ErrorKind = "tracker_payload_error"
	ErrTransport        ErrorKind = "tracker_transport_error"
	ErrAPI              ErrorKind = "tracker_api_error"
	ErrMissingEndCursor ErrorKind = "tracker_missing_end_cursor"
)

// ErrOutOfProject is wrapped by the tracker_not_found error of an issue that exists but
// is not in tracker.project: a GitHub issue of another repository (by its
// repository_url, or behind a redirect, which adapters do not follow), a Jira issue of
// another project. To the orchestrator the issue is gone from its project; tracker_api
// answers project_scope_violation (spec/agent-extensions.md, "Project scoping").
var ErrOutOfProject = errors.New("the issue is not in tracker.project")

// Retryable reports whether an operation that failed with this kind may succeed when
// tried again later. Configuration, auth, not-found and payload errors never do.
func (k ErrorKind) Retryable() bool {
	switch k {
	case ErrUnsupportedKind, ErrMissingAPIKey, ErrMissingProject, ErrAuth, ErrNotFound, ErrPayload:
		return false
	}
	return true
}

// Error is a tracker failure: what was attempted, its kind and the cause.
type Error struct {
	Kind    ErrorKind
	Op      string // e.g. "fetch_candidates", "transition"
	Message string
	Err     error
}

func (e *Error) Error() string {
	msg := e.Message
	if e.Err != nil {
		if msg != "" {
			msg += ": "
		}
		msg += e.Err.Error()
	}
	if e.Op != "" {
		return fmt.Sprintf("%s: %s: %s", e.Kind, e.Op, msg)
	}
	return fmt.Sprintf("%s: %s", e.Kind, msg)
}

func (e *Error) Unwrap() error { return e.Err }

// Errorf builds an *Error of kind k for operation op.
func Errorf(k ErrorKind, op, format string, args ...any) *Error {
	return &Error{Kind: k, Op: op, Message: fmt.Sprintf(format, args...)}
}

// KindOf returns the kind of the first *Error in err's chain, or "" if there is none.
func KindOf(err error) ErrorKind {
	var te *Error
	if errors.As(err, &te) {
		return te.Kind
	}
	return ""
}
