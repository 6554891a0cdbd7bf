package server

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"sortie/internal/agent"
	"sortie/internal/orchestrator"
	"sortie/internal/store"
	"sortie/internal/store/sqlite"
)

// t0 is the fixed "now" of the tests.
var t0 = time.Date(2026, 4, 2, 9, 30, 0, 0, time.UTC)

const testToken = "s3cret-token-for-tests-0123456789"

// fakeScheduler stands in for the orchestrator: a snapshot the test sets, and a
// refresh that coalesces like the real one (a second request before the first is
// taken is coalesced).
type fakeScheduler struct {
	mu        sync.Mutex
	snap      orchestrator.Snapshot
	err       error
	block     bool // Snapshot waits for its context to end, like a stuck loop
	pending   bool
	refreshes int
}

func (f *fakeScheduler) Snapshot(ctx context.Context) (orchestrator.Snapshot, error) {
	f.mu.Lock()
	snap, err, block := f.snap, f.err, f.block
	f.mu.Unlock()
	if block {
		<-ctx.Done()
		return orchestrator.Snapshot{}, ctx.Err()
	}
	return snap, err
}

func (f *fakeScheduler) Refresh() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.refreshes++
	coalesced := f.pending
	f.pending = true
	return coalesced
}

func (f *fakeScheduler) set(fn func(*orchestrator.Snapshot)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(&f.snap)
}

// fixture is a server over a fake scheduler and a real SQLite store in a temp dir.
type fixture struct {
	srv   *Server
	sched *fakeScheduler
	st    store.Store
	hub   *Hub
}

// newFixture builds a server; mutate adjusts its options before New.
func newFixture(t testing.TB, mutate func(*Options)) *fixture {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "sortie.db"))
	if err != nil {
		t.Fatalf("sqlite.Open: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	f := &fixture{sched: &fakeScheduler{snap: baseSnapshot()}, st: st, hub: NewHub()}
	o := Options{
		Host: "127.0.0.1", Port: 7678, Version: "1.2.3", WorkflowPath: "/srv/proj/WORKFLOW.md",
		Snapshot: f.sched.Snapshot, Refresh: f.sched.Refresh, Runs: st, Hub: f.hub,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Now:    func() time.Time { return t0 },
	}
	if mutate != nil {
		mutate(&o)
	}
	f.srv, err = New(o)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return f
}

// baseSnapshot is an idle scheduler that started ten minutes before t0.
func baseSnapshot() orchestrator.Snapshot {
	return orchestrator.Snapshot{
		GeneratedAt: t0, StartedAt: t0.Add(-10 * time.Minute), MaxAgents: 4,
		LastPollAt: t0.Add(-5 * time.Second), LastPollOK: true,
		Running: []orchestrator.RunningView{}, Retrying: []orchestrator.RetryView{}, Held: []orchestrator.HeldView{},
	}
}

// request builds a request as a local browser or curl sends it.
func request(method, target string, hdr ...string) *http.Request {
	r := httptest.NewRequest(method, target, nil)
	r.Host = "127.0.0.1:7678"
	for i := 0; i+1 < len(hdr); i += 2 {
		r.Header.Set(hdr[i], hdr[i+1])
	}
	return r
}

// serve runs r through f's handler.
func (f *fixture) serve(r *http.Request) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	f.srv.Handler().ServeHTTP(w, r)
	return w
}

func (f *fixture) get(t testing.TB, target string, hdr ...string) *httptest.ResponseRecorder {
	t.Helper()
	return f.serve(request(http.MethodGet, target, hdr...))
}

// decode parses w's JSON body into v, failing the test on a wrong content type or body.
func decode(t testing.TB, w *httptest.ResponseRecorder, v any) {
	t.Helper()
	if ct := w.Header().Get("Content-Type"); ct != "application/json; charset=utf-8" {
		t.Fatalf("Content-Type = %q, want application/json; charset=utf-8 (body %s)", ct, w.Body)
	}
	if err := json.Unmarshal(w.Body.Bytes(), v); err != nil {
		t.Fatalf("body is not the expected JSON: %v\n%s", err, w.Body)
	}
}

// wantError checks w is status with the error envelope of code.
func wantError(t testing.TB, w *httptest.ResponseRecorder, status int, code string) errorDetail {
	t.Helper()
	if w.Code != status {
		t.Fatalf("status = %d, want %d (body %s)", w.Code, status, w.Body)
	}
	var body errorBody
	decode(t, w, &body)
	if body.Error.Code != code || body.Error.Message == "" {
		t.Fatalf("error = %+v, want code %q and a message", body.Error, code)
	}
	return body.Error
}

// seedRun records a run in the store; end, when not nil, finishes it.
func seedRun(t testing.TB, st store.Store, issueID, identifier string, attempt int, started time.Time, end *store.RunEnd) int64 {
	t.Helper()
	id, err := st.StartRun(context.Background(), store.Run{IssueID: issueID, Identifier: identifier, Attempt: attempt,
		AgentKind: "claude-code", Workspace: "/ws/" + identifier, WorkflowPath: "/srv/proj/WORKFLOW.md", StartedAt: started,
		Process: store.Process{CLIVersion: "2.1.3"}})
	if err != nil {
		t.Fatal(err)
	}
	if end != nil {
		if err := st.FinishRun(context.Background(), id, *end); err != nil {
			t.Fatal(err)
		}
	}
	return id
}

func runningView(n int) orchestrator.RunningView {
	id := "PROJ-" + itoa(n)
	return orchestrator.RunningView{
		IssueID: "id-" + itoa(n), Identifier: id, Title: "Fix the flaky test " + itoa(n), State: "In Progress",
		Attempt: 1, Turn: 3, MaxTurns: 20, SessionID: "sess-" + itoa(n), PID: 4000 + n, Host: "build-1",
		Workspace: "/ws/" + id, StartedAt: t0.Add(-90 * time.Second), LastEventAt: t0.Add(-2 * time.Second),
		LastEvent: "tool_result", LastMessage: "ran go test ./... (ok)",
		Tokens:  agent.Usage{Input: 12000, Output: 3400, Total: 15400, CacheRead: 9000},
		CostUSD: 0.42, Model: "claude-opus-4", ToolCalls: 17, APIRequests: 9, RunID: int64(100 + n),
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func stringBody(s string) io.ReadCloser { return io.NopCloser(strings.NewReader(s)) }
