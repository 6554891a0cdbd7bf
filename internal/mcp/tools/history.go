package tools

import (
	"context"
	"encoding/json"
	"time"

	"sortie/internal/store"
)

// HistoryLimit is the most entries workspace_history returns.
const HistoryLimit = 10

// queryTimeout bounds one database query of a Tier 1 tool. The store waits up to its
// busy timeout for a lock; this only stops a pathological query from holding a turn.
const queryTimeout = 10 * time.Second

// HistorySpec describes workspace_history.
var HistorySpec = Spec{
	Name: NameHistory,
	Tier: TierLocal,
	Description: "Lists up to 10 earlier completed runs of this issue, newest first: attempt, agent_adapter, " +
		"started_at, completed_at, status (succeeded, failed, timed_out, stalled or cancelled), outcome (Sortie's " +
		"finer word: handed_off, blocked, budget_exhausted, interrupted, or the status) and error. " +
		"Call it on a retry to see what went wrong before and avoid repeating it. Takes no arguments.",
	InputSchema: noArgsSchema,
	ReadOnly:    true,
}

// RunReader is the run history workspace_history and cost_budget read: the daemon's,
// over its agent socket, or a database an operator names (`sortie mcp-server --db`),
// opened read-only.
type RunReader interface {
	RunsForIssue(ctx context.Context, issueID string, limit int) ([]store.Run, error)
	IssueTotals(ctx context.Context, issueIDs []string) (map[string]store.Totals, error)
}

// History is the workspace_history tool: the issue's completed runs.
type History struct {
	runs    RunReader
	issueID string
}

// NewHistory returns workspace_history for issueID.
func NewHistory(runs RunReader, issueID string) *History {
	return &History{runs: runs, issueID: issueID}
}

// Spec implements Tool.
func (h *History) Spec() Spec { return HistorySpec }

type historyResponse struct {
	IssueID string         `json:"issue_id"`
	Entries []historyEntry `json:"entries"`
}

type historyEntry struct {
	Attempt      int     `json:"attempt"`
	AgentAdapter string  `json:"agent_adapter"`
	StartedAt    string  `json:"started_at"`
	CompletedAt  string  `json:"completed_at"`
	Status       string  `json:"status"`
	Outcome      string  `json:"outcome"`
	Error        *string `json:"error"`
	// Reaction says a reaction started the run: "ci" (a CI failure on the pull
	// request sent back) or "review" (a reviewer's change request); absent otherwise.
	Reaction string `json:"reaction,omitempty"`
	// SelfReview is the run's self-review verdict (pass, iterate, none); absent when
	// none ran.
	SelfReview string `json:"self_review,omitempty"`
}

// specStatus is the spec's terminal status of a run (spec/agent-extensions.md,
// workspace_history: succeeded, failed, timed_out, stalled, cancelled). Sortie's finer
// outcomes fold into it: a hand-off or a block ended the agent's turns without error;
// a budget stop or a daemon shutdown is the daemon cancelling the run.
func specStatus(s store.RunStatus) string {
	switch s {
	case store.StatusHandedOff, store.StatusBlocked:
		return string(store.StatusSucceeded)
	case store.StatusBudgetExhausted, store.StatusInterrupted:
		return string(store.StatusCancelled)
	}
	return string(s)
}

// Call implements Tool.
func (h *History) Call(ctx context.Context, args json.RawMessage) Result {
	if err := decodeArgs(HistorySpec, args, &struct{}{}); err != nil {
		return localFail(KindInvalidInput, "%v", err)
	}
	ctx, cancel := context.WithTimeout(ctx, queryTimeout)
	defer cancel()
	// The running run (this session's) is normally the newest; a few extra rows leave
	// room for it and for any a dead daemon left running.
	runs, err := h.runs.RunsForIssue(ctx, h.issueID, HistoryLimit+5)
	if err != nil {
		return localFail(KindQueryFailed, "query failed: %v", err)
	}
	entries := []historyEntry{}
	for _, r := range runs {
		if r.Status == store.StatusRunning || r.EndedAt.IsZero() {
			continue
		}
		e := historyEntry{
			Attempt:      r.Attempt,
			AgentAdapter: r.AgentKind,
			StartedAt:    r.StartedAt.UTC().Format(time.RFC3339),
			CompletedAt:  r.EndedAt.UTC().Format(time.RFC3339),
			Status:       specStatus(r.Status),
			Outcome:      string(r.Status),
		}
		if r.Error != "" {
			e.Error = &r.Error
		}
		e.Reaction, e.SelfReview = r.Reaction, r.SelfReviewVerdict()
		entries = append(entries, e)
		if len(entries) == HistoryLimit {
			break
		}
	}
	return Result{Body: historyResponse{IssueID: h.issueID, Entries: entries}}
}
