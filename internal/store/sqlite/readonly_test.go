package sqlite

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"sortie/internal/store"
)

func TestOpenReadOnly_CannotWrite(t *testing.T) {
	ctx := context.Background()
	s, db := openTemp(t)
	id, err := s.StartRun(ctx, newRun("1"))
	if err != nil {
		t.Fatal(err)
	}
	// Both with the daemon gone (WAL checkpointed and removed) and with it running.
	for _, daemonRunning := range []bool{false, true} {
		if !daemonRunning {
			s.Close()
		} else {
			if s, err = Open(ctx, db); err != nil {
				t.Fatal(err)
			}
		}
		ro, err := OpenReadOnly(ctx, db)
		if err != nil {
			t.Fatalf("OpenReadOnly (daemon running %v): %v", daemonRunning, err)
		}
		if runs, err := ro.RunsForIssue(ctx, "1", 10); err != nil || len(runs) != 1 {
			t.Fatalf("read-only RunsForIssue = %d runs, %v; want 1", len(runs), err)
		}
		writes := map[string]func() error{
			"StartRun":          func() error { _, err := ro.StartRun(ctx, newRun("2")); return err },
			"UpdateRunProcess":  func() error { return ro.UpdateRunProcess(ctx, id, store.Process{PID: 1}) },
			"UpdateRunProgress": func() error { return ro.UpdateRunProgress(ctx, id, store.Progress{Turns: 1}) },
			"FinishRun": func() error {
				return ro.FinishRun(ctx, id, store.RunEnd{Status: store.StatusFailed, EndedAt: t0})
			},
			"MarkInterrupted": func() error { return ro.MarkInterrupted(ctx, []int64{id}) },
			"AppendEvents":    func() error { return ro.AppendEvents(ctx, id, []store.Event{{Type: "x"}}) },
			"SaveRetry": func() error {
				return ro.SaveRetry(ctx, store.Retry{IssueID: "1", Identifier: "P-1", Attempt: 1, DueAt: t0, Kind: store.RetryFailure})
			},
			"DeleteRetry":   func() error { return ro.DeleteRetry(ctx, "1") },
			"SaveSession":   func() error { return ro.SaveSession(ctx, store.Session{IssueID: "1", SessionID: "s", AgentKind: "k"}) },
			"DeleteSession": func() error { return ro.DeleteSession(ctx, "1") },
			"SaveHold": func() error {
				return ro.SaveHold(ctx, store.Hold{IssueID: "1", Identifier: "P-1", Reason: "blocked", Since: t0})
			},
			"DeleteHold": func() error { return ro.DeleteHold(ctx, "1") },
			"SaveReactionWatch": func() error {
				return ro.SaveReactionWatch(ctx, store.ReactionWatch{IssueID: "1", Identifier: "P-1", HandedOffAt: t0})
			},
			"DeleteReactionWatch": func() error { return ro.DeleteReactionWatch(ctx, "1") },
			"ObserveReaction": func() error {
				_, err := ro.ObserveReaction(ctx, "1", store.ReactionCI, "sha", t0)
				return err
			},
			"MarkReactionDispatched": func() error {
				_, err := ro.MarkReactionDispatched(ctx, "1", store.ReactionCI, "sha", t0)
				return err
			},
			"ResetReaction":    func() error { return ro.ResetReaction(ctx, "1", store.ReactionCI) },
			"EscalateReaction": func() error { return ro.EscalateReaction(ctx, "1", store.ReactionCI, t0) },
			"DeleteReactions":  func() error { return ro.DeleteReactions(ctx, "1") },
		}
		for name, write := range writes {
			if err := write(); !errors.Is(err, store.ErrReadOnly) {
				t.Errorf("read-only %s: err = %v, want ErrReadOnly", name, err)
			}
		}
		// Below the Store's own check, the connection itself is read-only (mode=ro):
		// even with query_only switched off, SQLite refuses to write.
		conn, err := ro.r.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.ExecContext(ctx, `PRAGMA query_only = 0`); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.ExecContext(ctx, `DELETE FROM runs`); err == nil {
			t.Errorf("raw DELETE on a read-only connection succeeded, want SQLITE_READONLY")
		}
		conn.Close()
		ro.Close()
	}
	defer s.Close()
	if runs, _ := s.RecentRuns(ctx, 10); len(runs) != 1 || runs[0].Status != store.StatusRunning {
		t.Fatalf("after read-only writes: runs = %+v, want the one running run unchanged", runs)
	}
}

