//go:build unix

package sqlite

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	"sortie/internal/store"
)

// fileLock is an exclusive flock(2) on "<db>.lock" that records the holder's pid. The
// kernel releases it when the holder's file descriptor is closed, which happens however
// the process dies, so kill -9 never leaves a stale lock. Go opens files with
// O_CLOEXEC, so agent processes the daemon spawns do not inherit it.
//
// flock locks belong to an open file description, so a second Open in the same process
// is refused like a second process.
type fileLock struct{ f *os.File }

func lockPath(dbPath string) string { return dbPath + ".lock" }

// acquireLock takes the lock of the database at dbPath (shown in errors as shown).
func acquireLock(dbPath, shown string) (*fileLock, error) {
	f, err := os.OpenFile(lockPath(dbPath), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("store: lock %s: %w", shown, err)
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if errors.Is(err, syscall.EWOULDBLOCK) {
		pid := readLockPID(f)
		f.Close()
		return nil, &store.LockedError{Path: shown, PID: pid}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("store: lock %s: flock %s: %w", shown, lockPath(dbPath), err)
	}
	// The pid is informational (for the error above); the flock is the lock.
	err = f.Truncate(0)
	if err == nil {
		_, err = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("store: lock %s: record pid: %w", shown, err)
	}
	return &fileLock{f: f}, nil
}

// readLockPID reads the holder's pid, 0 when unreadable (the holder may not have
// written it yet).
func readLockPID(f *os.File) int {
	b := make([]byte, 32)
	n, _ := f.ReadAt(b, 0)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b[:n])))
	if err != nil || pid <= 0 {
		return 0
	}
	return pid
}

// release unlocks. The lock file stays: deleting it would let a daemon that opened the
// old file and one that creates a new file both believe they hold the lock.
func (l *fileLock) release() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := l.f.Close() // closing the last descriptor releases the flock
	l.f = nil
	return err
}
