package tools

import (
	"context"
	"encoding/json"
	"math"

	"sortie/internal/store"
)

// BudgetSpec describes cost_budget.
var BudgetSpec = Spec{
	Name: NameBudget,
	Tier: TierLocal,
	Description: "Reports this issue's cumulative spend over all its runs, the running session included: " +
		"tokens and cost_usd spent, the configured budget (max_tokens, max_cost_usd; null when unlimited), " +
		"what remains, and whether the budget is exhausted. When it is, the daemon stops the run at the end " +
		"of the current turn, so wrap up. Takes no arguments.",
	InputSchema: noArgsSchema,
	ReadOnly:    true,
}

// Budget is an issue's spending limit. Zero fields are unlimited.
type Budget struct {
	MaxTokens  int64   // agent.max_tokens: total tokens over all runs of the issue
	MaxCostUSD float64 // agent.max_cost_usd, in dollars
}

// Rate is the price of one million tokens in dollars (token_rates in WORKFLOW.md).
type Rate struct {
	InputPerMTok, OutputPerMTok, CacheReadPerMTok float64
}

// cost is the price of t at r.
func (r Rate) cost(t Tokens) float64 {
	return (float64(t.Input)*r.InputPerMTok + float64(t.Output)*r.OutputPerMTok +
		float64(t.CacheRead)*r.CacheReadPerMTok) / 1e6
}

// BudgetReader is an optional capability of a RunReader that also knows the issue's
// budget: the daemon, answering over its agent socket from its current configuration
// (its SORTIE_* overrides included, which agents do not get). cost_budget then reports
// against that budget and rate instead of BudgetOptions.Budget and Rate.
type BudgetReader interface {
	// IssueBudget returns the issue's stored totals, its budget and the rate that
	// prices its tokens (nil: use the cost each run recorded).
	IssueBudget(ctx context.Context, issueID string) (store.Totals, Budget, *Rate, error)
}

// BudgetOptions configures cost_budget.
type BudgetOptions struct {
	Runs    RunReader
	IssueID string
	// Budget and Rate are WORKFLOW.md's, used unless Runs is a BudgetReader. Rate
	// prices tokens; nil means "use the cost each run recorded" (the agent CLI's own
	// figure).
	Budget Budget
	Rate   *Rate
	// Workspace (absolute) and RunID locate the running session, whose live spend in
	// the state file is folded in. Live says whether to do so at all (SORTIE_SESSION_ID
	// or SORTIE_RUN_ID is set). RunID 0 takes the state file's run_id.
	Workspace string
	RunID     int64
	Live      bool
}

// Cost is cost_budget: an issue's spend against its budget.
type Cost struct{ o BudgetOptions }

// NewBudget returns cost_budget.
func NewBudget(o BudgetOptions) *Cost { return &Cost{o: o} }

// Spec implements Tool.
func (c *Cost) Spec() Spec { return BudgetSpec }

// budgetResponse is cost_budget's answer. The spec names the tool but gives no schema;
// this one is documented in docs/agent-tools.md.
type budgetResponse struct {
	IssueID   string          `json:"issue_id"`
	Spent     budgetSpent     `json:"spent"`
	Budget    budgetLimits    `json:"budget"`
	Remaining budgetRemaining `json:"remaining"`
	Exhausted bool            `json:"exhausted"`
	Runs      int             `json:"runs"`
	// IncludesRunningSession: the running session's live spend (the state file) is
	// part of Spent, not only what the daemon last stored.
	IncludesRunningSession bool `json:"includes_running_session"`
	// CostSource says how Spent.CostUSD was computed: "token_rates" (tokens priced at
	// the configured rates) or "reported" (the agent CLI's own figures, 0 when it gives
	// none).
	CostSource string `json:"cost_source"`
}

type budgetSpent struct {
	Tokens
	CostUSD float64 `json:"cost_usd"`
}

type budgetLimits struct {
	MaxTokens  *int64   `json:"max_tokens"`
	MaxCostUSD *float64 `json:"max_cost_usd"`
}

type budgetRemaining struct {
	Tokens  *int64   `json:"tokens"`
	CostUSD *float64 `json:"cost_usd"`
}

