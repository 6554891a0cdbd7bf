package orchestrator

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"sortie/internal/agent"
	"sortie/internal/agentsock"
	"sortie/internal/prompt"
	"sortie/internal/workspace"
)

// Extensions wires the agent extensions (docs/agent-tools.md) into every session: the
// `sortie-tools` MCP server entry in .sortie/mcp.json, the capability token for Tier 2
// calls, .sortie/state.json for sortie_status, and the tool list of the first-turn
// prompt. The zero value writes no MCP configuration and offers no tools.
type Extensions struct {
	// Executable is the absolute path of the sortie binary, which the agent CLI starts
	// as `sortie mcp-server`; "" writes no .sortie/mcp.json.
	Executable string
	// Socket grants and revokes capability tokens; nil offers no Tier 2 tools.
	Socket Granter
	// PromptTools describes, for a session's first turn, the tools its sortie-tools
	// server offers when started with env, the env block written for that session into
	// .sortie/mcp.json (what the session actually gets: no agent socket on an SSH
	// host). nil lists no tools.
	PromptTools func(env map[string]string) []prompt.ToolDoc
}

// Granter issues capability tokens for the agent socket (agentsock.Server).
type Granter interface {
	Grant(agentsock.Session) string
	Revoke(token string)
	Path() string
}

// ToolsServerName is the reserved MCP server name of Sortie's tools.
const ToolsServerName = agent.ToolsServer

// MCPConfigFile and StateFile are the files the worker keeps in .sortie/.
const (
	MCPConfigFile = "mcp.json"
	StateFile     = "state.json"
)

// maxOperatorMCPConfig bounds the operator's mcp_config file.
const maxOperatorMCPConfig = 1 << 20

// ConfigError is a run failure caused by the configuration (a bad mcp_config, say):
// retrying cannot fix it, so the issue is held until WORKFLOW.md changes.
type ConfigError struct {
	Field string
	Err   error
}

func (e *ConfigError) Error() string { return "config_error: " + e.Field + ": " + e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }

// prepareExtensions writes .sortie/mcp.json for the session and returns its path ("" when
// extensions are off), its servers (the one parse of it adapters use) and a function that revokes the session's token and closes
// w.sortie, which it opens for the session's writes to .sortie/. It sets w.tools
// to the tools that configuration offers, for the first turn's prompt.
func (w *worker) prepareExtensions() (string, []agent.MCPServer, func(), error) {
	x := w.o.opts.Extensions
	if x.Executable == "" {
		return "", nil, func() {}, nil
	}
	token := ""
	revoke := func() {}
	// The socket is local: an agent on an SSH host could not reach it.
	if x.Socket != nil && w.e.host == "" {
		// Bound to the run's processes: a token read elsewhere is refused (peers.go).
		w.peers = w.newPeers()
		token = x.Socket.Grant(agentsock.Session{IssueID: w.issue.ID, Identifier: w.issue.Identifier, RunID: w.runID, Bind: w.peers})
		revoke = func() { x.Socket.Revoke(token) }
	}
	servers := map[string]any{}
	if err := w.operatorMCPServers(servers); err != nil {
		revoke()
		return "", nil, func() {}, err
	}
	env := w.sidecarEnv(token)
	servers[ToolsServerName] = map[string]any{
		"type":    "stdio",
		"command": x.Executable,
		"args":    []string{"mcp-server", "--workflow", w.cfg.Path},
		"env":     env,
	}
	data, err := json.MarshalIndent(map[string]any{"mcpServers": servers}, "", "  ")
	var parsed []agent.MCPServer
	if err == nil {
		parsed, err = agent.ParseMCPServers(data)
	}
	if err != nil {
		revoke()
		return "", nil, func() {}, err
	}
	sf, err := workspace.OpenSortieFiles(w.ws.Path)
	if err == nil {
		if err = sf.WriteFile(MCPConfigFile, append(data, '\n')); err != nil {
			sf.Close()
		}
	}
	if err != nil {
		revoke()
		return "", nil, func() {}, fmt.Errorf("writing .sortie/%s: %w", MCPConfigFile, err)
	}
	w.sortie = sf // state.json goes there too, all session long
	if x.PromptTools != nil {
		w.tools = x.PromptTools(env)
	}
	return filepath.Join(w.ws.Path, ".sortie", MCPConfigFile), parsed, func() {
		revoke()
		w.sortie = nil
		sf.Close()
	}, nil
}

// operatorMCPServers adds the servers of the agent block's mcp_config to servers. The
// file must be a JSON object with an mcpServers object, and must not use the reserved
// name.
func (w *worker) operatorMCPServers(servers map[string]any) error {
	field := w.cfg.Agent.Kind + ".mcp_config"
	raw, _ := w.cfg.Block(w.cfg.Agent.Kind)["mcp_config"].(string)
	path := strings.TrimSpace(raw)
	if path == "" {
		return nil
	}
	if !filepath.IsAbs(path) {
		path = filepath.Join(w.cfg.Dir, path)
	}
	f, err := os.Open(path)
	if err != nil {
		return &ConfigError{Field: field, Err: err}
	}
	defer f.Close()
	var doc struct {
		MCPServers map[string]json.RawMessage `json:"mcpServers"`
	}
	dec := json.NewDecoder(&limitedReader{r: f, n: maxOperatorMCPConfig})
	if err := dec.Decode(&doc); err != nil {
		return &ConfigError{Field: field, Err: fmt.Errorf("%s: not a JSON MCP configuration: %w", path, err)}
	}
	if doc.MCPServers == nil {
		return &ConfigError{Field: field, Err: fmt.Errorf("%s: has no \"mcpServers\" object", path)}
	}
	for name, def := range doc.MCPServers {
		if name == ToolsServerName {
			return &ConfigError{Field: field, Err: fmt.Errorf("%s: the server name %q is reserved for Sortie's own tools; rename it", path, name)}
		}
		var obj map[string]any
		if err := json.Unmarshal(def, &obj); err != nil || obj == nil {
			return &ConfigError{Field: field, Err: fmt.Errorf("%s: mcpServers.%s is not an object", path, name)}
		}
		servers[name] = obj
	}
	return nil
}

