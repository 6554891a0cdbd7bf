package tools

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"sortie/internal/store"
	"sortie/internal/store/sqlite"
)

// t0 is the tests' reference time.
var t0 = time.Date(2026, 3, 30, 13, 0, 0, 0, time.UTC)

// callTool calls t with args (raw JSON, "" for none) and returns the JSON the agent
// would read and whether the result is an error.
func callTool(t *testing.T, tool Tool, args string) (string, bool) {
	t.Helper()
	res := tool.Call(context.Background(), json.RawMessage(args))
	b, err := json.Marshal(res.Body)
	if err != nil {
		t.Fatalf("%s: marshalling the result %#v: %v", tool.Spec().Name, res.Body, err)
	}
	return string(b), res.IsError
}

// decodeJSON decodes s into a generic value for comparisons.
func decodeJSON(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("result %s is not a JSON object: %v", s, err)
	}
	return m
}

// validState is a state file as the daemon writes it.
func validState() State {
	return State{
		Version: StateVersion, IssueID: "42", IssueIdentifier: "PROJ-42", RunID: 7, SessionID: "sess-1",
		TurnNumber: 3, MaxTurns: 20, SessionStartedAt: t0, UpdatedAt: t0.Add(time.Minute),
		Tokens:  Tokens{Input: 45000, Output: 12000, Total: 57000, CacheRead: 8000},
		CostUSD: 0.5,
	}
}

// writeState writes st as the workspace's state file and returns the workspace.
func writeState(t *testing.T, ws string, st State) {
	t.Helper()
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	writeStateBytes(t, ws, b)
}

func writeStateBytes(t *testing.T, ws string, b []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(ws, ".sortie"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, StateFile), b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// seedRun is a run to write into a test database.
type seedRun struct {
	issue    string
	attempt  int
	status   store.RunStatus // running leaves it running
	err      string
	started  time.Time
	tokens   store.Tokens
	costUSD  float64
	agent    string // default claude-code
	duration time.Duration
}

// seedDB writes runs, in order, into a new database the way the daemon does (Open,
// StartRun, UpdateRunProgress, FinishRun), closes it and returns its path and the
// run ids.
func seedDB(t *testing.T, runs ...seedRun) (string, []int64) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sortie.db")
	ctx := context.Background()
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var ids []int64
	for _, r := range runs {
		agent := r.agent
		if agent == "" {
			agent = "claude-code"
		}
		id, err := s.StartRun(ctx, store.Run{IssueID: r.issue, Identifier: "PROJ-" + r.issue, Attempt: r.attempt,
			AgentKind: agent, WorkflowPath: "/srv/WORKFLOW.md", StartedAt: r.started})
		if err != nil {
			t.Fatal(err)
		}
		p := store.Progress{Turns: 1, Tokens: r.tokens, CostUSD: r.costUSD}
		if r.status == store.StatusRunning {
			err = s.UpdateRunProgress(ctx, id, p)
		} else {
			d := r.duration
			if d == 0 {
				d = 15 * time.Minute
			}
			err = s.FinishRun(ctx, id, store.RunEnd{Status: r.status, Error: r.err, EndedAt: r.started.Add(d), Progress: p})
		}
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return path, ids
}

// openRO opens the database read-only, as the sidecar does.
func openRO(t *testing.T, path string) *sqlite.Store {
	t.Helper()
	db, err := sqlite.OpenReadOnly(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// failingReader is a RunReader whose queries fail.
type failingReader struct{ err error }

func (f failingReader) RunsForIssue(context.Context, string, int) ([]store.Run, error) {
	return nil, f.err
}

func (f failingReader) IssueTotals(context.Context, []string) (map[string]store.Totals, error) {
	return nil, f.err
}
