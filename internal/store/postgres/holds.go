package postgres

import (
	"context"
	"fmt"

	"sortie/internal/store"
	"sortie/internal/store/internal/sqlrow"
)

// SaveHold implements store.Store.
func (s *Store) SaveHold(ctx context.Context, h store.Hold) error {
	op := fmt.Sprintf("save hold of issue %q", h.IssueID)
	if err := h.Validate(); err != nil {
		return fmt.Errorf("store: %s: %w", op, err)
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO holds (issue_id, identifier, reason, message, state,
		issue_updated_at, since_ms) VALUES ($1, $2, $3, $4, $5, $6, $7)
		ON CONFLICT (issue_id) DO UPDATE SET identifier = excluded.identifier, reason = excluded.reason,
			message = excluded.message, state = excluded.state, issue_updated_at = excluded.issue_updated_at,
			since_ms = excluded.since_ms`,
		h.IssueID, h.Identifier, h.Reason, text(h.Message, store.MaxRunErrorBytes), h.State,
		h.IssueUpdatedAt, sqlrow.MS(h.Since))
	if err != nil {
		return fmt.Errorf("store: %s: %w", op, err)
	}
	return nil
}

// DeleteHold implements store.Store.
func (s *Store) DeleteHold(ctx context.Context, issueID string) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM holds WHERE issue_id = $1`, issueID); err != nil {
		return fmt.Errorf("store: delete hold of issue %q: %w", issueID, err)
	}
	return nil
}

// LoadHolds implements store.Reader.
func (s *Store) LoadHolds(ctx context.Context) ([]store.Hold, error) {
	rows, _ := s.pool.Query(ctx, `SELECT issue_id, identifier, reason, message, state, issue_updated_at,
		since_ms FROM holds ORDER BY since_ms, issue_id`)
	out, err := collect(rows, func(row sqlrow.Scanner) (store.Hold, error) {
		var h store.Hold
		var since int64
		err := row.Scan(&h.IssueID, &h.Identifier, &h.Reason, &h.Message, &h.State, &h.IssueUpdatedAt, &since)
		h.Since = sqlrow.Time(since)
		return h, err
	})
	if err != nil {
		return nil, fmt.Errorf("store: load holds: %w", err)
	}
	return out, nil
}
