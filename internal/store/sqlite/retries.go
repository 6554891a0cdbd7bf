package sqlite

import (
	"context"
	"fmt"

	"sortie/internal/store"
	"sortie/internal/store/internal/sqlrow"
)

// SaveRetry implements store.Store.
func (s *Store) SaveRetry(ctx context.Context, r store.Retry) error {
	op := fmt.Sprintf("save retry of issue %q", r.IssueID)
	if err := s.writable(op); err != nil {
		return err
	}
	if err := r.Validate(); err != nil {
		return fmt.Errorf("store: %s: %w", op, err)
	}
	_, err := s.w.ExecContext(ctx, `INSERT INTO retries (issue_id, identifier, attempt, due_at_ms, kind, error,
		session_id, ssh_host) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (issue_id) DO UPDATE SET identifier = excluded.identifier, attempt = excluded.attempt,
			due_at_ms = excluded.due_at_ms, kind = excluded.kind, error = excluded.error,
			session_id = excluded.session_id, ssh_host = excluded.ssh_host`,
		r.IssueID, r.Identifier, r.Attempt, sqlrow.MS(r.DueAt), string(r.Kind),
		store.Truncate(r.Error, store.MaxRunErrorBytes), r.SessionID, r.SSHHost)
	if err != nil {
		return fmt.Errorf("store: %s: %w", op, err)
	}
	return nil
}

// DeleteRetry implements store.Store.
func (s *Store) DeleteRetry(ctx context.Context, issueID string) error {
	op := fmt.Sprintf("delete retry of issue %q", issueID)
	if err := s.writable(op); err != nil {
		return err
	}
	if _, err := s.w.ExecContext(ctx, `DELETE FROM retries WHERE issue_id = ?`, issueID); err != nil {
		return fmt.Errorf("store: %s: %w", op, err)
	}
	return nil
}

// LoadRetries implements store.Reader.
func (s *Store) LoadRetries(ctx context.Context) ([]store.Retry, error) {
	const op = "load retries"
	rows, err := s.r.QueryContext(ctx, `SELECT issue_id, identifier, attempt, due_at_ms, kind, error, session_id,
		ssh_host FROM retries ORDER BY due_at_ms, issue_id`)
	if err != nil {
		return nil, fmt.Errorf("store: %s: %w", op, err)
	}
	defer rows.Close()
	var out []store.Retry
	for rows.Next() {
		var r store.Retry
		var due int64
		var kind string
		if err := rows.Scan(&r.IssueID, &r.Identifier, &r.Attempt, &due, &kind, &r.Error, &r.SessionID, &r.SSHHost); err != nil {
			return nil, fmt.Errorf("store: %s: %w", op, err)
		}
		r.DueAt = sqlrow.Time(due)
		r.Kind = store.RetryKind(kind)
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: %s: %w", op, err)
	}
	return out, nil
}
