package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"sortie/internal/store"
	"sortie/internal/store/internal/migration"
	"sortie/internal/testkit/pgtest"
)

// withPassword returns url with a password in its userinfo. The test cluster trusts
// every local connection, so the password is ignored, but it is in every string Open
// could quote.
func withPassword(url, password string) string {
	return strings.Replace(url, "postgres://sortie@", "postgres://sortie:"+password+"@", 1)
}

// connect opens a plain connection to url for looking at the database behind the store's
// back.
func connect(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// appliedMigrations returns schema_migrations as NNN_name, in version order.
func appliedMigrations(t *testing.T, conn *pgx.Conn) []string {
	t.Helper()
	rows, _ := conn.Query(context.Background(), `SELECT version, name FROM schema_migrations ORDER BY version`)
	applied, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (string, error) {
		var v int
		var name string
		err := row.Scan(&v, &name)
		return fmt.Sprintf("%03d_%s", v, name), err
	})
	if err != nil {
		t.Fatal(err)
	}
	return applied
}

func TestOpen_MigratesEmptyDatabase(t *testing.T) {
	_, url := openTemp(t)
	conn := connect(t, url)
	applied := appliedMigrations(t, conn)
	if len(applied) != SchemaVersion() || applied[0] != "001_initial" {
		t.Fatalf("schema_migrations = %v, want %d migrations starting with 001_initial", applied, SchemaVersion())
	}
	for _, table := range []string{"runs", "retries", "holds", "sessions", "run_events", "workflow_sessions", "workflow_trace", "checkpoints"} {
		var ok bool
		if err := conn.QueryRow(context.Background(), `SELECT to_regclass($1) IS NOT NULL`, table).Scan(&ok); err != nil || !ok {
			t.Errorf("table %s: exists %v (%v), want it made", table, ok, err)
		}
	}
}

