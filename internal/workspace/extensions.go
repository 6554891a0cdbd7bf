package workspace

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

// MCPConfigFile and StateFile are the files a session keeps in .sortie/.
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

// Session is one agent session as its extensions see it.
type Session struct {
	Workspace    string // the workspace's path
	WorkflowPath string // WORKFLOW.md, which the sidecar loads
	WorkflowDir  string // what a relative mcp_config is resolved against
	// AgentKind and AgentBlock are the agent adapter's kind and its WORKFLOW.md block,
	// whose mcp_config names the operator's own MCP servers.
	AgentKind  string
	AgentBlock map[string]any
	IssueID    string
	Identifier string
	RunID      int64
	Attempt    int    // 0 on a first dispatch
	ResumeFrom string // the agent session resumed, "" for a new one
	// Bind, when not nil, binds the session's token to its processes. It is called
	// only when a token is granted: for an agent on this machine (Remote false).
	Bind   func() agentsock.Binding
	Remote bool // the agent runs on an SSH host, which cannot reach the socket
}

// Prepared is a session's extensions, written and granted. Close revokes the token
// and releases .sortie/.
type Prepared struct {
	// MCPConfig is the path of .sortie/mcp.json, "" when extensions are off; Servers
	// are its servers (the one parse of it adapters use).
	MCPConfig string
	Servers   []agent.MCPServer
	// Tools are what its sortie-tools server offers, for the first turn's prompt.
	Tools []prompt.ToolDoc

	files  *SortieFiles
	revoke func()
}

// Prepare writes .sortie/mcp.json for a session, granting its token, and returns what
// it wrote. With no Executable it writes nothing and returns an empty Prepared.
func (x Extensions) Prepare(s Session) (*Prepared, error) {
	if x.Executable == "" {
		return &Prepared{revoke: func() {}}, nil
	}
	token := ""
	revoke := func() {}
	// The socket is local: an agent on an SSH host could not reach it.
	if x.Socket != nil && !s.Remote {
		var bind agentsock.Binding
		if s.Bind != nil {
			bind = s.Bind() // a token read elsewhere is refused (agentsock.RunProcesses)
		}
		token = x.Socket.Grant(agentsock.Session{IssueID: s.IssueID, Identifier: s.Identifier, RunID: s.RunID, Bind: bind})
		revoke = func() { x.Socket.Revoke(token) }
	}
	servers := map[string]any{}
	if err := operatorMCPServers(s, servers); err != nil {
		revoke()
		return nil, err
	}
	env := x.sidecarEnv(s, token)
	servers[agent.ToolsServer] = map[string]any{
		"type":    "stdio",
		"command": x.Executable,
		"args":    []string{"mcp-server", "--workflow", s.WorkflowPath},
		"env":     env,
	}
	data, err := json.MarshalIndent(map[string]any{"mcpServers": servers}, "", "  ")
	var parsed []agent.MCPServer
	if err == nil {
		parsed, err = agent.ParseMCPServers(data)
	}
	if err != nil {
		revoke()
		return nil, err
	}
	sf, err := OpenSortieFiles(s.Workspace)
	if err == nil {
		if err = sf.WriteFile(MCPConfigFile, append(data, '\n')); err != nil {
			sf.Close()
		}
	}
	if err != nil {
		revoke()
		return nil, fmt.Errorf("writing .sortie/%s: %w", MCPConfigFile, err)
	}
	p := &Prepared{MCPConfig: filepath.Join(s.Workspace, SortieDir, MCPConfigFile), Servers: parsed, files: sf, revoke: revoke}
	if x.PromptTools != nil {
		p.Tools = x.PromptTools(env)
	}
	return p, nil
}

// Close revokes the session's token (it dies with the session) and releases .sortie/.
func (p *Prepared) Close() {
	p.revoke()
	if p.files != nil {
		p.files.Close()
		p.files = nil
	}
}

// operatorMCPServers adds the servers of the agent block's mcp_config to servers. The
// file must be a JSON object with an mcpServers object, and must not use the reserved
// name.
func operatorMCPServers(s Session, servers map[string]any) error {
	field := s.AgentKind + ".mcp_config"
	raw, _ := s.AgentBlock["mcp_config"].(string)
	path := strings.TrimSpace(raw)
	if path == "" {
		return nil
	}
	if !filepath.IsAbs(path) {
		path = filepath.Join(s.WorkflowDir, path)
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
		if name == agent.ToolsServer {
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
func (x Extensions) sidecarEnv(s Session, token string) map[string]string {
	attempt := ""
	if s.Attempt > 0 {
		attempt = strconv.Itoa(s.Attempt)
	}
	env := map[string]string{
		"SORTIE_WORKSPACE":        s.Workspace,
		"SORTIE_ISSUE_ID":         s.IssueID,
		"SORTIE_ISSUE_IDENTIFIER": s.Identifier,
		"SORTIE_RUN_ID":           strconv.FormatInt(s.RunID, 10),
		"SORTIE_SESSION_ID":       s.ResumeFrom,
		"SORTIE_ATTEMPT":          attempt,
	}
	if x.Socket != nil && token != "" {
		env[agentsock.EnvSocket] = x.Socket.Path()
		env[agentsock.EnvToken] = token
	}
	return env
}

// stateWriteInterval is the least time between two writes of .sortie/state.json for
// token usage: a chatty agent must not turn the daemon into a file-rewriting loop.
const stateWriteInterval = 250 * time.Millisecond

// State is the content of .sortie/state.json, for the sortie_status tool.
type State struct {
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

// StateWriter keeps .sortie/state.json of one session. Writes happen at session start,
// at each turn start and on token usage, only when the content changed, and at most
// once per stateWriteInterval for usage; the last change is written at the end of
// each turn. It is not safe for concurrent use: its session's worker owns it.
type StateWriter struct {
	p         *Prepared
	workspace string
	last      []byte
	lastWrite time.Time
	// Pending is set while a coalesced update waits to be written.
	Pending bool
}

// StateWriter returns the writer of the session's .sortie/state.json: written through .sortie/ as opened for
// the session, or nil when extensions are off.
func (p *Prepared) StateWriter(workspace string) *StateWriter {
	if p.MCPConfig == "" || workspace == "" {
		return nil
	}
	return &StateWriter{p: p, workspace: workspace}
}

// Write writes the state st returns at now if its content changed; unless force,
// token-usage updates are coalesced to one per stateWriteInterval (Pending says one
// waits), and st is not even called.
func (s *StateWriter) Write(now time.Time, force bool, st func() State) error {
	if !force && now.Sub(s.lastWrite) < stateWriteInterval {
		s.Pending = true
		return nil
	}
	state := st()
	state.Version, state.UpdatedAt = 1, ""
	probe, _ := json.Marshal(state) // without updated_at: unchanged content is not rewritten
	if string(probe) == string(s.last) {
		s.Pending = false
		return nil
	}
	state.UpdatedAt = now.UTC().Format(time.RFC3339Nano)
	data, err := json.Marshal(state)
	if err != nil {
		return err
	}
	if f := s.p.files; f != nil {
		err = f.WriteFile(StateFile, data)
	} else {
		err = WriteFileAtomic(s.workspace, StateFile, data)
	}
	if err != nil {
		return err
	}
	s.last, s.lastWrite, s.Pending = probe, now, false
	return nil
}
