package agentsock

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"sortie/internal/store"
)

// historyHandler serves each issue's own runs and totals.
type historyHandler struct{ fakeHandler }

func (h *historyHandler) Runs(_ context.Context, sess Session, limit int) ([]store.Run, *Error) {
	runs := []store.Run{{ID: 1, IssueID: sess.IssueID, Attempt: 1, Status: store.StatusFailed, Error: "x"},
		{ID: 2, IssueID: sess.IssueID, Attempt: 2, Status: store.StatusSucceeded}}
	return runs[:min(limit, len(runs))], nil
}

func (h *historyHandler) Totals(_ context.Context, sess Session) (store.Totals, *Error) {
	if sess.IssueID == "A" {
		return store.Totals{Runs: 2}, nil
	}
	return store.Totals{Runs: 7}, nil
}

// TestRuns_EachTokenReadsItsOwnIssue: the run history and totals over the socket are
// those of the token's issue, and a bad limit is refused.
func TestRuns_EachTokenReadsItsOwnIssue(t *testing.T) {
	dir, err := os.MkdirTemp("", "as")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	s, err := Listen(filepath.Join(dir, "state", "agent.sock"), &historyHandler{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ctx := context.Background()
	a := Dial(s.Path(), s.Grant(Session{IssueID: "A", RunID: 1}))
	b := Dial(s.Path(), s.Grant(Session{IssueID: "B", RunID: 2}))

	runs, err := a.Runs(ctx, 1)
	if err != nil || len(runs) != 1 || runs[0].IssueID != "A" || runs[0].Status != store.StatusFailed {
		t.Errorf("A's runs = %+v, %v; want one run of A", runs, err)
	}
	if runs, err := b.Runs(ctx, 10); err != nil || len(runs) != 2 || runs[0].IssueID != "B" {
		t.Errorf("B's runs = %+v, %v; want B's two runs", runs, err)
	}
	if tot, err := a.Totals(ctx); err != nil || tot.Runs != 2 {
		t.Errorf("A's totals = %+v, %v", tot, err)
	}
	if tot, err := b.Totals(ctx); err != nil || tot.Runs != 7 {
		t.Errorf("B's totals = %+v, %v", tot, err)
	}
	var e *Error
	if _, err := a.Runs(ctx, 0); !errors.As(err, &e) || e.Kind != "invalid_input" {
		t.Errorf("limit 0: %v, want invalid_input", err)
	}
	if _, err := Dial(s.Path(), "forged").Runs(ctx, 1); !errors.As(err, &e) || e.Kind != "unauthorized" {
		t.Errorf("a forged token: %v, want unauthorized", err)
	}
}
