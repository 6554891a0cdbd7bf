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

// Counters only move forward (max), so a late or reordered update cannot lose spend.
// max(a, b) is SQLite's scalar max; PostgreSQL spells it GREATEST.
const progressSet = `turns = max(turns, ?),
	input_tokens = max(input_tokens, ?), output_tokens = max(output_tokens, ?),
	total_tokens = max(total_tokens, ?), cache_read_tokens = max(cache_read_tokens, ?),
	cost_usd = max(cost_usd, ?), model = COALESCE(NULLIF(?, ''), model),
	session_id = COALESCE(NULLIF(?, ''), session_id)`

const sqlUpdateProgress = `UPDATE runs SET ` + progressSet + `, updated_at_ms = ?
	WHERE id = ? AND status = 'running'`

const sqlStartRun = `INSERT INTO runs (issue_id, identifier, attempt, agent_kind,
	workspace, ssh_host, workflow_path, status, started_at_ms, updated_at_ms, pid, pgid, cli_version,
	session_id, daemon_host, daemon_pid, reaction)
	VALUES (?, ?, ?, ?, ?, ?, ?, 'running', ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`

const sqlUpdateProcess = `UPDATE runs SET pid = ?, pgid = ?, remote_pgid = ?,
	cli_version = COALESCE(NULLIF(?, ''), cli_version), updated_at_ms = ?
	WHERE id = ? AND status = 'running'`

const sqlFinishRun = `UPDATE runs SET status = ?, error = ?, ended_at_ms = ?, review_metadata = ?, ` + progressSet + `,
	updated_at_ms = ? WHERE id = ? AND status = 'running'`

func progressArgs(p store.Progress) []any {
	return []any{p.Turns, p.Tokens.Input, p.Tokens.Output, p.Tokens.Total, p.Tokens.CacheRead, p.CostUSD, p.Model, p.SessionID}
}

// StartRun implements store.Store.
func (s *Store) StartRun(ctx context.Context, r store.Run) (int64, error) {
	if err := s.writable("start run"); err != nil {
		return 0, err
	}
	if err := r.Validate(); err != nil {
		return 0, fmt.Errorf("store: start run for issue %q: %w", r.IssueID, err)
	}
	var id int64
	err := s.stmtStartRun.QueryRowContext(ctx,
		r.IssueID, r.Identifier, r.Attempt, r.AgentKind, r.Workspace, r.SSHHost, r.WorkflowPath,
		sqlrow.MS(r.StartedAt), sqlrow.MS(s.now()), r.PID, r.PGID, r.CLIVersion, r.SessionID, s.host, s.pid, r.Reaction,
	).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("store: start run for issue %q: %w", r.IssueID, err)
	}
	return id, nil
}

// UpdateRunProcess implements store.Store.
func (s *Store) UpdateRunProcess(ctx context.Context, id int64, p store.Process) error {
	const op = "update run %d process"
	if err := s.writable(fmt.Sprintf(op, id)); err != nil {
		return err
	}
	res, err := s.stmtProcess.ExecContext(ctx,
		p.PID, p.PGID, p.RemotePGID, p.CLIVersion, sqlrow.MS(s.now()), id)
	return s.checkRunUpdated(ctx, op, id, res, err)
}

// UpdateRunProgress implements store.Store.
func (s *Store) UpdateRunProgress(ctx context.Context, id int64, p store.Progress) error {
	const op = "update run %d progress"
	if s.readOnly { // the hot path formats nothing unless it fails
		return s.writable(fmt.Sprintf(op, id))
	}
	args := append(progressArgs(p), sqlrow.MS(s.now()), id)
	res, err := s.stmtProgress.ExecContext(ctx, args...)
	return s.checkRunUpdated(ctx, op, id, res, err)
}

