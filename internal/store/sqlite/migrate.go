package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"sync"
	"time"

	"sortie/internal/store"
	"sortie/internal/store/internal/migration"
	"sortie/internal/store/internal/sqlrow"
)

// applicationID marks a database file as a sortie store (PRAGMA application_id), so Open
// refuses a file that belongs to another program, including another implementation of
// sortie that uses the same default file name, instead of migrating it.
const applicationID = 0x534F5254 // "SORT"

//go:embed migrations/*.sql
var migrationFiles embed.FS

var embeddedMigrations = sync.OnceValues(func() ([]migration.Migration, error) {
	return migration.Load(migrationFiles)
})

// minReadableSchema is the oldest schema version OpenReadOnly accepts: the one the
// read-only readers (the MCP sidecar's RunsForIssue and IssueTotals, `sortie status`'s
// RecentRuns, RunsInProgress, LoadRetries and LoadHolds) work against. Migration 002
// only added the indexes ListRuns and RunsForIdentifier name, which only the daemon's
// own server uses; migration 003 only added tables, whose readers see an older
// database as holding no workflow records (workflowTablesExist); migration 004 only
// added runs.remote_pgid, which they read as 0 there (remotePGIDExists); migration 005
// only dropped an index; and migration 006 only added tables and runs.review_metadata,
// read as no reaction records and an empty string there (reactionTablesExist). So a freshly
// installed binary's sidecars and `sortie status` still read a daemon's database
// before that daemon restarts and migrates it. A migration that changes what those
// readers query must raise this to its own version.
const minReadableSchema = 1

// remoteSchema is the migration that added runs.remote_pgid (004_remote_pgid); the run
// readers of an older database read 0 in its place (remotePGIDExists).
const remoteSchema = 4

// reactionSchema is the migration that added the reaction tables and
// runs.review_metadata (006_reactions); the readers of an older database read no
// reaction records and an empty string in the column's place (reactionTablesExist).
const reactionSchema = 6

// workflowSchema is the migration that added the workflow tables (003_workflows).
const workflowSchema = 3

// SchemaVersion is the newest schema version this binary knows.
func SchemaVersion() int {
	ms, err := embeddedMigrations()
	if err != nil {
		return 0
	}
	return len(ms)
}

// schemaState is what a database says about itself before any migration.
type schemaState struct {
	appID   int64
	tables  int // user tables, schema_migrations included
	version int // highest applied migration, 0 when none
}

func readSchemaState(ctx context.Context, db *sql.DB) (schemaState, error) {
	var st schemaState
	if err := db.QueryRowContext(ctx, `PRAGMA application_id`).Scan(&st.appID); err != nil {
		return st, fmt.Errorf("read application_id: %w", err)
	}
	var hasMigrations int
	err := db.QueryRowContext(ctx, `SELECT COUNT(*), COALESCE(SUM(name = 'schema_migrations'), 0)
		FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'`).Scan(&st.tables, &hasMigrations)
	if err != nil {
		return st, fmt.Errorf("list tables: %w", err)
	}
	if hasMigrations > 0 {
		err = db.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&st.version)
		if err != nil {
			return st, fmt.Errorf("read schema version: %w", err)
		}
	}
	return st, nil
}

// checkOwner refuses a database that is neither empty nor a sortie store.
func (st schemaState) checkOwner(shown string) error {
	if st.appID == applicationID || (st.appID == 0 && st.tables == 0) {
		return nil
	}
	return fmt.Errorf("store: %s: not a sortie store database (application_id %#x, %d tables); "+
		"it may belong to another program or another sortie implementation: point db_path at a new file, or move this one aside",
		shown, st.appID, st.tables)
}

// migrate brings the database up to the newest of ms, one transaction per migration,
// and returns the resulting version. It refuses a database newer than ms.
func migrate(ctx context.Context, db *sql.DB, shown string, ms []migration.Migration) (int, error) {
	st, err := readSchemaState(ctx, db)
	if err != nil {
		return 0, fmt.Errorf("store: %s: %w", shown, err)
	}
	if err := st.checkOwner(shown); err != nil {
		return 0, err
	}
	if st.version > len(ms) {
		return 0, &store.SchemaError{Path: shown, Version: st.version, Known: len(ms)}
	}
	for _, m := range ms[st.version:] {
		if err := applyMigration(ctx, db, m); err != nil {
			return st.version, fmt.Errorf("store: %s: migration %03d_%s: %w", shown, m.Version, m.Name, err)
		}
		st.version = m.Version
	}
	return st.version, nil
}

func applyMigration(ctx context.Context, db *sql.DB, m migration.Migration) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	// The marker and the bookkeeping table are made in the same transaction as the
	// first migration, so a failed first migration leaves an empty file, not one Open
	// would later refuse as foreign.
	stmts := []string{
		fmt.Sprintf(`PRAGMA application_id = %d`, applicationID),
		`CREATE TABLE IF NOT EXISTS schema_migrations (
			version       INTEGER PRIMARY KEY,
			name          TEXT    NOT NULL,
			applied_at_ms INTEGER NOT NULL
		)`,
		m.SQL, // the driver runs every statement of the file
	}
	for _, q := range stmts {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at_ms) VALUES (?, ?, ?)`,
		m.Version, m.Name, sqlrow.MS(time.Now())); err != nil {
		return err
	}
	return tx.Commit()
}
