package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"sortie/internal/store"
)

// Totals are derived from the run rows on demand rather than kept in a second table: a
// copy could drift from the runs (a crash between two writes, a failed update), a
// query cannot. Per issue the runs_issue index makes it a short range scan.
const totalsColumns = `COUNT(*),
	COALESCE(SUM(input_tokens), 0), COALESCE(SUM(output_tokens), 0),
	COALESCE(SUM(total_tokens), 0), COALESCE(SUM(cache_read_tokens), 0),
	COALESCE(SUM(cost_usd), 0),
	COALESCE(SUM(ended_at_ms - started_at_ms), 0)` // NULL (running) rows add nothing

func scanTotals(row interface{ Scan(...any) error }, dest ...any) (store.Totals, error) {
	var t store.Totals
	var ms int64
	err := row.Scan(append(dest, &t.Runs, &t.Tokens.Input, &t.Tokens.Output, &t.Tokens.Total,
		&t.Tokens.CacheRead, &t.CostUSD, &ms)...)
	t.RunTime = time.Duration(ms) * time.Millisecond
	return t, err
}

// IssueTotals implements store.Reader.
func (s *Store) IssueTotals(ctx context.Context, issueIDs []string) (map[string]store.Totals, error) {
	totals := make(map[string]store.Totals, len(issueIDs))
	err := s.queryByIssue(ctx, issueIDs, `SELECT issue_id, `+totalsColumns+` FROM runs`, func(rows *sql.Rows) error {
		var id string
		t, err := scanTotals(rows, &id)
		totals[id] = t
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: sum spend of %d issues: %w", len(issueIDs), err)
	}
	for _, id := range issueIDs {
		if _, ok := totals[id]; !ok {
			totals[id] = store.Totals{} // every id asked has an entry
		}
	}
	return totals, nil
}

// AgentTotals implements store.Reader.
func (s *Store) AgentTotals(ctx context.Context) (store.Totals, error) {
	t, err := scanTotals(s.r.QueryRowContext(ctx, `SELECT `+totalsColumns+` FROM runs`))
	if err != nil {
		return store.Totals{}, fmt.Errorf("store: sum spend of all runs: %w", err)
	}
	return t, nil
}
