package agentsock

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// historyHandler serves each issue's own runs and spend, as the daemon's store would.
type historyHandler struct{ fakeHandler }

var handlerRuns = map[string][]RunRecord{
	"A": {{ID: 2, Attempt: 2, AgentKind: "mock", Status: "failed", Error: "turn timeout"}, {ID: 1, Attempt: 1, AgentKind: "mock", Status: "succeeded"}},
	"B": {{ID: 3, Attempt: 1, AgentKind: "mock", Status: "failed", Error: "B's secret failure"}},
}

func (h *historyHandler) Runs(_ context.Context, sess Session, limit int) ([]RunRecord, *Error) {
	runs := handlerRuns[sess.IssueID]
	return runs[:min(limit, len(runs))], nil
}

func (h *historyHandler) Spend(_ context.Context, sess Session) (Spend, *Error) {
	sp := Spend{Runs: len(handlerRuns[sess.IssueID]), MaxTokens: 1000, Rate: &TokenRate{InputPerMTok: 3}}
	if sess.IssueID == "B" {
		sp.Tokens.Total = 777
	}
	return sp, nil
}

// TestRuns_EachTokenReadsItsOwnIssue: the run history and spend over the socket are
// those of the token's issue; the request cannot name another.
func TestRuns_EachTokenReadsItsOwnIssue(t *testing.T) {
	s := listenWith(t, &historyHandler{})
	ctx := context.Background()
	a := Dial(s.Path(), s.Grant(Session{IssueID: "A", RunID: 1}))
	b := Dial(s.Path(), s.Grant(Session{IssueID: "B", RunID: 3}))

	runs, err := a.Runs(ctx, 1)
	if err != nil || len(runs) != 1 || runs[0].ID != 2 || runs[0].Status != "failed" || runs[0].Error != "turn timeout" {
		t.Errorf("A's runs (limit 1) = %+v, %v; want A's newest run", runs, err)
	}
	if runs, err := a.Runs(ctx, 10); err != nil || len(runs) != 2 || runs[0].ID != 2 || runs[1].ID != 1 {
		t.Errorf("A's runs = %+v, %v; want A's two runs", runs, err)
	}
	if runs, err := b.Runs(ctx, 10); err != nil || len(runs) != 1 || runs[0].ID != 3 {
		t.Errorf("B's runs = %+v, %v; want B's one run", runs, err)
	}
	if sp, err := a.Spend(ctx); err != nil || sp.Runs != 2 || sp.Tokens.Total != 0 || sp.MaxTokens != 1000 || sp.Rate == nil || sp.Rate.InputPerMTok != 3 {
		t.Errorf("A's spend = %+v, %v; want A's two runs, the budget and the rate", sp, err)
	}
	if sp, err := b.Spend(ctx); err != nil || sp.Tokens.Total != 777 {
		t.Errorf("B's spend = %+v, %v", sp, err)
	}

	// A body naming another issue is not a request the socket knows.
	for _, path := range []string{"/v1/runs", "/v1/spend"} {
		body := `{"limit": 10, "issue_id": "B"}`
		if path == "/v1/spend" {
			body = `{"issue_id": "B"}`
		}
		status, got := rawPost(t, s.Path(), path, s.Grant(Session{IssueID: "A"}), body)
		if status != http.StatusBadRequest || !strings.Contains(got, `"invalid_input"`) || strings.Contains(got, "secret") || strings.Contains(got, "777") {
			t.Errorf("POST %s %s = %d %s; want 400 invalid_input and nothing of B", path, body, status, got)
		}
	}
}

func TestRuns_RefusesBadCalls(t *testing.T) {
	s := listenWith(t, &historyHandler{})
	ctx := context.Background()
	a := Dial(s.Path(), s.Grant(Session{IssueID: "A"}))
	var e *Error
	for _, limit := range []int{0, -1, MaxRunsLimit + 1} {
		if _, err := a.Runs(ctx, limit); !errors.As(err, &e) || e.Kind != "invalid_input" {
			t.Errorf("limit %d: %v, want invalid_input", limit, err)
		}
	}
	forged := Dial(s.Path(), "forged")
	if _, err := forged.Runs(ctx, 1); !errors.As(err, &e) || e.Kind != "unauthorized" {
		t.Errorf("runs with a forged token: %v, want unauthorized", err)
	}
	if _, err := forged.Spend(ctx); !errors.As(err, &e) || e.Kind != "unauthorized" {
		t.Errorf("spend with a forged token: %v, want unauthorized", err)
	}
	tok := s.Grant(Session{IssueID: "A"})
	s.Revoke(tok)
	if _, err := Dial(s.Path(), tok).Spend(ctx); !errors.As(err, &e) || e.Kind != "unauthorized" {
		t.Errorf("spend with a revoked token: %v, want unauthorized", err)
	}

	// A daemon without run history says so.
	plain := listenWith(t, &fakeHandler{})
	c := Dial(plain.Path(), plain.Grant(Session{IssueID: "A"}))
	if _, err := c.Runs(ctx, 1); !errors.As(err, &e) || e.Kind != "unsupported_operation" {
		t.Errorf("runs from a daemon without history: %v, want unsupported_operation", err)
	}
	if _, err := c.Spend(ctx); !errors.As(err, &e) || e.Kind != "unsupported_operation" {
		t.Errorf("spend from a daemon without history: %v, want unsupported_operation", err)
	}
}

// The wire form of a run carries the fields the tools read and no more.
func TestRuns_RecordCarriesNoDaemonPaths(t *testing.T) {
	s := listenWith(t, &historyHandler{})
	status, got := rawPost(t, s.Path(), "/v1/runs", s.Grant(Session{IssueID: "A"}), `{"limit": 1}`)
	want := `{"ok":true,"data":[{"id":2,"attempt":2,"agent_kind":"mock","status":"failed","started_at":"0001-01-01T00:00:00Z",` +
		`"ended_at":"0001-01-01T00:00:00Z","error":"turn timeout","tokens":{"input":0,"output":0,"total":0,"cache_read":0},"cost_usd":0}]}`
	if status != http.StatusOK || strings.TrimSpace(got) != want {
		t.Errorf("POST /v1/runs = %d %s\nwant %s", status, got, want)
	}
}

// rawPost sends body to path over the socket with token and returns the status and
// the answer's body.
func rawPost(t *testing.T, socket, path, token, body string) (int, string) {
	t.Helper()
	c := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{Timeout: 5 * time.Second}).DialContext(ctx, "unix", socket)
	}}}
	req, err := http.NewRequest(http.MethodPost, "http://sortie"+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, string(b)
}
