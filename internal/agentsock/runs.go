package agentsock

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// RunHistory is an optional Handler capability: the run history and the spend of the
// token's issue, which workspace_history and cost_budget read through the socket so
// that no agent needs a path to the daemon's database (POST /v1/runs, POST /v1/spend).
// The issue is always the session's, never one the agent names: the requests carry no
// issue at all.
type RunHistory interface {
	// Runs returns the newest runs, at most limit, newest first.
	Runs(ctx context.Context, sess Session, limit int) ([]RunRecord, *Error)
	// Spend returns the cumulative spend over all its runs and the budget the
	// daemon holds it to now.
	Spend(ctx context.Context, sess Session) (Spend, *Error)
}

// RunsRequest asks for the session issue's newest runs.
type RunsRequest struct {
	Limit int `json:"limit"`
}

// MaxRunsLimit bounds RunsRequest.Limit.
const MaxRunsLimit = 100

// RunRecord is one run of the session's issue as the socket gives it: the fields
// workspace_history and cost_budget read, and nothing else of the run-history row (no
// workspace path, process ids, daemon host or WORKFLOW.md path).
type RunRecord struct {
	ID        int64     `json:"id"`
	Attempt   int       `json:"attempt"`
	AgentKind string    `json:"agent_kind"`
	Status    string    `json:"status"` // a store.RunStatus
	StartedAt time.Time `json:"started_at"`
	EndedAt   time.Time `json:"ended_at"` // zero while running
	Error     string    `json:"error,omitempty"`
	Tokens    Tokens    `json:"tokens"`
	CostUSD   float64   `json:"cost_usd"` // as the agent CLI reported it, 0 when unknown
	// Reaction is what started the run when a reaction did: "ci" (a CI failure sent
	// back) or "review" (a change request); "" otherwise.
	Reaction string `json:"reaction,omitempty"`
	// SelfReview is the run's self-review verdict (pass, iterate, none), "" when none ran.
	SelfReview string `json:"self_review,omitempty"`
}

// Tokens are cumulative token counts.
type Tokens struct {
	Input     int64 `json:"input"`
	Output    int64 `json:"output"`
	Total     int64 `json:"total"`
	CacheRead int64 `json:"cache_read"`
}

// Spend answers POST /v1/spend: what the session's issue has used over all its runs,
// as stored, and its budget from the daemon's current configuration.
type Spend struct {
	Runs    int     `json:"runs"`
	Tokens  Tokens  `json:"tokens"`
	CostUSD float64 `json:"cost_usd"` // the sum the agent CLIs reported
	// MaxTokens and MaxCostUSD are agent.max_tokens and agent.max_cost_usd; 0 is
	// unlimited.
	MaxTokens  int64   `json:"max_tokens"`
	MaxCostUSD float64 `json:"max_cost_usd"`
	// Rate is token_rates for agent.kind; nil means costs are the CLIs' own figures.
	Rate *TokenRate `json:"token_rate"`
}

// TokenRate is the price of a million tokens, in dollars.
type TokenRate struct {
	InputPerMTok     float64 `json:"input_per_mtok"`
	OutputPerMTok    float64 `json:"output_per_mtok"`
	CacheReadPerMTok float64 `json:"cache_read_per_mtok"`
}

// history authorizes a run-history call and decodes its body into req; ok is false
// when it has already answered.
func (s *Server) history(w http.ResponseWriter, r *http.Request, req any) (Session, RunHistory, bool) {
	sess, ok := s.authorize(w, r)
	if !ok {
		return sess, nil, false
	}
	rh, ok := s.h.(RunHistory)
	if !ok {
		reply(w, nil, Errorf("unsupported_operation", "this daemon serves no run history"))
		return sess, nil, false
	}
	return sess, rh, decode(w, r, req)
}

func (s *Server) runs(w http.ResponseWriter, r *http.Request) {
	var req RunsRequest
	sess, rh, ok := s.history(w, r, &req)
	if !ok {
		return
	}
	if req.Limit <= 0 || req.Limit > MaxRunsLimit {
		reply(w, nil, Errorf("invalid_input", "limit must be between 1 and %d (got %d)", MaxRunsLimit, req.Limit))
		return
	}
	runs, e := rh.Runs(r.Context(), sess, req.Limit)
	if e == nil && runs == nil {
		runs = []RunRecord{}
	}
	reply(w, runs, e)
}

func (s *Server) spend(w http.ResponseWriter, r *http.Request) {
	var req struct{}
	sess, rh, ok := s.history(w, r, &req)
	if !ok {
		return
	}
	sp, e := rh.Spend(r.Context(), sess)
	reply(w, sp, e)
}

// Runs asks the daemon for the session issue's newest runs (at most limit, newest
// first).
func (c *Client) Runs(ctx context.Context, limit int) ([]RunRecord, error) {
	data, err := c.call(ctx, "/v1/runs", RunsRequest{Limit: limit})
	if err != nil {
		return nil, err
	}
	var runs []RunRecord
	if err := json.Unmarshal(data, &runs); err != nil {
		return nil, fmt.Errorf("the daemon's run history is malformed: %w", err)
	}
	if len(runs) > limit {
		return nil, fmt.Errorf("the daemon's run history is malformed: %d runs, more than the %d asked for", len(runs), limit)
	}
	return runs, nil
}

// Spend asks the daemon for the session issue's spend and budget.
func (c *Client) Spend(ctx context.Context) (Spend, error) {
	var sp Spend
	data, err := c.call(ctx, "/v1/spend", struct{}{})
	if err != nil {
		return sp, err
	}
	if err := json.Unmarshal(data, &sp); err != nil {
		return Spend{}, fmt.Errorf("the daemon's spend is malformed: %w", err)
	}
	return sp, nil
}
