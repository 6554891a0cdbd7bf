// Package sqlite is the embedded Store: one SQLite file (WAL mode) next to WORKFLOW.md,
// owned by exactly one daemon at a time through an advisory lock on "<db>.lock", and
// readable at the same time by the MCP sidecar through OpenReadOnly. It uses the pure-Go
// driver modernc.org/sqlite. See docs/persistence.md.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"sortie/internal/store"
	"sortie/internal/store/internal/migration"
)

// busyTimeout is how long a statement waits for a lock held by another connection
// (a backup, the sidecar's checkpoint) before failing with SQLITE_BUSY.
const busyTimeout = 5 * time.Second

// readConns bounds the read pool. WAL lets readers run beside the one writer.
const readConns = 4

// Store is the SQLite implementation of store.Store. It is safe for concurrent use.
// All writes go through one connection, so they never contend with each other.
type Store struct {
	shown    string  // the path as the caller gave it, for messages
	w        *sql.DB // the single writer connection; nil when read-only
	r        *sql.DB // read pool
	lock     *fileLock
	readOnly bool
	now      func() time.Time // the store's own bookkeeping clock (updated_at)

	host string
	pid  int

	// The statements of every run's writes, compiled once (prepare).
	stmtStartRun, stmtProcess, stmtProgress, stmtFinish, stmtTrimEvents *sql.Stmt
	stmtInsertEvents                                                    [len(eventChunks)]*sql.Stmt // of eventChunks[i] rows

	// workflowTables is set once the database is known to be at workflowSchema or
	// newer; see workflowTablesExist.
	workflowTables atomic.Bool
	// remotePGID is set once the database is known to be at remoteSchema or newer.
	remotePGID atomic.Bool
	// reactionTables is set once the database is known to be at reactionSchema or
	// newer; see reactionTablesExist.
	reactionTables atomic.Bool

	closeOnce sync.Once
	closeErr  error
}

var _ store.Store = (*Store)(nil)

// Open opens (creating if needed) the daemon's database at path, takes its lock and
// migrates it to SchemaVersion. It fails with *store.LockedError when another process
// holds the database, with *store.SchemaError when the database was written by a newer
// sortie, and with an error naming the file when it is not a sortie database.
func Open(ctx context.Context, path string) (*Store, error) {
	abs, err := absPath(path)
	if err != nil {
		return nil, err
	}
	ms, err := embeddedMigrations()
	if err != nil {
		return nil, fmt.Errorf("store: embedded migrations: %w", err)
	}
	lock, err := acquireLock(abs, path)
	if err != nil {
		return nil, err
	}
	s := &Store{shown: path, lock: lock, now: time.Now, pid: os.Getpid()}
	s.host, _ = os.Hostname()
	if err := s.open(ctx, abs, ms); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

func (s *Store) open(ctx context.Context, abs string, ms []migration.Migration) error {
	var err error
	s.w, err = sql.Open("sqlite", dsn(abs,
		"_pragma=busy_timeout("+fmt.Sprint(busyTimeout.Milliseconds())+")",
		"_pragma=journal_mode(WAL)",
		"_pragma=synchronous(NORMAL)", // with WAL: durable against a process crash, no fsync per commit
		"_pragma=foreign_keys(1)",
		"_pragma=journal_size_limit(67108864)", // shrink the WAL back to 64 MiB after a burst
		"_txlock=immediate",                    // take the write lock at BEGIN, never upgrade mid-transaction
	))
	if err != nil {
		return fmt.Errorf("store: open %s: %w", s.shown, err)
	}
	s.w.SetMaxOpenConns(1)
	s.w.SetMaxIdleConns(1)
	s.w.SetConnMaxLifetime(0)
	s.w.SetConnMaxIdleTime(0)

	var mode string
	if err := s.w.QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&mode); err != nil {
		return fmt.Errorf("store: open %s: %w", s.shown, err)
	}
	if mode != "wal" {
		return fmt.Errorf("store: open %s: journal_mode is %q, want wal (is the file on a network filesystem? use a local disk)", s.shown, mode)
	}
	if _, err := migrate(ctx, s.w, s.shown, ms); err != nil {
		return err
	}
	if err := s.openReaders(ctx, abs, false); err != nil {
		return err
	}
	return s.prepare(ctx)
}

