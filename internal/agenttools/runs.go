package agenttools

import (
	"context"

	"sortie/internal/agentsock"
	"sortie/internal/store"
)

// RunReader is the run history the agent socket serves to workspace_history and
// cost_budget (a store.Reader has it).
type RunReader interface {
	RunsForIssue(ctx context.Context, issueID string, limit int) ([]store.Run, error)
	IssueTotals(ctx context.Context, issueIDs []string) (map[string]store.Totals, error)
}

// Runs returns the newest runs of the session's issue, the one its token was granted
// for (agentsock.RunHistory). Only the fields the tools read leave the daemon.
func (t *Service) Runs(ctx context.Context, sess agentsock.Session, limit int) ([]agentsock.RunRecord, *agentsock.Error) {
	if t.o.History == nil {
		return nil, agentsock.Errorf("unsupported_operation", "this daemon serves no run history")
	}
	ctx, cancel := context.WithTimeout(ctx, t.o.Timeout)
	defer cancel()
	runs, err := t.o.History.RunsForIssue(ctx, sess.IssueID, limit)
	if err != nil {
		return nil, agentsock.Errorf("query_failed", "query failed: %v", err)
	}
	out := make([]agentsock.RunRecord, 0, len(runs))
	for _, r := range runs {
		if r.IssueID != sess.IssueID {
			continue // a store bug must not show another issue's runs
		}
		out = append(out, agentsock.RunRecord{
			ID: r.ID, Attempt: r.Attempt, AgentKind: r.AgentKind, Status: string(r.Status),
			StartedAt: r.StartedAt, EndedAt: r.EndedAt, Error: r.Error,
			Tokens: agentsock.Tokens(r.Tokens), CostUSD: r.CostUSD,
			Reaction: r.Reaction, SelfReview: r.SelfReviewVerdict(),
		})
	}
	return out, nil
}

// Spend returns the cumulative spend of the session's issue and the budget this
// daemon holds it to under its current configuration (agentsock.RunHistory), so that
// cost_budget reports what the daemon enforces (the orchestrator's budget.go), overrides
// included.
func (t *Service) Spend(ctx context.Context, sess agentsock.Session) (agentsock.Spend, *agentsock.Error) {
	if t.o.History == nil {
		return agentsock.Spend{}, agentsock.Errorf("unsupported_operation", "this daemon serves no run history")
	}
	ctx, cancel := context.WithTimeout(ctx, t.o.Timeout)
	defer cancel()
	totals, err := t.o.History.IssueTotals(ctx, []string{sess.IssueID})
	if err != nil {
		return agentsock.Spend{}, agentsock.Errorf("query_failed", "query failed: %v", err)
	}
	tot := totals[sess.IssueID]
	cfg := t.o.Config()
	sp := agentsock.Spend{
		Runs: tot.Runs, Tokens: agentsock.Tokens(tot.Tokens), CostUSD: tot.CostUSD,
		MaxTokens: cfg.Agent.MaxTokens, MaxCostUSD: cfg.Agent.MaxCostUSD,
	}
	if r, ok := cfg.TokenRates[cfg.Agent.Kind]; ok {
		rate := agentsock.TokenRate(r)
		sp.Rate = &rate
	}
	return sp, nil
}