type limitedReader struct {
	r interface{ Read([]byte) (int, error) }
	n int64
}

func (l *limitedReader) Read(b []byte) (int, error) {
	if l.n <= 0 {
		return 0, errors.New("file larger than 1 MiB")
	}
	if int64(len(b)) > l.n {
		b = b[:l.n]
	}
	n, err := l.r.Read(b)
	l.n -= int64(n)
	return n, err
}

// sidecarEnv is the env block of the sortie-tools entry: the session's identity and,
// for a local agent, the daemon's agent socket and the session's token. Nothing else
// of the daemon's environment: no credential, no SORTIE_* override, and no path to the
// daemon's private state (database, env file, operator token). The sidecar asks the
// daemon, over the socket, for everything it needs beyond the workspace: the run
// history, the budget the daemon enforces, the tracker and notifications.
func (w *worker) sidecarEnv(token string) map[string]string {
	attempt := ""
	if w.e.attempt > 0 {
		attempt = strconv.Itoa(w.e.attempt)
	}
	env := map[string]string{
		"SORTIE_WORKSPACE":        w.ws.Path,
		"SORTIE_ISSUE_ID":         w.issue.ID,
		"SORTIE_ISSUE_IDENTIFIER": w.issue.Identifier,
		"SORTIE_RUN_ID":           strconv.FormatInt(w.runID, 10),
		"SORTIE_SESSION_ID":       w.e.resumeFrom,
		"SORTIE_ATTEMPT":          attempt,
	}
	if x := w.o.opts.Extensions; x.Socket != nil && token != "" {
		env[agentsock.EnvSocket] = x.Socket.Path()
		env[agentsock.EnvToken] = token
	}
	return env
}

// stateWriteInterval is the least time between two writes of .sortie/state.json for
// token usage: a chatty agent must not turn the daemon into a file-rewriting loop.
const stateWriteInterval = 250 * time.Millisecond

// stateFile keeps .sortie/state.json for the sortie_status tool. Writes happen at
// session start, at each turn start and on token usage, only when the content
// changed, and at most once per stateWriteInterval for usage; the last change is
// written at the end of each turn. Only the worker's goroutine uses it.
type stateFile struct {
	w         *worker
	started   time.Time
	last      []byte
	lastWrite time.Time
	pending   bool
}

// stateJSON is the file's content.
type stateJSON struct {
	Version          int         `json:"version"`
	IssueID          string      `json:"issue_id"`
	IssueIdentifier  string      `json:"issue_identifier"`
	RunID            int64       `json:"run_id"`
	SessionID        string      `json:"session_id"`
	TurnNumber       int         `json:"turn_number"`
	MaxTurns         int         `json:"max_turns"`
	Attempt          *int        `json:"attempt"`
	SessionStartedAt string      `json:"session_started_at"`
	UpdatedAt        string      `json:"updated_at"`
	Tokens           agent.Usage `json:"tokens"`
	CostUSD          float64     `json:"cost_usd"`
}

// write writes the file if its content changed; unless force, token-usage updates are
// coalesced to one per stateWriteInterval.
func (s *stateFile) write(force bool) {
	w := s.w
	if w.o.opts.Extensions.Executable == "" || w.ws.Path == "" {
		return
	}
	now := w.o.clk.Now()
	if !force && now.Sub(s.lastWrite) < stateWriteInterval {
		s.pending = true
		return
	}
	p := w.e.progress.snapshot()
	st := stateJSON{
		Version: 1, IssueID: w.issue.ID, IssueIdentifier: w.issue.Identifier, RunID: w.runID,
		SessionID: p.sessionID, TurnNumber: p.turn, MaxTurns: max(w.cfg.Agent.MaxTurns, 1),
		SessionStartedAt: s.started.UTC().Format(time.RFC3339Nano), Tokens: p.usage, CostUSD: p.costUSD,
	}
	if w.e.attempt > 0 {
		a := w.e.attempt
		st.Attempt = &a
	}
	probe, _ := json.Marshal(st) // without updated_at: unchanged content is not rewritten
	if string(probe) == string(s.last) {
		s.pending = false
		return
	}
	st.UpdatedAt = now.UTC().Format(time.RFC3339Nano)
	data, err := json.Marshal(st)
	if err != nil {
		return
	}
	write := func() error { return workspace.WriteFileAtomic(w.ws.Path, StateFile, data) }
	if w.sortie != nil {
		write = func() error { return w.sortie.WriteFile(StateFile, data) }
	}
	if err := write(); err != nil {
		w.o.log.Warn("writing .sortie/state.json failed", "issue_identifier", w.issue.Identifier, "error", err)
		return
	}
	s.last, s.lastWrite, s.pending = probe, now, false
}

// flushPending writes a coalesced update that is still waiting.
func (s *stateFile) flushPending() {
	if s.pending {
		s.write(true)
	}
}
