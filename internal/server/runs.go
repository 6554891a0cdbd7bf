package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"sortie/internal/store"
)

// Limits of GET /api/v1/runs.
const (
	defaultRunsLimit = 50
	maxRunsLimit     = 500
	// maxIdentifierLen bounds an issue identifier taken from a request.
	maxIdentifierLen = 256
)

// runsBody is GET /api/v1/runs.
type runsBody struct {
	Runs []runJSON `json:"runs"`
	// NextBefore is the before= of the next page; null on the last page.
	NextBefore *int64 `json:"next_before"`
}

// runJSON is one run of history.
type runJSON struct {
	ID              int64        `json:"id"`
	IssueID         string       `json:"issue_id"`
	Identifier      string       `json:"issue_identifier"`
	Attempt         int          `json:"attempt"`
	AgentKind       string       `json:"agent_kind"`
	Status          string       `json:"status"`
	StartedAt       time.Time    `json:"started_at"`
	EndedAt         *time.Time   `json:"ended_at"`
	DurationSeconds float64      `json:"duration_seconds"`
	Turns           int          `json:"turns"`
	Tokens          store.Tokens `json:"tokens"`
	CostUSD         float64      `json:"cost_usd"`
	Model           string       `json:"model"`
	Error           string       `json:"error"`
	WorkspacePath   string       `json:"workspace_path"`
	SSHHost         string       `json:"ssh_host"`
	CLIVersion      string       `json:"cli_version"`
	SessionID       string       `json:"session_id"`
	WorkflowPath    string       `json:"workflow_path"`
	// Reaction is what started the run when a reaction did (ci, review), "" otherwise.
	Reaction string `json:"reaction"`
	// SelfReview is the run's self-review in short (its verdict and iterations); null
	// when none ran.
	SelfReview *reviewSummary `json:"self_review"`
	// ReviewMetadata is the whole self-review result (selfreview.Result: iterations,
	// verification results, …) as the run recorded it: in an issue's detail only (it
	// can be tens of KiB a run), absent from /api/v1/runs; null when none ran.
	ReviewMetadata *json.RawMessage `json:"review_metadata,omitempty"`
}

// reviewSummary is a self-review result in short.
type reviewSummary struct {
	FinalVerdict    string `json:"final_verdict"`
	TotalIterations int    `json:"total_iterations"`
	CapReached      bool   `json:"cap_reached"`
	Stopped         bool   `json:"stopped,omitempty"`
	Error           string `json:"error,omitempty"`
}

// reviewSummaryOf is the summary of a run's stored review metadata, nil when it has
// none or it does not parse.
func reviewSummaryOf(s string) *reviewSummary {
	if s == "" {
		return nil
	}
	var r reviewSummary
	if json.Unmarshal([]byte(s), &r) != nil {
		return nil
	}
	return &r
}

// runOf converts a stored run. A run still running lasts until now.
func runOf(r store.Run, now time.Time) runJSON {
	end := r.EndedAt
	if end.IsZero() {
		end = now
	}
	return runJSON{
		ID: r.ID, IssueID: r.IssueID, Identifier: r.Identifier, Attempt: r.Attempt, AgentKind: r.AgentKind,
		Status: string(r.Status), StartedAt: r.StartedAt, EndedAt: optTime(r.EndedAt),
		DurationSeconds: max(seconds(end.Sub(r.StartedAt)), 0), Turns: r.Turns, Tokens: r.Tokens,
		CostUSD: r.CostUSD, Model: r.Model, Error: r.Error, WorkspacePath: r.Workspace, SSHHost: r.SSHHost,
		CLIVersion: r.CLIVersion, SessionID: r.SessionID, WorkflowPath: r.WorkflowPath,
		Reaction: r.Reaction, SelfReview: reviewSummaryOf(r.ReviewMetadata),
	}
}

// reviewMetadataOf is a run's stored review metadata as JSON, nil (null) when there is
// none. The store takes only valid JSON, but a value that is not (a database edited by
// hand) is left out rather than failing the whole response.
func reviewMetadataOf(s string) *json.RawMessage {
	if s == "" || !json.Valid([]byte(s)) {
		return nil
	}
	m := json.RawMessage(s)
	return &m
}

func runsOf(runs []store.Run, now time.Time) []runJSON {
	out := make([]runJSON, len(runs))
	for i, r := range runs {
		out[i] = runOf(r, now)
	}
	return out
}

// handleRuns is GET /api/v1/runs?limit=&before=&status=&issue=: run history, newest
// first, one page at a time.
func (s *Server) handleRuns(w http.ResponseWriter, r *http.Request) {
	if s.opts.Runs == nil {
		writeError(w, http.StatusServiceUnavailable, codeHistoryUnavailable, "this daemon serves no run history")
		return
	}
	f, err := parseRunFilter(r.URL.Query())
	if err != nil {
		writeError(w, http.StatusBadRequest, codeInvalidQuery, err.Error())
		return
	}
	limit := f.Limit
	f.Limit++ // one more than asked says whether there is a next page
	runs, err := s.opts.Runs.ListRuns(r.Context(), f)
	if err != nil {
		s.storeFailed(w, r, err)
		return
	}
	out := runsBody{}
	if len(runs) > limit {
		runs = runs[:limit]
		next := runs[limit-1].ID
		out.NextBefore = &next
	}
	out.Runs = runsOf(runs, s.now())
	writeJSON(w, http.StatusOK, out)
}

// parseRunFilter reads the query of GET /api/v1/runs.
func parseRunFilter(q url.Values) (store.RunFilter, error) {
	for k, vs := range q {
		switch k {
		case "limit", "before", "status", "issue":
			if len(vs) > 1 {
				return store.RunFilter{}, fmt.Errorf("%s: give it once (got %d values)", k, len(vs))
			}
		default:
			return store.RunFilter{}, fmt.Errorf("unknown parameter %q (want limit, before, status or issue)", k)
		}
	}
	f := store.RunFilter{Limit: defaultRunsLimit}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxRunsLimit {
			return f, fmt.Errorf("limit: must be a whole number from 1 to %d (got %q)", maxRunsLimit, clip(v))
		}
		f.Limit = n
	}
	if v := q.Get("before"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 {
			return f, fmt.Errorf("before: must be a run id, a whole number from 1 (got %q)", clip(v))
		}
		f.Before = n
	}
	if v := q.Get("status"); v != "" {
		f.Status = store.RunStatus(v)
		if !f.Status.Valid() {
			return f, fmt.Errorf("status: must be one of %v (got %q)", store.RunStatuses, clip(v))
		}
	}
	if v := q.Get("issue"); v != "" {
		if len(v) > maxIdentifierLen {
			return f, fmt.Errorf("issue: an identifier is at most %d bytes (got %d)", maxIdentifierLen, len(v))
		}
		f.Identifier = v
	}
	return f, nil
}

// clip bounds a value quoted back in an error message.
func clip(v string) string {
	const n = 64
	if len(v) <= n {
		return v
	}
	return v[:n] + "…"
}

// storeFailed writes the 500 for a failed read of run history.
func (s *Server) storeFailed(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, r.Context().Err()) && r.Context().Err() != nil {
		return // the client went away; nobody reads the answer
	}
	s.log.Error("http: reading run history failed", "path", r.URL.Path, "error", err)
	writeError(w, http.StatusInternalServerError, codeStoreError, "reading run history failed: "+err.Error())
}
