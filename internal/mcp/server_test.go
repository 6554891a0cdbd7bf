package mcp

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"sortie/internal/agentsock"
	"sortie/internal/config"
	"sortie/internal/mcp/tools"
	"sortie/internal/store"
	"sortie/internal/store/sqlite"
)

// connect serves srv in memory and returns a connected SDK client session.
func connect(t *testing.T, srv *sdk.Server) *sdk.ClientSession {
	t.Helper()
	ctx := context.Background()
	st, ct := sdk.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test-client", Version: "v0"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
		ss.Wait()
	})
	return cs
}

func listNames(t *testing.T, cs *sdk.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	return names // the SDK lists tools sorted by name
}

func call(t *testing.T, cs *sdk.ClientSession, name string, args any) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("tools/call %s: %v", name, err)
	}
	if len(res.Content) != 1 {
		t.Fatalf("tools/call %s: %d content items, want 1", name, len(res.Content))
	}
	text := res.Content[0].(*sdk.TextContent).Text
	// The client decodes structuredContent into a map: compare values, not bytes.
	var fromText any
	if err := json.Unmarshal([]byte(text), &fromText); err != nil {
		t.Fatalf("tools/call %s: text %s is not JSON: %v", name, text, err)
	}
	if !reflect.DeepEqual(fromText, res.StructuredContent) {
		t.Errorf("tools/call %s: structuredContent %v differs from the text %s", name, res.StructuredContent, text)
	}
	return text, res.IsError
}

func TestServer_UnknownToolAndPanicsLeaveTheSessionUsable(t *testing.T) {
	var r Registry
	ok := stub("ok_tool")
	ok.body = map[string]int{"n": 1}
	boom := stub("boom")
	boom.panic = true
	r.Register(ok)
	r.Register(boom)
	cs := connect(t, NewServer(&r, "v1", nil))

	if got := listNames(t, cs); !slices.Equal(got, []string{"boom", "ok_tool"}) {
		t.Fatalf("tools/list = %v, want [boom ok_tool]", got)
	}
	_, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "nope", Arguments: map[string]any{}})
	if err == nil || !strings.Contains(err.Error(), `unknown tool "nope"; this session's sortie-tools are: ok_tool, boom`) {
		t.Fatalf("calling an unknown tool: err = %v; want an unknown tool error listing the tools", err)
	}
	got, isErr := call(t, cs, "boom", nil)
	if want := `{"error":"the boom tool failed unexpectedly; please report this as a sortie bug","kind":"internal_error"}`; !isErr || got != want {
		t.Fatalf("a panicking tool answered %s (isError %v); want %s", got, isErr, want)
	}
	if got, isErr := call(t, cs, "ok_tool", nil); isErr || got != `{"n":1}` {
		t.Fatalf("after an unknown tool and a panic, ok_tool answered %s (isError %v)", got, isErr)
	}
}

func TestServer_EmptyRegistryListsNoTools(t *testing.T) {
	cs := connect(t, NewServer(&Registry{}, "v1", nil))
	init := cs.InitializeResult()
	if init.ServerInfo.Name != "sortie-tools" || init.Capabilities.Tools == nil {
		t.Fatalf("initialize: server %+v, capabilities %+v; want sortie-tools with the tools capability", init.ServerInfo, init.Capabilities)
	}
	if got := listNames(t, cs); len(got) != 0 {
		t.Fatalf("tools/list = %v, want none", got)
	}
}

// capDaemon grants the capabilities it is given and answers every call with ok; its
// run history is one failed run of the token's issue, under a budget of 1000 tokens.
type capDaemon struct{ caps agentsock.Capabilities }

