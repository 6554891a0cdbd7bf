package agenttools

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"sortie/internal/agentsock"
	"sortie/internal/config"
	"sortie/internal/store"
	"sortie/internal/store/sqlite"
)

// runsService is a Service over a real store holding two issues' runs: A has a
// failed and a succeeded run, B one failed run.
func runsService(t *testing.T, mutate func(*config.Config)) *Service {
	t.Helper()
	cfg := testConfig(t, mutate)
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "sortie.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	started := time.Date(2026, 3, 30, 13, 0, 0, 0, time.UTC)
	for _, r := range []struct {
		issue string
		end   store.RunEnd
	}{
		{"A", store.RunEnd{Status: store.StatusFailed, Error: "A: turn timeout", Progress: store.Progress{Tokens: store.Tokens{Input: 100, Output: 50, Total: 150}, CostUSD: 0.5}}},
		{"B", store.RunEnd{Status: store.StatusFailed, Error: "B: private failure", Progress: store.Progress{Tokens: store.Tokens{Input: 9000, Total: 9000}, CostUSD: 9}}},
		{"A", store.RunEnd{Status: store.StatusSucceeded, Progress: store.Progress{Tokens: store.Tokens{Input: 200, Output: 100, Total: 300}, CostUSD: 1}}},
	} {
		id, err := st.StartRun(ctx, store.Run{IssueID: r.issue, Identifier: "P-" + r.issue, Attempt: 1, AgentKind: "mock",
			Workspace: "/srv/ws/P-" + r.issue, WorkflowPath: "/srv/WORKFLOW.md", StartedAt: started})
		if err != nil {
			t.Fatal(err)
		}
		r.end.EndedAt = started.Add(time.Minute)
		if err := st.FinishRun(ctx, id, r.end); err != nil {
			t.Fatal(err)
		}
		started = started.Add(time.Hour)
	}
	return New(Options{Config: func() *config.Config { return cfg }, History: st})
}

func TestToolService_RunsAreTheSessionIssues(t *testing.T) {
	svc := runsService(t, nil)
	ctx := context.Background()
	runs, e := svc.Runs(ctx, agentsock.Session{IssueID: "A"}, 10)
	if e != nil {
		t.Fatal(e)
	}
	var errs []string
	for _, r := range runs {
		errs = append(errs, r.Error)
	}
	if want := []string{"", "A: turn timeout"}; !slices.Equal(errs, want) {
		t.Fatalf("A's runs have errors %q, want %q (A's two runs, newest first)", errs, want)
	}
	if r := runs[0]; r.Status != "succeeded" || r.Attempt != 1 || r.AgentKind != "mock" || r.Tokens.Total != 300 || r.CostUSD != 1 || r.EndedAt.IsZero() {
		t.Errorf("A's newest run = %+v", r)
	}
	if runs, e := svc.Runs(ctx, agentsock.Session{IssueID: "A"}, 1); e != nil || len(runs) != 1 {
		t.Errorf("A's runs, limit 1 = %+v, %v", runs, e)
	}
	if runs, e := svc.Runs(ctx, agentsock.Session{IssueID: "nobody"}, 10); e != nil || runs == nil || len(runs) != 0 {
		t.Errorf("runs of an issue without history = %#v, %v; want an empty list", runs, e)
	}
}

