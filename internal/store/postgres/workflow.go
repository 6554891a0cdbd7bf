package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"sortie/internal/store"
	"sortie/internal/store/internal/sqlrow"
)

var _ store.WorkflowStore = (*Store)(nil)

// sqlTrimTrace deletes every trace event of a session older than its
// MaxTraceEventsPerSession-th newest (the second argument is
// MaxTraceEventsPerSession-1), like sqlTrimEvents.
const sqlTrimTrace = `DELETE FROM workflow_trace WHERE session_id = $1 AND id < (
	SELECT id FROM workflow_trace WHERE session_id = $1 ORDER BY id DESC LIMIT 1 OFFSET $2)`

// lockCheckpoints begins every transaction that writes checkpoints. SQLite runs one
// writer at a time; here two daemons (or two requests) may arm, answer and resolve the
// checkpoints of one session at once, and under READ COMMITTED the second would miss
// what the first did (a re-arming fails on the pending index, an answer overwrites
// another or finds its checkpoint gone). This lock makes those writers take turns, as in SQLite; readers
// are not blocked. Checkpoint writes happen at human speed, so the turns cost nothing.
const lockCheckpoints = `LOCK TABLE checkpoints IN SHARE ROW EXCLUSIVE MODE`

// checkpointTx runs fn in a transaction holding lockCheckpoints.
func (s *Store) checkpointTx(ctx context.Context, fn func(pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, lockCheckpoints); err != nil {
			return err
		}
		return fn(tx)
	})
}

