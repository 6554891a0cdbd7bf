package agentsock

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"sortie/internal/store"
)

// RunHistory is an optional Handler capability: the daemon's run history of the
// token's issue, which workspace_history and cost_budget read through the socket so
// that no agent needs the database's path (POST /v1/runs, POST /v1/totals). The issue
// is always the session's, never one the agent names.
type RunHistory interface {
	// Runs returns the newest runs, at most limit, newest first.
	Runs(ctx context.Context, sess Session, limit int) ([]store.Run, *Error)
	// Totals returns the cumulative spend over all its runs.
	Totals(ctx context.Context, sess Session) (store.Totals, *Error)
}

// RunsRequest asks for the session issue's newest runs.
type RunsRequest struct {
	Limit int `json:"limit"`
}

// maxRunsLimit bounds one RunsRequest.
const maxRunsLimit = 100

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
	if req.Limit <= 0 || req.Limit > maxRunsLimit {
		reply(w, nil, Errorf("invalid_input", "limit must be between 1 and %d (got %d)", maxRunsLimit, req.Limit))
		return
	}
	runs, e := rh.Runs(r.Context(), sess, req.Limit)
	reply(w, runs, e)
}

func (s *Server) totals(w http.ResponseWriter, r *http.Request) {
	var req struct{}
	sess, rh, ok := s.history(w, r, &req)
	if !ok {
		return
	}
	t, e := rh.Totals(r.Context(), sess)
	reply(w, t, e)
}

// Runs asks the daemon for the session issue's newest runs (at most limit).
func (c *Client) Runs(ctx context.Context, limit int) ([]store.Run, error) {
	data, err := c.call(ctx, "/v1/runs", RunsRequest{Limit: limit})
	if err != nil {
		return nil, err
	}
	var runs []store.Run
	if err := json.Unmarshal(data, &runs); err != nil {
		return nil, fmt.Errorf("the daemon's run history is malformed: %w", err)
	}
	return runs, nil
}

// Totals asks the daemon for the session issue's cumulative spend.
func (c *Client) Totals(ctx context.Context) (store.Totals, error) {
	var t store.Totals
	data, err := c.call(ctx, "/v1/totals", struct{}{})
	if err != nil {
		return t, err
	}
	if err := json.Unmarshal(data, &t); err != nil {
		return t, fmt.Errorf("the daemon's totals are malformed: %w", err)
	}
	return t, nil
}
