package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"sortie/internal/agentsock"
	"sortie/internal/agenttools"
	"sortie/internal/config"
	"sortie/internal/mcp/tools"
	"sortie/internal/store"
	"sortie/internal/store/sqlite"
)

// mcpWorkflow is the WORKFLOW.md the sidecar tests run under. Its tracker key is a
// secret the sidecar's environment does not have, as in production.
const mcpWorkflow = `---
tracker:
  kind: file
  path: issues.json
  api_key: $MCP_TEST_TRACKER_SECRET
  active_states: [Todo]
  terminal_states: [Done]
agent:
  kind: mock
  max_turns: 20
  max_tokens: 10000
  max_cost_usd: 10
token_rates:
  mock:
    input_per_mtok: 1000
    output_per_mtok: 2000
---
Work on {{ .issue.identifier }}.
`

// mcpFixture is what a sidecar session can see: a workflow, a workspace with a state
// file, a database with history, and a fake daemon behind an agent socket.
type mcpFixture struct {
	workflow      string
	workspace     string
	dbPath        string
	runningID     int64
	runningDaemon *mcpDaemon
	sock          *agentsock.Server
	token         string
}

func newMCPFixture(t *testing.T) *mcpFixture {
	t.Helper()
	dir := t.TempDir()
	writeFile(t, dir, "issues.json", "[]\n")
	f := &mcpFixture{
		workflow:      writeFile(t, dir, "WORKFLOW.md", mcpWorkflow),
		workspace:     filepath.Join(dir, "workspaces", "PROJ-42"),
		dbPath:        filepath.Join(dir, ".sortie.db"),
		runningDaemon: &mcpDaemon{},
	}
	if err := os.MkdirAll(f.workspace, 0o755); err != nil {
		t.Fatal(err)
	}

	ctx := context.Background()
	db, err := sqlite.Open(ctx, f.dbPath)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	started := time.Date(2026, 3, 30, 13, 0, 0, 0, time.UTC)
	for i, end := range []store.RunEnd{
		{Status: store.StatusSucceeded, Progress: store.Progress{Tokens: store.Tokens{Input: 1000, Output: 500, Total: 1500}}},
		{Status: store.StatusFailed, Error: "agent turn error: turn timeout exceeded", Progress: store.Progress{Tokens: store.Tokens{Input: 2000, Output: 1000, Total: 3000}}},
	} {
		id, err := db.StartRun(ctx, store.Run{IssueID: "42", Identifier: "PROJ-42", Attempt: i + 1, AgentKind: "mock", StartedAt: started})
		if err != nil {
			t.Fatal(err)
		}
		end.EndedAt = started.Add(15 * time.Minute)
		if err := db.FinishRun(ctx, id, end); err != nil {
			t.Fatal(err)
		}
		started = started.Add(time.Hour)
	}
	// Another issue's run, which no session of issue 42 may see.
	other, err := db.StartRun(ctx, store.Run{IssueID: "43", Identifier: "PROJ-43", Attempt: 1, AgentKind: "mock", StartedAt: started})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.FinishRun(ctx, other, store.RunEnd{Status: store.StatusFailed, Error: "issue 43: private failure", EndedAt: started.Add(time.Minute),
		Progress: store.Progress{Tokens: store.Tokens{Input: 9e6, Total: 9e6}}}); err != nil {
		t.Fatal(err)
	}
	f.runningID, err = db.StartRun(ctx, store.Run{IssueID: "42", Identifier: "PROJ-42", Attempt: 3, AgentKind: "mock", StartedAt: started})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.UpdateRunProgress(ctx, f.runningID, store.Progress{Tokens: store.Tokens{Input: 100, Output: 100, Total: 200}}); err != nil {
		t.Fatal(err)
	}
	f.writeState(t, fmt.Sprintf(`{"version":1,"issue_id":"42","issue_identifier":"PROJ-42","run_id":%d,"session_id":"sess-1",`+
		`"turn_number":3,"max_turns":20,"attempt":2,"session_started_at":%q,"updated_at":%q,`+
		`"tokens":{"input_tokens":400,"output_tokens":300,"total_tokens":700,"cache_read_tokens":50},"cost_usd":0}`,
		f.runningID, time.Now().Add(-90*time.Second).Format(time.RFC3339Nano), time.Now().Format(time.RFC3339Nano)))

	// Socket paths are limited to 107 bytes; t.TempDir's can be longer.
	sockDir, err := os.MkdirTemp("", "sortie-mcp-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	if f.sock, err = agentsock.Listen(filepath.Join(sockDir, "agent.sock")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.sock.Close() })
	f.sock.Start(f.runningDaemon)
	f.token = f.sock.Grant(agentsock.Session{IssueID: "42", Identifier: "PROJ-42", RunID: f.runningID})
	return f
}

func (f *mcpFixture) writeState(t *testing.T, content string) {
	t.Helper()
	writeFile(t, f.workspace, ".sortie/state.json", content)
}

// env returns the session environment, as the daemon writes it into .sortie/mcp.json:
// the workspace when asked, the session's identity, and the agent socket with the
// session's token when asked. There is no database path in it.
func (f *mcpFixture) env(workspace, socket bool) []string {
	env := []string{"SORTIE_ISSUE_ID=42", "SORTIE_ISSUE_IDENTIFIER=PROJ-42", fmt.Sprintf("SORTIE_RUN_ID=%d", f.runningID), "SORTIE_SESSION_ID="}
	if workspace {
		env = append(env, "SORTIE_WORKSPACE="+f.workspace)
	}
	if socket {
		env = append(env, "SORTIE_AGENT_SOCKET="+f.sock.Path(), "SORTIE_AGENT_TOKEN="+f.token)
	}
	return env
}

// serveHistory makes the fake daemon serve the run history from its database, as the
// real daemon does (agenttools.Service over its store), under the configuration
// of the workflow with the operator's overrides env, which the sidecar never sees.
func (f *mcpFixture) serveHistory(t *testing.T, env ...string) {
	t.Helper()
	cfg, err := config.Load(f.workflow, config.Options{Env: func(name string) (string, bool) {
		for _, kv := range append(env, "MCP_TEST_TRACKER_SECRET=daemon-secret") {
			if k, v, ok := strings.Cut(kv, "="); ok && k == name {
				return v, true
			}
		}
		return "", false
	}})
	if err != nil {
		t.Fatal(err)
	}
	db, err := sqlite.Open(context.Background(), f.dbPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	f.runningDaemon.mu.Lock()
	defer f.runningDaemon.mu.Unlock()
	f.runningDaemon.history = agenttools.New(agenttools.Options{Config: func() *config.Config { return cfg }, History: db})
}

// mcpDaemon is the daemon's side of the agent socket: canned tracker answers, a
// notification backend that fails on request and, once serveHistory is called, the
// daemon's own run-history service.
type mcpDaemon struct {
	mu       sync.Mutex
	notified []agentsock.NotifyRequest
	history  *agenttools.Service
}

func (d *mcpDaemon) historyService() *agenttools.Service {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.history
}

func (d *mcpDaemon) Runs(ctx context.Context, sess agentsock.Session, limit int) ([]agentsock.RunRecord, *agentsock.Error) {
	if h := d.historyService(); h != nil {
		return h.Runs(ctx, sess, limit)
	}
	return nil, agentsock.Errorf("unsupported_operation", "this daemon serves no run history")
}

func (d *mcpDaemon) Spend(ctx context.Context, sess agentsock.Session) (agentsock.Spend, *agentsock.Error) {
	if h := d.historyService(); h != nil {
		return h.Spend(ctx, sess)
	}
	return agentsock.Spend{}, agentsock.Errorf("unsupported_operation", "this daemon serves no run history")
}

func (d *mcpDaemon) Tracker(_ context.Context, sess agentsock.Session, req agentsock.TrackerRequest) (any, *agentsock.Error) {
	if req.IssueID == "404" {
		return nil, agentsock.Errorf("tracker_not_found", "issue 404 does not exist")
	}
	switch req.Operation {
	case tools.OpFetchIssue:
		return map[string]any{"id": req.IssueID, "identifier": sess.Identifier, "state": "Todo", "labels": []string{}}, nil
	case tools.OpTransitionIssue:
		return map[string]bool{"transitioned": true}, nil
	}
	return []any{}, nil
}

func (d *mcpDaemon) Notify(_ context.Context, _ agentsock.Session, req agentsock.NotifyRequest) (agentsock.NotifyResult, *agentsock.Error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if req.Message == "fail" {
		return agentsock.NotifyResult{}, agentsock.Errorf("notify_error", "webhook answered 500")
	}
	d.notified = append(d.notified, req)
	return agentsock.NotifyResult{Delivered: true}, nil
}

func (d *mcpDaemon) Info() agentsock.SessionInfo {
	return agentsock.SessionInfo{Capabilities: agentsock.Capabilities{TrackerAPI: true, NotifyOperator: true,
		Runs: d.historyService() != nil}, TrackerKind: "file"}
}

// startSidecar runs the built `sortie mcp-server --workflow workflow` (and args) with
// env as its session environment and connects the SDK's client to it over stdio.
// Closing the session (at cleanup) closes the sidecar's stdin; it must then exit 0
// without a data race.
func startSidecar(t *testing.T, workflow string, env []string, args ...string) *sdk.ClientSession {
	t.Helper()
	cs, _ := startSidecarLogged(t, workflow, env, args...)
	return cs
}

// startSidecarLogged is startSidecar that also returns the sidecar's stderr, complete
// once the sidecar has exited.
func startSidecarLogged(t *testing.T, workflow string, env []string, args ...string) (*sdk.ClientSession, func() string) {
	t.Helper()
	cmd := exec.Command(sortieBin, append([]string{"mcp-server", "--workflow", workflow}, args...)...)
	cmd.Env = testEnv(t.TempDir(), env...)
	cmd.Dir = t.TempDir()
	var stderr bytes.Buffer
	var mu sync.Mutex
	cmd.Stderr = &lockedWriter{mu: &mu, w: &stderr}
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "sortie-test", Version: "v0"}, nil).
		Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connecting to sortie mcp-server: %v", err)
	}
	t.Cleanup(func() {
		err := cs.Close()
		mu.Lock()
		defer mu.Unlock()
		if err != nil || cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 0 {
			t.Errorf("sortie mcp-server did not exit 0 when its stdin closed: %v\n%s", err, stderr.String())
		}
		if strings.Contains(stderr.String(), "WARNING: DATA RACE") {
			t.Errorf("the race detector fired in the sidecar:\n%s", stderr.String())
		}
	})
	return cs, func() string {
		mu.Lock()
		defer mu.Unlock()
		return stderr.String()
	}
}

