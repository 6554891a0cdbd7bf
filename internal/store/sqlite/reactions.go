package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"sortie/internal/store"
	"sortie/internal/store/internal/sqlrow"
)

// checkReaction checks the key of a reaction state and, when withFP, its fingerprint.
func checkReaction(issueID, kind, fp string, withFP bool) error {
	err := store.CheckReactionKey(issueID, kind)
	if withFP && fp == "" {
		err = errors.Join(err, errors.New("fingerprint is empty"))
	}
	return err
}

// SaveReactionWatch implements store.ReactionStore.
func (s *Store) SaveReactionWatch(ctx context.Context, w store.ReactionWatch) error {
	op := fmt.Sprintf("save reaction watch of issue %q", w.IssueID)
	if err := s.writable(op); err != nil {
		return err
	}
	if err := w.Validate(); err != nil {
		return fmt.Errorf("store: %s: %w", op, err)
	}
	_, err := s.w.ExecContext(ctx, `INSERT INTO reaction_watches (`+sqlrow.ReactionWatchColumns+`)
		VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (issue_id) DO UPDATE SET identifier = excluded.identifier, workspace = excluded.workspace,
			session_id = excluded.session_id, branch = excluded.branch, pr_number = excluded.pr_number,
			handed_off_at_ms = excluded.handed_off_at_ms`,
		w.IssueID, w.Identifier, w.Workspace, w.SessionID, w.Branch, w.PRNumber, sqlrow.MS(w.HandedOffAt))
	return wrapOp(op, err)
}

// DeleteReactionWatch implements store.ReactionStore.
func (s *Store) DeleteReactionWatch(ctx context.Context, issueID string) error {
	op := fmt.Sprintf("delete reaction watch of issue %q", issueID)
	if err := s.writable(op); err != nil {
		return err
	}
	_, err := s.w.ExecContext(ctx, `DELETE FROM reaction_watches WHERE issue_id = ?`, issueID)
	return wrapOp(op, err)
}

// LoadReactionWatches implements store.ReactionStore.
func (s *Store) LoadReactionWatches(ctx context.Context) ([]store.ReactionWatch, error) {
	const op = "load reaction watches"
	if ok, err := s.reactionTablesExist(ctx); !ok || err != nil {
		return nil, wrapOp(op, err)
	}
	rows, err := s.r.QueryContext(ctx, `SELECT `+sqlrow.ReactionWatchColumns+` FROM reaction_watches
		ORDER BY handed_off_at_ms, issue_id`)
	if err != nil {
		return nil, wrapOp(op, err)
	}
	out, err := scanAll(rows, sqlrow.ScanReactionWatch)
	return out, wrapOp(op, err)
}

// ObserveReaction implements store.ReactionStore, in one statement: the row as it is
// after the upsert comes back from RETURNING. SET expressions read the row as it was,
// so dispatched is compared with the old fingerprint.
func (s *Store) ObserveReaction(ctx context.Context, issueID, kind, fp string, now time.Time) (store.ReactionState, error) {
	op := fmt.Sprintf("observe %s reaction of issue %q", kind, issueID)
	if err := s.writable(op); err != nil {
		return store.ReactionState{}, err
	}
	if err := checkReaction(issueID, kind, fp, true); err != nil {
		return store.ReactionState{}, wrapOp(op, err)
	}
	st, err := sqlrow.ScanReactionState(s.w.QueryRowContext(ctx, `INSERT INTO reaction_states
		(issue_id, kind, fingerprint, dispatched, attempts, escalated, updated_at_ms) VALUES (?, ?, ?, 0, 0, 0, ?)
		ON CONFLICT (issue_id, kind) DO UPDATE SET
			dispatched = CASE WHEN fingerprint = excluded.fingerprint THEN dispatched ELSE 0 END,
			updated_at_ms = CASE WHEN fingerprint = excluded.fingerprint THEN updated_at_ms ELSE excluded.updated_at_ms END,
			fingerprint = excluded.fingerprint
		RETURNING `+sqlrow.ReactionStateColumns, issueID, kind, fp, sqlrow.MS(now)))
	if err != nil {
		return store.ReactionState{}, wrapOp(op, err)
	}
	return st, nil
}

