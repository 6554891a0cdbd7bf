package mock

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.yaml.in/yaml/v3"

	"sortie/internal/agent"
)

// The fake MCP server: this test binary, started by the mock child from
// .sortie/mcp.json with fakeMCPServerEnv=1 (see TestMain). It serves two tools:
//
//   - advance: takes an optional session_token "tok-N" and returns "tok-N+1" (tok-1
//     without one) in _meta.session_token with _meta.trace_token "trace-tok-N+1", or,
//     with via: text, as the top-level session_token of a JSON text result and no
//     _meta. A token it did not issue is an error result, so a broken thread shows.
//   - record: appends its arguments, as one JSON line, to the file named by
//     fakeMCPRecordEnv, and returns "recorded"; with fail: true it returns an error
//     result instead.
const (
	fakeMCPServerEnv = "SORTIE_MOCK_TEST_MCP_SERVER"
	fakeMCPRecordEnv = "SORTIE_MOCK_TEST_MCP_RECORD"
)

func serveFakeMCP() int {
	s := mcp.NewServer(&mcp.Implementation{Name: "fake-sortie-tools", Version: "v0"}, nil)
	object := map[string]any{"type": "object"}
	s.AddTool(&mcp.Tool{Name: "advance", InputSchema: object}, fakeAdvance)
	s.AddTool(&mcp.Tool{Name: "record", InputSchema: object}, fakeRecord)
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(os.Stderr, "fake MCP server:", err)
	}
	return 0
}

func textResult(isError bool, text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: isError, Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}

func fakeAdvance(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var in struct {
		SessionToken string `json:"session_token"`
		Via          string `json:"via"`
	}
	if err := json.Unmarshal(req.Params.Arguments, &in); err != nil {
		return textResult(true, "bad arguments: "+err.Error()), nil
	}
	n := 0
	if in.SessionToken != "" {
		if _, err := fmt.Sscanf(in.SessionToken, "tok-%d", &n); err != nil {
			return textResult(true, fmt.Sprintf("unknown session token %q", in.SessionToken)), nil
		}
	}
	next := fmt.Sprintf("tok-%d", n+1)
	if in.Via == "text" {
		return textResult(false, `{"session_token":"`+next+`","note":"in the text"}`), nil
	}
	res := textResult(false, "advanced to "+next)
	res.Meta = mcp.Meta{"session_token": next, "trace_token": "trace-" + next}
	return res, nil
}

func fakeRecord(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var args map[string]any
	if err := json.Unmarshal(req.Params.Arguments, &args); err != nil {
		return textResult(true, "bad arguments: "+err.Error()), nil
	}
	if args["fail"] == true {
		return textResult(true, "refused: asked to fail"), nil
	}
	line, _ := json.Marshal(args) // sorted keys
	f, err := os.OpenFile(os.Getenv(fakeMCPRecordEnv), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return textResult(true, err.Error()), nil
	}
	defer f.Close()
	if _, err := f.Write(append(line, '\n')); err != nil {
		return textResult(true, err.Error()), nil
	}
	return textResult(false, "recorded"), nil
}

// mcpWorkspace makes a workspace whose .sortie/mcp.json runs the fake server as
// sortie-tools, as the daemon would, and returns it with the record file's path.
func mcpWorkspace(t *testing.T) (ws, record string) {
	t.Helper()
	ws, record = t.TempDir(), filepath.Join(t.TempDir(), "record.jsonl")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	writeMCPConfig(t, ws, map[string]any{"mcpServers": map[string]any{
		"sortie-tools": map[string]any{
			"type": "stdio", "command": exe, "args": []string{},
			"env": map[string]string{fakeMCPServerEnv: "1", fakeMCPRecordEnv: record},
		},
		"remote": map[string]any{"type": "http", "url": "http://127.0.0.1:1/mcp"},
	}})
	return ws, record
}

