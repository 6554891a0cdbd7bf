package orchestrator

import (
	"context"

	"sortie/internal/server/agentsock"
	"sortie/internal/store"
)

// RunReader is the run history the agent socket serves to workspace_history and
// cost_budget (a store.Reader has it).
type RunReader interface {
	RunsForIssue(ctx context.Context, issueID string, limit int) ([]store.Run, error)
	IssueTotals(ctx context.Context, issueIDs []string) (map[string]store.Totals, error)
}

// Runs returns the newest runs of the session's issue (agentsock.RunHistory).
func (t *ToolService) Runs(ctx context.Context, sess agentsock.Session, limit int) ([]store.Run, *agentsock.Error) {
	if t.History == nil {
		return nil, agentsock.Errorf("unsupported_operation", "this daemon serves no run history")
	}
	ctx, cancel := context.WithTimeout(ctx, t.timeout())
	defer cancel()
	runs, err := t.History.RunsForIssue(ctx, sess.IssueID, limit)
	if err != nil {
		return nil, agentsock.Errorf("query_failed", "query failed: %v", err)
	}
	if runs == nil {
		runs = []store.Run{}
	}
	return runs, nil
}

// Totals returns the cumulative spend of the session's issue (agentsock.RunHistory).
func (t *ToolService) Totals(ctx context.Context, sess agentsock.Session) (store.Totals, *agentsock.Error) {
	if t.History == nil {
		return store.Totals{}, agentsock.Errorf("unsupported_operation", "this daemon serves no run history")
	}
	ctx, cancel := context.WithTimeout(ctx, t.timeout())
	defer cancel()
	totals, err := t.History.IssueTotals(ctx, []string{sess.IssueID})
	if err != nil {
		return store.Totals{}, agentsock.Errorf("query_failed", "query failed: %v", err)
	}
	return totals[sess.IssueID], nil
}