// TestOpen_ConcurrentDaemonsMigrateOnce: daemons started at once against one empty
// database all open it, and each migration is applied exactly once.
func TestOpen_ConcurrentDaemonsMigrateOnce(t *testing.T) {
	url := pgtest.Shared(t).NewDatabase(t)
	const daemons = 3
	var (
		wg    sync.WaitGroup
		start = make(chan struct{})
		errs  = make([]error, daemons)
	)
	for i := range daemons {
		wg.Go(func() {
			<-start
			s, err := Open(context.Background(), url)
			if err == nil {
				_, err = s.StartRun(context.Background(), storeRun(fmt.Sprint(i)))
				s.Close()
			}
			errs[i] = err
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("daemon %d: %v", i, err)
		}
	}
	conn := connect(t, url)
	applied := appliedMigrations(t, conn)
	if len(applied) != SchemaVersion() {
		t.Fatalf("schema_migrations = %v, want each of the %d migrations once", applied, SchemaVersion())
	}
	for i, m := range applied {
		if !strings.HasPrefix(m, fmt.Sprintf("%03d_", i+1)) {
			t.Errorf("schema_migrations = %v, want versions 1 to %d in order", applied, SchemaVersion())
		}
	}
	var runs int
	if err := conn.QueryRow(context.Background(), `SELECT COUNT(*) FROM runs`).Scan(&runs); err != nil || runs != daemons {
		t.Errorf("runs = %d (%v), want one per daemon: %d", runs, err, daemons)
	}
}

func storeRun(issue string) store.Run {
	return store.Run{IssueID: issue, Identifier: "P-" + issue, Attempt: 1, AgentKind: "mock", StartedAt: t0}
}

func TestOpen_RefusesNewerSchema(t *testing.T) {
	const password = "s3cret-pw"
	_, url := openTemp(t)
	newer := SchemaVersion() + 1
	if _, err := connect(t, url).Exec(context.Background(),
		`INSERT INTO schema_migrations (version, name, applied_at_ms) VALUES ($1, 'from_the_future', 0)`, newer); err != nil {
		t.Fatal(err)
	}
	for attempt := range 2 { // a refused Open leaves nothing behind that changes the answer
		_, err := Open(context.Background(), withPassword(url, password))
		var se *store.SchemaError
		if !errors.As(err, &se) || se.Version != newer || se.Known != SchemaVersion() {
			t.Fatalf("Open #%d: err = %v, want *store.SchemaError{Version: %d, Known: %d}", attempt, err, newer, SchemaVersion())
		}
		msg := err.Error()
		for _, want := range []string{withPassword(url, mask), fmt.Sprintf("version %d", newer), fmt.Sprintf("up to %d", SchemaVersion()), "newer sortie"} {
			if !strings.Contains(msg, want) {
				t.Errorf("error %q does not mention %q", msg, want)
			}
		}
		if strings.Contains(msg, password) {
			t.Errorf("error %q shows the password", msg)
		}
	}
}

func TestOpen_RefusesAnotherProgramsDatabase(t *testing.T) {
	tests := []struct {
		name   string
		tables string
	}{
		{"foreign tables", `CREATE TABLE accounts (id int)`},
		{"another tool's schema_migrations", `CREATE TABLE schema_migrations (version bigint PRIMARY KEY, dirty boolean NOT NULL)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url := pgtest.Shared(t).NewDatabase(t)
			conn := connect(t, url)
			if _, err := conn.Exec(context.Background(), tt.tables); err != nil {
				t.Fatal(err)
			}
			_, err := Open(context.Background(), url)
			if err == nil || !strings.Contains(err.Error(), "not a sortie store") || !strings.Contains(err.Error(), "search_path") {
				t.Fatalf("Open = %v, want a refusal naming the way out (a schema of its own)", err)
			}
			var runs *string
			if err := conn.QueryRow(context.Background(), `SELECT to_regclass('runs')::text`).Scan(&runs); err != nil || runs != nil {
				t.Errorf("after the refusal, table runs = %v (%v), want none made", runs, err)
			}
		})
	}
}

// TestOpen_SchemaOfItsOwn: a database shared with another program works when sortie
// has a schema of its own, named by search_path in the URL.
func TestOpen_SchemaOfItsOwn(t *testing.T) {
	url := pgtest.Shared(t).NewDatabase(t)
	if _, err := connect(t, url).Exec(context.Background(), `CREATE TABLE accounts (id int); CREATE SCHEMA sortie`); err != nil {
		t.Fatal(err)
	}
	s, err := Open(context.Background(), url+"&search_path=sortie")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.StartRun(context.Background(), storeRun("1")); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := connect(t, url).QueryRow(context.Background(), `SELECT COUNT(*) FROM sortie.runs`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("runs in schema sortie = %d (%v), want 1", n, err)
	}
}

// TestMigrate_FailureRollsBackThatMigrationOnly: a failing migration leaves the database
// at the version before it, with none of its changes, and a corrected binary carries
// on from there.
func TestMigrate_FailureRollsBackThatMigrationOnly(t *testing.T) {
	ctx := context.Background()
	good := &fstest.MapFile{Data: []byte(`CREATE TABLE a (x int);`)}
	bad := &fstest.MapFile{Data: []byte(`CREATE TABLE b (x int); SELECT no_such_function();`)}
	fixed := &fstest.MapFile{Data: []byte(`CREATE TABLE b (x int);`)}
	url := pgtest.Shared(t).NewDatabase(t)
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	run := func(files fstest.MapFS) error {
		ms, err := migration.Load(files)
		if err != nil {
			t.Fatal(err)
		}
		return migrate(ctx, pool, "the test database", ms)
	}
	err = run(fstest.MapFS{"migrations/001_a.sql": good, "migrations/002_b.sql": bad})
	if err == nil || !strings.Contains(err.Error(), "migration 002_b") {
		t.Fatalf("migrate with a failing 002 = %v, want an error naming it", err)
	}
	conn := connect(t, url)
	if got := appliedMigrations(t, conn); len(got) != 1 || got[0] != "001_a" {
		t.Fatalf("schema_migrations after the failure = %v, want [001_a]", got)
	}
	var b *string
	if err := conn.QueryRow(ctx, `SELECT to_regclass('b')::text`).Scan(&b); err != nil || b != nil {
		t.Fatalf("table b after its migration failed = %v (%v), want none", b, err)
	}
	if err := run(fstest.MapFS{"migrations/001_a.sql": good, "migrations/002_b.sql": fixed}); err != nil {
		t.Fatalf("migrate with 002 fixed: %v", err)
	}
	if got := appliedMigrations(t, conn); len(got) != 2 {
		t.Fatalf("schema_migrations after the fix = %v, want 001_a and 002_b", got)
	}
}

// TestOpen_UnreachableServerHidesThePassword: a connection error names the database
// with its password redacted.
func TestOpen_UnreachableServerHidesThePassword(t *testing.T) {
	const password = "hunter2-secret"
	url := "postgres://sortie:" + password + "@127.0.0.1:1/sortie?sslmode=disable&connect_timeout=5"
	_, err := Open(context.Background(), url)
	if err == nil {
		t.Fatal("Open of a server that is not there succeeded")
	}
	if msg := err.Error(); strings.Contains(msg, password) || !strings.Contains(msg, "sortie:xxxxx@127.0.0.1:1") {
		t.Fatalf("error %q: want the URL with its password redacted", msg)
	}
}
