package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"sortie/internal/store"
	"sortie/internal/store/internal/migration"
)

func TestOpen_MigratesEmptyDatabase(t *testing.T) {
	s, _ := openTemp(t)
	defer s.Close()
	ctx := context.Background()

	rows, err := s.w.QueryContext(ctx, `SELECT version, name FROM schema_migrations ORDER BY version`)
	if err != nil {
		t.Fatal(err)
	}
	var applied []string
	for rows.Next() {
		var v int
		var name string
		if err := rows.Scan(&v, &name); err != nil {
			t.Fatal(err)
		}
		applied = append(applied, fmt.Sprintf("%03d_%s", v, name))
	}
	rows.Close()
	if len(applied) != SchemaVersion() || applied[0] != "001_initial" {
		t.Fatalf("schema_migrations = %v, want %d migrations starting with 001_initial", applied, SchemaVersion())
	}

	pragmas := []struct {
		pragma string
		want   string
	}{
		{"application_id", fmt.Sprint(applicationID)},
		{"journal_mode", "wal"},
		{"synchronous", "1"}, // NORMAL
		{"foreign_keys", "1"},
		{"busy_timeout", fmt.Sprint(busyTimeout.Milliseconds())},
	}
	for _, p := range pragmas {
		var got string
		if err := s.w.QueryRowContext(ctx, "PRAGMA "+p.pragma).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != p.want {
			t.Errorf("PRAGMA %s = %s, want %s", p.pragma, got, p.want)
		}
	}
	for _, table := range []string{"runs", "retries", "sessions", "run_events"} {
		var n int
		if err := s.w.QueryRowContext(ctx, `SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = ?`, table).Scan(&n); err != nil || n != 1 {
			t.Errorf("table %s: found %d (%v), want 1", table, n, err)
		}
	}
}

