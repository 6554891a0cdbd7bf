package postgres

import (
	"context"
	"fmt"

	"sortie/internal/store"
	"sortie/internal/store/internal/sqlrow"
)

// SaveRetry implements store.Store.
func (s *Store) SaveRetry(ctx context.Context, r store.Retry) error {
	op := fmt.Sprintf("save retry of issue %q", r.IssueID)
	if err := r.Validate(); err != nil {
		return fmt.Errorf("store: %s: %w", op, err)
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO retries (issue_id, identifier, attempt, due_at_ms, kind, error,
		session_id, ssh_host) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
		ON CONFLICT (issue_id) DO UPDATE SET identifier = excluded.identifier, attempt = excluded.attempt,
			due_at_ms = excluded.due_at_ms, kind = excluded.kind, error = excluded.error,
			session_id = excluded.session_id, ssh_host = excluded.ssh_host`,
		r.IssueID, r.Identifier, r.Attempt, sqlrow.MS(r.DueAt), string(r.Kind),
		text(r.Error, store.MaxRunErrorBytes), clean(r.SessionID), r.SSHHost)
	if err != nil {
		return fmt.Errorf("store: %s: %w", op, err)
	}
	return nil
}

// DeleteRetry implements store.Store.
func (s *Store) DeleteRetry(ctx context.Context, issueID string) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM retries WHERE issue_id = $1`, issueID); err != nil {
		return fmt.Errorf("store: delete retry of issue %q: %w", issueID, err)
	}
	return nil
}

// LoadRetries implements store.Reader.
func (s *Store) LoadRetries(ctx context.Context) ([]store.Retry, error) {
	rows, _ := s.pool.Query(ctx, `SELECT issue_id, identifier, attempt, due_at_ms, kind, error, session_id,
		ssh_host FROM retries ORDER BY due_at_ms, issue_id`)
	out, err := collect(rows, func(row sqlrow.Scanner) (store.Retry, error) {
		var r store.Retry
		var due int64
		var kind string
		err := row.Scan(&r.IssueID, &r.Identifier, &r.Attempt, &due, &kind, &r.Error, &r.SessionID, &r.SSHHost)
		r.DueAt = sqlrow.Time(due)
		r.Kind = store.RetryKind(kind)
		return r, err
	})
	if err != nil {
		return nil, fmt.Errorf("store: load retries: %w", err)
	}
	return out, nil
}
