package sqlite

import (
	"context"
	"fmt"

	"sortie/internal/store"
	"sortie/internal/store/internal/sqlrow"
)

// SaveHold implements store.Store.
func (s *Store) SaveHold(ctx context.Context, h store.Hold) error {
	op := fmt.Sprintf("save hold of issue %q", h.IssueID)
	if err := s.writable(op); err != nil {
		return err
	}
	if err := h.Validate(); err != nil {
		return fmt.Errorf("store: %s: %w", op, err)
	}
	_, err := s.w.ExecContext(ctx, `INSERT INTO holds (issue_id, identifier, reason, message, state,
		issue_updated_at, since_ms) VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (issue_id) DO UPDATE SET identifier = excluded.identifier, reason = excluded.reason,
			message = excluded.message, state = excluded.state, issue_updated_at = excluded.issue_updated_at,
			since_ms = excluded.since_ms`,
		h.IssueID, h.Identifier, h.Reason, store.Truncate(h.Message, store.MaxRunErrorBytes), h.State,
		h.IssueUpdatedAt, sqlrow.MS(h.Since))
	if err != nil {
		return fmt.Errorf("store: %s: %w", op, err)
	}
	return nil
}

// DeleteHold implements store.Store.
func (s *Store) DeleteHold(ctx context.Context, issueID string) error {
	op := fmt.Sprintf("delete hold of issue %q", issueID)
	if err := s.writable(op); err != nil {
		return err
	}
	if _, err := s.w.ExecContext(ctx, `DELETE FROM holds WHERE issue_id = ?`, issueID); err != nil {
		return fmt.Errorf("store: %s: %w", op, err)
	}
	return nil
}

// LoadHolds implements store.Reader.
func (s *Store) LoadHolds(ctx context.Context) ([]store.Hold, error) {
	const op = "load holds"
	rows, err := s.r.QueryContext(ctx, `SELECT issue_id, identifier, reason, message, state, issue_updated_at,
		since_ms FROM holds ORDER BY since_ms, issue_id`)
	if err != nil {
		return nil, fmt.Errorf("store: %s: %w", op, err)
	}
	defer rows.Close()
	var out []store.Hold
	for rows.Next() {
		var h store.Hold
		var since int64
		if err := rows.Scan(&h.IssueID, &h.Identifier, &h.Reason, &h.Message, &h.State, &h.IssueUpdatedAt, &since); err != nil {
			return nil, fmt.Errorf("store: %s: %w", op, err)
		}
		h.Since = sqlrow.Time(since)
		out = append(out, h)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: %s: %w", op, err)
	}
	return out, nil
}
