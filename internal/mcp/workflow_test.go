package mcp

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"sortie/internal/agentsock"
	"sortie/internal/config"
	"sortie/internal/workflow"
	"sortie/internal/workflow/engine"
)

// writeLibrary writes a one-workflow library (demo: one activity, work, with one
// step) into a new directory and returns it.
func writeLibrary(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"demo/workflow.json": `{"id":"demo","version":"1.0.0","title":"Demo","description":"A one-activity workflow.","initialActivity":"work"}`,
		"demo/activities/01-work.json": `{"id":"work","version":"1.0.0","name":"Work",` +
			`"steps":[{"id":"do-it","name":"Do it"}]}`,
	}
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// newEngine is a standalone engine over the library in dir, with in-memory state.
func newEngine(t *testing.T, dir string) *engine.Engine {
	t.Helper()
	lib, err := workflow.LoadLibrary(dir)
	if err != nil {
		t.Fatal(err)
	}
	state, err := engine.NewMemoryState("")
	if err != nil {
		t.Fatal(err)
	}
	e, err := engine.New(engine.Options{Library: func() *workflow.Library { return lib }, Key: make([]byte, 32), State: state, Version: "v1"})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// callResult calls a tool and returns its result and its body when that is an object
// (else nil); the text content and structuredContent must agree.
func callResult(t *testing.T, cs *sdk.ClientSession, name string, args any) (*sdk.CallToolResult, map[string]any) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("tools/call %s: %v", name, err)
	}
	if len(res.Content) != 1 {
		t.Fatalf("tools/call %s: %d content items, want 1", name, len(res.Content))
	}
	var v any
	text := res.Content[0].(*sdk.TextContent).Text
	if err := json.Unmarshal([]byte(text), &v); err != nil {
		t.Fatalf("tools/call %s: text %s is not JSON: %v", name, text, err)
	}
	if !reflect.DeepEqual(v, res.StructuredContent) {
		t.Errorf("tools/call %s: structuredContent %v differs from the text %s", name, res.StructuredContent, text)
	}
	body, _ := v.(map[string]any)
	return res, body
}

