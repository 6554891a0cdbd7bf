package sqlite

import (
	"context"
	"database/sql"
	"slices"
	"strings"
)

// maxParams bounds the bound parameters of one IN (…) list: far below SQLite's and
// PostgreSQL's limits, large enough that a tick's candidates need one query.
const maxParams = 500

// queryByIssue runs selectFrom + " WHERE issue_id IN (…) GROUP BY issue_id" for the
// distinct issueIDs, maxParams at a time, calling scan for every row.
func (s *Store) queryByIssue(ctx context.Context, issueIDs []string, selectFrom string, scan func(*sql.Rows) error) error {
	ids := slices.Clone(issueIDs)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	for chunk := range chunks(ids, maxParams) {
		args := make([]any, len(chunk))
		for i, id := range chunk {
			args[i] = id
		}
		rows, err := s.r.QueryContext(ctx, selectFrom+` WHERE issue_id IN (`+placeholders(len(chunk))+`) GROUP BY issue_id`, args...)
		if err != nil {
			return err
		}
		for rows.Next() {
			if err := scan(rows); err != nil {
				rows.Close()
				return err
			}
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}

// chunks yields s in pieces of at most n.
func chunks[T any](s []T, n int) func(yield func([]T) bool) {
	return func(yield func([]T) bool) {
		for len(s) > 0 {
			k := min(n, len(s))
			if !yield(s[:k]) {
				return
			}
			s = s[k:]
		}
	}
}
