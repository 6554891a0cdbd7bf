package mock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"sortie/internal/agent"
	"sortie/internal/agent/proc"
)

// The mcp_calls option: each turn of a workspace runs the next group of MCP tool calls
// against the servers of the session's .sortie/mcp.json, as a real CLI would, before the
// rest of the turn. docs/agents/mock.md is the reference.
const (
	defaultMCPServer = agent.ToolsServer
	mcpConfigFile    = statusDir + "/mcp.json"
	mcpStateFile     = statusDir + "/mock-mcp.json"
	mcpLogFile       = statusDir + "/mock-mcp.log"

	// Placeholders: a string argument value (at any depth) exactly equal to one of
	// these is replaced before the call. Nothing else is templated.
	sessionTokenArg = "$session_token"
	traceTokensArg  = "$trace_tokens"

	maxMCPConfigBytes = 4 << 20  // .sortie/mcp.json
	maxMCPStateBytes  = 16 << 20 // .sortie/mock-mcp.json
	maxMCPLogText     = 64 << 10 // bytes of a result's text kept in the log line
	maxMCPMessageText = 1000     // bytes of a result's text in a failure message
	maxMCPToken       = 4096     // longer token values are ignored
	maxTraceTokens    = 10_000
)

// mcpState is .sortie/mock-mcp.json: where the workspace is in mcp_calls and the
// tokens that later calls substitute. It outlives sessions, like the script counter.
type mcpState struct {
	NextGroup    int      `json:"next_group"`              // index of the group the next turn runs
	SessionToken string   `json:"session_token,omitempty"` // newest session token seen
	TraceTokens  []string `json:"trace_tokens,omitempty"`  // every distinct _meta.trace_token seen, in order
}

func loadMCPState(root *os.Root) (mcpState, error) {
	var st mcpState
	data, err := readBounded(root, mcpStateFile, maxMCPStateBytes)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return st, nil
	case err != nil:
		return st, err
	}
	if err := json.Unmarshal(data, &st); err != nil || st.NextGroup < 0 {
		return mcpState{}, fmt.Errorf("%s: not a mock MCP state (%v); delete the file to restart mcp_calls", mcpStateFile, err)
	}
	return st, nil
}

// save replaces the state file atomically, so that a turn killed mid-write leaves the
// previous state.
func (st mcpState) save(root *os.Root) error {
	data, err := json.Marshal(st)
	if err != nil {
		return err
	}
	if err := root.MkdirAll(statusDir, 0o755); err != nil {
		return err
	}
	tmp := mcpStateFile + ".tmp"
	if err := root.WriteFile(tmp, append(data, '\n'), 0o644); err != nil {
		return err
	}
	return root.Rename(tmp, mcpStateFile)
}

// observe records the tokens a call result carries: session_token from _meta, or else
// from the top level of its structured content or of a JSON text content; trace_token
// from _meta.
func (st *mcpState) observe(res *mcp.CallToolResult) {
	token := func(v any) string {
		s, _ := v.(string)
		if len(s) > maxMCPToken {
			return ""
		}
		return s
	}
	session := token(res.Meta["session_token"])
	if session == "" {
		if m, ok := res.StructuredContent.(map[string]any); ok {
			session = token(m["session_token"])
		}
	}
	for _, c := range res.Content {
		if session != "" {
			break
		}
		if tc, ok := c.(*mcp.TextContent); ok {
			var m map[string]any
			if json.Unmarshal([]byte(tc.Text), &m) == nil {
				session = token(m["session_token"])
			}
		}
	}
	if session != "" {
		st.SessionToken = session
	}
	if trace := token(res.Meta["trace_token"]); trace != "" && !slices.Contains(st.TraceTokens, trace) && len(st.TraceTokens) < maxTraceTokens {
		st.TraceTokens = append(st.TraceTokens, trace)
	}
}