func TestOpenReadOnly_SeesDaemonWrites(t *testing.T) {
	ctx := context.Background()
	s, db := openTemp(t)
	defer s.Close()
	ro, err := OpenReadOnly(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	id, err := s.StartRun(ctx, newRun("1"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.UpdateRunProgress(ctx, id, store.Progress{Tokens: store.Tokens{Total: 42}}); err != nil {
		t.Fatal(err)
	}
	totals, err := ro.IssueTotals(ctx, []string{"1"})
	if got := totals["1"]; err != nil || got.Tokens.Total != 42 {
		t.Fatalf("read-only IssueTotals = %+v, %v; want the daemon's 42 tokens", totals, err)
	}
}

func TestOpenReadOnly_Refuses(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.db")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		path string
		want func(error) bool
	}{
		{"missing file", filepath.Join(dir, "nope.db"), func(err error) bool { return errors.Is(err, os.ErrNotExist) }},
		{"never migrated", empty, func(err error) bool {
			var se *store.SchemaError
			return errors.As(err, &se) && se.Version == 0 && se.Known == SchemaVersion()
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := OpenReadOnly(ctx, tt.path)
			if err == nil {
				s.Close()
			}
			if !tt.want(err) {
				t.Fatalf("OpenReadOnly(%s) = %v, want a refusal", tt.path, err)
			}
		})
	}
}

// A database at the oldest readable version (a daemon not restarted since this binary
// was installed) is still read: its queries work without the later indexes, tables
// and columns. One newer than this binary is refused.
func TestOpenReadOnly_ReadsAnOlderReadableSchema(t *testing.T) {
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "sortie.db")
	s, err := Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.StartRun(ctx, store.Run{IssueID: "1", Identifier: "P-1", Attempt: 1, AgentKind: "mock", StartedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	// Undo every migration after the oldest readable one, as an older binary would
	// have left the file: 006, 005, 004, 003 and 002, newest first.
	if minReadableSchema != 1 || SchemaVersion() != 6 {
		t.Fatalf("this test undoes migrations 2 to 6 to make a version-1 file; schema versions are now %d to %d: update it", minReadableSchema, SchemaVersion())
	}
	for _, q := range []string{
		`ALTER TABLE runs DROP COLUMN reaction`, `ALTER TABLE runs DROP COLUMN review_metadata`, `DROP TABLE reaction_states`, `DROP TABLE reaction_watches`,
		`CREATE INDEX runs_running ON runs (id) WHERE status = 'running'`,
		`ALTER TABLE runs DROP COLUMN remote_pgid`,
		`DROP TABLE checkpoints`, `DROP TABLE workflow_trace`, `DROP TABLE workflow_sessions`,
		`DROP INDEX runs_identifier`, `DROP INDEX runs_status`,
		`DELETE FROM schema_migrations WHERE version >= 2`,
	} {
		if _, err := s.w.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()

	ro, err := OpenReadOnly(ctx, db)
	if err != nil {
		t.Fatalf("OpenReadOnly of a version-1 database: %v", err)
	}
	// What the sidecar and `sortie status` read.
	runs, err := ro.RunsForIssue(ctx, "1", 10)
	recent, err2 := ro.RecentRuns(ctx, 10)
	// The reaction records are not there yet: none.
	watches, err3 := ro.LoadReactionWatches(ctx)
	states, err4 := ro.ReactionStates(ctx, "1")
	ro.Close()
	if err != nil || err2 != nil || len(runs) != 1 || len(recent) != 1 || runs[0].ReviewMetadata != "" {
		t.Fatalf("reads on the older schema = %v, %v; %v, %v", runs, err, recent, err2)
	}
	if err3 != nil || err4 != nil || len(watches) != 0 || len(states) != 0 {
		t.Fatalf("reaction reads on the older schema = %v, %v; %v, %v; want none", watches, err3, states, err4)
	}

	s, err = Open(ctx, db) // migrates it back to the current version
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.w.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at_ms) VALUES (99, 'future', 0)`); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if ro, err := OpenReadOnly(ctx, db); err == nil {
		ro.Close()
		t.Fatal("OpenReadOnly accepted a schema newer than this binary")
	}
}

// A database from before runs.remote_pgid (migration 004), which its daemon has not
// migrated yet, is still read by the read-only readers, with 0 for the column.
func TestOpenReadOnly_ReadsRunsWithoutRemotePGID(t *testing.T) {
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "sortie.db")
	s, err := Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	id, err := s.StartRun(ctx, store.Run{IssueID: "1", Identifier: "P-1", Attempt: 1, AgentKind: "mock", SSHHost: "h:22", StartedAt: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.UpdateRunProcess(ctx, id, store.Process{PID: 5, PGID: 5, RemotePGID: 77}); err != nil {
		t.Fatal(err)
	}
	if runs, err := s.RunsInProgress(ctx); err != nil || len(runs) != 1 || runs[0].RemotePGID != 77 {
		t.Fatalf("RunsInProgress = %+v, %v; want remote pgid 77", runs, err)
	}
	for _, q := range []string{`ALTER TABLE runs DROP COLUMN remote_pgid`, `DELETE FROM schema_migrations WHERE version >= 4`} {
		if _, err := s.w.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	ro, err := OpenReadOnly(ctx, db)
	if err != nil {
		t.Fatalf("OpenReadOnly of a version-3 database: %v", err)
	}
	defer ro.Close()
	runs, err := ro.RunsInProgress(ctx)
	if err != nil || len(runs) != 1 || runs[0].RemotePGID != 0 || runs[0].PGID != 5 {
		t.Fatalf("RunsInProgress on the older schema = %+v, %v", runs, err)
	}
}