func TestOpen_ReopenIsIdempotent(t *testing.T) {
	ctx := context.Background()
	s, db := openTemp(t)
	if _, err := s.StartRun(ctx, newRun("1")); err != nil {
		t.Fatal(err)
	}
	s.Close()
	for i := range 3 {
		s, err := Open(ctx, db)
		if err != nil {
			t.Fatalf("reopen %d: %v", i, err)
		}
		var n int
		if err := s.w.QueryRow(`SELECT COUNT(*) FROM schema_migrations`).Scan(&n); err != nil || n != SchemaVersion() {
			t.Fatalf("reopen %d: %d schema_migrations rows (%v), want %d", i, n, err, SchemaVersion())
		}
		if runs, err := s.RecentRuns(ctx, 10); err != nil || len(runs) != 1 {
			t.Fatalf("reopen %d: %d runs (%v), want the 1 written before", i, len(runs), err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestOpen_RefusesNewerSchema(t *testing.T) {
	ctx := context.Background()
	s, db := openTemp(t)
	newer := SchemaVersion() + 1
	if _, err := s.w.Exec(`INSERT INTO schema_migrations (version, name, applied_at_ms) VALUES (?, 'from_the_future', 0)`, newer); err != nil {
		t.Fatal(err)
	}
	s.Close()

	opens := map[string]func() (*Store, error){
		"Open":         func() (*Store, error) { return Open(ctx, db) },
		"OpenReadOnly": func() (*Store, error) { return OpenReadOnly(ctx, db) },
	}
	for name, open := range opens {
		for attempt := range 2 { // a refused Open must not leave the lock held
			_, err := open()
			var se *store.SchemaError
			if !errors.As(err, &se) || se.Version != newer || se.Known != SchemaVersion() {
				t.Fatalf("%s #%d: err = %v, want *store.SchemaError{Version: %d, Known: %d}", name, attempt, err, newer, SchemaVersion())
			}
			msg := err.Error()
			for _, want := range []string{db, fmt.Sprintf("version %d", newer), fmt.Sprintf("up to %d", SchemaVersion()), "newer sortie"} {
				if !strings.Contains(msg, want) {
					t.Errorf("%s: error %q does not mention %q", name, msg, want)
				}
			}
		}
	}
}

func TestOpen_RefusesForeignDatabase(t *testing.T) {
	db := filepath.Join(t.TempDir(), ".sortie.db")
	raw, err := sql.Open("sqlite", dsn(db))
	if err != nil {
		t.Fatal(err)
	}
	// What another program (or sortie-ai/sortie, same default file name) leaves behind.
	for _, q := range []string{
		`CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT)`,
		`INSERT INTO schema_migrations VALUES (1, '')`,
		`CREATE TABLE run_history (id INTEGER PRIMARY KEY)`,
	} {
		if _, err := raw.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	raw.Close()

	_, err = Open(context.Background(), db)
	if err == nil || !strings.Contains(err.Error(), "not a sortie store database") || !strings.Contains(err.Error(), db) {
		t.Fatalf("Open(foreign db) = %v, want an error naming %s as not a sortie store database", err, db)
	}
	raw, _ = sql.Open("sqlite", dsn(db))
	defer raw.Close()
	var tables int
	raw.QueryRow(`SELECT COUNT(*) FROM sqlite_master WHERE type = 'table'`).Scan(&tables)
	if tables != 2 {
		t.Fatalf("refused database now has %d tables, want it untouched (2)", tables)
	}
}

func TestMigrate_EachMigrationInItsOwnTransaction(t *testing.T) {
	good1 := &fstest.MapFile{Data: []byte(`CREATE TABLE a (x INTEGER); CREATE TABLE a2 (x INTEGER);`)}
	bad := &fstest.MapFile{Data: []byte(`CREATE TABLE b (x INTEGER); INSERT INTO no_such_table VALUES (1);`)}
	tests := []struct {
		name        string
		files       fstest.MapFS
		wantVersion int
		wantTables  []string // user tables after the failure
	}{
		{"second migration fails", fstest.MapFS{"migrations/001_a.sql": good1, "migrations/002_b.sql": bad}, 1, []string{"a", "a2", "schema_migrations"}},
		{"first migration fails", fstest.MapFS{"migrations/001_b.sql": bad}, 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			db, err := sql.Open("sqlite", dsn(filepath.Join(t.TempDir(), "m.db")))
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			ms, err := migration.Load(tt.files)
			if err != nil {
				t.Fatal(err)
			}
			v, err := migrate(ctx, db, "m.db", ms)
			if err == nil || !strings.Contains(err.Error(), "migration") {
				t.Fatalf("migrate = %v, want the failing migration's error", err)
			}
			st, _ := readSchemaState(ctx, db)
			if v != tt.wantVersion || st.version != tt.wantVersion {
				t.Errorf("version after failure = %d (db says %d), want %d", v, st.version, tt.wantVersion)
			}
			var tables []string
			rows, _ := db.Query(`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name`)
			for rows.Next() {
				var n string
				rows.Scan(&n)
				tables = append(tables, n)
			}
			rows.Close()
			if strings.Join(tables, ",") != strings.Join(tt.wantTables, ",") {
				t.Errorf("tables after failure = %v, want %v (the failed migration rolled back whole)", tables, tt.wantTables)
			}
			if tt.wantVersion == 0 && st.appID != 0 {
				t.Errorf("application_id after a failed first migration = %#x, want 0 so the file still counts as empty", st.appID)
			}
			// Fixed migrations then apply cleanly.
			fixed, _ := migration.Load(fstest.MapFS{"migrations/001_a.sql": good1})
			if tt.wantVersion == 0 {
				if _, err := migrate(ctx, db, "m.db", fixed); err != nil {
					t.Fatalf("migrate after a failed first migration: %v", err)
				}
			}
		})
	}
}

func TestEmbeddedMigrations(t *testing.T) {
	if _, err := embeddedMigrations(); err != nil || SchemaVersion() < 1 {
		t.Fatalf("embedded migrations: version %d, %v", SchemaVersion(), err)
	}
}

func newRun(issue string) store.Run {
	return store.Run{IssueID: issue, Identifier: "P-" + issue, Attempt: 1, AgentKind: "mock", StartedAt: t0}
}

func TestOpen_PathsWithURISpecialCharacters(t *testing.T) {
	ctx := context.Background()
	for _, name := range []string{"with space", "q?mark", "hash#tag", "per%25cent", "ünïcode"} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), name)
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			db := filepath.Join(dir, "my db?.sqlite")
			s, err := Open(ctx, db)
			if err != nil {
				t.Fatalf("Open(%q): %v", db, err)
			}
			if _, err := s.StartRun(ctx, newRun("1")); err != nil {
				t.Fatal(err)
			}
			s.Close()
			if _, err := os.Stat(db); err != nil {
				t.Fatalf("database is not at %q: %v", db, err)
			}
			ro, err := OpenReadOnly(ctx, db)
			if err != nil {
				t.Fatalf("OpenReadOnly(%q): %v", db, err)
			}
			defer ro.Close()
			if runs, err := ro.RecentRuns(ctx, 1); err != nil || len(runs) != 1 {
				t.Fatalf("read back %d runs, %v; want 1", len(runs), err)
			}
		})
	}
}