// The budget comes from the daemon's configuration of the moment, with the rate of
// its agent kind.
func TestToolService_SpendIsTheSessionIssuesAgainstTheDaemonsBudget(t *testing.T) {
	svc := runsService(t, func(c *config.Config) {
		c.Agent.Kind = "mock"
		c.Agent.MaxTokens = 1000
		c.Agent.MaxCostUSD = 5
		c.TokenRates = map[string]config.TokenRate{"mock": {InputPerMTok: 3, OutputPerMTok: 15}, "other": {InputPerMTok: 99}}
	})
	sp, e := svc.Spend(context.Background(), agentsock.Session{IssueID: "A"})
	want := agentsock.Spend{Runs: 2, Tokens: agentsock.Tokens{Input: 300, Output: 150, Total: 450}, CostUSD: 1.5,
		MaxTokens: 1000, MaxCostUSD: 5, Rate: &agentsock.TokenRate{InputPerMTok: 3, OutputPerMTok: 15}}
	if e != nil || sp.Rate == nil || *sp.Rate != *want.Rate {
		t.Fatalf("A's spend = %+v (rate %+v), %v; want %+v", sp, sp.Rate, e, want)
	}
	sp.Rate, want.Rate = nil, nil
	if sp != want {
		t.Errorf("A's spend = %+v, want %+v", sp, want)
	}

	unpriced := runsService(t, nil)
	if sp, e := unpriced.Spend(context.Background(), agentsock.Session{IssueID: "B"}); e != nil || sp.Rate != nil || sp.Tokens.Total != 9000 || sp.MaxTokens != 0 {
		t.Errorf("B's spend without rates or budget = %+v, %v", sp, e)
	}
}

// TestToolService_TokenOfOneIssueCannotReadAnothers runs the real socket over the real
// store: issue A's token reads A's history and spend, never B's.
func TestToolService_TokenOfOneIssueCannotReadAnothers(t *testing.T) {
	svc := runsService(t, nil)
	dir, err := os.MkdirTemp("", "ts")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock, err := agentsock.Listen(filepath.Join(dir, "agent.sock"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sock.Close() })
	sock.Start(svc)
	if !svc.Info().Capabilities.Runs {
		t.Fatal("a Service with History grants no runs capability")
	}
	ctx := context.Background()
	a := agentsock.Dial(sock.Path(), sock.Grant(agentsock.Session{IssueID: "A", Identifier: "P-A", RunID: 1}))
	runs, err := a.Runs(ctx, agentsock.MaxRunsLimit)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 2 {
		t.Errorf("A's token read %d runs, want A's 2", len(runs))
	}
	for _, r := range runs {
		if r.Error == "B: private failure" {
			t.Errorf("A's token read B's run %+v", r)
		}
	}
	if sp, err := a.Spend(ctx); err != nil || sp.Runs != 2 || sp.Tokens.Total != 450 {
		t.Errorf("A's token read the spend %+v, %v; want A's 2 runs and 450 tokens", sp, err)
	}

	none := New(Options{Config: func() *config.Config { return testConfig(t, nil) }})
	if _, e := none.Runs(ctx, agentsock.Session{IssueID: "A"}, 1); e == nil || e.Kind != "unsupported_operation" {
		t.Errorf("Runs without History: %v, want unsupported_operation", e)
	}
	if _, e := none.Spend(ctx, agentsock.Session{IssueID: "A"}); e == nil || e.Kind != "unsupported_operation" {
		t.Errorf("Spend without History: %v, want unsupported_operation", e)
	}
}

// leakyHistory is a store that answers with another issue's run too.
type leakyHistory struct{}

func (leakyHistory) RunsForIssue(context.Context, string, int) ([]store.Run, error) {
	return []store.Run{{ID: 1, IssueID: "A", Status: store.StatusFailed}, {ID: 2, IssueID: "B", Status: store.StatusFailed, Error: "B's secret"}}, nil
}

func (leakyHistory) IssueTotals(context.Context, []string) (map[string]store.Totals, error) {
	return nil, nil
}

// TestToolService_RunsNeverShowsAnotherIssuesRunEvenIfTheStoreDoes: the session's own
// issue is checked again on every run the store returns.
func TestToolService_RunsNeverShowsAnotherIssuesRunEvenIfTheStoreDoes(t *testing.T) {
	cfg := testConfig(t, nil)
	svc := New(Options{Config: func() *config.Config { return cfg }, History: leakyHistory{}})
	recs, e := svc.Runs(context.Background(), agentsock.Session{IssueID: "A"}, 10)
	if e != nil || len(recs) != 1 || recs[0].ID != 1 {
		t.Fatalf("Runs = %+v, %v; want only A's run", recs, e)
	}
}
