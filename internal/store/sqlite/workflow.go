package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"sortie/internal/store"
	"sortie/internal/store/internal/sqlrow"
)

var _ store.WorkflowStore = (*Store)(nil)

// sqlTrimTrace deletes every trace event of a session older than its
// MaxTraceEventsPerSession-th newest (the third argument is MaxTraceEventsPerSession-1),
// like sqlTrimEvents.
const sqlTrimTrace = `DELETE FROM workflow_trace WHERE session_id = ? AND id < (
	SELECT id FROM workflow_trace WHERE session_id = ? ORDER BY id DESC LIMIT 1 OFFSET ?)`

// SaveWorkflowSession implements store.WorkflowStore. UpdatedAt is the caller's: it is
// when the token was issued.
func (s *Store) SaveWorkflowSession(ctx context.Context, ws store.WorkflowSession) error {
	op := fmt.Sprintf("save workflow session %q", ws.SessionID)
	if err := s.writable(op); err != nil {
		return err
	}
	if err := ws.Validate(); err != nil {
		return fmt.Errorf("store: %s: %w", op, err)
	}
	_, err := s.w.ExecContext(ctx, `INSERT INTO workflow_sessions (session_id, workflow, issue_id, identifier,
		token, updated_at_ms) VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (session_id) DO UPDATE SET workflow = excluded.workflow, issue_id = excluded.issue_id,
			identifier = excluded.identifier, token = excluded.token, updated_at_ms = excluded.updated_at_ms`,
		ws.SessionID, ws.Workflow, ws.IssueID, ws.Identifier, ws.Token, sqlrow.MS(ws.UpdatedAt))
	if err != nil {
		return fmt.Errorf("store: %s: %w", op, err)
	}
	return nil
}

