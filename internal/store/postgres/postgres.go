// Package postgres is the Store on a PostgreSQL server, for daemons that keep their
// state off the machine they run on, or that share one database. It speaks pgx's native
// protocol through a pgxpool connection pool, migrates the database on Open (several
// daemons may start at once: the migration is serialised by an advisory lock), and
// keeps the same schema and semantics as the SQLite store. It does not decide which
// daemon owns which issue.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"sortie/internal/store"
	"sortie/internal/store/internal/sqlrow"
)

// Store is the PostgreSQL implementation of store.Store. It is safe for concurrent use
// by many goroutines and, through the database, by many processes.
type Store struct {
	pool  *pgxpool.Pool
	shown string           // the URL with its password redacted, for messages
	now   func() time.Time // the store's own bookkeeping clock (updated_at)

	// host and pid name this daemon in the runs it starts.
	host string
	pid  int
}

var _ store.Store = (*Store)(nil)

// Open connects to the database url names (a postgres:// URL or key=value settings, as
// pgx takes them; see CheckURL), migrates it to SchemaVersion and returns the store. It
// fails with *store.SchemaError when the database was migrated by a newer sortie, and
// with an error naming the database, its password redacted, when it cannot connect or
// the database holds tables that are not sortie's.
func Open(ctx context.Context, url string) (*Store, error) {
	cfg, err := parseURL(url)
	if err != nil {
		return nil, err
	}
	shown := Redact(url)
	ms, err := embeddedMigrations()
	if err != nil {
		return nil, fmt.Errorf("store: embedded migrations: %w", err)
	}
	if _, ok := cfg.ConnConfig.RuntimeParams["application_name"]; !ok {
		// So that an operator tells sortie's connections apart in pg_stat_activity.
		cfg.ConnConfig.RuntimeParams["application_name"] = "sortie"
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", shown, err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("store: open %s: %w", shown, err)
	}
	if err := migrate(ctx, pool, shown, ms); err != nil {
		pool.Close()
		return nil, err
	}
	s := &Store{pool: pool, shown: shown, now: time.Now, pid: os.Getpid()}
	s.host, _ = os.Hostname()
	return s, nil
}

// Close closes the pool's connections, waiting for those in use to be returned. It is
// safe to call more than once.
func (s *Store) Close() error {
	s.pool.Close()
	return nil
}

// Ping reports whether the database answers, bounded by ctx. /readyz calls it; an
// error names the database, its password redacted.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.pool.Ping(ctx); err != nil {
		return fmt.Errorf("store: %s does not answer: %w", s.shown, err)
	}
	return nil
}

// text makes agent-supplied text storable and bounds it to limit bytes
// (store.Truncate). PostgreSQL's text holds neither NUL bytes nor invalid UTF-8, which
// SQLite keeps as they are; both become U+FFFD here, so that a stray byte in an agent's
// output cannot make a write fail.
func text(s string, limit int) string {
	return store.Truncate(clean(s), limit)
}

// clean replaces NUL bytes and invalid UTF-8 in s with U+FFFD.
func clean(s string) string {
	if utf8.ValidString(s) && strings.IndexByte(s, 0) < 0 {
		return s
	}
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}

// isForeignKeyViolation reports whether err is PostgreSQL's foreign_key_violation: a
// row names a run that does not exist.
func isForeignKeyViolation(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23503"
}

// isNoRows reports whether err says a query returned no row.
func isNoRows(err error) bool { return errors.Is(err, pgx.ErrNoRows) }

// collect is pgx.CollectRows for the row scanners the SQL stores share, except that
// no rows make a nil list, as the SQLite store returns.
func collect[T any](rows pgx.Rows, scan func(sqlrow.Scanner) (T, error)) ([]T, error) {
	return pgx.AppendRows([]T(nil), rows, func(row pgx.CollectableRow) (T, error) { return scan(row) })
}