func TestWorkflows_StandaloneListsTheTwelveWithTheirSchemas(t *testing.T) {
	s, err := Start(context.Background(), Options{Workflows: newEngine(t, writeLibrary(t)), Version: "v1"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !slices.Equal(s.Tools(), engine.Names()) || !s.Gates.Workflows {
		t.Fatalf("registered %v (gates %+v); want the workflow tools %v", s.Tools(), s.Gates, engine.Names())
	}
	res, err := connect(t, s.Server()).ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	specs := engine.Specs()
	if len(res.Tools) != len(specs) {
		t.Fatalf("tools/list has %d tools, want %d", len(res.Tools), len(specs))
	}
	for _, tool := range res.Tools {
		i := slices.IndexFunc(specs, func(s engine.Spec) bool { return s.Name == tool.Name })
		if i < 0 {
			t.Errorf("tools/list has %s, which is no workflow tool", tool.Name)
			continue
		}
		var got, want any
		b, _ := json.Marshal(tool.InputSchema)
		json.Unmarshal(b, &got)
		json.Unmarshal(specs[i].InputSchema, &want)
		if !reflect.DeepEqual(got, want) || tool.Description != specs[i].Description {
			t.Errorf("%s: schema %s, description %q; want the engine's", tool.Name, b, tool.Description)
		}
		if tool.Annotations == nil || tool.Annotations.ReadOnlyHint != specs[i].ReadOnly || *tool.Annotations.OpenWorldHint {
			t.Errorf("%s: annotations %+v; want readOnlyHint %v and no open world", tool.Name, tool.Annotations, specs[i].ReadOnly)
		}
	}
}

func TestWorkflows_StandaloneCallsCarryTheTokenInBodyAndMeta(t *testing.T) {
	s, err := Start(context.Background(), Options{Workflows: newEngine(t, writeLibrary(t))})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cs := connect(t, s.Server())

	if res, body := callResult(t, cs, "discover", map[string]any{}); res.IsError {
		t.Fatalf("discover failed: %v", body)
	}
	res, body := callResult(t, cs, "start_session", map[string]any{"workflow_id": "demo"})
	tok, _ := body["session_token"].(string)
	if res.IsError || tok == "" || res.Meta["session_token"] != tok {
		t.Fatalf("start_session = %v (isError %v, _meta %v); want the same session_token in the body and _meta", body, res.IsError, res.Meta)
	}
	res, body = callResult(t, cs, "next_activity", map[string]any{"session_token": tok, "activity_id": "work"})
	if res.IsError || res.Meta["session_token"] == nil || res.Meta["session_token"] == tok || res.Meta["trace_token"] == nil {
		t.Fatalf("next_activity = %v (_meta %v); want a new session_token and a trace_token in _meta", body, res.Meta)
	}
	// The token was superseded: only the newest is accepted.
	res, body = callResult(t, cs, "get_workflow", map[string]any{"session_token": tok})
	if !res.IsError || body["kind"] != "token_stale" || body["error"] == nil || res.Meta["session_token"] != nil {
		t.Fatalf("get_workflow with a superseded token = %v (isError %v, _meta %v); want an {error, kind} error without _meta", body, res.IsError, res.Meta)
	}
}

// Every workflow tool refuses an argument its schema does not list, as invalid_input
// naming the argument, through the MCP server.
func TestWorkflows_UnknownArgumentIsInvalidInput(t *testing.T) {
	s, err := Start(context.Background(), Options{Workflows: newEngine(t, writeLibrary(t))})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cs := connect(t, s.Server())
	for _, name := range engine.Names() {
		res, body := callResult(t, cs, name, map[string]any{"session_token": "x", "workflow_id": "demo", "bogus_arg": 1})
		msg, _ := body["error"].(string)
		if !res.IsError || body["kind"] != "invalid_input" || !strings.Contains(msg, "bogus_arg") {
			t.Errorf("%s with an unknown argument = %v (isError %v); want invalid_input naming bogus_arg", name, body, res.IsError)
		}
	}
	big := map[string]any{"workflow_id": strings.Repeat("x", 70<<10)}
	if res, body := callResult(t, cs, "start_session", big); !res.IsError || body["kind"] != "invalid_input" {
		t.Errorf("start_session with 70 KiB of arguments = %v; want invalid_input", body)
	}
}

// daemonWorkflows is the daemon's side of the agent socket for the workflow tools:
// it grants the capabilities it is given and answers each call with the caller it saw.
type daemonWorkflows struct {
	capDaemon
	block chan struct{} // when not nil, calls wait for it or their deadline
	mu    sync.Mutex
	calls []string
	sess  []agentsock.Session
}

func (d *daemonWorkflows) Workflow(ctx context.Context, sess agentsock.Session, tool string, args json.RawMessage) (agentsock.WorkflowResult, *agentsock.Error) {
	d.mu.Lock()
	d.calls = append(d.calls, tool+" "+string(args))
	d.sess = append(d.sess, sess)
	d.mu.Unlock()
	if d.block != nil {
		select {
		case <-d.block:
		case <-ctx.Done():
		}
	}
	if tool == "get_trace" {
		return agentsock.WorkflowResult{IsError: true, Body: json.RawMessage(`{"error":"session_token: missing","kind":"invalid_input"}`)}, nil
	}
	return agentsock.WorkflowResult{Body: json.RawMessage(`{"issue":"` + sess.Identifier + `","session_token":"t1"}`),
		Meta: map[string]any{"session_token": "t1"}}, nil
}

// daemonSocket serves d on a new socket and returns the socket's path and a token
// granted for issue 10042.
func daemonSocket(t *testing.T, d agentsock.Handler) (*agentsock.Server, string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "sock")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	srv, err := agentsock.Listen(filepath.Join(dir, "a.sock"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	srv.Start(d)
	return srv, srv.Grant(agentsock.Session{IssueID: "10042", Identifier: "PROJ-42", RunID: 17})
}

func TestWorkflows_DaemonOffersThemOnlyWithTheCapability(t *testing.T) {
	for _, granted := range []bool{false, true} {
		d := &daemonWorkflows{capDaemon: capDaemon{agentsock.Capabilities{TrackerAPI: true, Workflows: granted}}}
		srv, tok := daemonSocket(t, d)
		s, err := Start(context.Background(), Options{Env: Env{AgentSocket: srv.Path(), AgentToken: tok}, Config: &config.Config{}})
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"tracker_api"}
		if granted {
			want = append(want, engine.Names()...)
		}
		if !slices.Equal(s.Tools(), want) || !slices.Equal(Offered(s.Gates), want) {
			t.Errorf("workflows granted %v: registered %v, want %v", granted, s.Tools(), want)
		}
		s.Close()
	}
}

func TestWorkflows_DaemonCallsAreForwardedAsTheSession(t *testing.T) {
	d := &daemonWorkflows{capDaemon: capDaemon{agentsock.Capabilities{Workflows: true}}}
	srv, tok := daemonSocket(t, d)
	s, err := Start(context.Background(), Options{Env: Env{AgentSocket: srv.Path(), AgentToken: tok, ToolTimeout: time.Minute}, Config: &config.Config{}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cs := connect(t, s.Server())

	res, body := callResult(t, cs, "start_session", map[string]any{"workflow_id": "demo"})
	if res.IsError || body["issue"] != "PROJ-42" || body["session_token"] != "t1" || res.Meta["session_token"] != "t1" {
		t.Fatalf("start_session = %v (isError %v, _meta %v)", body, res.IsError, res.Meta)
	}
	res, body = callResult(t, cs, "get_trace", map[string]any{})
	if !res.IsError || body["kind"] != "invalid_input" {
		t.Fatalf("get_trace = %v (isError %v); want the daemon's error answer", body, res.IsError)
	}
	d.mu.Lock()
	calls, sess := slices.Clone(d.calls), slices.Clone(d.sess)
	d.mu.Unlock()
	want := agentsock.Session{IssueID: "10042", Identifier: "PROJ-42", RunID: 17}
	if !slices.Equal(calls, []string{`start_session {"workflow_id":"demo"}`, `get_trace {}`}) || sess[0] != want || sess[1] != want {
		t.Fatalf("the daemon saw %q as %+v; want both calls as %+v", calls, sess, want)
	}

	srv.Close()
	res, body = callResult(t, cs, "discover", map[string]any{})
	if msg, _ := body["error"].(string); !res.IsError || body["kind"] != "transport_error" || !strings.Contains(msg, "reaching the sortie daemon") {
		t.Fatalf("discover with the daemon gone = %v; want transport_error saying the daemon could not be reached", body)
	}
}

func TestWorkflows_DaemonCallIsBoundedAndTokenRevocationSaysSo(t *testing.T) {
	d := &daemonWorkflows{capDaemon: capDaemon{agentsock.Capabilities{Workflows: true}}, block: make(chan struct{})}
	defer close(d.block)
	srv, tok := daemonSocket(t, d)
	s, err := Start(context.Background(), Options{Env: Env{AgentSocket: srv.Path(), AgentToken: tok, ToolTimeout: 50 * time.Millisecond}, Config: &config.Config{}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cs := connect(t, s.Server())
	res, body := callResult(t, cs, "discover", map[string]any{})
	if msg, _ := body["error"].(string); !res.IsError || body["kind"] != "transport_error" || !strings.Contains(msg, "no answer from the sortie daemon within 50ms") {
		t.Fatalf("discover on a stuck daemon = %v; want transport_error naming the timeout", body)
	}
	srv.Revoke(tok)
	res, body = callResult(t, cs, "discover", map[string]any{})
	if msg, _ := body["error"].(string); !res.IsError || body["kind"] != "unauthorized" || !strings.Contains(msg, "refused this session's token") {
		t.Fatalf("discover after revocation = %v; want unauthorized", body)
	}
}

// With its own engine and a daemon that grants workflows too, the sidecar serves the
// session tools and answers the workflow tools itself, never registering them twice.
func TestWorkflows_LocalEngineBesideTheSessionTools(t *testing.T) {
	d := &daemonWorkflows{capDaemon: capDaemon{agentsock.Capabilities{NotifyOperator: true, Workflows: true}}}
	srv, tok := daemonSocket(t, d)
	s, err := Start(context.Background(), Options{Env: Env{Workspace: t.TempDir(), AgentSocket: srv.Path(), AgentToken: tok},
		Config: &config.Config{}, Workflows: newEngine(t, writeLibrary(t))})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if want := append([]string{"sortie_status", "notify_operator"}, engine.Names()...); !slices.Equal(s.Tools(), want) {
		t.Fatalf("registered %v, want %v", s.Tools(), want)
	}
	cs := connect(t, s.Server())
	if res, _ := callResult(t, cs, "list_workflows", map[string]any{}); res.IsError || !strings.Contains(mustJSON(t, res.StructuredContent), `"id":"demo"`) {
		t.Fatalf("list_workflows = %v; want the local library's demo", res.StructuredContent)
	}
	if len(d.calls) != 0 {
		t.Errorf("the daemon was asked %v; the local engine should answer", d.calls)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
