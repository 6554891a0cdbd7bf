//go:build !linux

package supervise

import (
	"errors"
	"time"
)

func becomeSubreaper() error {
	return errors.New("this system has no child subreapers; processes that leave the agent's process group may outlive its run")
}

// Descendants is empty where /proc does not list parents.
func Descendants(pid int) []int { return nil }

// Adopt is unavailable where there are no child subreapers.
func Adopt(done <-chan struct{}, interval time.Duration) error { return becomeSubreaper() }

// Marked finds nothing where /proc lists no environments.
func Marked(markers ...string) []int { return nil }

// StopMarked stops nothing where Marked finds nothing.
func StopMarked(grace time.Duration, markers ...string) int { return 0 }

// ProcStat is unavailable where there is no /proc.
func ProcStat(pid int) (ppid, pgid int, state string, err error) {
	return 0, 0, "", errors.New("no /proc on this system")
}

// Group finds nothing where /proc does not list process groups.
func Group(pgid int) []int { return nil }

// HasEnv is false where /proc lists no environments.
func HasEnv(pid int, vars ...string) bool { return false }
