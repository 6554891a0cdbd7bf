package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"sortie/internal/store"
)

// Totals are derived from the run rows on demand rather than kept in a second table, as
// in the SQLite store: a copy could drift from the runs, a query cannot. SUM of a
// BIGINT is a NUMERIC in PostgreSQL; the casts bring it back.
const totalsColumns = `COUNT(*),
	COALESCE(SUM(input_tokens), 0)::bigint, COALESCE(SUM(output_tokens), 0)::bigint,
	COALESCE(SUM(total_tokens), 0)::bigint, COALESCE(SUM(cache_read_tokens), 0)::bigint,
	COALESCE(SUM(cost_usd), 0),
	COALESCE(SUM(ended_at_ms - started_at_ms), 0)::bigint` // NULL (running) rows add nothing

// totalsRow is one row of totalsColumns, after issue_id in IssueTotals.
func totalsRow(t *store.Totals, ms *int64) []any {
	return []any{&t.Runs, &t.Tokens.Input, &t.Tokens.Output, &t.Tokens.Total, &t.Tokens.CacheRead, &t.CostUSD, ms}
}

// IssueTotals implements store.Reader, in one statement over all the ids.
func (s *Store) IssueTotals(ctx context.Context, issueIDs []string) (map[string]store.Totals, error) {
	totals := make(map[string]store.Totals, len(issueIDs))
	for _, id := range issueIDs {
		totals[id] = store.Totals{} // every id asked has an entry
	}
	if len(issueIDs) == 0 {
		return totals, nil
	}
	var (
		id string
		t  store.Totals
		ms int64
	)
	rows, _ := s.pool.Query(ctx, `SELECT issue_id, `+totalsColumns+` FROM runs WHERE issue_id = ANY($1) GROUP BY issue_id`, issueIDs)
	_, err := pgx.ForEachRow(rows, append([]any{&id}, totalsRow(&t, &ms)...), func() error {
		t.RunTime = time.Duration(ms) * time.Millisecond
		totals[id] = t
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: sum spend of %d issues: %w", len(issueIDs), err)
	}
	return totals, nil
}

// AgentTotals implements store.Reader.
func (s *Store) AgentTotals(ctx context.Context) (store.Totals, error) {
	var (
		t  store.Totals
		ms int64
	)
	if err := s.pool.QueryRow(ctx, `SELECT `+totalsColumns+` FROM runs`).Scan(totalsRow(&t, &ms)...); err != nil {
		return store.Totals{}, fmt.Errorf("store: sum spend of all runs: %w", err)
	}
	t.RunTime = time.Duration(ms) * time.Millisecond
	return t, nil
}
