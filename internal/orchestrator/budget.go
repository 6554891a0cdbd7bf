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

// hasSpendBudget says whether any budget needs the issues' spend.
func hasSpendBudget(cfg *config.Config) bool {
	return cfg.Agent.MaxTokens > 0 || cfg.Agent.MaxCostUSD > 0
}