// Call implements Tool.
func (c *Cost) Call(ctx context.Context, args json.RawMessage) Result {
	if err := decodeArgs(BudgetSpec, args, &struct{}{}); err != nil {
		return localFail(KindInvalidInput, "%v", err)
	}
	ctx, cancel := context.WithTimeout(ctx, queryTimeout)
	defer cancel()
	o := c.o
	t, budget, rate, err := c.spend(ctx)
	if err != nil {
		return localFail(KindQueryFailed, "query failed: %v", err)
	}
	spent := fromStore(t.Tokens)
	reported := t.CostUSD
	runs := t.Runs

	live := false
	if st, ok := c.liveState(); ok {
		// The state file is fresher than the database (the daemon stores progress
		// coalesced), but either may be ahead for a moment: take the larger of each.
		var stored store.Run
		found := false
		recent, err := o.Runs.RunsForIssue(ctx, o.IssueID, HistoryLimit+5)
		if err != nil {
			return localFail(KindQueryFailed, "query failed: %v", err)
		}
		for _, r := range recent {
			if r.ID == st.RunID {
				stored, found = r, true
				break
			}
		}
		if !found {
			runs++ // not stored yet: count it from the state file alone
		}
		db := fromStore(stored.Tokens)
		spent = sub(spent, db).add(maxTokens(db, st.Tokens))
		reported += math.Max(stored.CostUSD, st.CostUSD) - stored.CostUSD
		live = true
	}

	resp := budgetResponse{
		IssueID:                o.IssueID,
		Spent:                  budgetSpent{Tokens: spent, CostUSD: reported},
		Runs:                   runs,
		IncludesRunningSession: live,
		CostSource:             "reported",
	}
	if rate != nil {
		resp.Spent.CostUSD = rate.cost(spent)
		resp.CostSource = "token_rates"
	}
	resp.Spent.CostUSD = roundUSD(resp.Spent.CostUSD)
	if b := budget.MaxTokens; b > 0 {
		left := max(b-spent.Total, 0)
		resp.Budget.MaxTokens, resp.Remaining.Tokens = &b, &left
		resp.Exhausted = spent.Total >= b
	}
	if b := budget.MaxCostUSD; b > 0 {
		left := roundUSD(math.Max(b-resp.Spent.CostUSD, 0))
		resp.Budget.MaxCostUSD, resp.Remaining.CostUSD = &b, &left
		resp.Exhausted = resp.Exhausted || resp.Spent.CostUSD >= b
	}
	return Result{Body: resp}
}

// spend returns the issue's stored totals and the budget and rate to report them
// against: the reader's own when it is a BudgetReader, else the options'.
func (c *Cost) spend(ctx context.Context) (store.Totals, Budget, *Rate, error) {
	o := c.o
	if br, ok := o.Runs.(BudgetReader); ok {
		return br.IssueBudget(ctx, o.IssueID)
	}
	totals, err := o.Runs.IssueTotals(ctx, []string{o.IssueID})
	if err != nil {
		return store.Totals{}, Budget{}, nil, err
	}
	return totals[o.IssueID], o.Budget, o.Rate, nil
}

// liveState returns the running session's state when it is to be folded in and belongs
// to this issue and run.
func (c *Cost) liveState() (State, bool) {
	o := c.o
	if !o.Live || o.Workspace == "" {
		return State{}, false
	}
	st, err := ReadState(o.Workspace)
	if err != nil {
		return State{}, false
	}
	if st.IssueID != "" && st.IssueID != o.IssueID {
		return State{}, false
	}
	if st.RunID == 0 || (o.RunID != 0 && st.RunID != o.RunID) {
		// Without the run's id its stored row cannot be told apart, and a file of
		// another run is stale: this run has not written it yet.
		return State{}, false
	}
	return st, true
}

func fromStore(t store.Tokens) Tokens { return Tokens(t) }

func (t Tokens) add(u Tokens) Tokens {
	return Tokens{t.Input + u.Input, t.Output + u.Output, t.Total + u.Total, t.CacheRead + u.CacheRead}
}

func sub(t, u Tokens) Tokens {
	return Tokens{t.Input - u.Input, t.Output - u.Output, t.Total - u.Total, t.CacheRead - u.CacheRead}
}

func maxTokens(a, b Tokens) Tokens {
	return Tokens{max(a.Input, b.Input), max(a.Output, b.Output), max(a.Total, b.Total), max(a.CacheRead, b.CacheRead)}
}

// roundUSD rounds dollars to a millionth, which hides float noise and is finer than
// any price.
func roundUSD(v float64) float64 { return math.Round(v*1e6) / 1e6 }
