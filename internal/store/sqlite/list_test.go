package sqlite

import (
	"context"
	"strings"
	"testing"

	"sortie/internal/store"
	"sortie/internal/store/internal/sqlrow"
)

// TestListRuns_UsesAnIndex checks that no combination of ListRuns selectors scans the
// runs table or sorts it: run history grows without bound and the dashboard pages it.
func TestListRuns_UsesAnIndex(t *testing.T) {
	s, _ := openTemp(t)
	defer s.Close()
	tests := []struct {
		name string
		f    store.RunFilter
	}{
		{"page", store.RunFilter{Limit: 50}},
		{"page before", store.RunFilter{Limit: 50, Before: 100}},
		{"identifier", store.RunFilter{Limit: 50, Identifier: "PROJ-1"}},
		{"identifier before", store.RunFilter{Limit: 50, Identifier: "PROJ-1", Before: 100}},
		{"status", store.RunFilter{Limit: 50, Status: store.StatusFailed}},
		{"status before", store.RunFilter{Limit: 50, Status: store.StatusFailed, Before: 100}},
		{"identifier and status", store.RunFilter{Limit: 50, Identifier: "PROJ-1", Status: store.StatusFailed, Before: 100}},
	}
	for _, tt := range tests {
		q, args := listRunsQuery(tt.f)
		plan := queryPlan(t, s, q, args...)
		if strings.Contains(plan, "TEMP B-TREE") {
			t.Errorf("%s: plan sorts: %s", tt.name, plan)
		}
		switch {
		case tt.f.Identifier != "":
			if !strings.Contains(plan, "INDEX runs_identifier") {
				t.Errorf("%s: plan = %s, want a search of runs_identifier", tt.name, plan)
			}
		case tt.f.Status != "":
			if !strings.Contains(plan, "INDEX runs_status") {
				t.Errorf("%s: plan = %s, want a search of runs_status", tt.name, plan)
			}
		}
		if tt.f.Before > 0 && strings.HasPrefix(plan, "SCAN runs") && !strings.Contains(plan, "INDEX") {
			t.Errorf("%s: plan scans the table: %s", tt.name, plan)
		}
	}
	plan := queryPlan(t, s, `SELECT `+sqlrow.RunColumns+` FROM runs WHERE identifier = ? ORDER BY id DESC LIMIT ?`, "PROJ-1", 20)
	if !strings.Contains(plan, "runs_identifier") || strings.Contains(plan, "TEMP B-TREE") {
		t.Errorf("RunsForIdentifier plan = %s, want a search of runs_identifier without a sort", plan)
	}
}

// queryPlan returns SQLite's EXPLAIN QUERY PLAN for q, its steps joined by "; ".
func queryPlan(t *testing.T, s *Store, q string, args ...any) string {
	t.Helper()
	rows, err := s.r.QueryContext(context.Background(), `EXPLAIN QUERY PLAN `+q, args...)
	if err != nil {
		t.Fatalf("EXPLAIN QUERY PLAN %s: %v", q, err)
	}
	defer rows.Close()
	var steps []string
	for rows.Next() {
		var id, parent, notused int
		var detail string
		if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
			t.Fatal(err)
		}
		steps = append(steps, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return strings.Join(steps, "; ")
}