func writeMCPConfig(t *testing.T, ws string, doc any) {
	t.Helper()
	data, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(ws, ".sortie"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, ".sortie", "mcp.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func newAdapterYAML(t *testing.T, src string) *adapter {
	t.Helper()
	var raw map[string]any
	if err := yaml.Unmarshal([]byte(src), &raw); err != nil {
		t.Fatalf("test YAML: %v", err)
	}
	return newAdapter(t, "", raw)
}

// readLines returns the non-empty lines of a file, or none if it does not exist.
func readLines(t *testing.T, name string) []string {
	t.Helper()
	f, err := os.Open(name)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if sc.Text() != "" {
			lines = append(lines, sc.Text())
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return lines
}

// toolResults is the tool name of each tool_result event, with "!" appended to the
// ones flagged as errors.
func (o turnOutput) toolResults() []string {
	var names []string
	for _, e := range o.events {
		if e.Type == agent.EventToolResult {
			names = append(names, e.ToolName+map[bool]string{true: "!"}[e.ToolError])
		}
	}
	return names
}

func TestMCPCalls_ThreadTokensAcrossCallsTurnsAndSessions(t *testing.T) {
	a := newAdapterYAML(t, `
events_per_turn: 0
tool_calls: [{name: Bash}]
mcp_calls:
  - - {tool: advance}
    - {tool: advance, arguments: {session_token: $session_token}}
    - tool: record
      arguments:
        token: $session_token
        nested: {list: [$session_token, "keep $session_token", 7]}
        traces: $trace_tokens
  - - {tool: advance, arguments: {session_token: $session_token, via: text}}
    - {tool: record, arguments: {token: $session_token}}
  - - {tool: advance, server: sortie-tools, arguments: {session_token: $session_token}}
    - {tool: record, arguments: {token: $session_token, traces: $trace_tokens}}
`)
	ws, record := mcpWorkspace(t)

	// Two turns of one session, then two of a resumed session in the same workspace:
	// groups 0, 1, 2, then nothing.
	var outs []turnOutput
	s1 := startSession(t, a, ws)
	outs = append(outs, runTurn(t, t.Context(), a, s1, 1), runTurn(t, t.Context(), a, s1, 2))
	s2 := startSession(t, a, ws)
	outs = append(outs, runTurn(t, t.Context(), a, s2, 1), runTurn(t, t.Context(), a, s2, 2))

	wantTools := [][]string{
		{"advance", "advance", "record", "Bash"},
		{"advance", "record", "Bash"},
		{"advance", "record", "Bash"},
		{"Bash"},
	}
	for i, out := range outs {
		if out.err != nil {
			t.Fatalf("turn %d: %v", i+1, out.err)
		}
		if got := out.toolResults(); !slices.Equal(got, wantTools[i]) {
			t.Errorf("turn %d: want tool_result events %v, got %v", i+1, wantTools[i], got)
		}
	}

	wantRecords := []string{
		`{"nested":{"list":["tok-2","keep $session_token",7]},"token":"tok-2","traces":["trace-tok-1","trace-tok-2"]}`,
		`{"token":"tok-3"}`,
		`{"token":"tok-4","traces":["trace-tok-1","trace-tok-2","trace-tok-4"]}`,
	}
	if got := readLines(t, record); !slices.Equal(got, wantRecords) {
		t.Errorf("the server's record of arguments:\nwant %s\ngot  %s", strings.Join(wantRecords, "\n     "), strings.Join(got, "\n     "))
	}

	var st mcpState
	if err := json.Unmarshal([]byte(readFile(t, filepath.Join(ws, mcpStateFile))), &st); err != nil {
		t.Fatal(err)
	}
	if st.NextGroup != 3 || st.SessionToken != "tok-4" || !slices.Equal(st.TraceTokens, []string{"trace-tok-1", "trace-tok-2", "trace-tok-4"}) {
		t.Errorf("%s: want next_group 3, session_token tok-4 and three trace tokens, got %+v", mcpStateFile, st)
	}

	logLines := readLines(t, filepath.Join(ws, mcpLogFile))
	if len(logLines) != 7 {
		t.Fatalf("%s: want 7 lines, one per call, got %d:\n%s", mcpLogFile, len(logLines), strings.Join(logLines, "\n"))
	}
	var first, second, textToken mcpCallLog
	for i, dst := range map[int]*mcpCallLog{0: &first, 1: &second, 3: &textToken} {
		if err := json.Unmarshal([]byte(logLines[i]), dst); err != nil {
			t.Fatalf("%s line %d: %v", mcpLogFile, i+1, err)
		}
	}
	if first.SessionID != s1.ID || first.Group != 0 || first.Call != 0 || first.Server != "sortie-tools" || first.Tool != "advance" ||
		first.IsError || first.Text != "advanced to tok-1" || first.Meta["session_token"] != "tok-1" || len(first.Arguments) != 0 {
		t.Errorf("log line 1: want session %s, group 0 call 0, sortie-tools/advance, no arguments, text and meta of tok-1; got %+v", s1.ID, first)
	}
	if second.Call != 1 || second.Arguments["session_token"] != "tok-1" || second.Meta["trace_token"] != "trace-tok-2" {
		t.Errorf("log line 2: want the substituted argument tok-1 and trace-tok-2 in meta, got %+v", second)
	}
	if textToken.Group != 1 || textToken.Text != `{"session_token":"tok-3","note":"in the text"}` || textToken.Meta["session_token"] != nil {
		t.Errorf("log line 4: want group 1, the JSON text carrying tok-3, no session token in meta; got %+v", textToken)
	}
}

func TestMCPCalls_ExpectErrorAndFailures(t *testing.T) {
	advance := `{tool: advance}`
	failing := `{tool: record, arguments: {fail: true}}`
	tests := []struct {
		name      string
		calls     string // the YAML of the only group
		setup     func(t *testing.T, ws string)
		wantErr   string // "" for a successful turn
		wantTools []string
		records   int // calls that reached the record tool
	}{
		{name: "expected error result", calls: `[{tool: record, arguments: {fail: true}, expect_error: true}, {tool: record}]`,
			wantTools: []string{"record!", "record"}, records: 1},
		{name: "unexpected error result", calls: "[" + failing + ", {tool: record}]",
			wantErr:   `mock: mcp_calls[0][0] sortie-tools/record: is_error true, want false (expect_error); result: refused: asked to fail`,
			wantTools: []string{"record!"}},
		{name: "expected error that did not come", calls: `[{tool: record, expect_error: true}]`,
			wantErr: `mcp_calls[0][0] sortie-tools/record: is_error false, want true (expect_error); result: recorded`, wantTools: []string{"record"}, records: 1},
		{name: "unknown tool", calls: `[{tool: nosuch}]`,
			wantErr: `mcp_calls[0][0] sortie-tools/nosuch: `, wantTools: []string{"nosuch!"}},
		{name: "session token before any was seen", calls: `[{tool: record, arguments: {t: [$session_token]}}]`,
			wantErr: `mcp_calls[0][0] sortie-tools/record: $session_token: no earlier result carried a session token`},
		{name: "server not configured", calls: "[" + advance + ", {tool: x, server: other}]",
			wantErr: `mcp_calls[0][1] other/x: .sortie/mcp.json: no server "other" in mcpServers (have: remote, sortie-tools)`, wantTools: []string{"advance"}},
		{name: "server is not stdio", calls: `[{tool: x, server: remote}]`,
			wantErr: `server "remote" has type "http"; the mock agent only starts stdio servers`},
		{name: "no mcp.json", calls: "[" + advance + "]",
			setup:   func(t *testing.T, ws string) { os.Remove(filepath.Join(ws, ".sortie", "mcp.json")) },
			wantErr: `mcp_calls[0][0] sortie-tools/advance: .sortie/mcp.json: missing`},
		{name: "server cannot start", calls: "[" + advance + "]",
			setup: func(t *testing.T, ws string) {
				writeMCPConfig(t, ws, map[string]any{"mcpServers": map[string]any{"sortie-tools": map[string]any{"command": filepath.Join(ws, "no-such-server")}}})
			},
			wantErr: `mcp_calls[0][0] sortie-tools/advance: starting MCP server "sortie-tools" (` /* its path */},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := newAdapterYAML(t, "events_per_turn: 0\nmcp_calls: [["+strings.Trim(tt.calls, "[]")+"]]\n")
			ws, record := mcpWorkspace(t)
			if tt.setup != nil {
				tt.setup(t, ws)
			}
			out := runTurn(t, t.Context(), a, startSession(t, a, ws), 1)
			if tt.wantErr == "" {
				if out.err != nil || out.res.ExitReason != agent.EventTurnCompleted {
					t.Fatalf("want a completed turn, got %s: %v", out.res.ExitReason, out.err)
				}
			} else {
				if agent.KindOf(out.err) != agent.ErrTurnFailed || !strings.Contains(out.err.Error(), tt.wantErr) {
					t.Fatalf("want a turn_failed error containing %q, got %v", tt.wantErr, out.err)
				}
				if last := out.last(); last.Type != agent.EventTurnFailed || !strings.Contains(last.Message, tt.wantErr) {
					t.Errorf("want a turn_failed event with the message, got %s %q", last.Type, last.Message)
				}
			}
			if got := out.toolResults(); !slices.Equal(got, tt.wantTools) {
				t.Errorf("want tool_result events %v, got %v", tt.wantTools, got)
			}
			if got := len(readLines(t, record)); got != tt.records {
				t.Errorf("want %d calls recorded by the server, got %d", tt.records, got)
			}
		})
	}
}

