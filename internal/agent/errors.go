package agent

import (
	"errors"
	"fmt"
)

// ErrorKind classifies an agent failure. The values are the spec's words.
type ErrorKind string

// Agent error kinds.
const (
	ErrNotFound          ErrorKind = "agent_not_found"
	ErrInvalidWorkspace  ErrorKind = "invalid_workspace_cwd"
	ErrTurnCancelled     ErrorKind = "turn_cancelled"
	ErrTurnInputRequired ErrorKind = "turn_input_required"
	ErrResponseTimeout   ErrorKind = "response_timeout"
	ErrTurnTimeout       ErrorKind = "turn_timeout"
	ErrPortExit          ErrorKind = "port_exit"
	ErrResponse          ErrorKind = "response_error"
	ErrTurnFailed        ErrorKind = "turn_failed"
)

// Retryable reports whether a run that failed with this kind should be retried with
// backoff. A missing binary, a bad workspace, a cancelled turn and a turn that needs a
// human's input are not.
func (k ErrorKind) Retryable() bool {
	switch k {
	case ErrNotFound, ErrInvalidWorkspace, ErrTurnCancelled, ErrTurnInputRequired:
		return false
	}
	return true
}

// Error is an agent failure with its kind.
type Error struct {
	Kind    ErrorKind
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
	return fmt.Sprintf("%s: %s", e.Kind, msg)
}

func (e *Error) Unwrap() error { return e.Err }

// Errorf builds an *Error of kind k.
func Errorf(k ErrorKind, format string, args ...any) *Error {
	return &Error{Kind: k, Message: fmt.Sprintf(format, args...)}
}

// KindOf returns the kind of the first *Error in err's chain, or "" if there is none.
func KindOf(err error) ErrorKind {
	var ae *Error
	if errors.As(err, &ae) {
		return ae.Kind
	}
	return ""
}
