package proc

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"syscall"

	"sortie/internal/agent"
)

// Exit is how a child process ended.
type Exit struct {
	Code   int            // exit status; -1 when killed by a signal or unknown
	Signal syscall.Signal // the signal that killed it; 0 when it exited by itself
	// Cancelled: the Start context was done before the child exited, so the stop was
	// the orchestrator's doing (cancellation, stall, shutdown).
	Cancelled bool
	// Stopped: Stop ran before the child exited (by ctx or by the adapter).
	Stopped bool
	// Err is a failure of the wait itself, such as exec.ErrWaitDelay when a descendant
	// outside the group held stderr open; nil normally, and never a non-zero status.
	Err error
}

// Signalled reports whether a signal killed the child.
func (e Exit) Signalled() bool { return e.Signal != 0 }

// String describes the exit for error messages: "exit status 3", "killed by signal
// terminated".
func (e Exit) String() string {
	if e.Signal != 0 {
		return "killed by signal " + e.Signal.String()
	}
	if e.Code < 0 {
		if e.Err != nil {
			return "unknown exit: " + e.Err.Error()
		}
		return "unknown exit"
	}
	return fmt.Sprintf("exit status %d", e.Code)
}

func newExit(st *os.ProcessState, waitErr error) Exit {
	e := Exit{Code: -1}
	var ee *exec.ExitError
	if waitErr != nil && !errors.As(waitErr, &ee) {
		e.Err = waitErr
	}
	if st == nil {
		return e
	}
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		e.Signal = ws.Signal()
		return e
	}
	e.Code = st.ExitCode()
	return e
}

// Classify maps how a turn's process ended to an agent error kind, in the order of the
// spec's post-exit decision tree: cancelled context → turn_cancelled; stdout read
// error (an over-long line) → port_exit, but not a pipe a descendant still holds open
// after the CLI exited (ErrStdoutHeldOpen: the exit status decides, so a result
// followed by exit 0 is a success); exit 127 (the shell's "not
// found", locally or over SSH) → agent_not_found; killed by a signal → turn_cancelled;
// any other non-zero status → port_exit. It returns "" for a clean exit 0, where the
// adapter decides from the events it saw (turn_completed or turn_failed).
func Classify(e Exit, readErr error) agent.ErrorKind {
	switch {
	case e.Cancelled:
		return agent.ErrTurnCancelled
	case readErr != nil && !errors.Is(readErr, ErrStdoutHeldOpen):
		return agent.ErrPortExit
	case e.Code == 127:
		return agent.ErrNotFound
	case e.Signalled():
		return agent.ErrTurnCancelled
	case e.Code != 0:
		return agent.ErrPortExit
	}
	return ""
}

// ClassifyStart maps an error from Start: a working directory that cannot be entered is
// invalid_workspace_cwd, a missing or non-executable program agent_not_found, a done
// context turn_cancelled, anything else port_exit.
func ClassifyStart(err error) agent.ErrorKind {
	var pe *fs.PathError
	switch {
	case errors.As(err, &pe) && pe.Op == "chdir":
		return agent.ErrInvalidWorkspace
	case errors.Is(err, exec.ErrNotFound), errors.Is(err, fs.ErrNotExist),
		errors.Is(err, fs.ErrPermission), errors.Is(err, syscall.ENOEXEC):
		return agent.ErrNotFound
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return agent.ErrTurnCancelled
	}
	return agent.ErrPortExit
}
