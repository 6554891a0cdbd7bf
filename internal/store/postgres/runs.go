package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"sortie/internal/store"
	"sortie/internal/store/internal/sqlrow"
)

// Counters only move forward (GREATEST), so a late or reordered update cannot lose
// spend. The arguments are named (progressArgs).
const progressSet = `turns = GREATEST(turns, @turns),
	input_tokens = GREATEST(input_tokens, @input_tokens), output_tokens = GREATEST(output_tokens, @output_tokens),
	total_tokens = GREATEST(total_tokens, @total_tokens), cache_read_tokens = GREATEST(cache_read_tokens, @cache_read_tokens),
	cost_usd = GREATEST(cost_usd, @cost_usd), model = COALESCE(NULLIF(@model, ''), model),
	session_id = COALESCE(NULLIF(@session_id, ''), session_id), updated_at_ms = @now`

// progressArgs returns the arguments of progressSet, with the store's time, and with
// the run's id as @id.
func (s *Store) progressArgs(id int64, p store.Progress) pgx.NamedArgs {
	return pgx.NamedArgs{
		"id": id, "turns": p.Turns, "input_tokens": p.Tokens.Input, "output_tokens": p.Tokens.Output,
		"total_tokens": p.Tokens.Total, "cache_read_tokens": p.Tokens.CacheRead, "cost_usd": p.CostUSD,
		"model": clean(p.Model), "session_id": clean(p.SessionID), "now": sqlrow.MS(s.now()),
	}
}

// StartRun implements store.Store.
func (s *Store) StartRun(ctx context.Context, r store.Run) (int64, error) {
	if err := r.Validate(); err != nil {
		return 0, fmt.Errorf("store: start run for issue %q: %w", r.IssueID, err)
	}
	var id int64
	err := s.pool.QueryRow(ctx, `INSERT INTO runs (issue_id, identifier, attempt, agent_kind,
		workspace, ssh_host, workflow_path, status, started_at_ms, updated_at_ms, pid, pgid, cli_version,
		session_id, daemon_host, daemon_pid, reaction)
		VALUES ($1, $2, $3, $4, $5, $6, $7, 'running', $8, $9, $10, $11, $12, $13, $14, $15, $16) RETURNING id`,
		r.IssueID, r.Identifier, r.Attempt, r.AgentKind, r.Workspace, r.SSHHost, r.WorkflowPath,
		sqlrow.MS(r.StartedAt), sqlrow.MS(s.now()), r.PID, r.PGID, clean(r.CLIVersion), clean(r.SessionID), s.host, s.pid, clean(r.Reaction),
	).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("store: start run for issue %q: %w", r.IssueID, err)
	}
	return id, nil
}

const sqlUpdateProcess = `UPDATE runs SET pid = $1, pgid = $2, remote_pgid = $3,
	cli_version = COALESCE(NULLIF($4, ''), cli_version), updated_at_ms = $5
	WHERE id = $6 AND status = 'running'`

// processArgs are sqlUpdateProcess's arguments.
func (s *Store) processArgs(id int64, p store.Process) []any {
	return []any{p.PID, p.PGID, p.RemotePGID, clean(p.CLIVersion), sqlrow.MS(s.now()), id}
}

// UpdateRunProcess implements store.Store.
func (s *Store) UpdateRunProcess(ctx context.Context, id int64, p store.Process) error {
	tag, err := s.pool.Exec(ctx, sqlUpdateProcess, s.processArgs(id, p)...)
	return s.checkRunUpdated(ctx, "update run %d process", id, tag, err)
}

// UpdateRunProgress implements store.Store.
func (s *Store) UpdateRunProgress(ctx context.Context, id int64, p store.Progress) error {
	tag, err := s.pool.Exec(ctx, `UPDATE runs SET `+progressSet+` WHERE id = @id AND status = 'running'`,
		s.progressArgs(id, p))
	return s.checkRunUpdated(ctx, "update run %d progress", id, tag, err)
}