func (d capDaemon) Tracker(context.Context, agentsock.Session, agentsock.TrackerRequest) (any, *agentsock.Error) {
	return map[string]bool{"transitioned": true}, nil
}
func (d capDaemon) Notify(context.Context, agentsock.Session, agentsock.NotifyRequest) (agentsock.NotifyResult, *agentsock.Error) {
	return agentsock.NotifyResult{Delivered: true}, nil
}
func (d capDaemon) Info() agentsock.SessionInfo { return agentsock.SessionInfo{Capabilities: d.caps} }
func (d capDaemon) Runs(_ context.Context, sess agentsock.Session, _ int) ([]agentsock.RunRecord, *agentsock.Error) {
	started := time.Date(2026, 3, 30, 13, 0, 0, 0, time.UTC)
	return []agentsock.RunRecord{{ID: 1, Attempt: 1, AgentKind: "mock", Status: "failed", Error: "issue " + sess.IssueID + " failed",
		StartedAt: started, EndedAt: started.Add(time.Minute), Tokens: agentsock.Tokens{Input: 300, Output: 100, Total: 400}}}, nil
}
func (d capDaemon) Spend(_ context.Context, sess agentsock.Session) (agentsock.Spend, *agentsock.Error) {
	return agentsock.Spend{Runs: 1, Tokens: agentsock.Tokens{Input: 300, Output: 100, Total: 400}, MaxTokens: 1000}, nil
}

