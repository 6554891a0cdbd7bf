package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

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

// wrap wraps a non-nil err with the operation; nil stays nil.
func wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("store: %s: %w", op, err)
}

// SaveReactionWatch implements store.ReactionStore.
func (s *Store) SaveReactionWatch(ctx context.Context, w store.ReactionWatch) error {
	op := fmt.Sprintf("save reaction watch of issue %q", w.IssueID)
	if err := w.Validate(); err != nil {
		return wrap(op, err)
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO reaction_watches (`+sqlrow.ReactionWatchColumns+`)
		VALUES ($1, $2, $3, $4, $5, $6, $7)
		ON CONFLICT (issue_id) DO UPDATE SET identifier = excluded.identifier, workspace = excluded.workspace,
			session_id = excluded.session_id, branch = excluded.branch, pr_number = excluded.pr_number,
			handed_off_at_ms = excluded.handed_off_at_ms`,
		w.IssueID, clean(w.Identifier), clean(w.Workspace), clean(w.SessionID), clean(w.Branch), w.PRNumber,
		sqlrow.MS(w.HandedOffAt))
	return wrap(op, err)
}

// DeleteReactionWatch implements store.ReactionStore.
func (s *Store) DeleteReactionWatch(ctx context.Context, issueID string) error {
	_, err := s.pool.Exec(ctx, `DELETE FROM reaction_watches WHERE issue_id = $1`, issueID)
	return wrap(fmt.Sprintf("delete reaction watch of issue %q", issueID), err)
}

// LoadReactionWatches implements store.ReactionStore.
func (s *Store) LoadReactionWatches(ctx context.Context) ([]store.ReactionWatch, error) {
	rows, _ := s.pool.Query(ctx, `SELECT `+sqlrow.ReactionWatchColumns+` FROM reaction_watches
		ORDER BY handed_off_at_ms, issue_id`)
	out, err := collect(rows, sqlrow.ScanReactionWatch)
	if err != nil {
		return nil, wrap("load reaction watches", err)
	}
	return out, nil
}

// ObserveReaction implements store.ReactionStore, in one statement: the row as it is
// after the upsert comes back from RETURNING. SET expressions read the row as it was,
// so dispatched is compared with the old fingerprint; a concurrent observation waits
// for the row's lock and then reads this one's result.
func (s *Store) ObserveReaction(ctx context.Context, issueID, kind, fp string, now time.Time) (store.ReactionState, error) {
	op := fmt.Sprintf("observe %s reaction of issue %q", kind, issueID)
	if err := checkReaction(issueID, kind, fp, true); err != nil {
		return store.ReactionState{}, wrap(op, err)
	}
	st, err := sqlrow.ScanReactionState(s.pool.QueryRow(ctx, `INSERT INTO reaction_states AS r
		(issue_id, kind, fingerprint, dispatched, attempts, escalated, updated_at_ms) VALUES ($1, $2, $3, false, 0, false, $4)
		ON CONFLICT (issue_id, kind) DO UPDATE SET
			dispatched = r.dispatched AND r.fingerprint = excluded.fingerprint,
			updated_at_ms = CASE WHEN r.fingerprint = excluded.fingerprint THEN r.updated_at_ms ELSE excluded.updated_at_ms END,
			fingerprint = excluded.fingerprint
		RETURNING `+sqlrow.ReactionStateColumns, issueID, kind, clean(fp), sqlrow.MS(now)))
	if err != nil {
		return store.ReactionState{}, wrap(op, err)
	}
	return st, nil
}

// MarkReactionDispatched implements store.ReactionStore with one conditional UPDATE.
// Of two daemons marking the same state at once, the second waits for the first's
// row lock and then re-checks the condition on the updated row (READ COMMITTED), so
// it finds the state dispatched and changes nothing.
func (s *Store) MarkReactionDispatched(ctx context.Context, issueID, kind, fp string, now time.Time) (bool, error) {
	op := fmt.Sprintf("mark %s reaction of issue %q dispatched", kind, issueID)
	if err := checkReaction(issueID, kind, fp, true); err != nil {
		return false, wrap(op, err)
	}
	tag, err := s.pool.Exec(ctx, `UPDATE reaction_states SET dispatched = true, attempts = attempts + 1,
		updated_at_ms = $1 WHERE issue_id = $2 AND kind = $3 AND fingerprint = $4 AND NOT dispatched`,
		sqlrow.MS(now), issueID, kind, clean(fp))
	if err != nil {
		return false, wrap(op, err)
	}
	return tag.RowsAffected() == 1, nil
}

// ReleaseReactionDispatch implements store.ReactionStore.
func (s *Store) ReleaseReactionDispatch(ctx context.Context, issueID, kind, fp string) error {
	op := fmt.Sprintf("release the dispatch of %s reaction of issue %q", kind, issueID)
	if err := checkReaction(issueID, kind, fp, true); err != nil {
		return wrap(op, err)
	}
	_, err := s.pool.Exec(ctx, `UPDATE reaction_states SET dispatched = false, attempts = GREATEST(attempts - 1, 0)
		WHERE issue_id = $1 AND kind = $2 AND fingerprint = $3 AND dispatched`, issueID, kind, clean(fp))
	return wrap(op, err)
}

// ResetReaction implements store.ReactionStore: the state is forgotten.
func (s *Store) ResetReaction(ctx context.Context, issueID, kind string) error {
	op := fmt.Sprintf("reset %s reaction of issue %q", kind, issueID)
	if err := checkReaction(issueID, kind, "", false); err != nil {
		return wrap(op, err)
	}
	_, err := s.pool.Exec(ctx, `DELETE FROM reaction_states WHERE issue_id = $1 AND kind = $2`, issueID, kind)
	return wrap(op, err)
}

// EscalateReaction implements store.ReactionStore. A state not observed yet is made,
// with no fingerprint, so the escalation is not lost.
func (s *Store) EscalateReaction(ctx context.Context, issueID, kind string, now time.Time) error {
	op := fmt.Sprintf("escalate %s reaction of issue %q", kind, issueID)
	if err := checkReaction(issueID, kind, "", false); err != nil {
		return wrap(op, err)
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO reaction_states
		(issue_id, kind, fingerprint, dispatched, attempts, escalated, updated_at_ms) VALUES ($1, $2, '', false, 0, true, $3)
		ON CONFLICT (issue_id, kind) DO UPDATE SET escalated = true, updated_at_ms = excluded.updated_at_ms`,
		issueID, kind, sqlrow.MS(now))
	return wrap(op, err)
}

// ReactionStates implements store.ReactionStore, ordered by kind.
func (s *Store) ReactionStates(ctx context.Context, issueID string) ([]store.ReactionState, error) {
	rows, _ := s.pool.Query(ctx, `SELECT `+sqlrow.ReactionStateColumns+` FROM reaction_states
		WHERE issue_id = $1 ORDER BY kind`, issueID)
	out, err := collect(rows, sqlrow.ScanReactionState)
	if err != nil {
		return nil, wrap(fmt.Sprintf("load reaction states of issue %q", issueID), err)
	}
	return out, nil
}

// DeleteReactions implements store.ReactionStore, in one transaction.
func (s *Store) DeleteReactions(ctx context.Context, issueID string) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		for _, q := range []string{`DELETE FROM reaction_watches WHERE issue_id = $1`, `DELETE FROM reaction_states WHERE issue_id = $1`} {
			if _, err := tx.Exec(ctx, q, issueID); err != nil {
				return err
			}
		}
		return nil
	})
	return wrap(fmt.Sprintf("delete reactions of issue %q", issueID), err)
}
