//go:build !unix

package sqlite

import (
	"fmt"
	"runtime"
)

type fileLock struct{}

func lockPath(dbPath string) string { return dbPath + ".lock" }

// acquireLock fails: without flock(2) Open cannot promise one daemon per database.
func acquireLock(dbPath, shown string) (*fileLock, error) {
	return nil, fmt.Errorf("store: lock %s: exclusive database locking is not implemented on %s", shown, runtime.GOOS)
}

func (l *fileLock) release() error { return nil }
