package sqlite

import (
	"context"
	"fmt"
)

// Ping reports whether the database answers: a read of its schema through the read
// pool, bounded by ctx. /readyz calls it; an error names the file.
func (s *Store) Ping(ctx context.Context) error {
	var one int
	if err := s.r.QueryRowContext(ctx, "SELECT 1 FROM sqlite_schema LIMIT 1").Scan(&one); err != nil {
		return fmt.Errorf("store: %s does not answer: %w", s.shown, err)
	}
	return nil
}
