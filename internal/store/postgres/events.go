package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"sortie/internal/store"
	"sortie/internal/store/internal/sqlrow"
)

// sqlTrimEvents deletes every event of a run older than its MaxEventsPerRun-th newest
// (the second argument is MaxEventsPerRun-1). With fewer events the subquery is NULL
// and nothing is deleted.
const sqlTrimEvents = `DELETE FROM run_events WHERE run_id = $1 AND id < (
	SELECT id FROM run_events WHERE run_id = $1 ORDER BY id DESC LIMIT 1 OFFSET $2)`

// AppendEvents implements store.Store. The events go in one INSERT over arrays, in
// their order, and the trim follows in the same batch: one round trip, and one
// transaction, the batch's implicit one.
func (s *Store) AppendEvents(ctx context.Context, runID int64, events []store.Event) error {
	if len(events) == 0 {
		return nil
	}
	op := fmt.Sprintf("append %d events to run %d", len(events), runID)
	b := &pgx.Batch{}
	queueEvents(b, runID, events, "")
	err := s.pool.SendBatch(ctx, b).Close()
	switch {
	case isForeignKeyViolation(err):
		return fmt.Errorf("store: %s: run %w", op, store.ErrNotFound)
	case err != nil:
		return fmt.Errorf("store: %s: %w", op, err)
	}
	return nil
}

// queueEvents queues the INSERT of events over arrays, in their order, and the trim of
// runID's log after it. Of more than MaxEventsPerRun, only the newest are written: the
// trim would delete the others at once. where, when not empty, is a condition on the
// run (alias r) the events are inserted under.
func queueEvents(b *pgx.Batch, runID int64, events []store.Event, where string) {
	if len(events) > store.MaxEventsPerRun {
		events = events[len(events)-store.MaxEventsPerRun:]
	}
	times := make([]int64, len(events))
	types := make([]string, len(events))
	messages := make([]string, len(events))
	for i, e := range events {
		e.Type, e.Message = clean(e.Type), clean(e.Message)
		e = e.Bounded()
		times[i], types[i], messages[i] = sqlrow.MS(e.Time), e.Type, e.Message
	}
	cond := ""
	if where != "" {
		cond = ` WHERE EXISTS (SELECT 1 FROM runs r WHERE r.id = $1 AND ` + where + `)`
	}
	b.Queue(`INSERT INTO run_events (run_id, time_ms, type, message)
		SELECT $1, e.time_ms, e.type, e.message
		FROM unnest($2::bigint[], $3::text[], $4::text[]) WITH ORDINALITY AS e (time_ms, type, message, n)`+cond+`
		ORDER BY e.n`, runID, times, types, messages)
	b.Queue(sqlTrimEvents, runID, store.MaxEventsPerRun-1)
}

// RecordProgress implements store.Store: the progress update, the events and the
// trim in one batch, so one round trip and one transaction (the batch's implicit
// one). The events are inserted only while the run is running, as the update is.
func (s *Store) RecordProgress(ctx context.Context, id int64, p store.Progress, events []store.Event) error {
	if len(events) == 0 {
		return s.UpdateRunProgress(ctx, id, p)
	}
	return s.record(ctx, "record progress of run %d", id, nil, p, events)
}

// RecordProcessAndProgress implements store.Store: the process update joins
// RecordProgress's batch, first.
func (s *Store) RecordProcessAndProgress(ctx context.Context, id int64, proc store.Process, p store.Progress, events []store.Event) error {
	return s.record(ctx, "record process and progress of run %d", id, &proc, p, events)
}

// record sends, in one batch, proc's update when not nil, p's and events.
func (s *Store) record(ctx context.Context, opFormat string, id int64, proc *store.Process, p store.Progress, events []store.Event) error {
	b := &pgx.Batch{}
	if proc != nil {
		// Under the same condition as the progress update: both change the row or
		// neither does, and the progress update's count below tells which.
		b.Queue(sqlUpdateProcess, s.processArgs(id, *proc)...)
	}
	b.Queue(`UPDATE runs SET `+progressSet+` WHERE id = @id AND status = 'running'`, s.progressArgs(id, p))
	if len(events) > 0 {
		queueEvents(b, id, events, "r.status = 'running'")
	}
	br := s.pool.SendBatch(ctx, b)
	var tag pgconn.CommandTag
	var err error
	if proc != nil {
		_, err = br.Exec()
	}
	if err == nil {
		tag, err = br.Exec()
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if isForeignKeyViolation(err) {
		err = nil // no such run: the update found nothing, which checkRunUpdated reports
	}
	return s.checkRunUpdated(ctx, opFormat, id, tag, err)
}

// RunEvents implements store.Reader.
func (s *Store) RunEvents(ctx context.Context, runID int64, limit int) ([]store.Event, error) {
	op := fmt.Sprintf("list events of run %d", runID)
	if err := store.CheckLimit(op, limit); err != nil {
		return nil, err
	}
	rows, _ := s.pool.Query(ctx, `SELECT time_ms, type, message FROM (
		SELECT id, time_ms, type, message FROM run_events WHERE run_id = $1 ORDER BY id DESC LIMIT $2
	) AS newest ORDER BY id`, runID, limit)
	out, err := collect(rows, func(row sqlrow.Scanner) (store.Event, error) {
		var e store.Event
		var t int64
		err := row.Scan(&t, &e.Type, &e.Message)
		e.Time = sqlrow.Time(t)
		return e, err
	})
	if err != nil {
		return nil, fmt.Errorf("store: %s: %w", op, err)
	}
	return out, nil
}
