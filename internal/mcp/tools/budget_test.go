package tools

import (
	"context"
	"errors"
	"testing"
	"time"

	"sortie/internal/store"
)

func TestBudget_SpendAgainstTheBudget(t *testing.T) {
	// Two finished runs and the running one (stored progress lags the state file).
	runs := []seedRun{
		{issue: "42", attempt: 1, status: store.StatusFailed, err: "x", started: t0,
			tokens: store.Tokens{Input: 1000, Output: 500, Total: 1500, CacheRead: 100}, costUSD: 0.25},
		{issue: "99", attempt: 1, status: store.StatusSucceeded, started: t0,
			tokens: store.Tokens{Input: 9e6, Output: 9e6, Total: 18e6}, costUSD: 90},
		{issue: "42", attempt: 2, status: store.StatusStalled, started: t0.Add(time.Hour),
			tokens: store.Tokens{Input: 2000, Output: 1000, Total: 3000, CacheRead: 200}, costUSD: 0.5},
		{issue: "42", attempt: 3, status: store.StatusRunning, started: t0.Add(2 * time.Hour),
			tokens: store.Tokens{Input: 400, Output: 100, Total: 500, CacheRead: 50}, costUSD: 0.1},
	}
	path, ids := seedDB(t, runs...)
	runningID := ids[3]
	live := func(s *State) {
		s.IssueID, s.RunID = "42", runningID
		// Input and output moved on since the last stored progress; cache reads did
		// not reach the file yet: the larger of each counter counts.
		s.Tokens = Tokens{Input: 600, Output: 400, Total: 1000, CacheRead: 10}
		s.CostUSD = 0.2
	}

	tests := []struct {
		name  string
		opts  func(*BudgetOptions)
		state func(*State) // nil: no state file
		want  string
	}{
		{
			name: "no budget, no rates, not folding the live session",
			want: `{"issue_id":"42","spent":{"input_tokens":3400,"output_tokens":1600,"total_tokens":5000,"cache_read_tokens":350,"cost_usd":0.85},` +
				`"budget":{"max_tokens":null,"max_cost_usd":null},"remaining":{"tokens":null,"cost_usd":null},"exhausted":false,` +
				`"runs":3,"includes_running_session":false,"cost_source":"reported"}`,
		},
		{
			name:  "the running session's live figures fold in",
			opts:  func(o *BudgetOptions) { o.Live, o.RunID, o.Budget.MaxTokens = true, runningID, 10000 },
			state: live,
			want: `{"issue_id":"42","spent":{"input_tokens":3600,"output_tokens":1900,"total_tokens":5500,"cache_read_tokens":350,"cost_usd":0.95},` +
				`"budget":{"max_tokens":10000,"max_cost_usd":null},"remaining":{"tokens":4500,"cost_usd":null},"exhausted":false,` +
				`"runs":3,"includes_running_session":true,"cost_source":"reported"}`,
		},
		{
			name:  "the run id comes from the state file when SORTIE_RUN_ID is unset",
			opts:  func(o *BudgetOptions) { o.Live, o.Budget.MaxTokens = true, 5500 },
			state: live,
			want: `{"issue_id":"42","spent":{"input_tokens":3600,"output_tokens":1900,"total_tokens":5500,"cache_read_tokens":350,"cost_usd":0.95},` +
				`"budget":{"max_tokens":5500,"max_cost_usd":null},"remaining":{"tokens":0,"cost_usd":null},"exhausted":true,` +
				`"runs":3,"includes_running_session":true,"cost_source":"reported"}`,
		},
		{
			name: "token rates price the tokens and the dollar budget applies",
			opts: func(o *BudgetOptions) {
				o.Live, o.RunID = true, runningID
				o.Rate = &Rate{InputPerMTok: 3, OutputPerMTok: 15, CacheReadPerMTok: 0.3}
				o.Budget.MaxCostUSD = 0.05
			},
			state: live,
			// 3600×3 + 1900×15 + 350×0.3 = 39405 µ$
			want: `{"issue_id":"42","spent":{"input_tokens":3600,"output_tokens":1900,"total_tokens":5500,"cache_read_tokens":350,"cost_usd":0.039405},` +
				`"budget":{"max_tokens":null,"max_cost_usd":0.05},"remaining":{"tokens":null,"cost_usd":0.010595},"exhausted":false,` +
				`"runs":3,"includes_running_session":true,"cost_source":"token_rates"}`,
		},
		{
			name:  "a state file of another run is stale and ignored",
			opts:  func(o *BudgetOptions) { o.Live, o.RunID, o.Budget.MaxCostUSD = true, runningID+100, 0.5 },
			state: live,
			want: `{"issue_id":"42","spent":{"input_tokens":3400,"output_tokens":1600,"total_tokens":5000,"cache_read_tokens":350,"cost_usd":0.85},` +
				`"budget":{"max_tokens":null,"max_cost_usd":0.5},"remaining":{"tokens":null,"cost_usd":0},"exhausted":true,` +
				`"runs":3,"includes_running_session":false,"cost_source":"reported"}`,
		},
		{
			name: "a run not stored yet counts from the state file alone",
			opts: func(o *BudgetOptions) { o.Live, o.RunID = true, runningID+1 },
			state: func(s *State) {
				live(s)
				s.RunID = runningID + 1
			},
			want: `{"issue_id":"42","spent":{"input_tokens":4000,"output_tokens":2000,"total_tokens":6000,"cache_read_tokens":360,"cost_usd":1.05},` +
				`"budget":{"max_tokens":null,"max_cost_usd":null},"remaining":{"tokens":null,"cost_usd":null},"exhausted":false,` +
				`"runs":4,"includes_running_session":true,"cost_source":"reported"}`,
		},
		{
			name: "without a state file the stored progress counts",
			opts: func(o *BudgetOptions) { o.Live, o.RunID = true, runningID },
			want: `{"issue_id":"42","spent":{"input_tokens":3400,"output_tokens":1600,"total_tokens":5000,"cache_read_tokens":350,"cost_usd":0.85},` +
				`"budget":{"max_tokens":null,"max_cost_usd":null},"remaining":{"tokens":null,"cost_usd":null},"exhausted":false,` +
				`"runs":3,"includes_running_session":false,"cost_source":"reported"}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := t.TempDir()
			if tt.state != nil {
				st := validState()
				tt.state(&st)
				writeState(t, ws, st)
			}
			o := BudgetOptions{Runs: openRO(t, path), IssueID: "42", Workspace: ws}
			if tt.opts != nil {
				tt.opts(&o)
			}
			got, isErr := callTool(t, NewBudget(o), "{}")
			if isErr || got != tt.want {
				t.Fatalf("cost_budget =\n%s (isError %v)\nwant\n%s", got, isErr, tt.want)
			}
		})
	}
}

func TestBudget_IssueWithoutRuns(t *testing.T) {
	path, _ := seedDB(t)
	got, isErr := callTool(t, NewBudget(BudgetOptions{Runs: openRO(t, path), IssueID: "1", Budget: Budget{MaxTokens: 100}}), "")
	want := `{"issue_id":"1","spent":{"input_tokens":0,"output_tokens":0,"total_tokens":0,"cache_read_tokens":0,"cost_usd":0},` +
		`"budget":{"max_tokens":100,"max_cost_usd":null},"remaining":{"tokens":100,"cost_usd":null},"exhausted":false,` +
		`"runs":0,"includes_running_session":false,"cost_source":"reported"}`
	if isErr || got != want {
		t.Fatalf("cost_budget =\n%s (isError %v)\nwant\n%s", got, isErr, want)
	}
}

func TestBudget_Errors(t *testing.T) {
	b := NewBudget(BudgetOptions{Runs: failingReader{errors.New("disk I/O error")}, IssueID: "1"})
	if got, isErr := callTool(t, b, "{}"); !isErr || got != `{"error":"query failed: disk I/O error","kind":"query_failed"}` {
		t.Errorf("cost_budget on a failing database = %s (isError %v)", got, isErr)
	}
	if got, isErr := callTool(t, b, `{"issue_id":"2"}`); !isErr || decodeJSON(t, got)["kind"] != KindInvalidInput {
		t.Errorf("cost_budget with an argument = %s (isError %v); want invalid_input", got, isErr)
	}
}

// budgetReader is the daemon as the agent socket presents it: the issue's runs and
// totals, and the budget and rate of its own configuration.
type budgetReader struct {
	RunReader
	budget Budget
	rate   *Rate
}

func (b budgetReader) IssueBudget(ctx context.Context, issueID string) (store.Totals, Budget, *Rate, error) {
	totals, err := b.IssueTotals(ctx, []string{issueID})
	return totals[issueID], b.budget, b.rate, err
}

// A reader that knows the budget (the daemon) wins over WORKFLOW.md's, which the
// sidecar may read without the daemon's overrides.
func TestBudget_TheDaemonsBudgetWins(t *testing.T) {
	path, _ := seedDB(t, seedRun{issue: "42", attempt: 1, status: store.StatusFailed, err: "x", started: t0,
		tokens: store.Tokens{Input: 1000, Output: 500, Total: 1500}, costUSD: 0.25})
	daemon := budgetReader{RunReader: openRO(t, path), budget: Budget{MaxTokens: 2000, MaxCostUSD: 1}, rate: &Rate{InputPerMTok: 100, OutputPerMTok: 200}}
	got, isErr := callTool(t, NewBudget(BudgetOptions{Runs: daemon, IssueID: "42", Budget: Budget{MaxTokens: 1}, Rate: &Rate{InputPerMTok: 1e6}}), "{}")
	// 1000 × $100/M + 500 × $200/M = $0.2
	want := `{"issue_id":"42","spent":{"input_tokens":1000,"output_tokens":500,"total_tokens":1500,"cache_read_tokens":0,"cost_usd":0.2},` +
		`"budget":{"max_tokens":2000,"max_cost_usd":1},"remaining":{"tokens":500,"cost_usd":0.8},"exhausted":false,` +
		`"runs":1,"includes_running_session":false,"cost_source":"token_rates"}`
	if isErr || got != want {
		t.Fatalf("cost_budget =\n%s (isError %v)\nwant\n%s", got, isErr, want)
	}
}
