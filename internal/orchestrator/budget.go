package orchestrator

import (
	"fmt"

	"sortie/internal/agent"
	"sortie/internal/config"
	"sortie/internal/store"
)

// spend is what an issue has used across its runs, for agent.max_tokens and
// agent.max_cost_usd.
type spend struct {
	tokens      store.Tokens
	reportedUSD float64 // the cost the agent CLIs reported
}

func (s spend) add(u agent.Usage, costUSD float64) spend {
	s.tokens.Input += u.Input
	s.tokens.Output += u.Output
	s.tokens.Total += u.Total
	s.tokens.CacheRead += u.CacheRead
	s.reportedUSD += costUSD
	return s
}

// costUSD prices the spend with token_rates for the agent kind when configured (the
// operator's own prices win), else it is the cost the CLIs reported.
func (s spend) costUSD(cfg *config.Config) float64 {
	if r, ok := cfg.TokenRates[cfg.Agent.Kind]; ok {
		return (float64(s.tokens.Input)*r.InputPerMTok + float64(s.tokens.Output)*r.OutputPerMTok +
			float64(s.tokens.CacheRead)*r.CacheReadPerMTok) / 1e6
	}
	return s.reportedUSD
}

// exceeded says which budget s has used up, or "".
func (s spend) exceeded(cfg *config.Config) string {
	if limit := cfg.Agent.MaxTokens; limit > 0 && s.tokens.Total >= limit {
		return fmt.Sprintf("agent.max_tokens reached: %d of %d tokens used", s.tokens.Total, limit)
	}
	if limit := cfg.Agent.MaxCostUSD; limit > 0 {
		if c := s.costUSD(cfg); c >= limit {
			return fmt.Sprintf("agent.max_cost_usd reached: $%.4f of $%.2f spent", c, limit)
		}
	}
	return ""
}

// nearing says which budget s has used agent.budget_warn_ratio of, or "" (also when the
// ratio is 0, which turns the warning off).
func (s spend) nearing(cfg *config.Config) string {
	r := cfg.Agent.BudgetWarnRatio
	if r <= 0 {
		return ""
	}
	if limit := cfg.Agent.MaxTokens; limit > 0 && float64(s.tokens.Total) >= r*float64(limit) {
		return fmt.Sprintf("%d of agent.max_tokens %d tokens used (warning at %.0f%%)", s.tokens.Total, limit, r*100)
	}
	if limit := cfg.Agent.MaxCostUSD; limit > 0 {
		if c := s.costUSD(cfg); c >= r*limit {
			return fmt.Sprintf("$%.4f of agent.max_cost_usd $%.2f spent (warning at %.0f%%)", c, limit, r*100)
		}
	}
	return ""
}

// budgetWarned reports whether the budget warning of issueID is still to be sent, and
// marks it sent: one warning per issue for the daemon's lifetime.
func (o *Orchestrator) budgetWarned(issueID string) bool {
	_, sent := o.warnedBudget.LoadOrStore(issueID, true)
	return !sent
}

// hasSpendBudget says whether any budget needs the issues' spend.
func hasSpendBudget(cfg *config.Config) bool {
	return cfg.Agent.MaxTokens > 0 || cfg.Agent.MaxCostUSD > 0
}