func TestMCPCalls_FailedGroupIsUsedUpAndScriptStillCounts(t *testing.T) {
	// The failing group is not replayed: the retry (a new session) runs the next one.
	a := newAdapterYAML(t, `
events_per_turn: 0
script: [success, input_required]
mcp_calls:
  - [{tool: record, arguments: {fail: true}}]
  - [{tool: record, arguments: {n: 2}}]
`)
	ws, record := mcpWorkspace(t)
	if out := runTurn(t, t.Context(), a, startSession(t, a, ws), 1); agent.KindOf(out.err) != agent.ErrTurnFailed {
		t.Fatalf("turn 1: want turn_failed from the unexpected error result, got %v", out.err)
	}
	out := runTurn(t, t.Context(), a, startSession(t, a, ws), 1)
	if agent.KindOf(out.err) != agent.ErrTurnInputRequired {
		t.Errorf("turn 2: want script[1] (input_required), got %v", out.err)
	}
	if got := readLines(t, record); !slices.Equal(got, []string{`{"n":2}`}) {
		t.Errorf("want only group 1's call recorded, got %v", got)
	}
}

func TestMCPCalls_PerIssueBlockReplacesCalls(t *testing.T) {
	a := newAdapterYAML(t, `
events_per_turn: 0
mcp_calls: [[{tool: record, arguments: {who: default}}]]
issues:
  DEMO-2: {mcp_calls: [[{tool: record, arguments: {who: DEMO-2}}]]}
  DEMO-3: {mcp_calls: []}
`)
	for _, tt := range []struct{ issue, want string }{
		{"DEMO-1", `{"who":"default"}`}, {"DEMO-2", `{"who":"DEMO-2"}`}, {"DEMO-3", ""},
	} {
		ws, record := mcpWorkspace(t)
		out := runTurn(t, t.Context(), a, startSession(t, a, ws, IssueEnv+"="+tt.issue), 1)
		if out.err != nil {
			t.Fatalf("%s: %v", tt.issue, out.err)
		}
		if got := strings.Join(readLines(t, record), "\n"); got != tt.want {
			t.Errorf("%s: want recorded %q, got %q", tt.issue, tt.want, got)
		}
	}
}

func TestMCPCalls_HangRunsCallsFirst(t *testing.T) {
	// The calls are made before the scripted hang; the turn is then cancelled.
	a := newAdapterYAML(t, "script: [hang]\nmcp_calls: [[{tool: record, arguments: {n: 1}}]]\n")
	ws, record := mcpWorkspace(t)
	s := startSession(t, a, ws)
	ctx, cancel := context.WithCancel(t.Context())
	var out turnOutput
	out.res, out.err = a.RunTurn(ctx, s, agent.TurnParams{TurnNumber: 1, OnEvent: func(e agent.Event) {
		out.events = append(out.events, e)
		if e.Type == agent.EventToolResult {
			cancel()
		}
	}})
	if agent.KindOf(out.err) != agent.ErrTurnCancelled {
		t.Fatalf("want turn_cancelled, got %v", out.err)
	}
	if got := readLines(t, record); !slices.Equal(got, []string{`{"n":1}`}) {
		t.Errorf("want the call made before the hang, got %v", got)
	}
}