// SaveWorkflowSession implements store.WorkflowStore. UpdatedAt is the caller's: it is
// when the token was issued.
func (s *Store) SaveWorkflowSession(ctx context.Context, ws store.WorkflowSession) error {
	op := fmt.Sprintf("save workflow session %q", ws.SessionID)
	if err := ws.Validate(); err != nil {
		return fmt.Errorf("store: %s: %w", op, err)
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO workflow_sessions (session_id, workflow, issue_id, identifier,
		token, updated_at_ms) VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (session_id) DO UPDATE SET workflow = excluded.workflow, issue_id = excluded.issue_id,
			identifier = excluded.identifier, token = excluded.token, updated_at_ms = excluded.updated_at_ms`,
		ws.SessionID, ws.Workflow, ws.IssueID, ws.Identifier, ws.Token, sqlrow.MS(ws.UpdatedAt))
	if err != nil {
		return fmt.Errorf("store: %s: %w", op, err)
	}
	return nil
}

// DeleteWorkflowSession implements store.WorkflowStore. The session's pending
// checkpoints are deleted with it, in the batch's one transaction; its resolved
// checkpoints and its trace stay, as the history of its issue. Deleting a missing
// session is not an error.
func (s *Store) DeleteWorkflowSession(ctx context.Context, sessionID string) error {
	b := &pgx.Batch{}
	// checkpoints first, as every checkpoint writer does, so that two transactions
	// never wait on each other's locks in opposite orders.
	b.Queue(`DELETE FROM checkpoints WHERE session_id = $1 AND resolution = ''`, sessionID)
	b.Queue(`DELETE FROM workflow_sessions WHERE session_id = $1`, sessionID)
	if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("store: delete workflow session %q: %w", sessionID, err)
	}
	return nil
}

// EndIssueWorkflows implements store.WorkflowStore, in one statement (holding
// lockCheckpoints). An empty issue id (a standalone session's) is an error.
func (s *Store) EndIssueWorkflows(ctx context.Context, issueID string, at time.Time) ([]string, error) {
	op := fmt.Sprintf("end the workflow sessions of issue %q", issueID)
	if err := store.CheckEndIssue(issueID, at); err != nil {
		return nil, fmt.Errorf("store: %s: %w", op, err)
	}
	var ended []string
	err := s.checkpointTx(ctx, func(tx pgx.Tx) error {
		// A checkpoint belongs to its session: a session of the issue is ended whole,
		// even a row of it that names no issue.
		rows, _ := tx.Query(ctx, `WITH ended AS (
				SELECT session_id FROM workflow_sessions WHERE issue_id = $1
				UNION SELECT session_id FROM checkpoints WHERE issue_id = $1 AND resolution = ''
			), abandoned AS (
				UPDATE checkpoints SET resolution = $2, resolved_at_ms = $3
				WHERE session_id IN (SELECT session_id FROM ended) AND resolution = ''
			), forgotten AS (
				DELETE FROM workflow_sessions WHERE session_id IN (SELECT session_id FROM ended)
			)
			SELECT session_id FROM ended ORDER BY session_id`, issueID, store.ResolvedAbandoned, sqlrow.MS(at))
		var err error
		ended, err = collect(rows, func(row sqlrow.Scanner) (string, error) {
			var sid string
			return sid, row.Scan(&sid)
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: %s: %w", op, err)
	}
	return ended, nil
}

// LoadWorkflowSessions implements store.WorkflowReader.
func (s *Store) LoadWorkflowSessions(ctx context.Context) ([]store.WorkflowSession, error) {
	rows, _ := s.pool.Query(ctx, `SELECT session_id, workflow, issue_id, identifier, token, updated_at_ms
		FROM workflow_sessions ORDER BY updated_at_ms, session_id`)
	out, err := collect(rows, func(row sqlrow.Scanner) (store.WorkflowSession, error) {
		var ws store.WorkflowSession
		var updated int64
		err := row.Scan(&ws.SessionID, &ws.Workflow, &ws.IssueID, &ws.Identifier, &ws.Token, &updated)
		ws.UpdatedAt = sqlrow.Time(updated)
		return ws, err
	})
	if err != nil {
		return nil, fmt.Errorf("store: load workflow sessions: %w", err)
	}
	return out, nil
}

// AppendTraceEvent implements store.WorkflowStore. The ID of e is ignored. Error is cut
// to MaxRunErrorBytes, Detail and each warning to MaxEventMessageBytes; Duration is
// stored in whole milliseconds. The insert and the trim go in one batch: one round
// trip, one transaction.
func (s *Store) AppendTraceEvent(ctx context.Context, e store.TraceEvent) (int64, error) {
	op := fmt.Sprintf("append %s trace event to workflow session %q", e.Tool, e.SessionID)
	if err := e.Validate(); err != nil {
		return 0, fmt.Errorf("store: %s: %w", op, err)
	}
	e.Error, e.Detail, e.AgentID = clean(e.Error), clean(e.Detail), clean(e.AgentID)
	warnings := make([]string, len(e.Warnings))
	for i, w := range e.Warnings {
		warnings[i] = clean(w)
	}
	e.Warnings = warnings
	e = e.Bounded()
	warningsJSON, err := store.MarshalList(e.Warnings)
	if err != nil {
		return 0, fmt.Errorf("store: %s: warnings: %w", op, err)
	}
	var id int64
	b := &pgx.Batch{}
	b.Queue(`INSERT INTO workflow_trace (session_id, span_id, issue_id, run_id, tool,
		ts_ms, duration_ms, ok, workflow, activity, agent_id, error, warnings, detail)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14) RETURNING id`,
		e.SessionID, e.SpanID, e.IssueID, e.RunID, e.Tool, sqlrow.MS(e.TS), e.Duration.Milliseconds(), e.OK,
		e.Workflow, e.Activity, e.AgentID, e.Error, warningsJSON, e.Detail,
	).QueryRow(func(row pgx.Row) error { return row.Scan(&id) })
	b.Queue(sqlTrimTrace, e.SessionID, store.MaxTraceEventsPerSession-1)
	if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
		return 0, fmt.Errorf("store: %s: %w", op, err)
	}
	return id, nil
}

// TraceEvents implements store.WorkflowReader.
func (s *Store) TraceEvents(ctx context.Context, sessionID string, limit int) ([]store.TraceEvent, error) {
	op := fmt.Sprintf("list trace of workflow session %q", sessionID)
	return s.queryTrace(ctx, op, limit, `session_id = $1`, sessionID)
}

// RunTraceEvents implements store.WorkflowReader.
func (s *Store) RunTraceEvents(ctx context.Context, runID int64, limit int) ([]store.TraceEvent, error) {
	op := fmt.Sprintf("list workflow trace of run %d", runID)
	return s.queryTrace(ctx, op, limit, `run_id = $1`, runID)
}

// queryTrace returns the newest limit trace events matching where ($1 is arg), oldest
// first.
func (s *Store) queryTrace(ctx context.Context, op string, limit int, where string, arg any) ([]store.TraceEvent, error) {
	if err := store.CheckLimit(op, limit); err != nil {
		return nil, err
	}
	rows, _ := s.pool.Query(ctx, `SELECT `+sqlrow.TraceColumns+` FROM (
		SELECT `+sqlrow.TraceColumns+` FROM workflow_trace WHERE `+where+` ORDER BY id DESC LIMIT $2
	) AS newest ORDER BY id`, arg, limit)
	out, err := collect(rows, sqlrow.ScanTrace)
	if err != nil {
		return nil, fmt.Errorf("store: %s: %w", op, err)
	}
	return out, nil
}

// ArmCheckpoints implements store.WorkflowStore. Every checkpoint must belong to
// sessionID, and no checkpoint id may appear twice. The rows are written as armed:
// pending, with no answer but a carried one, whatever the Answer and Resolution
// fields of cps say. The superseded rows' resolution time is the new issuance's
// (the earliest IssuedAt of cps), or the store's clock when cps is empty.
func (s *Store) ArmCheckpoints(ctx context.Context, sessionID string, cps []store.Checkpoint) ([]store.Checkpoint, error) {
	op := fmt.Sprintf("arm %d checkpoints of workflow session %q", len(cps), sessionID)
	issued, err := store.CheckArm(sessionID, cps)
	if err != nil {
		return nil, fmt.Errorf("store: %s: %w", op, err)
	}
	if issued.IsZero() {
		issued = s.now()
	}
	options := make([]string, len(cps))
	for i, cp := range cps {
		if options[i], err = store.MarshalList(cp.Options); err != nil {
			return nil, fmt.Errorf("store: %s: checkpoint %q: options: %w", op, cp.CheckpointID, err)
		}
	}
	var out []store.Checkpoint
	err = s.checkpointTx(ctx, func(tx pgx.Tx) error {
		rows, _ := tx.Query(ctx, `UPDATE checkpoints SET resolution = $1, resolved_at_ms = $2
			WHERE session_id = $3 AND resolution = ''
			RETURNING `+sqlrow.AnswerColumns, store.ResolvedSuperseded, sqlrow.MS(issued), sessionID)
		superseded, err := collect(rows, sqlrow.ScanAnswer)
		if err != nil {
			return fmt.Errorf("supersede: %w", err)
		}
		// One batch, one round trip: the inserts run in order, so ids increase with
		// the order of cps.
		out = make([]store.Checkpoint, len(cps))
		b := &pgx.Batch{}
		for i, cp := range store.CarryAnswers(cps, superseded) {
			b.Queue(`INSERT INTO checkpoints (session_id, issue_id, identifier, run_id, workflow, activity,
				checkpoint_id, name, message, options, blocking, default_option, auto_advance_ms, conditional,
				issued_at_ms, answer, answered_by, answer_source, answered_at_ms)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19)
				RETURNING `+sqlrow.CheckpointColumns,
				sessionID, cp.IssueID, cp.Identifier, cp.RunID, cp.Workflow, cp.Activity, cp.CheckpointID, cp.Name,
				cp.Message, options[i], cp.Blocking, cp.DefaultOption, cp.AutoAdvanceMS, cp.Conditional,
				sqlrow.MS(cp.IssuedAt), cp.Answer, cp.AnsweredBy, cp.AnswerSource, sqlrow.NullMS(cp.AnsweredAt),
			).QueryRow(func(row pgx.Row) error {
				var err error
				if out[i], err = sqlrow.ScanCheckpoint(row); err != nil {
					return fmt.Errorf("checkpoint %q: %w", cp.CheckpointID, err)
				}
				return nil
			})
		}
		return tx.SendBatch(ctx, b).Close()
	})
	if err != nil {
		return nil, fmt.Errorf("store: %s: %w", op, err)
	}
	return out, nil
}

// AnswerCheckpoint implements store.WorkflowStore.
func (s *Store) AnswerCheckpoint(ctx context.Context, a store.CheckpointAnswer) (store.Checkpoint, error) {
	op := fmt.Sprintf("answer checkpoint %q of workflow session %q", a.CheckpointID, a.SessionID)
	if err := a.Validate(); err != nil {
		return store.Checkpoint{}, fmt.Errorf("store: %s: %w", op, err)
	}
	var cp store.Checkpoint
	err := s.checkpointTx(ctx, func(tx pgx.Tx) error {
		var err error
		cp, err = sqlrow.ScanCheckpoint(tx.QueryRow(ctx, `SELECT `+sqlrow.CheckpointColumns+` FROM checkpoints
			WHERE session_id = $1 AND checkpoint_id = $2 AND resolution = ''`, a.SessionID, a.CheckpointID))
		switch {
		case isNoRows(err):
			return fmt.Errorf("pending checkpoint %w", store.ErrNotFound)
		case err != nil:
			return err
		case cp.Answered():
			return cp.AlreadyAnswered()
		}
		cp, err = sqlrow.ScanCheckpoint(tx.QueryRow(ctx, `UPDATE checkpoints SET answer = $1, answered_by = $2,
			answer_source = $3, answered_at_ms = $4 WHERE id = $5 RETURNING `+sqlrow.CheckpointColumns,
			a.Option, clean(a.By), a.Source, sqlrow.MS(a.At), cp.ID))
		return err
	})
	if err != nil {
		return store.Checkpoint{}, fmt.Errorf("store: %s: %w", op, err)
	}
	return cp, nil
}

// ResolveCheckpoint implements store.WorkflowStore. resolution must be one of the
// store.Resolved* constants.
func (s *Store) ResolveCheckpoint(ctx context.Context, sessionID, checkpointID, resolution string, at time.Time) (store.Checkpoint, error) {
	op := fmt.Sprintf("resolve checkpoint %q of workflow session %q", checkpointID, sessionID)
	if err := store.CheckResolution(sessionID, checkpointID, resolution, at); err != nil {
		return store.Checkpoint{}, fmt.Errorf("store: %s: %w", op, err)
	}
	var cp store.Checkpoint
	err := s.checkpointTx(ctx, func(tx pgx.Tx) error {
		var err error
		cp, err = sqlrow.ScanCheckpoint(tx.QueryRow(ctx, `UPDATE checkpoints SET resolution = $1, resolved_at_ms = $2
			WHERE session_id = $3 AND checkpoint_id = $4 AND resolution = '' RETURNING `+sqlrow.CheckpointColumns,
			resolution, sqlrow.MS(at), sessionID, checkpointID))
		if isNoRows(err) {
			return fmt.Errorf("pending checkpoint %w", store.ErrNotFound)
		}
		return err
	})
	if err != nil {
		return store.Checkpoint{}, fmt.Errorf("store: %s: %w", op, err)
	}
	return cp, nil
}

// PendingCheckpoints implements store.WorkflowReader.
func (s *Store) PendingCheckpoints(ctx context.Context) ([]store.Checkpoint, error) {
	return s.queryCheckpoints(ctx, "list pending checkpoints", `SELECT `+sqlrow.CheckpointColumns+` FROM checkpoints
		WHERE resolution = '' ORDER BY issued_at_ms, id`)
}

// IssueCheckpoints implements store.WorkflowReader. Newest is by issuance order (id).
func (s *Store) IssueCheckpoints(ctx context.Context, issueID string, limit int) ([]store.Checkpoint, error) {
	op := fmt.Sprintf("list checkpoints of issue %q", issueID)
	if err := store.CheckLimit(op, limit); err != nil {
		return nil, err
	}
	return s.queryCheckpoints(ctx, op, `SELECT `+sqlrow.CheckpointColumns+` FROM (
		SELECT `+sqlrow.CheckpointColumns+` FROM checkpoints WHERE issue_id = $1 ORDER BY id DESC LIMIT $2
	) AS newest ORDER BY id`, issueID, limit)
}

func (s *Store) queryCheckpoints(ctx context.Context, op, query string, args ...any) ([]store.Checkpoint, error) {
	rows, _ := s.pool.Query(ctx, query, args...)
	out, err := collect(rows, sqlrow.ScanCheckpoint)
	if err != nil {
		return nil, fmt.Errorf("store: %s: %w", op, err)
	}
	return out, nil
}
