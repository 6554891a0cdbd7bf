package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"sortie/internal/store"
	"sortie/internal/store/internal/sqlrow"
)

// eventChunks are the numbers of rows of the prepared INSERTs of events, largest
// first: a batch goes in as few statements as these sizes add up to (a turn's 20
// events in 2, not 20), since each statement's execution costs more than its rows.
var eventChunks = [...]int{16, 4, 1}

// sqlInsertEvents is the INSERT of n events, each (run_id, time_ms, type, message).
func sqlInsertEvents(n int) string {
	return `INSERT INTO run_events (run_id, time_ms, type, message) VALUES ` +
		strings.TrimSuffix(strings.Repeat(`(?, ?, ?, ?), `, n), `, `)
}

// sqlTrimEvents deletes every event of a run older than its MaxEventsPerRun-th newest
// (the third argument is MaxEventsPerRun-1). With fewer events the subquery is NULL and
// nothing is deleted.
const sqlTrimEvents = `DELETE FROM run_events WHERE run_id = ? AND id < (
	SELECT id FROM run_events WHERE run_id = ? ORDER BY id DESC LIMIT 1 OFFSET ?)`

// AppendEvents implements store.Store.
func (s *Store) AppendEvents(ctx context.Context, runID int64, events []store.Event) error {
	op := fmt.Sprintf("append %d events to run %d", len(events), runID)
	if err := s.writable(op); err != nil {
		return err
	}
	if len(events) == 0 {
		return nil
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: %s: %w", op, err)
	}
	defer tx.Rollback()
	var one int
	err = tx.QueryRowContext(ctx, `SELECT 1 FROM runs WHERE id = ?`, runID).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("store: %s: run %w", op, store.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("store: %s: %w", op, err)
	}
	if err := s.insertEvents(ctx, tx, runID, events); err != nil {
		return fmt.Errorf("store: %s: %w", op, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: %s: %w", op, err)
	}
	return nil
}

// insertEvents adds events to runID's log in tx and trims it. Of more than
// MaxEventsPerRun, only the newest are written: the trim would delete the others at once.
func (s *Store) insertEvents(ctx context.Context, tx *sql.Tx, runID int64, events []store.Event) error {
	if len(events) > store.MaxEventsPerRun {
		events = events[len(events)-store.MaxEventsPerRun:]
	}
	args := make([]any, 0, 4*eventChunks[0])
	for i, n := range eventChunks {
		var ins *sql.Stmt
		for len(events) >= n {
			if ins == nil {
				ins = tx.StmtContext(ctx, s.stmtInsertEvents[i])
			}
			args = args[:0]
			for _, e := range events[:n] {
				e = e.Bounded()
				args = append(args, runID, sqlrow.MS(e.Time), e.Type, e.Message)
			}
			if _, err := ins.ExecContext(ctx, args...); err != nil {
				return err
			}
			events = events[n:]
		}
	}
	if _, err := tx.StmtContext(ctx, s.stmtTrimEvents).ExecContext(ctx, runID, runID, store.MaxEventsPerRun-1); err != nil {
		return fmt.Errorf("trim: %w", err)
	}
	return nil
}

// RecordProgress implements store.Store: UpdateRunProgress and AppendEvents in one
// transaction, one commit where a worker would make two.
func (s *Store) RecordProgress(ctx context.Context, id int64, p store.Progress, events []store.Event) error {
	if len(events) == 0 {
		return s.UpdateRunProgress(ctx, id, p)
	}
	return s.record(ctx, "record progress of run %d", id, nil, p, events)
}

// RecordProcessAndProgress implements store.Store: UpdateRunProcess and
// RecordProgress in one transaction.
func (s *Store) RecordProcessAndProgress(ctx context.Context, id int64, proc store.Process, p store.Progress, events []store.Event) error {
	return s.record(ctx, "record process and progress of run %d", id, &proc, p, events)
}

// record writes, in one transaction, proc when not nil, p, and events.
func (s *Store) record(ctx context.Context, opFormat string, id int64, proc *store.Process, p store.Progress, events []store.Event) error {
	if err := s.writable(fmt.Sprintf(opFormat, id)); err != nil {
		return err
	}
	now := sqlrow.MS(s.now())
	var updates []runUpdate
	if proc != nil {
		updates = append(updates, runUpdate{s.stmtProcess, []any{proc.PID, proc.PGID, proc.RemotePGID, proc.CLIVersion, now, id}})
	}
	updates = append(updates, runUpdate{s.stmtProgress, append(progressArgs(p), now, id)})
	return s.updateRun(ctx, opFormat, id, updates, events)
}

// runUpdate is a prepared UPDATE of one running run, with its arguments.
type runUpdate struct {
	stmt *sql.Stmt
	args []any
}

// updateRun makes, in one transaction, each of updates, which must each change the
// running run id, then appends events to its log. When an update changes nothing,
// nothing is written and checkRunUpdated says why.
func (s *Store) updateRun(ctx context.Context, opFormat string, id int64, updates []runUpdate, events []store.Event) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: "+opFormat+": %w", id, err)
	}
	defer tx.Rollback()
	for _, u := range updates {
		res, err := tx.StmtContext(ctx, u.stmt).ExecContext(ctx, u.args...)
		if n, rerr := rowsAffected(res, err); rerr != nil || n != 1 {
			// The writer's one connection is the transaction's: give it back before
			// asking why nothing was updated.
			_ = tx.Rollback()
			return s.checkRunUpdated(ctx, opFormat, id, res, err)
		}
	}
	if len(events) > 0 {
		if err := s.insertEvents(ctx, tx, id, events); err != nil {
			return fmt.Errorf("store: "+opFormat+": %w", id, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: "+opFormat+": %w", id, err)
	}
	return nil
}

// rowsAffected is res.RowsAffected(), or err.
func rowsAffected(res sql.Result, err error) (int64, error) {
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// RunEvents implements store.Reader.
func (s *Store) RunEvents(ctx context.Context, runID int64, limit int) ([]store.Event, error) {
	op := fmt.Sprintf("list events of run %d", runID)
	if err := store.CheckLimit(op, limit); err != nil {
		return nil, err
	}
	rows, err := s.r.QueryContext(ctx, `SELECT time_ms, type, message FROM (
		SELECT id, time_ms, type, message FROM run_events WHERE run_id = ? ORDER BY id DESC LIMIT ?
	) AS newest ORDER BY id`, runID, limit)
	if err != nil {
		return nil, fmt.Errorf("store: %s: %w", op, err)
	}
	defer rows.Close()
	var out []store.Event
	for rows.Next() {
		var e store.Event
		var t int64
		if err := rows.Scan(&t, &e.Type, &e.Message); err != nil {
			return nil, fmt.Errorf("store: %s: %w", op, err)
		}
		e.Time = sqlrow.Time(t)
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: %s: %w", op, err)
	}
	return out, nil
}