// substitute replaces placeholder string values in v, at any depth, and reports
// whether $session_token was used before any result carried a session token.
func (st *mcpState) substitute(v any) (any, error) {
	switch x := v.(type) {
	case string:
		switch x {
		case sessionTokenArg:
			if st.SessionToken == "" {
				return nil, errors.New("$session_token: no earlier result carried a session token (_meta.session_token or a top-level session_token)")
			}
			return st.SessionToken, nil
		case traceTokensArg:
			return append([]string{}, st.TraceTokens...), nil
		}
		return x, nil
	case []any:
		out := make([]any, len(x))
		for i, item := range x {
			var err error
			if out[i], err = st.substitute(item); err != nil {
				return nil, err
			}
		}
		return out, nil
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, item := range x {
			var err error
			if out[k], err = st.substitute(item); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	return v, nil
}

// mcpServerConfig is one entry of .sortie/mcp.json's mcpServers, in the Claude Code
// shape the daemon writes.
type mcpServerConfig struct {
	Type    string            `json:"type"`
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env"`
}

func readMCPConfig(root *os.Root) (map[string]mcpServerConfig, error) {
	data, err := readBounded(root, mcpConfigFile, maxMCPConfigBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: missing; the daemon writes it when agent tools are on (see docs/agent-tools.md)", mcpConfigFile)
	}
	if err != nil {
		return nil, err
	}
	var doc struct {
		MCPServers map[string]mcpServerConfig `json:"mcpServers"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", mcpConfigFile, err)
	}
	return doc.MCPServers, nil
}

// mcpCallLog is one line of .sortie/mock-mcp.log: a call and its result.
type mcpCallLog struct {
	SessionID   string         `json:"session_id"`
	Group       int            `json:"group"`
	Call        int            `json:"call"`
	Server      string         `json:"server"`
	Tool        string         `json:"tool"`
	Arguments   map[string]any `json:"arguments"` // after substitution
	IsError     bool           `json:"is_error"`
	ExpectError bool           `json:"expect_error"`
	Text        string         `json:"text"`            // the result's text contents, cut to 64 KiB
	Meta        map[string]any `json:"meta,omitempty"`  // the result's _meta
	Error       string         `json:"error,omitempty"` // a protocol error instead of a result
}

// mcpTurn runs one turn's group of calls. It owns the client sessions it opens.
type mcpTurn struct {
	root      *os.Root
	sessionID string
	group     int
	st        mcpState
	servers   map[string]mcpServerConfig
	sessions  map[string]*mcp.ClientSession
	stderr    map[string]*proc.HeadTailBuffer
	w         *eventWriter
}

// runMCPCalls runs the workspace's next mcp_calls group, if any, emitting one
// tool_result event per call. A non-nil error fails the turn; its text is the turn's
// failure message.
func runMCPCalls(root *os.Root, groups [][]mcpCall, sessionID string, w *eventWriter) error {
	if len(groups) == 0 {
		return nil
	}
	st, err := loadMCPState(root)
	if err != nil {
		return err
	}
	if st.NextGroup >= len(groups) {
		return nil
	}
	// The group is used up before its calls are made: a turn that fails or is killed
	// part way through does not replay its calls.
	t := &mcpTurn{root: root, sessionID: sessionID, group: st.NextGroup, st: st, w: w}
	t.st.NextGroup++
	if err := t.st.save(root); err != nil {
		return fmt.Errorf("%s: %w", mcpStateFile, err)
	}
	calls := groups[t.group]
	if len(calls) == 0 {
		return nil
	}
	defer t.close()
	for i, c := range calls {
		if err := t.call(i, c); err != nil {
			return fmt.Errorf("mock: mcp_calls[%d][%d] %s/%s: %w", t.group, i, c.Server, c.Tool, err)
		}
	}
	return nil
}

func (t *mcpTurn) call(i int, c mcpCall) error {
	raw, err := decodeJSONObject(c.Arguments)
	if err != nil {
		return fmt.Errorf("arguments: %w", err)
	}
	sub, err := t.st.substitute(raw)
	if err != nil {
		return err
	}
	args := sub.(map[string]any)
	cs, err := t.session(c.Server)
	if err != nil {
		return err
	}
	line := mcpCallLog{SessionID: t.sessionID, Group: t.group, Call: i, Server: c.Server, Tool: c.Tool, Arguments: args, ExpectError: c.ExpectError}
	start := time.Now()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: c.Tool, Arguments: args})
	elapsed := time.Since(start).Milliseconds()
	if err != nil {
		line.Error = err.Error()
		t.log(line)
		t.w.event(wireEvent{Type: wireToolResult, Name: c.Tool, DurationMS: elapsed, Error: true, Message: "mcp: " + err.Error()})
		return fmt.Errorf("call failed: %w%s", err, t.stderrTail(c.Server))
	}
	text := resultText(res)
	line.IsError, line.Text, line.Meta = res.IsError, truncate(text, maxMCPLogText), res.Meta
	t.st.observe(res)
	t.log(line)
	ev := wireEvent{Type: wireToolResult, Name: c.Tool, DurationMS: elapsed, Error: res.IsError}
	if res.IsError {
		ev.Message = "mcp: " + truncate(text, maxMCPMessageText)
	}
	t.w.event(ev)
	if err := t.st.save(t.root); err != nil {
		return fmt.Errorf("%s: %w", mcpStateFile, err)
	}
	if res.IsError != c.ExpectError {
		return fmt.Errorf("is_error %t, want %t (expect_error); result: %s", res.IsError, c.ExpectError, truncate(text, maxMCPMessageText))
	}
	return nil
}

// session returns the client session of the named server, starting the server on
// first use as a CLI does: its command and args from .sortie/mcp.json, in the
// workspace, with its env on top of this process's environment.
func (t *mcpTurn) session(name string) (*mcp.ClientSession, error) {
	if cs, ok := t.sessions[name]; ok {
		return cs, nil
	}
	if t.servers == nil {
		servers, err := readMCPConfig(t.root)
		if err != nil {
			return nil, err
		}
		t.servers = servers
		t.sessions = map[string]*mcp.ClientSession{}
		t.stderr = map[string]*proc.HeadTailBuffer{}
	}
	cfg, ok := t.servers[name]
	switch {
	case !ok:
		return nil, fmt.Errorf("%s: no server %q in mcpServers (have: %s)", mcpConfigFile, name, strings.Join(sortedKeys(t.servers), ", "))
	case cfg.Type != "" && cfg.Type != "stdio":
		return nil, fmt.Errorf("%s: server %q has type %q; the mock agent only starts stdio servers", mcpConfigFile, name, cfg.Type)
	case strings.TrimSpace(cfg.Command) == "":
		return nil, fmt.Errorf("%s: server %q has no command", mcpConfigFile, name)
	}
	cmd := exec.Command(cfg.Command, cfg.Args...)
	// The server must not see the child-mode switch: when it is this executable (the
	// daemon's sortie-tools server is), it would play a mock turn instead of serving.
	env := withoutKey(os.Environ(), ChildEnv)
	for _, k := range sortedKeys(cfg.Env) {
		env = append(withoutKey(env, k), k+"="+cfg.Env[k])
	}
	cmd.Env = env
	// The server stays in this process's group, so that the adapter's group kill
	// removes it with the turn.
	stderr := proc.NewHeadTailBuffer(2048, 2048)
	cmd.Stderr = io.MultiWriter(os.Stderr, stderr)
	t.stderr[name] = stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "sortie-mock-agent", Version: "v1"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		return nil, fmt.Errorf("starting MCP server %q (%s): %w%s", name, cfg.Command, err, t.stderrTail(name))
	}
	t.sessions[name] = cs
	return cs, nil
}

func (t *mcpTurn) stderrTail(name string) string {
	b := t.stderr[name]
	if b == nil {
		return ""
	}
	if s := strings.TrimSpace(b.String()); s != "" {
		return "; server stderr: " + truncateFront(s, maxMCPMessageText)
	}
	return ""
}

// close ends every client session: it closes the servers' stdin and waits for them.
func (t *mcpTurn) close() {
	for _, name := range sortedKeys(t.sessions) {
		t.sessions[name].Close()
	}
}

// log appends one line to .sortie/mock-mcp.log. The log is for tests and people; a
// write error does not fail the turn but goes to stderr.
func (t *mcpTurn) log(line mcpCallLog) {
	data, err := json.Marshal(line)
	if err == nil {
		err = appendLine(t.root, mcpLogFile, data)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "mock agent: %s: %v\n", mcpLogFile, err)
	}
}

func appendLine(root *os.Root, name string, data []byte) error {
	f, err := root.OpenFile(name, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	// One write per line, so that O_APPEND keeps lines whole.
	_, err = f.Write(append(data, '\n'))
	return errors.Join(err, f.Close())
}

// resultText is the text of a result's contents, one content per line; other kinds of
// content appear as a marker.
func resultText(res *mcp.CallToolResult) string {
	parts := make([]string, 0, len(res.Content))
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		} else {
			parts = append(parts, fmt.Sprintf("[%T content]", c))
		}
	}
	return strings.Join(parts, "\n")
}

// readBounded reads a workspace file of at most limit bytes.
func readBounded(root *os.Root, name string, limit int64) ([]byte, error) {
	f, err := root.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s: larger than %d bytes", name, limit)
	}
	return data, nil
}