// MarkReactionDispatched implements store.ReactionStore with one conditional UPDATE:
// of two callers only the first finds the row undispatched.
func (s *Store) MarkReactionDispatched(ctx context.Context, issueID, kind, fp string, now time.Time) (bool, error) {
	op := fmt.Sprintf("mark %s reaction of issue %q dispatched", kind, issueID)
	if err := s.writable(op); err != nil {
		return false, err
	}
	if err := checkReaction(issueID, kind, fp, true); err != nil {
		return false, wrapOp(op, err)
	}
	res, err := s.w.ExecContext(ctx, `UPDATE reaction_states SET dispatched = 1, attempts = attempts + 1,
		updated_at_ms = ? WHERE issue_id = ? AND kind = ? AND fingerprint = ? AND NOT dispatched`,
		sqlrow.MS(now), issueID, kind, fp)
	if err != nil {
		return false, wrapOp(op, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, wrapOp(op, err)
	}
	return n == 1, nil
}

// ReleaseReactionDispatch implements store.ReactionStore.
func (s *Store) ReleaseReactionDispatch(ctx context.Context, issueID, kind, fp string) error {
	op := fmt.Sprintf("release the dispatch of %s reaction of issue %q", kind, issueID)
	if err := s.writable(op); err != nil {
		return err
	}
	if err := checkReaction(issueID, kind, fp, true); err != nil {
		return wrapOp(op, err)
	}
	_, err := s.w.ExecContext(ctx, `UPDATE reaction_states SET dispatched = 0, attempts = MAX(attempts - 1, 0)
		WHERE issue_id = ? AND kind = ? AND fingerprint = ? AND dispatched`, issueID, kind, fp)
	if err != nil {
		return wrapOp(op, err)
	}
	return nil
}

// ResetReaction implements store.ReactionStore: the state is forgotten.
func (s *Store) ResetReaction(ctx context.Context, issueID, kind string) error {
	op := fmt.Sprintf("reset %s reaction of issue %q", kind, issueID)
	if err := s.writable(op); err != nil {
		return err
	}
	if err := checkReaction(issueID, kind, "", false); err != nil {
		return wrapOp(op, err)
	}
	_, err := s.w.ExecContext(ctx, `DELETE FROM reaction_states WHERE issue_id = ? AND kind = ?`, issueID, kind)
	return wrapOp(op, err)
}

// EscalateReaction implements store.ReactionStore. A state not observed yet is made,
// with no fingerprint, so the escalation is not lost.
func (s *Store) EscalateReaction(ctx context.Context, issueID, kind string, now time.Time) error {
	op := fmt.Sprintf("escalate %s reaction of issue %q", kind, issueID)
	if err := s.writable(op); err != nil {
		return err
	}
	if err := checkReaction(issueID, kind, "", false); err != nil {
		return wrapOp(op, err)
	}
	_, err := s.w.ExecContext(ctx, `INSERT INTO reaction_states
		(issue_id, kind, fingerprint, dispatched, attempts, escalated, updated_at_ms) VALUES (?, ?, '', 0, 0, 1, ?)
		ON CONFLICT (issue_id, kind) DO UPDATE SET escalated = 1, updated_at_ms = excluded.updated_at_ms`,
		issueID, kind, sqlrow.MS(now))
	return wrapOp(op, err)
}

// ReactionStates implements store.ReactionStore, ordered by kind.
func (s *Store) ReactionStates(ctx context.Context, issueID string) ([]store.ReactionState, error) {
	op := fmt.Sprintf("load reaction states of issue %q", issueID)
	if ok, err := s.reactionTablesExist(ctx); !ok || err != nil {
		return nil, wrapOp(op, err)
	}
	rows, err := s.r.QueryContext(ctx, `SELECT `+sqlrow.ReactionStateColumns+` FROM reaction_states
		WHERE issue_id = ? ORDER BY kind`, issueID)
	if err != nil {
		return nil, wrapOp(op, err)
	}
	out, err := scanAll(rows, sqlrow.ScanReactionState)
	return out, wrapOp(op, err)
}

// DeleteReactions implements store.ReactionStore, in one transaction.
func (s *Store) DeleteReactions(ctx context.Context, issueID string) error {
	op := fmt.Sprintf("delete reactions of issue %q", issueID)
	if err := s.writable(op); err != nil {
		return err
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return wrapOp(op, err)
	}
	defer tx.Rollback()
	for _, q := range []string{`DELETE FROM reaction_watches WHERE issue_id = ?`, `DELETE FROM reaction_states WHERE issue_id = ?`} {
		if _, err := tx.ExecContext(ctx, q, issueID); err != nil {
			return wrapOp(op, err)
		}
	}
	return wrapOp(op, tx.Commit())
}

// scanAll reads every row of rows with scan and closes them; no rows make a nil list.
func scanAll[T any](rows *sql.Rows, scan func(sqlrow.Scanner) (T, error)) ([]T, error) {
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}
