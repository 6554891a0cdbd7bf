package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"sortie/internal/store"
	"sortie/internal/store/internal/sqlrow"
	"sortie/internal/store/storetest"
)

func TestTraceEvents_TrimmedPerSession(t *testing.T) {
	s, _ := openTemp(t)
	defer s.Close()
	storetest.TraceTrim(t, s, func(sessionID string, n int) {
		// One statement: appending n events through the store one by one would be slow.
		_, err := s.w.ExecContext(context.Background(), `WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < ?)
			INSERT INTO workflow_trace (session_id, span_id, tool, ts_ms, ok, detail)
			SELECT ?, 'span', 'get_skill', ?, 1, CAST(i AS TEXT) FROM n`, n, sessionID, sqlrow.MS(t0))
		if err != nil {
			t.Fatal(err)
		}
	})
}

func TestWorkflowRecords_PersistAcrossReopen(t *testing.T) {
	db := filepath.Join(t.TempDir(), ".sortie.db")
	storetest.Reopen(t, func(t *testing.T) store.Store {
		s, err := Open(context.Background(), db)
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// TestWorkflowQueries_UseAnIndex checks that the lists read by the dashboard on every
// refresh search an index rather than scanning a table that only grows.
func TestWorkflowQueries_UseAnIndex(t *testing.T) {
	s, _ := openTemp(t)
	defer s.Close()
	tests := []struct {
		name, query, index string
		args               []any
	}{
		{"trace of a session", `SELECT id FROM workflow_trace WHERE session_id = ? ORDER BY id DESC LIMIT ?`, "workflow_trace_session", []any{"a", 10}},
		{"trace of a run", `SELECT id FROM workflow_trace WHERE run_id = ? ORDER BY id DESC LIMIT ?`, "workflow_trace_run", []any{1, 10}},
		{"trim", sqlTrimTrace, "workflow_trace_session", []any{"a", "a", 10}},
		{"pending", `SELECT id FROM checkpoints WHERE resolution = '' ORDER BY issued_at_ms, id`, "checkpoints_pending", nil},
		{"pending of a session", `SELECT id FROM checkpoints WHERE session_id = ? AND checkpoint_id = ? AND resolution = ''`, "checkpoints_pending", []any{"a", "x"}},
		{"checkpoints of an issue", `SELECT id FROM checkpoints WHERE issue_id = ? ORDER BY id DESC LIMIT ?`, "checkpoints_issue", []any{"i", 10}},
	}
	for _, tt := range tests {
		if plan := queryPlan(t, s, tt.query, tt.args...); !strings.Contains(plan, tt.index) {
			t.Errorf("%s: plan = %s, want a search of %s", tt.name, plan, tt.index)
		}
	}
}

func TestWorkflowRecords_ReadOnlyReadsButCannotWrite(t *testing.T) {
	ctx := context.Background()
	s, db := openTemp(t)
	defer s.Close()
	if err := s.SaveWorkflowSession(ctx, storetest.NewWorkflowSession("a", t0)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AppendTraceEvent(ctx, storetest.NewTraceEvent("a", 1, 1)); err != nil {
		t.Fatal(err)
	}
	storetest.Arm(t, s, "a", storetest.NewCheckpoint("a", "plan", "approve", t0))

	ro, err := OpenReadOnly(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	reads := map[string]func() (int, error){
		"LoadWorkflowSessions": func() (int, error) { l, err := ro.LoadWorkflowSessions(ctx); return len(l), err },
		"TraceEvents":          func() (int, error) { l, err := ro.TraceEvents(ctx, "a", 10); return len(l), err },
		"RunTraceEvents":       func() (int, error) { l, err := ro.RunTraceEvents(ctx, 1, 10); return len(l), err },
		"PendingCheckpoints":   func() (int, error) { l, err := ro.PendingCheckpoints(ctx); return len(l), err },
		"IssueCheckpoints":     func() (int, error) { l, err := ro.IssueCheckpoints(ctx, "i-a", 10); return len(l), err },
	}
	for name, read := range reads {
		if n, err := read(); err != nil || n != 1 {
			t.Errorf("read-only %s = %d records, %v; want the daemon's 1", name, n, err)
		}
	}
	writes := map[string]func() error{
		"SaveWorkflowSession":   func() error { return ro.SaveWorkflowSession(ctx, storetest.NewWorkflowSession("b", t0)) },
		"DeleteWorkflowSession": func() error { return ro.DeleteWorkflowSession(ctx, "a") },
		"EndIssueWorkflows":     func() error { _, err := ro.EndIssueWorkflows(ctx, "i-a", t0); return err },
		"AppendTraceEvent":      func() error { _, err := ro.AppendTraceEvent(ctx, storetest.NewTraceEvent("a", 1, 2)); return err },
		"ArmCheckpoints": func() error {
			_, err := ro.ArmCheckpoints(ctx, "a", []store.Checkpoint{storetest.NewCheckpoint("a", "plan", "x", t0)})
			return err
		},
		"AnswerCheckpoint": func() error {
			_, err := ro.AnswerCheckpoint(ctx, storetest.NewAnswer("a", "approve", "approve", t0))
			return err
		},
		"ResolveCheckpoint": func() error {
			_, err := ro.ResolveCheckpoint(ctx, "a", "approve", store.ResolvedOption, t0)
			return err
		},
	}
	for name, write := range writes {
		if err := write(); !errors.Is(err, store.ErrReadOnly) {
			t.Errorf("read-only %s: err = %v, want ErrReadOnly", name, err)
		}
	}
	if pending, _ := s.PendingCheckpoints(ctx); len(pending) != 1 || pending[0].Answered() {
		t.Errorf("after read-only writes: pending = %+v, want the one unanswered checkpoint", pending)
	}
}

// openAtSchema2 makes a database as a binary that knew only migrations 001 and 002
// left it, with one run in it.
func openAtSchema2(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), ".sortie.db")
	raw, err := sql.Open("sqlite", dsn(db, "_pragma=journal_mode(WAL)"))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	ms, err := embeddedMigrations()
	if err != nil {
		t.Fatal(err)
	}
	if v, err := migrate(ctx, raw, db, ms[:2]); err != nil || v != 2 {
		t.Fatalf("migrate to 2 = %d, %v", v, err)
	}
	if _, err := raw.ExecContext(ctx, `INSERT INTO runs (issue_id, identifier, attempt, agent_kind, started_at_ms, updated_at_ms)
		VALUES ('1', 'P-1', 1, 'mock', ?, ?)`, sqlrow.MS(t0), sqlrow.MS(t0)); err != nil {
		t.Fatal(err)
	}
	return db
}

func TestMigrate_Schema2GainsWorkflowTables(t *testing.T) {
	ctx := context.Background()
	db := openAtSchema2(t)
	s, err := Open(ctx, db)
	if err != nil {
		t.Fatalf("Open of a version-2 database: %v", err)
	}
	defer s.Close()
	var v int
	if err := s.w.QueryRowContext(ctx, `SELECT MAX(version) FROM schema_migrations`).Scan(&v); err != nil || v != SchemaVersion() || v < workflowSchema {
		t.Fatalf("schema version after Open = %d (%v), want %d", v, err, SchemaVersion())
	}
	if runs, err := s.RunsForIssue(ctx, "1", 10); err != nil || len(runs) != 1 {
		t.Fatalf("runs after migration = %d, %v; want the 1 from before", len(runs), err)
	}
	if err := s.SaveWorkflowSession(ctx, storetest.NewWorkflowSession("a", t0)); err != nil {
		t.Fatal(err)
	}
	storetest.Arm(t, s, "a", storetest.NewCheckpoint("a", "plan", "approve", t0))
	if _, err := s.AppendTraceEvent(ctx, storetest.NewTraceEvent("a", 1, 1)); err != nil {
		t.Fatal(err)
	}
}

// A sidecar of a newly installed binary reads a daemon's version-2 database: no workflow
// records yet, not an error; once the daemon restarts and migrates, the same read-only
// store sees them.
func TestOpenReadOnly_Schema2HasNoWorkflowRecordsYet(t *testing.T) {
	ctx := context.Background()
	db := openAtSchema2(t)
	ro, err := OpenReadOnly(ctx, db)
	if err != nil {
		t.Fatalf("OpenReadOnly of a version-2 database: %v", err)
	}
	defer ro.Close()
	sessions, err1 := ro.LoadWorkflowSessions(ctx)
	trace, err2 := ro.TraceEvents(ctx, "a", 10)
	runTrace, err3 := ro.RunTraceEvents(ctx, 1, 10)
	pending, err4 := ro.PendingCheckpoints(ctx)
	issue, err5 := ro.IssueCheckpoints(ctx, "i-a", 10)
	if err := errors.Join(err1, err2, err3, err4, err5); err != nil || len(sessions)+len(trace)+len(runTrace)+len(pending)+len(issue) != 0 {
		t.Fatalf("workflow reads on a version-2 database: %d, %d, %d, %d, %d records, %v; want none and no error",
			len(sessions), len(trace), len(runTrace), len(pending), len(issue), err)
	}
	if _, err := ro.TraceEvents(ctx, "a", 0); err == nil {
		t.Errorf("TraceEvents(limit 0) on a version-2 database succeeded, want the limit error")
	}

	s, err := Open(ctx, db) // the daemon restarts and migrates
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	storetest.Arm(t, s, "a", storetest.NewCheckpoint("a", "plan", "approve", t0))
	if pending, err := ro.PendingCheckpoints(ctx); err != nil || len(pending) != 1 {
		t.Fatalf("read-only PendingCheckpoints after the daemon migrated = %d, %v; want 1", len(pending), err)
	}
}
