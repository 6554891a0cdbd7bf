package claude

import (
	"os"
	"testing"

	"sortie/internal/agent"
	"sortie/internal/agent/agenttest"
	"sortie/internal/mcp/mcptest"
	"sortie/internal/testkit/clis"
)

// The test binary is also the sortie-tools sidecar the agenttest suite's MCP case
// writes into .sortie/mcp.json; this runs before TestMain.
func init() { mcptest.Main() }

// TestAgentContract runs the contract suite every adapter passes (internal/agent/agenttest)
// against the real claude CLI and the fake Anthropic API.
func TestAgentContract(t *testing.T) {
	// One HOME per case, shared by its sessions: the CLI keeps its conversations there.
	var homes agenttest.Homes
	agenttest.Run(t, agenttest.Harness{
		Command: func(t *testing.T) string { return clis.Claude(t) },
		NewModel: func(t *testing.T) agenttest.Model {
			return agenttest.NewAnthropic(t, agenttest.AnthropicTools{
				Shell:   "Bash",
				MCPTool: func(server, tool string) string { return "mcp__" + server + "__" + tool },
			})
		},
		NewAdapter: func(t *testing.T, command string, _ agenttest.Model) (agent.Adapter, error) {
			return New(agent.Config{Kind: Kind, Command: command,
				Options: map[string]any{"permission_mode": "bypassPermissions", "model": model}})
		},
		Env: func(t *testing.T, ws string, m agenttest.Model) []string {
			env := clis.ClaudeEnv(os.Environ(), m.(*agenttest.Anthropic).Server.URL, homes.Of(t, m))
			// MCP tools offered directly rather than behind the tool search, and time
			// for the sidecar to start on a loaded machine.
			return append(env, "ENABLE_TOOL_SEARCH=false", "MCP_TIMEOUT=60000")
		},
		Sidecar:    mcptest.Server(t),
		SessionIDs: agenttest.IDAtStart,
	})
}