// listenCaps serves a capDaemon granting caps on a socket in dir and returns the
// socket's path and a token for issue 1.
func listenCaps(t *testing.T, dir, name string, caps agentsock.Capabilities) (string, string) {
	t.Helper()
	srv, err := agentsock.Listen(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	srv.Start(capDaemon{caps})
	return srv.Path(), srv.Grant(agentsock.Session{IssueID: "1"})
}

func TestStart_Gates(t *testing.T) {
	ws := t.TempDir()
	dbPath := filepath.Join(t.TempDir(), "sortie.db")
	db, err := sqlite.Open(context.Background(), dbPath)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.StartRun(context.Background(), store.Run{IssueID: "1", Identifier: "P-1", Attempt: 1, AgentKind: "mock", StartedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	db.Close()

	sockDir, err := os.MkdirTemp("", "sock")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	allSock, allTok := listenCaps(t, sockDir, "all.sock", agentsock.Capabilities{TrackerAPI: true, NotifyOperator: true, Runs: true})
	bothSock, bothTok := listenCaps(t, sockDir, "both.sock", agentsock.Capabilities{TrackerAPI: true, NotifyOperator: true})
	trackerSock, trackerTok := listenCaps(t, sockDir, "tracker.sock", agentsock.Capabilities{TrackerAPI: true})

	tests := []struct {
		name string
		env  Env
		db   string // --db
		want []string
	}{
		{name: "no environment", want: nil},
		{name: "workspace", env: Env{Workspace: ws}, want: []string{"sortie_status"}},
		{name: "everything from the daemon", env: Env{Workspace: ws, IssueID: "1", AgentSocket: allSock, AgentToken: allTok},
			want: []string{"sortie_status", "workspace_history", "cost_budget", "tracker_api", "notify_operator"}},
		{name: "a daemon that grants no run history", env: Env{Workspace: ws, IssueID: "1", AgentSocket: bothSock, AgentToken: bothTok},
			want: []string{"sortie_status", "tracker_api", "notify_operator"}},
		{name: "only the capabilities the daemon grants", env: Env{AgentSocket: trackerSock, AgentToken: trackerTok},
			want: []string{"tracker_api"}},
		{name: "a token the daemon refuses", env: Env{Workspace: ws, AgentSocket: allSock, AgentToken: "forged"}, want: []string{"sortie_status"}},
		{name: "a socket nobody listens on", env: Env{AgentSocket: filepath.Join(sockDir, "none.sock"), AgentToken: allTok}, want: nil},
		{name: "a socket without a token", env: Env{AgentSocket: allSock}, want: nil},
		// An operator's own sidecar (--db).
		{name: "--db without an issue", env: Env{Workspace: ws}, db: dbPath, want: []string{"sortie_status"}},
		{name: "--db", env: Env{Workspace: ws, IssueID: "1"}, db: dbPath,
			want: []string{"sortie_status", "workspace_history", "cost_budget"}},
		{name: "--db that does not open", env: Env{Workspace: ws, IssueID: "1"}, db: filepath.Join(ws, "missing.db"),
			want: []string{"sortie_status"}},
		{name: "--db and a daemon", env: Env{Workspace: ws, IssueID: "1", AgentSocket: bothSock, AgentToken: bothTok}, db: dbPath,
			want: []string{"sortie_status", "workspace_history", "cost_budget", "tracker_api", "notify_operator"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Start(context.Background(), Options{Env: tt.env, DBPath: tt.db, Config: &config.Config{}, Version: "v1"})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if !slices.Equal(s.Tools(), tt.want) || !slices.Equal(Offered(s.Gates), tt.want) {
				t.Fatalf("Start registered %v (gates %+v); want %v", s.Tools(), s.Gates, tt.want)
			}
			if got := listNames(t, connect(t, s.Server())); !slices.Equal(got, slices.Sorted(slices.Values(tt.want))) {
				t.Fatalf("tools/list = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestStart_RunHistoryComesFromTheDaemon: with no WORKFLOW.md configuration at all (it
// may not load without the daemon's overrides), workspace_history and cost_budget
// answer from the daemon, for the token's issue whatever SORTIE_ISSUE_ID says, and
// against the daemon's budget.
func TestStart_RunHistoryComesFromTheDaemon(t *testing.T) {
	sockDir, err := os.MkdirTemp("", "sock")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	sock, tok := listenCaps(t, sockDir, "a.sock", agentsock.Capabilities{Runs: true})
	s, err := Start(context.Background(), Options{Env: Env{Workspace: t.TempDir(), IssueID: "2", AgentSocket: sock, AgentToken: tok}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cs := connect(t, s.Server())
	want := `{"issue_id":"1","entries":[{"attempt":1,"agent_adapter":"mock","started_at":"2026-03-30T13:00:00Z",` +
		`"completed_at":"2026-03-30T13:01:00Z","status":"failed","outcome":"failed","error":"issue 1 failed"}]}`
	if got, isErr := call(t, cs, tools.NameHistory, map[string]any{}); isErr || got != want {
		t.Errorf("workspace_history =\n%s (isError %v)\nwant\n%s", got, isErr, want)
	}
	want = `{"issue_id":"1","spent":{"input_tokens":300,"output_tokens":100,"total_tokens":400,"cache_read_tokens":0,"cost_usd":0},` +
		`"budget":{"max_tokens":1000,"max_cost_usd":null},"remaining":{"tokens":600,"cost_usd":null},"exhausted":false,` +
		`"runs":1,"includes_running_session":false,"cost_source":"reported"}`
	if got, isErr := call(t, cs, tools.NameBudget, map[string]any{}); isErr || got != want {
		t.Errorf("cost_budget =\n%s (isError %v)\nwant\n%s", got, isErr, want)
	}
}

func TestStart_RefusesWhatItCannotServe(t *testing.T) {
	tests := []struct {
		name string
		o    Options
	}{
		{"nothing at all", Options{}},
		{"--db without a configuration", Options{Env: Env{IssueID: "1", ToolTimeout: time.Second}, DBPath: "/srv/sortie.db"}},
	}
	for _, tt := range tests {
		if s, err := Start(context.Background(), tt.o); err == nil {
			s.Close()
			t.Errorf("%s: Start succeeded, want an error", tt.name)
		}
	}
}

func TestStart_ToolsReachTheirDependencies(t *testing.T) {
	sockDir, err := os.MkdirTemp("", "sock")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	sock, tok := listenCaps(t, sockDir, "a.sock", agentsock.Capabilities{TrackerAPI: true, NotifyOperator: true})
	s, err := Start(context.Background(), Options{Env: Env{AgentSocket: sock, AgentToken: tok}, Config: &config.Config{}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cs := connect(t, s.Server())
	args := map[string]any{"operation": "transition_issue", "issue_id": "1", "target_state": "Done"}
	if got, isErr := call(t, cs, tools.NameTracker, args); isErr || got != `{"success":true,"data":{"transitioned":true}}` {
		t.Errorf("tracker_api = %s (isError %v)", got, isErr)
	}
	if got, isErr := call(t, cs, tools.NameNotify, map[string]any{"message": "hi"}); isErr || got != `{"success":true,"data":{"delivered":true}}` {
		t.Errorf("notify_operator = %s (isError %v)", got, isErr)
	}
}