// FinishRun implements store.Store.
func (s *Store) FinishRun(ctx context.Context, id int64, end store.RunEnd) error {
	const op = "finish run %d"
	if err := s.writable(fmt.Sprintf(op, id)); err != nil {
		return err
	}
	if err := end.Validate(); err != nil {
		return fmt.Errorf("store: "+op+": %w", id, err)
	}
	args := []any{string(end.Status), store.Truncate(end.Error, store.MaxRunErrorBytes), sqlrow.MS(end.EndedAt),
		end.ReviewMetadata}
	args = append(args, progressArgs(end.Progress)...)
	args = append(args, sqlrow.MS(s.now()), id)
	if len(end.Events) == 0 {
		res, err := s.stmtFinish.ExecContext(ctx, args...)
		return s.checkRunUpdated(ctx, op, id, res, err)
	}
	return s.updateRun(ctx, op, id, []runUpdate{{s.stmtFinish, args}}, end.Events)
}

// checkRunUpdated turns the result of an UPDATE … WHERE status = 'running' into nil,
// ErrNotFound or ErrRunNotRunning. opFormat names the operation, with %d for the id.
func (s *Store) checkRunUpdated(ctx context.Context, opFormat string, id int64, res sql.Result, err error) error {
	if err == nil {
		var n int64
		if n, err = res.RowsAffected(); err == nil && n == 1 {
			return nil
		}
	}
	op := fmt.Sprintf(opFormat, id)
	if err != nil {
		return fmt.Errorf("store: %s: %w", op, err)
	}
	var status string
	err = s.w.QueryRowContext(ctx, `SELECT status FROM runs WHERE id = ?`, id).Scan(&status)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("store: %s: run %w", op, store.ErrNotFound)
	case err != nil:
		return fmt.Errorf("store: %s: %w", op, err)
	}
	return fmt.Errorf("store: %s: %w (it ended as %s)", op, store.ErrRunNotRunning, status)
}