// DeleteWorkflowSession implements store.WorkflowStore. The session's pending
// checkpoints are deleted with it; its resolved checkpoints and its trace stay, as the
// history of its issue. Deleting a missing session is not an error.
func (s *Store) DeleteWorkflowSession(ctx context.Context, sessionID string) error {
	op := fmt.Sprintf("delete workflow session %q", sessionID)
	if err := s.writable(op); err != nil {
		return err
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: %s: %w", op, err)
	}
	defer tx.Rollback()
	for _, q := range []string{
		`DELETE FROM workflow_sessions WHERE session_id = ?`,
		`DELETE FROM checkpoints WHERE session_id = ? AND resolution = ''`,
	} {
		if _, err := tx.ExecContext(ctx, q, sessionID); err != nil {
			return fmt.Errorf("store: %s: %w", op, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: %s: %w", op, err)
	}
	return nil
}

// EndIssueWorkflows implements store.WorkflowStore. An empty issue id (a standalone
// session's) is an error.
func (s *Store) EndIssueWorkflows(ctx context.Context, issueID string, at time.Time) ([]string, error) {
	op := fmt.Sprintf("end the workflow sessions of issue %q", issueID)
	if err := s.writable(op); err != nil {
		return nil, err
	}
	if err := store.CheckEndIssue(issueID, at); err != nil {
		return nil, fmt.Errorf("store: %s: %w", op, err)
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("store: %s: %w", op, err)
	}
	defer tx.Rollback()
	rows, err := tx.QueryContext(ctx, `SELECT session_id FROM workflow_sessions WHERE issue_id = ?
		UNION SELECT session_id FROM checkpoints WHERE issue_id = ? AND resolution = ''
		ORDER BY session_id`, issueID, issueID)
	if err != nil {
		return nil, fmt.Errorf("store: %s: %w", op, err)
	}
	var ended []string
	for rows.Next() {
		var sid string
		if err := rows.Scan(&sid); err != nil {
			rows.Close()
			return nil, fmt.Errorf("store: %s: %w", op, err)
		}
		ended = append(ended, sid)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: %s: %w", op, err)
	}
	if len(ended) == 0 {
		return nil, nil
	}
	// A checkpoint belongs to its session: a session of the issue is ended whole, even
	// a row of it that (from an older file) names no issue.
	for _, sid := range ended {
		if _, err := tx.ExecContext(ctx, `UPDATE checkpoints SET resolution = ?, resolved_at_ms = ?
			WHERE session_id = ? AND resolution = ''`, store.ResolvedAbandoned, sqlrow.MS(at), sid); err != nil {
			return nil, fmt.Errorf("store: %s: %w", op, err)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM workflow_sessions WHERE session_id = ?`, sid); err != nil {
			return nil, fmt.Errorf("store: %s: %w", op, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("store: %s: %w", op, err)
	}
	return ended, nil
}

// LoadWorkflowSessions implements store.WorkflowReader.
func (s *Store) LoadWorkflowSessions(ctx context.Context) ([]store.WorkflowSession, error) {
	const op = "load workflow sessions"
	if ok, err := s.workflowTablesExist(ctx); !ok || err != nil {
		return nil, wrapOp(op, err)
	}
	rows, err := s.r.QueryContext(ctx, `SELECT session_id, workflow, issue_id, identifier, token, updated_at_ms
		FROM workflow_sessions ORDER BY updated_at_ms, session_id`)
	if err != nil {
		return nil, fmt.Errorf("store: %s: %w", op, err)
	}
	defer rows.Close()
	var out []store.WorkflowSession
	for rows.Next() {
		var ws store.WorkflowSession
		var updated int64
		if err := rows.Scan(&ws.SessionID, &ws.Workflow, &ws.IssueID, &ws.Identifier, &ws.Token, &updated); err != nil {
			return nil, fmt.Errorf("store: %s: %w", op, err)
		}
		ws.UpdatedAt = sqlrow.Time(updated)
		out = append(out, ws)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: %s: %w", op, err)
	}
	return out, nil
}

// AppendTraceEvent implements store.WorkflowStore. The ID of e is ignored. Error is cut
// to MaxRunErrorBytes, Detail and each warning to MaxEventMessageBytes; Duration is
// stored in whole milliseconds.
func (s *Store) AppendTraceEvent(ctx context.Context, e store.TraceEvent) (int64, error) {
	op := fmt.Sprintf("append %s trace event to workflow session %q", e.Tool, e.SessionID)
	if err := s.writable(op); err != nil {
		return 0, err
	}
	if err := e.Validate(); err != nil {
		return 0, fmt.Errorf("store: %s: %w", op, err)
	}
	e = e.Bounded()
	warnings, err := store.MarshalList(e.Warnings)
	if err != nil {
		return 0, fmt.Errorf("store: %s: warnings: %w", op, err)
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("store: %s: %w", op, err)
	}
	defer tx.Rollback()
	var id int64
	err = tx.QueryRowContext(ctx, `INSERT INTO workflow_trace (session_id, span_id, issue_id, run_id, tool,
		ts_ms, duration_ms, ok, workflow, activity, agent_id, error, warnings, detail)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
		e.SessionID, e.SpanID, e.IssueID, e.RunID, e.Tool, sqlrow.MS(e.TS), e.Duration.Milliseconds(), e.OK,
		e.Workflow, e.Activity, e.AgentID, e.Error, warnings, e.Detail,
	).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("store: %s: %w", op, err)
	}
	if _, err := tx.ExecContext(ctx, sqlTrimTrace, e.SessionID, e.SessionID, store.MaxTraceEventsPerSession-1); err != nil {
		return 0, fmt.Errorf("store: %s: trim: %w", op, err)
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("store: %s: %w", op, err)
	}
	return id, nil
}

// TraceEvents implements store.WorkflowReader.
func (s *Store) TraceEvents(ctx context.Context, sessionID string, limit int) ([]store.TraceEvent, error) {
	op := fmt.Sprintf("list trace of workflow session %q", sessionID)
	return s.queryTrace(ctx, op, limit, `session_id = ?`, sessionID)
}

// RunTraceEvents implements store.WorkflowReader.
func (s *Store) RunTraceEvents(ctx context.Context, runID int64, limit int) ([]store.TraceEvent, error) {
	op := fmt.Sprintf("list workflow trace of run %d", runID)
	return s.queryTrace(ctx, op, limit, `run_id = ?`, runID)
}

// queryTrace returns the newest limit trace events matching where, oldest first.
func (s *Store) queryTrace(ctx context.Context, op string, limit int, where string, arg any) ([]store.TraceEvent, error) {
	if err := store.CheckLimit(op, limit); err != nil {
		return nil, err
	}
	if ok, err := s.workflowTablesExist(ctx); !ok || err != nil {
		return nil, wrapOp(op, err)
	}
	rows, err := s.r.QueryContext(ctx, `SELECT `+sqlrow.TraceColumns+` FROM (
		SELECT `+sqlrow.TraceColumns+` FROM workflow_trace WHERE `+where+` ORDER BY id DESC LIMIT ?
	) AS newest ORDER BY id`, arg, limit)
	if err != nil {
		return nil, fmt.Errorf("store: %s: %w", op, err)
	}
	defer rows.Close()
	var out []store.TraceEvent
	for rows.Next() {
		e, err := sqlrow.ScanTrace(rows)
		if err != nil {
			return nil, fmt.Errorf("store: %s: %w", op, err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: %s: %w", op, err)
	}
	return out, nil
}

// ArmCheckpoints implements store.WorkflowStore. Every checkpoint must belong to
// sessionID, and no checkpoint id may appear twice. The rows are written as armed:
// pending, with no answer but a carried one, whatever the Answer and Resolution
// fields of cps say. The superseded rows' resolution time is the new issuance's
// (the earliest IssuedAt of cps), or the store's clock when cps is empty.
//
// Only the rows this call supersedes carry their answers over: an answer to an older
// issuance, already resolved, is not an answer to a new one.
func (s *Store) ArmCheckpoints(ctx context.Context, sessionID string, cps []store.Checkpoint) ([]store.Checkpoint, error) {
	op := fmt.Sprintf("arm %d checkpoints of workflow session %q", len(cps), sessionID)
	if err := s.writable(op); err != nil {
		return nil, err
	}
	issued, err := store.CheckArm(sessionID, cps)
	if err != nil {
		return nil, fmt.Errorf("store: %s: %w", op, err)
	}
	if issued.IsZero() {
		issued = s.now()
	}

	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("store: %s: %w", op, err)
	}
	defer tx.Rollback()
	superseded, err := supersedeCheckpoints(ctx, tx, sessionID, issued)
	if err != nil {
		return nil, fmt.Errorf("store: %s: supersede: %w", op, err)
	}
	out := make([]store.Checkpoint, 0, len(cps))
	for _, cp := range store.CarryAnswers(cps, superseded) {
		options, err := store.MarshalList(cp.Options)
		if err != nil {
			return nil, fmt.Errorf("store: %s: checkpoint %q: options: %w", op, cp.CheckpointID, err)
		}
		row, err := sqlrow.ScanCheckpoint(tx.QueryRowContext(ctx, `INSERT INTO checkpoints (session_id, issue_id,
			identifier, run_id, workflow, activity, checkpoint_id, name, message, options, blocking,
			default_option, auto_advance_ms, conditional, issued_at_ms, answer, answered_by, answer_source,
			answered_at_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			RETURNING `+sqlrow.CheckpointColumns,
			sessionID, cp.IssueID, cp.Identifier, cp.RunID, cp.Workflow, cp.Activity, cp.CheckpointID, cp.Name,
			cp.Message, options, cp.Blocking, cp.DefaultOption, cp.AutoAdvanceMS, cp.Conditional,
			sqlrow.MS(cp.IssuedAt), cp.Answer, cp.AnsweredBy, cp.AnswerSource, sqlrow.NullMS(cp.AnsweredAt)))
		if err != nil {
			return nil, fmt.Errorf("store: %s: checkpoint %q: %w", op, cp.CheckpointID, err)
		}
		out = append(out, row)
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("store: %s: %w", op, err)
	}
	return out, nil
}

// supersedeCheckpoints resolves every pending checkpoint of a session as superseded at
// resolvedAt and returns them with their answers (id, activity, checkpoint id and answer
// filled in), for store.CarryAnswers.
func supersedeCheckpoints(ctx context.Context, tx *sql.Tx, sessionID string, resolvedAt time.Time) ([]store.Checkpoint, error) {
	rows, err := tx.QueryContext(ctx, `UPDATE checkpoints SET resolution = ?, resolved_at_ms = ?
		WHERE session_id = ? AND resolution = ''
		RETURNING `+sqlrow.AnswerColumns,
		store.ResolvedSuperseded, sqlrow.MS(resolvedAt), sessionID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.Checkpoint
	for rows.Next() {
		cp, err := sqlrow.ScanAnswer(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, cp)
	}
	return out, rows.Err()
}

// AnswerCheckpoint implements store.WorkflowStore.
func (s *Store) AnswerCheckpoint(ctx context.Context, a store.CheckpointAnswer) (store.Checkpoint, error) {
	op := fmt.Sprintf("answer checkpoint %q of workflow session %q", a.CheckpointID, a.SessionID)
	if err := s.writable(op); err != nil {
		return store.Checkpoint{}, err
	}
	if err := a.Validate(); err != nil {
		return store.Checkpoint{}, fmt.Errorf("store: %s: %w", op, err)
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return store.Checkpoint{}, fmt.Errorf("store: %s: %w", op, err)
	}
	defer tx.Rollback()
	cp, err := sqlrow.ScanCheckpoint(tx.QueryRowContext(ctx, `SELECT `+sqlrow.CheckpointColumns+` FROM checkpoints
		WHERE session_id = ? AND checkpoint_id = ? AND resolution = ''`, a.SessionID, a.CheckpointID))
	if errors.Is(err, sql.ErrNoRows) {
		return store.Checkpoint{}, fmt.Errorf("store: %s: pending checkpoint %w", op, store.ErrNotFound)
	}
	if err != nil {
		return store.Checkpoint{}, fmt.Errorf("store: %s: %w", op, err)
	}
	if cp.Answered() {
		return store.Checkpoint{}, fmt.Errorf("store: %s: %w", op, cp.AlreadyAnswered())
	}
	cp, err = sqlrow.ScanCheckpoint(tx.QueryRowContext(ctx, `UPDATE checkpoints SET answer = ?, answered_by = ?,
		answer_source = ?, answered_at_ms = ? WHERE id = ? RETURNING `+sqlrow.CheckpointColumns,
		a.Option, a.By, a.Source, sqlrow.MS(a.At), cp.ID))
	if err != nil {
		return store.Checkpoint{}, fmt.Errorf("store: %s: %w", op, err)
	}
	if err := tx.Commit(); err != nil {
		return store.Checkpoint{}, fmt.Errorf("store: %s: %w", op, err)
	}
	return cp, nil
}

// ResolveCheckpoint implements store.WorkflowStore. resolution must be one of the
// store.Resolved* constants.
func (s *Store) ResolveCheckpoint(ctx context.Context, sessionID, checkpointID, resolution string, at time.Time) (store.Checkpoint, error) {
	op := fmt.Sprintf("resolve checkpoint %q of workflow session %q", checkpointID, sessionID)
	if err := s.writable(op); err != nil {
		return store.Checkpoint{}, err
	}
	if err := store.CheckResolution(sessionID, checkpointID, resolution, at); err != nil {
		return store.Checkpoint{}, fmt.Errorf("store: %s: %w", op, err)
	}
	cp, err := sqlrow.ScanCheckpoint(s.w.QueryRowContext(ctx, `UPDATE checkpoints SET resolution = ?, resolved_at_ms = ?
		WHERE session_id = ? AND checkpoint_id = ? AND resolution = '' RETURNING `+sqlrow.CheckpointColumns,
		resolution, sqlrow.MS(at), sessionID, checkpointID))
	if errors.Is(err, sql.ErrNoRows) {
		return store.Checkpoint{}, fmt.Errorf("store: %s: pending checkpoint %w", op, store.ErrNotFound)
	}
	if err != nil {
		return store.Checkpoint{}, fmt.Errorf("store: %s: %w", op, err)
	}
	return cp, nil
}

// PendingCheckpoints implements store.WorkflowReader.
func (s *Store) PendingCheckpoints(ctx context.Context) ([]store.Checkpoint, error) {
	const op = "list pending checkpoints"
	if ok, err := s.workflowTablesExist(ctx); !ok || err != nil {
		return nil, wrapOp(op, err)
	}
	return s.queryCheckpoints(ctx, op, `SELECT `+sqlrow.CheckpointColumns+` FROM checkpoints
		WHERE resolution = '' ORDER BY issued_at_ms, id`)
}

// IssueCheckpoints implements store.WorkflowReader. Newest is by issuance order (id).
func (s *Store) IssueCheckpoints(ctx context.Context, issueID string, limit int) ([]store.Checkpoint, error) {
	op := fmt.Sprintf("list checkpoints of issue %q", issueID)
	if err := store.CheckLimit(op, limit); err != nil {
		return nil, err
	}
	if ok, err := s.workflowTablesExist(ctx); !ok || err != nil {
		return nil, wrapOp(op, err)
	}
	return s.queryCheckpoints(ctx, op, `SELECT `+sqlrow.CheckpointColumns+` FROM (
		SELECT `+sqlrow.CheckpointColumns+` FROM checkpoints WHERE issue_id = ? ORDER BY id DESC LIMIT ?
	) AS newest ORDER BY id`, issueID, limit)
}

func (s *Store) queryCheckpoints(ctx context.Context, op, query string, args ...any) ([]store.Checkpoint, error) {
	rows, err := s.r.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("store: %s: %w", op, err)
	}
	defer rows.Close()
	var out []store.Checkpoint
	for rows.Next() {
		cp, err := sqlrow.ScanCheckpoint(rows)
		if err != nil {
			return nil, fmt.Errorf("store: %s: %w", op, err)
		}
		out = append(out, cp)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: %s: %w", op, err)
	}
	return out, nil
}

// remotePGIDExists reports whether the runs table has remote_pgid (remoteSchema or
// newer): a read-only reader of an older database reads 0 in its place.
func (s *Store) remotePGIDExists(ctx context.Context) (bool, error) {
	return s.schemaAtLeast(ctx, remoteSchema, &s.remotePGID)
}

// reactionTablesExist reports whether the database has the reaction tables and
// runs.review_metadata (reactionSchema or newer). As with workflowTablesExist, only a
// read-only store of an older database lacks them: it reads no reaction records and
// an empty string for the review metadata of runs.
func (s *Store) reactionTablesExist(ctx context.Context) (bool, error) {
	return s.schemaAtLeast(ctx, reactionSchema, &s.reactionTables)
}

// workflowTablesExist reports whether the database has the tables of migration
// workflowSchema. A daemon's store always has them (Open migrates). A read-only store
// may be reading an older database whose daemon has not restarted since this binary was
// installed: it holds no workflow records yet, so the workflow lists are empty until that
// daemon migrates it, which this notices on the next call.
func (s *Store) workflowTablesExist(ctx context.Context) (bool, error) {
	return s.schemaAtLeast(ctx, workflowSchema, &s.workflowTables)
}

// schemaAtLeast reports whether the database is at schema version or newer, asking it
// until it is and remembering that in known (a database is only ever migrated up).
func (s *Store) schemaAtLeast(ctx context.Context, version int, known *atomic.Bool) (bool, error) {
	if known.Load() {
		return true, nil
	}
	var v int
	if err := s.r.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&v); err != nil {
		return false, fmt.Errorf("read schema version: %w", err)
	}
	if v < version {
		return false, nil
	}
	known.Store(true)
	return true, nil
}

// wrapOp wraps a non-nil err with the operation, the house way; nil stays nil.
func wrapOp(op string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("store: %s: %w", op, err)
}