// FinishRun implements store.Store.
func (s *Store) FinishRun(ctx context.Context, id int64, end store.RunEnd) error {
	const op = "finish run %d"
	if err := end.Validate(); err != nil {
		return fmt.Errorf("store: "+op+": %w", id, err)
	}
	args := s.progressArgs(id, end.Progress)
	args["status"] = string(end.Status)
	args["error"] = text(end.Error, store.MaxRunErrorBytes)
	args["ended_at"] = sqlrow.MS(end.EndedAt)
	args["review_metadata"] = clean(end.ReviewMetadata)
	const finish = `UPDATE runs SET status = @status, error = @error, ended_at_ms = @ended_at,
		review_metadata = @review_metadata, ` + progressSet + ` WHERE id = @id AND status = 'running'`
	if len(end.Events) == 0 {
		tag, err := s.pool.Exec(ctx, finish, args)
		return s.checkRunUpdated(ctx, op, id, tag, err)
	}
	// The last events first, while the run is still running, then the end: one batch,
	// so one round trip and one transaction (the batch's implicit one).
	b := &pgx.Batch{}
	queueEvents(b, id, end.Events, "r.status = 'running'")
	b.Queue(finish, args)
	br := s.pool.SendBatch(ctx, b)
	_, err := br.Exec()
	if err == nil {
		_, err = br.Exec() // the trim
	}
	var tag pgconn.CommandTag
	if err == nil {
		tag, err = br.Exec()
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return s.checkRunUpdated(ctx, op, id, tag, err)
}

// checkRunUpdated turns the result of an UPDATE … WHERE status = 'running' into nil,
// ErrNotFound or ErrRunNotRunning. opFormat names the operation, with %d for the id.
func (s *Store) checkRunUpdated(ctx context.Context, opFormat string, id int64, tag pgconn.CommandTag, err error) error {
	if err == nil && tag.RowsAffected() == 1 {
		return nil
	}
	op := fmt.Sprintf(opFormat, id)
	if err != nil {
		return fmt.Errorf("store: %s: %w", op, err)
	}
	var status string
	err = s.pool.QueryRow(ctx, `SELECT status FROM runs WHERE id = $1`, id).Scan(&status)
	switch {
	case isNoRows(err):
		return fmt.Errorf("store: %s: run %w", op, store.ErrNotFound)
	case err != nil:
		return fmt.Errorf("store: %s: %w", op, err)
	}
	return fmt.Errorf("store: %s: %w (it ended as %s)", op, store.ErrRunNotRunning, status)
}

// MarkInterrupted implements store.Store, in one statement over all the ids. The end
// time is the run's last write, the best evidence of when the dead daemon stopped; the
// error names that daemon.
func (s *Store) MarkInterrupted(ctx context.Context, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	_, err := s.pool.Exec(ctx, `UPDATE runs SET status = 'interrupted',
		ended_at_ms = GREATEST(started_at_ms, updated_at_ms),
		error = CASE WHEN error = '' THEN
			format('interrupted: the sortie daemon (pid %s on %s) stopped while this run was in progress', daemon_pid, daemon_host)
			ELSE error END
		WHERE status = 'running' AND id = ANY($1)`, ids)
	if err != nil {
		return fmt.Errorf("store: mark runs interrupted: %w", err)
	}
	return nil
}

// RunsInProgress implements store.Reader. Unlike a SQLite file, a PostgreSQL database
// may be shared by daemons: a running row may belong to another daemon that is alive
// (DaemonHost and DaemonPID say which).
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
	return s.queryRuns(ctx, op, `SELECT `+sqlrow.RunColumns+` FROM runs ORDER BY id DESC LIMIT $1`, limit)
}

// RunsForIssue implements store.Reader.
func (s *Store) RunsForIssue(ctx context.Context, issueID string, limit int) ([]store.Run, error) {
	op := fmt.Sprintf("list runs of issue %q", issueID)
	if err := store.CheckLimit(op, limit); err != nil {
		return nil, err
	}
	return s.queryRuns(ctx, op,
		`SELECT `+sqlrow.RunColumns+` FROM runs WHERE issue_id = $1 ORDER BY id DESC LIMIT $2`, issueID, limit)
}

// RunsForIdentifier implements store.Reader, on the runs_identifier index.
func (s *Store) RunsForIdentifier(ctx context.Context, identifier string, limit int) ([]store.Run, error) {
	op := fmt.Sprintf("list runs of issue %s", identifier)
	if err := store.CheckLimit(op, limit); err != nil {
		return nil, err
	}
	return s.queryRuns(ctx, op,
		`SELECT `+sqlrow.RunColumns+` FROM runs WHERE identifier = $1 ORDER BY id DESC LIMIT $2`, identifier, limit)
}

// ListRuns implements store.Reader. The WHERE clause holds only the selectors f sets,
// so the planner can pick an index for each combination (runs_identifier, runs_status,
// or the primary key for a bare page).
func (s *Store) ListRuns(ctx context.Context, f store.RunFilter) ([]store.Run, error) {
	const op = "list runs"
	if err := f.Validate(); err != nil {
		return nil, fmt.Errorf("store: %s: %w", op, err)
	}
	q, args := listRunsQuery(f)
	return s.queryRuns(ctx, op, q, args)
}

// listRunsQuery builds ListRuns' statement for f, with named arguments.
func listRunsQuery(f store.RunFilter) (string, pgx.NamedArgs) {
	q := `SELECT ` + sqlrow.RunColumns + ` FROM runs WHERE true`
	args := pgx.NamedArgs{"limit": f.Limit}
	if f.Identifier != "" {
		q += ` AND identifier = @identifier`
		args["identifier"] = f.Identifier
	}
	if f.Status != "" {
		q += ` AND status = @status`
		args["status"] = string(f.Status)
	}
	if f.Before > 0 {
		q += ` AND id < @before`
		args["before"] = f.Before
	}
	return q + ` ORDER BY id DESC LIMIT @limit`, args
}

func (s *Store) queryRuns(ctx context.Context, op, query string, args ...any) ([]store.Run, error) {
	rows, _ := s.pool.Query(ctx, query, args...) // an error shows in collect
	runs, err := collect(rows, sqlrow.ScanRun)
	if err != nil {
		return nil, fmt.Errorf("store: %s: %w", op, err)
	}
	return runs, nil
}

// CountRuns implements store.Reader, in one statement over all the ids.
func (s *Store) CountRuns(ctx context.Context, issueIDs []string) (map[string]int, error) {
	counts := make(map[string]int, len(issueIDs))
	for _, id := range issueIDs {
		counts[id] = 0 // every id asked has an entry
	}
	if len(issueIDs) == 0 {
		return counts, nil
	}
	var (
		id string
		n  int
	)
	rows, _ := s.pool.Query(ctx, `SELECT issue_id, COUNT(*) FROM runs WHERE issue_id = ANY($1) GROUP BY issue_id`, issueIDs)
	_, err := pgx.ForEachRow(rows, []any{&id, &n}, func() error {
		counts[id] = n
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: count runs of %d issues: %w", len(issueIDs), err)
	}
	return counts, nil
}
