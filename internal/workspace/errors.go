package workspace

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Sentinel errors wrapped (with %w) by the errors this package returns, so callers can
// test for them with errors.Is.
var (
	// ErrInvalidKey: the issue identifier cannot name a directory.
	ErrInvalidKey = errors.New("invalid workspace key")
	// ErrOutsideRoot: a path is not directly inside the workspace root.
	ErrOutsideRoot = errors.New("not directly inside the workspace root")
	// ErrSymlink: a workspace or `.sortie/` path is a symbolic link, which is never followed.
	ErrSymlink = errors.New("is a symbolic link")
	// ErrConflict: something other than a directory occupies a workspace path. It is
	// never replaced.
	ErrConflict = errors.New("exists and is not a directory")
	// ErrNotRegular: a `.sortie/` file is a directory, device, FIFO or socket.
	ErrNotRegular = errors.New("is not a regular file")
	// ErrTooLarge: a `.sortie/` file is larger than the caller's limit.
	ErrTooLarge = errors.New("exceeds its size limit")
)

// HookOp says at which step a hook failed.
type HookOp string

// Hook failure steps.
const (
	HookOpValidate HookOp = "validate" // bad input: no workspace directory, NUL in the script or env
	HookOpStart    HookOp = "start"    // /bin/sh could not be started
	HookOpRun      HookOp = "run"      // the script exited non-zero or was cancelled
	HookOpTimeout  HookOp = "timeout"  // the script outlived the hook timeout; its process group was killed
)

// HookError is a failed hook. Output holds the hook's combined stdout and stderr, at
// most MaxHookOutput bytes of its end; it can be long, so log it as its own field
// rather than reading it from Error.
type HookError struct {
	Hook     string // after_create, before_run, after_run or before_remove
	Op       HookOp
	ExitCode int // the script's exit code, or -1 when it did not exit on its own
	Output   string
	Err      error
}

// errorOutputTail is how much of Output Error quotes.
const errorOutputTail = 400

func (e *HookError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "workspace: hook %s", e.Hook)
	switch e.Op {
	case HookOpValidate:
		b.WriteString(": invalid")
	case HookOpStart:
		b.WriteString(": could not start /bin/sh")
	case HookOpTimeout:
		b.WriteString(" timed out")
	default:
		b.WriteString(" failed")
	}
	if e.Err != nil {
		fmt.Fprintf(&b, ": %v", e.Err)
	}
	if e.Op == HookOpTimeout {
		b.WriteString(" (its process group was killed; raise hooks.timeout_ms if it needs longer)")
	}
	if tail := outputTail(e.Output, errorOutputTail); tail != "" {
		fmt.Fprintf(&b, "; output: %s", tail)
	}
	return b.String()
}

func (e *HookError) Unwrap() error { return e.Err }

// outputTail returns the last max bytes of s on one line, for error messages.
func outputTail(s string, max int) string {
	s = strings.TrimSpace(s)
	if len(s) > max {
		s = "…" + strings.ToValidUTF8(s[len(s)-max:], "")
	}
	return strings.ReplaceAll(s, "\n", " | ")
}

// timeoutError is the Err of a HookOpTimeout HookError. It wraps
// context.DeadlineExceeded.
func timeoutError(d time.Duration, cause error) error {
	return fmt.Errorf("after %s: %w", d, cause)
}
