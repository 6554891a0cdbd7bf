package store

import (
	"errors"
	"fmt"
)

// Sentinel errors. Store methods wrap them with the operation and the id, so test with
// errors.Is.
var (
	// ErrNotFound: the run the call names does not exist.
	ErrNotFound = errors.New("not found")
	// ErrRunNotRunning: the run has already ended, so it can no longer be updated.
	ErrRunNotRunning = errors.New("run is not running")
	// ErrReadOnly: the store was opened read-only (the MCP sidecar) and cannot write.
	ErrReadOnly = errors.New("store is read-only")
	// ErrConflict: the change collides with one already made (a checkpoint answered twice).
	ErrConflict = errors.New("conflict")
)

// LockedError is returned by a daemon's Open when another live process holds the
// database. It goes away by itself when that process exits, however it exits.
type LockedError struct {
	Path string // the database
	PID  int    // the holder, 0 when it could not be read
}

func (e *LockedError) Error() string {
	pid := "unknown"
	if e.PID > 0 {
		pid = fmt.Sprint(e.PID)
	}
	return fmt.Sprintf("store: %s is in use by another sortie daemon (pid %s); stop that daemon or point db_path at another file", e.Path, pid)
}

// SchemaError is returned by Open when the database's schema version is not one this
// binary can use: newer than it knows (written by a newer Sortie), or, for a read-only
// open, older (no daemon has migrated it yet).
type SchemaError struct {
	Path    string
	Version int // the database's schema version
	Known   int // the newest version this binary knows
}

func (e *SchemaError) Error() string {
	if e.Version > e.Known {
		return fmt.Sprintf("store: %s: database schema is version %d, but this sortie binary knows only versions up to %d; "+
			"it was written by a newer sortie: run that version (or newer), or point db_path at another file", e.Path, e.Version, e.Known)
	}
	return fmt.Sprintf("store: %s: database schema is version %d, but this sortie binary needs version %d; "+
		"start the sortie daemon once to migrate it", e.Path, e.Version, e.Known)
}