func toolNames(t *testing.T, cs *sdk.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	return names
}

// callMCP calls a tool and returns its result text and isError. It fails the test on a
// protocol error.
func callMCP(t *testing.T, cs *sdk.ClientSession, name string, args any) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("tools/call %s(%v): %v", name, args, err)
	}
	if len(res.Content) != 1 {
		t.Fatalf("tools/call %s: %d content items, want 1", name, len(res.Content))
	}
	text, ok := res.Content[0].(*sdk.TextContent)
	if !ok {
		t.Fatalf("tools/call %s: content is %T, want text", name, res.Content[0])
	}
	var v any
	if err := json.Unmarshal([]byte(text.Text), &v); err != nil || !reflect.DeepEqual(v, res.StructuredContent) {
		t.Errorf("tools/call %s: structuredContent %v does not match the text %s (%v)", name, res.StructuredContent, text.Text, err)
	}
	return text.Text, res.IsError
}

func TestMCP_ToolsListPerGate(t *testing.T) {
	f := newMCPFixture(t)
	f.serveHistory(t)
	tests := []struct {
		name              string
		workspace, socket bool
		extra             []string // more environment
		want              []string // sorted: the SDK lists tools by name
	}{
		{name: "no workspace, no socket"},
		{name: "workspace", workspace: true, want: []string{"sortie_status"}},
		// The spec's database path gives nothing: the run history comes from the
		// daemon.
		{name: "workspace and a database path", workspace: true, extra: []string{"SORTIE_DB_PATH=" + f.dbPath},
			want: []string{"sortie_status"}},
		{name: "workspace and the daemon", workspace: true, socket: true,
			want: []string{"cost_budget", "notify_operator", "sortie_status", "tracker_api", "workspace_history"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cs := startSidecar(t, f.workflow, append(f.env(tt.workspace, tt.socket), tt.extra...))
			if info := cs.InitializeResult().ServerInfo; info.Name != "sortie-tools" || info.Version != testVersion {
				t.Errorf("serverInfo = %+v, want sortie-tools %s", info, testVersion)
			}
			res, err := cs.ListTools(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, tool := range res.Tools {
				got = append(got, tool.Name)
				schema, _ := json.Marshal(tool.InputSchema)
				var s map[string]any
				if err := json.Unmarshal(schema, &s); err != nil || s["type"] != "object" || s["additionalProperties"] != false {
					t.Errorf("%s: inputSchema %s, want an object schema with additionalProperties false", tool.Name, schema)
				}
				if tool.Description == "" {
					t.Errorf("%s: no description", tool.Name)
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("tools/list = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestMCP_ToolEnvelopes(t *testing.T) {
	f := newMCPFixture(t)
	// The daemon has the database open while its agents run, and an operator override
	// raises the budget: the sidecar, which never sees the override, reports the
	// daemon's budget.
	f.serveHistory(t, "SORTIE_AGENT_MAX_TOKENS=12000")
	cs := startSidecar(t, f.workflow, f.env(true, true))

	t.Run("sortie_status", func(t *testing.T) {
		got, isErr := callMCP(t, cs, "sortie_status", map[string]any{})
		var st struct {
			TurnNumber, MaxTurns, TurnsRemaining int
			Attempt                              *int
			Duration                             float64 `json:"session_duration_seconds"`
			Tokens                               map[string]int
		}
		if isErr || json.Unmarshal([]byte(got), &st) != nil {
			t.Fatalf("sortie_status = %s (isError %v)", got, isErr)
		}
		wantPrefix := `{"turn_number":3,"max_turns":20,"turns_remaining":17,"attempt":2,"session_duration_seconds":`
		wantSuffix := `,"tokens":{"input_tokens":400,"output_tokens":300,"total_tokens":700,"cache_read_tokens":50}}`
		// The session started 90 s before the fixture was written; the upper bound
		// only guards against a unit mix-up.
		if !strings.HasPrefix(got, wantPrefix) || !strings.HasSuffix(got, wantSuffix) || st.Duration < 90 || st.Duration > 3600 {
			t.Fatalf("sortie_status = %s\nwant %s<about 90>%s", got, wantPrefix, wantSuffix)
		}
	})

	t.Run("workspace_history", func(t *testing.T) {
		got, isErr := callMCP(t, cs, "workspace_history", nil)
		want := `{"issue_id":"42","entries":[` +
			`{"attempt":2,"agent_adapter":"mock","started_at":"2026-03-30T14:00:00Z","completed_at":"2026-03-30T14:15:00Z","status":"failed","outcome":"failed","error":"agent turn error: turn timeout exceeded"},` +
			`{"attempt":1,"agent_adapter":"mock","started_at":"2026-03-30T13:00:00Z","completed_at":"2026-03-30T13:15:00Z","status":"succeeded","outcome":"succeeded","error":null}]}`
		if isErr || got != want {
			t.Fatalf("workspace_history =\n%s\nwant\n%s", got, want)
		}
	})

	t.Run("cost_budget", func(t *testing.T) {
		got, isErr := callMCP(t, cs, "cost_budget", map[string]any{})
		// Stored: 1500 + 3000 + 200; the running run's live 700 replaces its 200.
		// Priced at the mock rates: 3400 input × $1000/M + 1800 output × $2000/M.
		want := `{"issue_id":"42","spent":{"input_tokens":3400,"output_tokens":1800,"total_tokens":5200,"cache_read_tokens":50,"cost_usd":7},` +
			`"budget":{"max_tokens":12000,"max_cost_usd":10},"remaining":{"tokens":6800,"cost_usd":3},"exhausted":false,` +
			`"runs":3,"includes_running_session":true,"cost_source":"token_rates"}`
		if isErr || got != want {
			t.Fatalf("cost_budget =\n%s\nwant\n%s", got, want)
		}
	})

	envelopes := []struct {
		tool  string
		args  map[string]any
		want  string
		isErr bool
	}{
		{tool: "tracker_api", args: map[string]any{"operation": "fetch_issue", "issue_id": "42"},
			want: `{"success":true,"data":{"id":"42","identifier":"PROJ-42","labels":[],"state":"Todo"}}`},
		{tool: "tracker_api", args: map[string]any{"operation": "transition_issue", "issue_id": "42", "target_state": "Done"},
			want: `{"success":true,"data":{"transitioned":true}}`},
		{tool: "tracker_api", args: map[string]any{"operation": "fetch_issue", "issue_id": "404"}, isErr: true,
			want: `{"success":false,"error":{"kind":"tracker_not_found","message":"issue 404 does not exist"}}`},
		{tool: "tracker_api", args: map[string]any{"operation": "fetch_comments"}, isErr: true,
			want: `{"success":false,"error":{"kind":"invalid_input","message":"issue_id: is required for fetch_comments"}}`},
		{tool: "tracker_api", args: map[string]any{"operation": "delete_issue", "issue_id": "42"}, isErr: true,
			want: `{"success":false,"error":{"kind":"unsupported_operation","message":"operation \"delete_issue\" is not supported; use one of fetch_issue, fetch_comments, search_issues, transition_issue"}}`},
		{tool: "notify_operator", args: map[string]any{"message": "need a decision", "severity": "warning"},
			want: `{"success":true,"data":{"delivered":true}}`},
		{tool: "notify_operator", args: map[string]any{"message": "fail"}, isErr: true,
			want: `{"success":false,"error":{"kind":"notify_error","message":"webhook answered 500"}}`},
		{tool: "notify_operator", args: map[string]any{"message": ""}, isErr: true,
			want: `{"success":false,"error":{"kind":"invalid_input","message":"message: is required and must not be blank"}}`},
	}
	for _, e := range envelopes {
		t.Run(fmt.Sprintf("%s %v", e.tool, e.args), func(t *testing.T) {
			got, isErr := callMCP(t, cs, e.tool, e.args)
			if got != e.want || isErr != e.isErr {
				t.Fatalf("%s(%v) =\n%s (isError %v)\nwant\n%s (isError %v)", e.tool, e.args, got, isErr, e.want, e.isErr)
			}
		})
	}
	f.runningDaemon.mu.Lock()
	notified := f.runningDaemon.notified
	f.runningDaemon.mu.Unlock()
	if len(notified) != 1 || notified[0] != (agentsock.NotifyRequest{Message: "need a decision", Severity: "warning"}) {
		t.Errorf("the daemon was notified %+v, want the one valid warning", notified)
	}

	t.Run("state file gone", func(t *testing.T) {
		if err := os.Remove(filepath.Join(f.workspace, ".sortie", "state.json")); err != nil {
			t.Fatal(err)
		}
		got, isErr := callMCP(t, cs, "sortie_status", map[string]any{})
		want := `{"error":"state file unavailable: open .sortie/state.json: no such file or directory","kind":"state_unavailable"}`
		if !isErr || got != want {
			t.Fatalf("sortie_status = %s (isError %v), want %s", got, isErr, want)
		}
	})

	t.Run("daemon session revoked", func(t *testing.T) {
		f.sock.Revoke(f.token)
		got, isErr := callMCP(t, cs, "tracker_api", map[string]any{"operation": "search_issues"})
		if !isErr || !strings.HasPrefix(got, `{"success":false,"error":{"kind":"unauthorized","message":"the sortie daemon refused this session's token`) {
			t.Fatalf("tracker_api after revocation = %s (isError %v), want unauthorized", got, isErr)
		}
	})

	t.Run("daemon gone", func(t *testing.T) {
		f.sock.Close()
		got, isErr := callMCP(t, cs, "notify_operator", map[string]any{"message": "hello?"})
		if !isErr || !strings.HasPrefix(got, `{"success":false,"error":{"kind":"transport_error","message":"reaching the sortie daemon:`) {
			t.Fatalf("notify_operator with the daemon gone = %s (isError %v), want transport_error", got, isErr)
		}
		got, isErr = callMCP(t, cs, "tracker_api", map[string]any{"operation": "search_issues"})
		if !isErr || !strings.HasPrefix(got, `{"success":false,"error":{"kind":"tracker_transport_error","message":"reaching the sortie daemon:`) {
			t.Fatalf("tracker_api with the daemon gone = %s (isError %v), want tracker_transport_error", got, isErr)
		}
	})
}

// TestMCP_HistoryIsTheTokensIssue: an agent of issue 42 that points SORTIE_ISSUE_ID at
// issue 43 still reads issue 42's history and spend: the daemon answers for the
// token's issue.
func TestMCP_HistoryIsTheTokensIssue(t *testing.T) {
	f := newMCPFixture(t)
	f.serveHistory(t)
	env := append(f.env(true, true), "SORTIE_ISSUE_ID=43")
	cs := startSidecar(t, f.workflow, env)
	for _, tool := range []string{"workspace_history", "cost_budget"} {
		got, isErr := callMCP(t, cs, tool, map[string]any{})
		if isErr || !strings.HasPrefix(got, `{"issue_id":"42",`) || strings.Contains(got, "43") || strings.Contains(got, "9000000") {
			t.Errorf("%s with SORTIE_ISSUE_ID=43 and issue 42's token = %s (isError %v); want issue 42's, and nothing of 43", tool, got, isErr)
		}
	}
}

// TestMCP_WorkflowThatNeedsTheDaemonsOverrides: the daemon reads WORKFLOW.md with its
// SORTIE_* overrides, which the agent does not get. A workflow whose tracker.kind comes
// only from one does not load in the sidecar; in a session that is no failure: the
// tools still come up, with the daemon's settings, and the sidecar says why on stderr.
func TestMCP_WorkflowThatNeedsTheDaemonsOverrides(t *testing.T) {
	f := newMCPFixture(t)
	partial := writeFile(t, filepath.Dir(f.workflow), "PARTIAL.md", strings.Replace(mcpWorkflow, "  kind: file\n", "", 1))
	f.serveHistory(t)
	cs, stderr := startSidecarLogged(t, partial, f.env(true, true))
	want := []string{"cost_budget", "notify_operator", "sortie_status", "tracker_api", "workspace_history"}
	if got := toolNames(t, cs); !slices.Equal(got, want) {
		t.Fatalf("tools/list = %v, want %v", got, want)
	}
	got, isErr := callMCP(t, cs, "cost_budget", map[string]any{})
	if isErr || !strings.Contains(got, `"budget":{"max_tokens":10000,"max_cost_usd":10}`) || !strings.Contains(got, `"cost_source":"token_rates"`) {
		t.Errorf("cost_budget = %s (isError %v); want the daemon's budget and rates", got, isErr)
	}
	if got, isErr := callMCP(t, cs, "sortie_status", map[string]any{}); isErr || !strings.Contains(got, `"max_turns":20`) {
		t.Errorf("sortie_status = %s (isError %v); want the state file's max_turns", got, isErr)
	}
	cs.Close()
	if log := stderr(); !strings.Contains(log, "WORKFLOW.md does not load without the daemon's environment") || !strings.Contains(log, "tracker.kind") {
		t.Errorf("the sidecar's stderr does not say why WORKFLOW.md was not used:\n%s", log)
	}
}

func TestMCP_UnknownToolAndMalformedArgumentsKeepTheSession(t *testing.T) {
	f := newMCPFixture(t)
	f.serveHistory(t)
	cs := startSidecar(t, f.workflow, f.env(true, true))

	_, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "sortie_statuz", Arguments: map[string]any{}})
	if err == nil || !strings.Contains(err.Error(), `unknown tool "sortie_statuz"`) {
		t.Fatalf("calling an unknown tool: err = %v, want an unknown tool error", err)
	}

	malformed := []struct {
		tool string
		args any
		want string
	}{
		{"sortie_status", map[string]any{"verbose": true},
			`{"error":"unknown field \"verbose\": sortie_status takes no arguments (send {})","kind":"invalid_input"}`},
		{"workspace_history", map[string]any{"limit": 3},
			`{"error":"unknown field \"limit\": workspace_history takes no arguments (send {})","kind":"invalid_input"}`},
		{"cost_budget", []string{"x"}, `{"error":"arguments must be a JSON object (got an array)","kind":"invalid_input"}`},
		{"tracker_api", map[string]any{"operation": "fetch_issue", "issue_id": "42", "project": "OTHER"},
			`{"success":false,"error":{"kind":"invalid_input","message":"unknown field \"project\": tracker_api accepts only issue_id, operation, target_state"}}`},
		{"tracker_api", map[string]any{"operation": "fetch_issue", "issue_id": 42},
			`{"success":false,"error":{"kind":"invalid_input","message":"field \"issue_id\" must be a string (got number)"}}`},
		{"notify_operator", map[string]any{"message": "hi", "severity": 3},
			`{"success":false,"error":{"kind":"invalid_input","message":"field \"severity\" must be a string (got number)"}}`},
		{"notify_operator", map[string]any{"message": "hi", "Severity": "critical"},
			`{"success":false,"error":{"kind":"invalid_input","message":"unknown field \"Severity\": notify_operator accepts only message, severity, title"}}`},
	}
	for _, m := range malformed {
		if got, isErr := callMCP(t, cs, m.tool, m.args); !isErr || got != m.want {
			t.Errorf("%s(%v) = %s (isError %v)\nwant %s", m.tool, m.args, got, isErr, m.want)
		}
	}

	// After all that, the session still works.
	if got, isErr := callMCP(t, cs, "tracker_api", map[string]any{"operation": "search_issues"}); isErr || got != `{"success":true,"data":[]}` {
		t.Fatalf("a valid call after the bad ones = %s (isError %v)", got, isErr)
	}
}

func TestMCP_StateFileSymlinkAndOversize(t *testing.T) {
	f := newMCPFixture(t)
	cs := startSidecar(t, f.workflow, f.env(true, false))
	stateFile := filepath.Join(f.workspace, ".sortie", "state.json")
	real, err := os.ReadFile(stateFile)
	if err != nil {
		t.Fatal(err)
	}
	elsewhere := writeFile(t, t.TempDir(), "state.json", string(real))

	tests := []struct {
		name    string
		prepare func(t *testing.T)
		want    string
	}{
		{"symlinked state file", func(t *testing.T) {
			os.Remove(stateFile)
			if err := os.Symlink(elsewhere, stateFile); err != nil {
				t.Fatal(err)
			}
		}, "state file unavailable: .sortie/state.json is a symlink; refusing to follow it"},
		{"symlinked .sortie directory", func(t *testing.T) {
			dir := filepath.Join(f.workspace, ".sortie")
			if err := os.RemoveAll(dir); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(filepath.Dir(elsewhere), dir); err != nil {
				t.Fatal(err)
			}
		}, "state file unavailable: .sortie is a symlink; refusing to follow it"},
		{"oversized state file", func(t *testing.T) {
			os.Remove(filepath.Join(f.workspace, ".sortie"))
			f.writeState(t, strings.TrimSuffix(string(real), "}")+`,"padding":"`+strings.Repeat("x", 5000)+`"}`)
		}, "bytes, larger than the 4096-byte limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.prepare(t)
			got, isErr := callMCP(t, cs, "sortie_status", map[string]any{})
			var e struct{ Error, Kind string }
			if !isErr || json.Unmarshal([]byte(got), &e) != nil || e.Kind != "state_unavailable" || !strings.Contains(e.Error, tt.want) {
				t.Fatalf("sortie_status = %s (isError %v), want a state_unavailable error containing %q", got, isErr, tt.want)
			}
		})
	}
}

// A sidecar an operator runs by hand with --db opens the database read-only at the
// driver level: serving every database-backed tool leaves the file exactly as it was.
func TestMCP_ReadOnlyDatabase(t *testing.T) {
	f := newMCPFixture(t)
	if err := os.Chmod(f.dbPath, 0o444); err != nil {
		t.Fatal(err)
	}
	before := fileDigest(t, f.dbPath)

	cs := startSidecar(t, f.workflow, f.env(true, false), "--db", f.dbPath)
	if got := toolNames(t, cs); !slices.Contains(got, "workspace_history") || !slices.Contains(got, "cost_budget") {
		t.Fatalf("tools/list = %v: the read-only database was not opened", got)
	}
	for _, tool := range []string{"workspace_history", "cost_budget", "workspace_history"} {
		if got, isErr := callMCP(t, cs, tool, map[string]any{}); isErr {
			t.Fatalf("%s on a read-only database = %s", tool, got)
		}
	}
	if err := cs.Close(); err != nil {
		t.Fatalf("closing the sidecar: %v", err)
	}
	if after := fileDigest(t, f.dbPath); after != before {
		t.Fatalf("the database changed while the sidecar served it:\nbefore %s\nafter  %s", before, after)
	}
	for _, suffix := range []string{"-wal", "-journal"} {
		if fi, err := os.Stat(f.dbPath + suffix); err == nil && fi.Size() > 0 {
			t.Errorf("the sidecar left %s%s with %d bytes", filepath.Base(f.dbPath), suffix, fi.Size())
		}
	}
}

// fileDigest is the content hash, size and modification time of a file.
func fileDigest(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("sha256 %x, %d bytes, modified %s", sha256.Sum256(data), fi.Size(), fi.ModTime().Format(time.RFC3339Nano))
}

func TestMCP_StartupFailures(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "issues.json", "[]\n")
	wf := writeFile(t, dir, "WORKFLOW.md", mcpWorkflow)
	bad := writeFile(t, dir, "BAD.md", "---\ntracker:\n  kind: nope\n---\nhi\n")
	tests := []struct {
		name   string
		args   []string
		env    []string
		code   int
		stderr string
	}{
		{name: "no --workflow", args: []string{"mcp-server"}, code: exitUsage, stderr: "--workflow is required"},
		{name: "relative workflow", args: []string{"mcp-server", "--workflow", "WORKFLOW.md"}, code: exitUsage, stderr: "must be an absolute path"},
		{name: "positional argument", args: []string{"mcp-server", "--workflow", wf, "extra"}, code: exitUsage, stderr: `unexpected argument "extra"`},
		{name: "help", args: []string{"mcp-server", "-h"}, code: exitOK, stderr: "-workflow"},
		{name: "invalid workflow", args: []string{"mcp-server", "--workflow", bad}, code: exitFailure, stderr: "tracker.kind"},
		{name: "invalid workflow with --db", args: []string{"mcp-server", "--workflow", bad, "--db", filepath.Join(dir, "sortie.db")},
			env: []string{"SORTIE_WORKSPACE=" + dir}, code: exitFailure, stderr: "tracker.kind"},
		{name: "--db without --workflow", args: []string{"mcp-server", "--workflows", dir, "--db", filepath.Join(dir, "sortie.db")},
			code: exitUsage, stderr: "--db needs --workflow"},
		{name: "malformed session variable", args: []string{"mcp-server", "--workflow", wf}, env: []string{"SORTIE_RUN_ID=abc"},
			code: exitFailure, stderr: `SORTIE_RUN_ID must be a positive integer (got "abc")`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := runSortie(t, dir, testEnv(t.TempDir(), tt.env...), tt.args...)
			if r.code != tt.code || !strings.Contains(r.stderr, tt.stderr) || r.stdout != "" {
				t.Fatalf("sortie %s: want exit %d, stderr containing %q and nothing on stdout (the protocol stream); got:\n%s",
					strings.Join(tt.args, " "), tt.code, tt.stderr, r)
			}
		})
	}
}
