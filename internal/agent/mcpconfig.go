package agent

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

// ToolsServer is the name of Sortie's own MCP server, sortie-tools
// (spec/agent-extensions.md), which no configuration of the operator's may use.
const ToolsServer = "sortie-tools"

// MaxMCPConfig bounds an MCP configuration file Sortie reads: .sortie/mcp.json or an
// operator's mcp_config.
const MaxMCPConfig = 1 << 20

// MCPServer is one server of a claude-style MCP configuration ({"mcpServers": {name:
// …}}), the form of .sortie/mcp.json: a stdio server has a Command, an http or sse one
// a URL.
type MCPServer struct {
	Name    string
	Type    string // "stdio", "http", "sse", or "" (stdio with a command, else http)
	Command string
	Args    []string
	Env     map[string]string
	Cwd     string
	URL     string
	Headers map[string]string
}

// ParseMCPServers reads the servers of a claude-style MCP configuration, sorted by
// name. A server with neither a command nor a url is kept: the CLI that is given it
// decides (MCPServer users that must know say so, as NeedsCommandOrURL).
func ParseMCPServers(data []byte) ([]MCPServer, error) {
	var doc struct {
		MCPServers map[string]struct {
			Type    string            `json:"type"`
			Command string            `json:"command"`
			Args    []string          `json:"args"`
			Env     map[string]string `json:"env"`
			Cwd     string            `json:"cwd"`
			URL     string            `json:"url"`
			Headers map[string]string `json:"headers"`
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("not a JSON MCP configuration: %w", err)
	}
	out := make([]MCPServer, 0, len(doc.MCPServers))
	for name, s := range doc.MCPServers {
		out = append(out, MCPServer{Name: name, Type: s.Type, Command: s.Command, Args: s.Args, Env: s.Env, Cwd: s.Cwd,
			URL: s.URL, Headers: s.Headers})
	}
	slices.SortFunc(out, func(a, b MCPServer) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// ReadMCPConfig reads the servers of the MCP configuration file at path (at most
// MaxMCPConfig bytes), as ParseMCPServers.
func ReadMCPConfig(path string) ([]MCPServer, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxMCPConfig+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxMCPConfig {
		return nil, fmt.Errorf("%s: larger than 1 MiB", path)
	}
	servers, err := ParseMCPServers(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return servers, nil
}

// NeedsCommandOrURL is the error for a server that has neither, which a CLI that
// translates the configuration into its own cannot run.
func (s MCPServer) NeedsCommandOrURL() error {
	if s.Command == "" && s.URL == "" {
		return fmt.Errorf("MCP server %q has neither a command nor a url", s.Name)
	}
	return nil
}

// Servers are the servers of p's MCP configuration: MCPServers, or those of the file at
// MCPConfigPath for a caller that gave only the path; none without either.
func (p StartParams) Servers() ([]MCPServer, error) {
	if p.MCPServers != nil || p.MCPConfigPath == "" {
		return p.MCPServers, nil
	}
	return ReadMCPConfig(p.MCPConfigPath)
}
