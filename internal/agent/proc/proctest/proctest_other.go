//go:build !linux

package proctest

import (
	"testing"
	"time"
)

// GroupMembers skips the test: it needs Linux's /proc.
func GroupMembers(t testing.TB, pgid int) []int {
	t.Skip("proctest: needs Linux /proc")
	return nil
}

// WithEnv skips the test: it needs Linux's /proc.
func WithEnv(t testing.TB, s string) []int {
	t.Skip("proctest: needs Linux /proc")
	return nil
}

// WaitExited skips the test: it needs Linux's pidfd.
func WaitExited(t testing.TB, pid int, timeout time.Duration) {
	t.Skip("proctest: needs Linux pidfd")
}

// RequireGroupGone skips the test: it needs Linux's /proc.
func RequireGroupGone(t testing.TB, pgid int) {
	t.Skip("proctest: needs Linux /proc")
}

// Alive is always false off Linux.
func Alive(pid int) bool { return false }