// OpenReadOnly opens an existing database for reading only (SQLite mode=ro), without the
// daemon's lock, for the MCP sidecar and `sortie status`. Write methods return
// store.ErrReadOnly. It fails when the file does not exist or its schema version is
// older than minReadableSchema or newer than SchemaVersion.
func OpenReadOnly(ctx context.Context, path string) (*Store, error) {
	abs, err := absPath(path)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(abs); err != nil {
		return nil, fmt.Errorf("store: open %s read-only: %w (the daemon creates it on first start)", path, err)
	}
	s := &Store{shown: path, readOnly: true, now: time.Now, pid: os.Getpid()}
	if err := s.openReaders(ctx, abs, true); err != nil {
		s.Close()
		return nil, err
	}
	st, err := readSchemaState(ctx, s.r)
	if err != nil {
		err = fmt.Errorf("store: open %s read-only: %w", path, err)
	} else if err = st.checkOwner(path); err == nil && (st.version < minReadableSchema || st.version > SchemaVersion()) {
		err = &store.SchemaError{Path: path, Version: st.version, Known: SchemaVersion()}
	}
	if err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

func (s *Store) openReaders(ctx context.Context, abs string, readOnly bool) error {
	params := []string{
		"_pragma=busy_timeout(" + fmt.Sprint(busyTimeout.Milliseconds()) + ")",
		"_pragma=query_only(1)",
	}
	if readOnly {
		params = append(params, "mode=ro")
	}
	var err error
	s.r, err = sql.Open("sqlite", dsn(abs, params...))
	if err == nil {
		s.r.SetMaxOpenConns(readConns)
		s.r.SetMaxIdleConns(readConns)
		err = s.r.PingContext(ctx)
	}
	if err != nil {
		return fmt.Errorf("store: open %s for reading: %w", s.shown, err)
	}
	return nil
}

// prepare compiles the statements of the hot paths once.
func (s *Store) prepare(ctx context.Context) error {
	for _, p := range []struct {
		stmt **sql.Stmt
		sql  string
	}{
		{&s.stmtStartRun, sqlStartRun},
		{&s.stmtProcess, sqlUpdateProcess},
		{&s.stmtProgress, sqlUpdateProgress},
		{&s.stmtFinish, sqlFinishRun},
		{&s.stmtInsertEvents[0], sqlInsertEvents(eventChunks[0])},
		{&s.stmtInsertEvents[1], sqlInsertEvents(eventChunks[1])},
		{&s.stmtInsertEvents[2], sqlInsertEvents(eventChunks[2])},
		{&s.stmtTrimEvents, sqlTrimEvents},
	} {
		st, err := s.w.PrepareContext(ctx, p.sql)
		if err != nil {
			return fmt.Errorf("store: open %s: prepare: %w", s.shown, err)
		}
		*p.stmt = st
	}
	return nil
}

// Close closes the database and releases the lock. It is safe to call more than once.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		var errs []error
		for _, st := range append([]*sql.Stmt{s.stmtStartRun, s.stmtProcess, s.stmtProgress, s.stmtFinish, s.stmtTrimEvents}, s.stmtInsertEvents[:]...) {
			if st != nil {
				errs = append(errs, st.Close())
			}
		}
		if s.r != nil {
			errs = append(errs, s.r.Close())
		}
		if s.w != nil {
			// Closed last, so the writer checkpoints the WAL into the main file.
			_, _ = s.w.Exec(`PRAGMA optimize`)
			errs = append(errs, s.w.Close())
		}
		errs = append(errs, s.lock.release())
		if err := errors.Join(errs...); err != nil {
			s.closeErr = fmt.Errorf("store: close %s: %w", s.shown, err)
		}
	})
	return s.closeErr
}

// absPath returns the absolute path of the database with symbolic links resolved, so
// two spellings of one file share one lock.
func absPath(path string) (string, error) {
	if path == "" {
		return "", errors.New("store: open: database path is empty (set db_path)")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("store: open %s: %w", path, err)
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		return real, nil
	}
	// The file does not exist yet: resolve its directory, which must.
	dir, err := filepath.EvalSymlinks(filepath.Dir(abs))
	if err != nil {
		return "", fmt.Errorf("store: open %s: %w", path, err)
	}
	return filepath.Join(dir, filepath.Base(abs)), nil
}

// dsn builds a file: URI for the driver. The path is escaped, so names containing ?, #
// or % are safe.
func dsn(abs string, params ...string) string {
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}
	s := u.String()
	for i, p := range params {
		if i == 0 {
			s += "?"
		} else {
			s += "&"
		}
		s += p
	}
	return s
}

// writable returns an error for a write operation op on a read-only store.
func (s *Store) writable(op string) error {
	if s.readOnly {
		return fmt.Errorf("store: %s: %w (%s was opened read-only)", op, store.ErrReadOnly, s.shown)
	}
	return nil
}
