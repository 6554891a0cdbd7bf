package postgres

import (
	"context"
	"embed"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"sortie/internal/store"
	"sortie/internal/store/internal/migration"
	"sortie/internal/store/internal/sqlrow"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

var embeddedMigrations = sync.OnceValues(func() ([]migration.Migration, error) {
	return migration.Load(migrationFiles)
})

// SchemaVersion is the newest schema version this binary knows.
func SchemaVersion() int {
	ms, err := embeddedMigrations()
	if err != nil {
		return 0
	}
	return len(ms)
}

// migrationLock is the key of the advisory lock a daemon holds while it migrates, so
// that daemons starting at once against one database migrate it one after the other:
// the first applies what is missing, the others then find nothing left to do.
// PostgreSQL scopes advisory locks to a database.
const migrationLock int64 = 0x736f72746965 // "sortie"

// schemaMigrationsTable is the bookkeeping table, made in the same transaction as the
// first migration, so a failed first migration leaves an empty schema, not one Open
// would later refuse as foreign.
const schemaMigrationsTable = `CREATE TABLE IF NOT EXISTS schema_migrations (
	version       INTEGER PRIMARY KEY,
	name          TEXT    NOT NULL,
	applied_at_ms BIGINT  NOT NULL
)`

// migrate brings the database up to the newest of ms, one transaction per migration,
// holding migrationLock throughout. It refuses a database newer than ms, and one whose
// schema holds tables but no sortie bookkeeping.
func migrate(ctx context.Context, pool *pgxpool.Pool, shown string, ms []migration.Migration) error {
	return pool.AcquireFunc(ctx, func(c *pgxpool.Conn) error {
		conn := c.Conn()
		if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, migrationLock); err != nil {
			return fmt.Errorf("store: %s: wait for another daemon's migration: %w", shown, err)
		}
		defer func() {
			// The lock belongs to the session: should unlocking fail, closing the
			// connection ends the session and so releases it (the pool then drops it).
			unlockCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			defer cancel()
			if _, uerr := conn.Exec(unlockCtx, `SELECT pg_advisory_unlock($1)`, migrationLock); uerr != nil {
				_ = conn.Close(unlockCtx)
			}
		}()
		version, err := readSchemaVersion(ctx, conn, shown)
		if err != nil {
			return err
		}
		if version > len(ms) {
			return &store.SchemaError{Path: shown, Version: version, Known: len(ms)}
		}
		for _, m := range ms[version:] {
			if err := applyMigration(ctx, conn, m); err != nil {
				return fmt.Errorf("store: %s: migration %03d_%s: %w", shown, m.Version, m.Name, err)
			}
		}
		return nil
	})
}

// readSchemaVersion returns the highest migration applied to the schema tables are
// created in (the first of search_path), 0 for an empty one. It refuses a schema with
// tables but no schema_migrations of sortie's shape (version, name, applied_at_ms): it
// belongs to another program, perhaps one whose migration tool uses the same table name.
func readSchemaVersion(ctx context.Context, conn *pgx.Conn, shown string) (int, error) {
	var (
		schema  *string
		tables  int
		columns []string
	)
	err := conn.QueryRow(ctx, `SELECT current_schema(),
		(SELECT COUNT(*) FROM pg_tables WHERE schemaname = current_schema()),
		ARRAY(SELECT column_name::text FROM information_schema.columns
			WHERE table_schema = current_schema() AND table_name = 'schema_migrations')`).Scan(&schema, &tables, &columns)
	if err != nil {
		return 0, fmt.Errorf("store: %s: read schema: %w", shown, err)
	}
	if schema == nil {
		return 0, fmt.Errorf("store: %s: no schema of search_path exists to create sortie's tables in; "+
			"create one (CREATE SCHEMA sortie) and name it in the URL (search_path=sortie)", shown)
	}
	ours := slices.Contains(columns, "version") && slices.Contains(columns, "name") && slices.Contains(columns, "applied_at_ms")
	switch {
	case tables == 0:
		return 0, nil
	case !ours:
		return 0, fmt.Errorf("store: %s: schema %q holds %d tables but is not a sortie store; it belongs to another program: "+
			"point the URL at an empty database, or give sortie a schema of its own (CREATE SCHEMA sortie, then search_path=sortie in the URL)",
			shown, *schema, tables)
	}
	var version int
	if err := conn.QueryRow(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&version); err != nil {
		return 0, fmt.Errorf("store: %s: read schema version: %w", shown, err)
	}
	return version, nil
}

func applyMigration(ctx context.Context, conn *pgx.Conn, m migration.Migration) error {
	return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		// Without arguments pgx sends each Exec as a simple query, which may hold
		// every statement of the file.
		for _, q := range []string{schemaMigrationsTable, m.SQL} {
			if _, err := tx.Exec(ctx, q); err != nil {
				return err
			}
		}
		_, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name, applied_at_ms) VALUES ($1, $2, $3)`,
			m.Version, m.Name, sqlrow.MS(time.Now()))
		return err
	})
}
