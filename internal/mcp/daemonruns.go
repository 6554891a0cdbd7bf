package mcp

import (
	"encoding/json"

	"context"

	"sortie/internal/agentsock"
	"sortie/internal/mcp/tools"
	"sortie/internal/store"
)

// daemonRuns is the run history of the token's issue, read from the daemon over its
// agent socket, so that the sidecar needs no path to the database. It is a
// tools.BudgetReader: the daemon also says the budget it enforces, from its current
// configuration (overrides included, which the agent's environment lacks).
type daemonRuns struct {
	c       *agentsock.Client
	issueID string // the token's issue
}

// RunsForIssue implements tools.RunReader. The daemon answers for the token's issue,
// whatever issue is named.
func (r daemonRuns) RunsForIssue(ctx context.Context, _ string, limit int) ([]store.Run, error) {
	recs, err := r.c.Runs(ctx, min(limit, agentsock.MaxRunsLimit))
	if err != nil {
		return nil, err
	}
	runs := make([]store.Run, len(recs))
	for i, rec := range recs {
		runs[i] = store.Run{
			ID: rec.ID, IssueID: r.issueID, Attempt: rec.Attempt, AgentKind: rec.AgentKind,
			Status: store.RunStatus(rec.Status), StartedAt: rec.StartedAt, EndedAt: rec.EndedAt, Error: rec.Error,
			Progress: store.Progress{Tokens: store.Tokens(rec.Tokens), CostUSD: rec.CostUSD},
			Reaction: rec.Reaction, ReviewMetadata: verdictMetadata(rec.SelfReview),
		}
	}
	return runs, nil
}

// IssueTotals implements tools.RunReader for the token's issue.
func (r daemonRuns) IssueTotals(ctx context.Context, _ []string) (map[string]store.Totals, error) {
	t, _, _, err := r.IssueBudget(ctx, r.issueID)
	if err != nil {
		return nil, err
	}
	return map[string]store.Totals{r.issueID: t}, nil
}

// IssueBudget implements tools.BudgetReader for the token's issue.
func (r daemonRuns) IssueBudget(ctx context.Context, _ string) (store.Totals, tools.Budget, *tools.Rate, error) {
	sp, err := r.c.Spend(ctx)
	if err != nil {
		return store.Totals{}, tools.Budget{}, nil, err
	}
	var rate *tools.Rate
	if sp.Rate != nil {
		r := tools.Rate(*sp.Rate)
		rate = &r
	}
	return store.Totals{Runs: sp.Runs, Tokens: store.Tokens(sp.Tokens), CostUSD: sp.CostUSD},
		tools.Budget{MaxTokens: sp.MaxTokens, MaxCostUSD: sp.MaxCostUSD}, rate, nil
}

// verdictMetadata is the part of a run's review metadata the socket passes on: its
// final verdict, "" for none.
func verdictMetadata(verdict string) string {
	if verdict == "" {
		return ""
	}
	b, _ := json.Marshal(map[string]string{"final_verdict": verdict})
	return string(b)
}