// MarkInterrupted implements store.Store. The end time is the run's last write, the
// best evidence of when the dead daemon stopped; the error names that daemon.
func (s *Store) MarkInterrupted(ctx context.Context, ids []int64) error {
	if err := s.writable("mark runs interrupted"); err != nil {
		return err
	}
	if len(ids) == 0 {
		return nil
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: mark runs interrupted: %w", err)
	}
	defer tx.Rollback()
	for chunk := range chunks(ids, maxParams) {
		args := make([]any, len(chunk))
		for i, id := range chunk {
			args[i] = id
		}
		_, err := tx.ExecContext(ctx, `UPDATE runs SET status = 'interrupted',
			ended_at_ms = max(started_at_ms, updated_at_ms),
			error = CASE WHEN error = '' THEN
				'interrupted: the sortie daemon (pid ' || daemon_pid || ' on ' || daemon_host || ') stopped while this run was in progress'
				ELSE error END
			WHERE status = 'running' AND id IN (`+placeholders(len(chunk))+`)`, args...)
		if err != nil {
			return fmt.Errorf("store: mark runs interrupted: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: mark runs interrupted: %w", err)
	}
	return nil
}

// RunsInProgress implements store.Reader. The daemon's lock guarantees that every
// running row it finds at startup belongs to a daemon that is gone.
func (s *Store) RunsInProgress(ctx context.Context) ([]store.Run, error) {
	return s.queryRuns(ctx, "list runs in progress",
		`SELECT `+sqlrow.RunColumns+` FROM runs WHERE status = 'running' ORDER BY id`)
}

// RecentRuns implements store.Reader.
func (s *Store) RecentRuns(ctx context.Context, limit int) ([]store.Run, error) {
	const op = "list recent runs"
	if err := store.CheckLimit(op, limit); err != nil {
		return nil, err
	}
	return s.queryRuns(ctx, op, `SELECT `+sqlrow.RunColumns+` FROM runs ORDER BY id DESC LIMIT ?`, limit)
}

// RunsForIssue implements store.Reader.
func (s *Store) RunsForIssue(ctx context.Context, issueID string, limit int) ([]store.Run, error) {
	op := fmt.Sprintf("list runs of issue %q", issueID)
	if err := store.CheckLimit(op, limit); err != nil {
		return nil, err
	}
	return s.queryRuns(ctx, op,
		`SELECT `+sqlrow.RunColumns+` FROM runs WHERE issue_id = ? ORDER BY id DESC LIMIT ?`, issueID, limit)
}

// RunsForIdentifier implements store.Reader, on the runs_identifier index.
func (s *Store) RunsForIdentifier(ctx context.Context, identifier string, limit int) ([]store.Run, error) {
	op := fmt.Sprintf("list runs of issue %s", identifier)
	if err := store.CheckLimit(op, limit); err != nil {
		return nil, err
	}
	return s.queryRuns(ctx, op,
		`SELECT `+sqlrow.RunColumns+` FROM runs WHERE identifier = ? ORDER BY id DESC LIMIT ?`, identifier, limit)
}

// ListRuns implements store.Reader. The WHERE clause holds only the selectors f sets,
// so SQLite can pick an index for each combination (runs_identifier, runs_status, or
// the primary key for a bare page); an "OR the argument is empty" form would scan.
func (s *Store) ListRuns(ctx context.Context, f store.RunFilter) ([]store.Run, error) {
	const op = "list runs"
	if err := f.Validate(); err != nil {
		return nil, fmt.Errorf("store: %s: %w", op, err)
	}
	q, args := listRunsQuery(f)
	return s.queryRuns(ctx, op, q, args...)
}

// listRunsQuery builds ListRuns' statement for f.
func listRunsQuery(f store.RunFilter) (string, []any) {
	q := `SELECT ` + sqlrow.RunColumns + ` FROM runs`
	if f.Identifier != "" {
		// An issue has few runs, so its identifier is the selective term even with a
		// status too; without statistics SQLite would walk runs_status instead.
		q += ` INDEXED BY runs_identifier`
	}
	var args []any
	where := func(cond string, arg any) {
		if len(args) == 0 {
			q += ` WHERE `
		} else {
			q += ` AND `
		}
		q += cond
		args = append(args, arg)
	}
	if f.Identifier != "" {
		where(`identifier = ?`, f.Identifier)
	}
	if f.Status != "" {
		where(`status = ?`, string(f.Status))
	}
	if f.Before > 0 {
		where(`id < ?`, f.Before)
	}
	return q + ` ORDER BY id DESC LIMIT ?`, append(args, f.Limit)
}

func (s *Store) queryRuns(ctx context.Context, op, query string, args ...any) ([]store.Run, error) {
	// A read-only reader of a database its daemon has not migrated yet reads 0 and ''
	// for the columns added since.
	if ok, err := s.remotePGIDExists(ctx); err != nil {
		return nil, fmt.Errorf("store: %s: %w", op, err)
	} else if !ok {
		query = strings.Replace(query, "daemon_pid, remote_pgid", "daemon_pid, 0 AS remote_pgid", 1)
	}
	if ok, err := s.reactionTablesExist(ctx); err != nil {
		return nil, fmt.Errorf("store: %s: %w", op, err)
	} else if !ok {
		query = strings.Replace(query, "review_metadata, reaction", "'' AS review_metadata, '' AS reaction", 1)
	}
	rows, err := s.r.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("store: %s: %w", op, err)
	}
	defer rows.Close()
	var runs []store.Run
	for rows.Next() {
		r, err := sqlrow.ScanRun(rows)
		if err != nil {
			return nil, fmt.Errorf("store: %s: %w", op, err)
		}
		runs = append(runs, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: %s: %w", op, err)
	}
	return runs, nil
}

// CountRuns implements store.Reader.
func (s *Store) CountRuns(ctx context.Context, issueIDs []string) (map[string]int, error) {
	counts := make(map[string]int, len(issueIDs))
	err := s.queryByIssue(ctx, issueIDs, `SELECT issue_id, COUNT(*) FROM runs`, func(rows *sql.Rows) error {
		var id string
		var n int
		if err := rows.Scan(&id, &n); err != nil {
			return err
		}
		counts[id] = n
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: count runs of %d issues: %w", len(issueIDs), err)
	}
	for _, id := range issueIDs {
		if _, ok := counts[id]; !ok {
			counts[id] = 0 // every id asked has an entry
		}
	}
	return counts, nil
}
