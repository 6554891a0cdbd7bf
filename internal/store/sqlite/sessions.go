package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"sortie/internal/store"
	"sortie/internal/store/internal/sqlrow"
)

// SaveSession implements store.Store. UpdatedAt is set to the store's clock.
func (s *Store) SaveSession(ctx context.Context, se store.Session) error {
	op := fmt.Sprintf("save session of issue %q", se.IssueID)
	if err := s.writable(op); err != nil {
		return err
	}
	if err := se.Validate(); err != nil {
		return fmt.Errorf("store: %s: %w", op, err)
	}
	_, err := s.w.ExecContext(ctx, `INSERT INTO sessions (issue_id, session_id, agent_kind, workspace, updated_at_ms)
		VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (issue_id) DO UPDATE SET session_id = excluded.session_id, agent_kind = excluded.agent_kind,
			workspace = excluded.workspace, updated_at_ms = excluded.updated_at_ms`,
		se.IssueID, se.SessionID, se.AgentKind, se.Workspace, sqlrow.MS(s.now()))
	if err != nil {
		return fmt.Errorf("store: %s: %w", op, err)
	}
	return nil
}

// LoadSession implements store.Reader.
func (s *Store) LoadSession(ctx context.Context, issueID string) (store.Session, bool, error) {
	se := store.Session{IssueID: issueID}
	var updated int64
	err := s.r.QueryRowContext(ctx, `SELECT session_id, agent_kind, workspace, updated_at_ms
		FROM sessions WHERE issue_id = ?`, issueID).Scan(&se.SessionID, &se.AgentKind, &se.Workspace, &updated)
	if errors.Is(err, sql.ErrNoRows) {
		return store.Session{}, false, nil
	}
	if err != nil {
		return store.Session{}, false, fmt.Errorf("store: load session of issue %q: %w", issueID, err)
	}
	se.UpdatedAt = sqlrow.Time(updated)
	return se, true, nil
}

// DeleteSession implements store.Store.
func (s *Store) DeleteSession(ctx context.Context, issueID string) error {
	op := fmt.Sprintf("delete session of issue %q", issueID)
	if err := s.writable(op); err != nil {
		return err
	}
	if _, err := s.w.ExecContext(ctx, `DELETE FROM sessions WHERE issue_id = ?`, issueID); err != nil {
		return fmt.Errorf("store: %s: %w", op, err)
	}
	return nil
}
