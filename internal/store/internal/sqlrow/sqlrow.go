// Package sqlrow is what the SQL stores (sqlite, postgres) share about their rows: the
// columns they read into the store's types, in order, the functions that scan them,
// and how times are kept. The statements around them are each store's own.
package sqlrow

import (
	"fmt"
	"time"

	"sortie/internal/store"
)

// Scanner is a row: *sql.Row, *sql.Rows, pgx.Row or pgx.CollectableRow.
type Scanner interface{ Scan(dest ...any) error }

// Times are kept as integer milliseconds since the Unix epoch, UTC (columns end in
// _ms): they sort and subtract alike in SQLite and PostgreSQL.

// MS is t in milliseconds since the Unix epoch.
func MS(t time.Time) int64 { return t.UnixMilli() }

// NullMS is MS, or nil (NULL) for the zero time.
func NullMS(t time.Time) *int64 {
	if t.IsZero() {
		return nil
	}
	ms := MS(t)
	return &ms
}

// Time is the UTC time of ms milliseconds since the Unix epoch.
func Time(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

// NullTime is Time, or the zero time for nil (NULL).
func NullTime(ms *int64) time.Time {
	if ms == nil {
		return time.Time{}
	}
	return Time(*ms)
}

// RunColumns are the columns of runs ScanRun reads, in its order.
const RunColumns = `id, issue_id, identifier, attempt, agent_kind, workspace, ssh_host,
	workflow_path, status, started_at_ms, ended_at_ms, error, pid, pgid, cli_version,
	session_id, model, turns, input_tokens, output_tokens, total_tokens, cache_read_tokens,
	cost_usd, daemon_host, daemon_pid, remote_pgid, review_metadata, reaction`

// ScanRun reads one row of RunColumns.
func ScanRun(sc Scanner) (store.Run, error) {
	var (
		r       store.Run
		status  string
		started int64
		ended   *int64
	)
	err := sc.Scan(&r.ID, &r.IssueID, &r.Identifier, &r.Attempt, &r.AgentKind, &r.Workspace,
		&r.SSHHost, &r.WorkflowPath, &status, &started, &ended, &r.Error, &r.PID, &r.PGID,
		&r.CLIVersion, &r.SessionID, &r.Model, &r.Turns, &r.Tokens.Input, &r.Tokens.Output,
		&r.Tokens.Total, &r.Tokens.CacheRead, &r.CostUSD, &r.DaemonHost, &r.DaemonPID, &r.RemotePGID,
		&r.ReviewMetadata, &r.Reaction)
	if err != nil {
		return store.Run{}, err
	}
	r.Status = store.RunStatus(status)
	r.StartedAt = Time(started)
	r.EndedAt = NullTime(ended)
	return r, nil
}

// ReactionWatchColumns are the columns of reaction_watches ScanReactionWatch reads, in
// its order.
const ReactionWatchColumns = `issue_id, identifier, workspace, session_id, branch, pr_number, handed_off_at_ms`

// ScanReactionWatch reads one row of ReactionWatchColumns.
func ScanReactionWatch(sc Scanner) (store.ReactionWatch, error) {
	var (
		w  store.ReactionWatch
		at int64
	)
	err := sc.Scan(&w.IssueID, &w.Identifier, &w.Workspace, &w.SessionID, &w.Branch, &w.PRNumber, &at)
	w.HandedOffAt = Time(at)
	return w, err
}

// ReactionStateColumns are the columns of reaction_states ScanReactionState reads, in
// its order.
const ReactionStateColumns = `issue_id, kind, fingerprint, dispatched, attempts, escalated, updated_at_ms`

// ScanReactionState reads one row of ReactionStateColumns.
func ScanReactionState(sc Scanner) (store.ReactionState, error) {
	var (
		st store.ReactionState
		at int64
	)
	err := sc.Scan(&st.IssueID, &st.Kind, &st.Fingerprint, &st.Dispatched, &st.Attempts, &st.Escalated, &at)
	st.UpdatedAt = Time(at)
	return st, err
}

// TraceColumns are the columns of workflow_trace ScanTrace reads, in its order.
const TraceColumns = `id, session_id, span_id, issue_id, run_id, tool, ts_ms, duration_ms, ok,
	workflow, activity, agent_id, error, warnings, detail`

// ScanTrace reads one row of TraceColumns. Warnings are a JSON list
// (store.MarshalList); the duration is whole milliseconds.
func ScanTrace(sc Scanner) (store.TraceEvent, error) {
	var (
		e            store.TraceEvent
		ts, duration int64
		warnings     string
	)
	err := sc.Scan(&e.ID, &e.SessionID, &e.SpanID, &e.IssueID, &e.RunID, &e.Tool, &ts, &duration, &e.OK,
		&e.Workflow, &e.Activity, &e.AgentID, &e.Error, &warnings, &e.Detail)
	if err != nil {
		return store.TraceEvent{}, err
	}
	e.TS = Time(ts)
	e.Duration = time.Duration(duration) * time.Millisecond
	if e.Warnings, err = store.UnmarshalList[string](warnings); err != nil {
		return store.TraceEvent{}, fmt.Errorf("trace event %d: warnings: %w", e.ID, err)
	}
	return e, nil
}

// CheckpointColumns are the columns of checkpoints ScanCheckpoint reads, in its order.
const CheckpointColumns = `id, session_id, issue_id, identifier, run_id, workflow, activity,
	checkpoint_id, name, message, options, blocking, default_option, auto_advance_ms, conditional,
	issued_at_ms, answer, answered_by, answer_source, answered_at_ms, resolution, resolved_at_ms`

// ScanCheckpoint reads one row of CheckpointColumns. Options are a JSON list
// (store.MarshalList).
func ScanCheckpoint(sc Scanner) (store.Checkpoint, error) {
	var (
		cp                 store.Checkpoint
		options            string
		issued             int64
		answered, resolved *int64
	)
	err := sc.Scan(&cp.ID, &cp.SessionID, &cp.IssueID, &cp.Identifier, &cp.RunID, &cp.Workflow, &cp.Activity,
		&cp.CheckpointID, &cp.Name, &cp.Message, &options, &cp.Blocking, &cp.DefaultOption, &cp.AutoAdvanceMS,
		&cp.Conditional, &issued, &cp.Answer, &cp.AnsweredBy, &cp.AnswerSource, &answered, &cp.Resolution, &resolved)
	if err != nil {
		return store.Checkpoint{}, err
	}
	if cp.Options, err = store.UnmarshalList[store.CheckpointOption](options); err != nil {
		return store.Checkpoint{}, fmt.Errorf("checkpoint %d: options: %w", cp.ID, err)
	}
	cp.IssuedAt = Time(issued)
	cp.AnsweredAt = NullTime(answered)
	cp.ResolvedAt = NullTime(resolved)
	return cp, nil
}

// AnswerColumns are the columns of checkpoints ScanAnswer reads, in its order: what
// re-arming needs of a superseded checkpoint (store.CarryAnswers).
const AnswerColumns = `id, activity, checkpoint_id, answer, answered_by, answer_source, answered_at_ms`

// ScanAnswer reads one row of AnswerColumns into the fields of a checkpoint they name.
func ScanAnswer(sc Scanner) (store.Checkpoint, error) {
	var (
		cp store.Checkpoint
		at *int64
	)
	err := sc.Scan(&cp.ID, &cp.Activity, &cp.CheckpointID, &cp.Answer, &cp.AnsweredBy, &cp.AnswerSource, &at)
	cp.AnsweredAt = NullTime(at)
	return cp, err
}
