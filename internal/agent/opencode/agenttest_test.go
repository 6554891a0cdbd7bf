package opencode

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
// against the real opencode CLI and the fake Anthropic API.
func TestAgentContract(t *testing.T) {
	// One HOME and one state directory per case, shared by its sessions: the CLI keeps
	// its sessions there.
	var homes, states agenttest.Homes
	agenttest.Run(t, agenttest.Harness{
		Command: func(t *testing.T) string { return clis.OpenCode(t) },
		NewModel: func(t *testing.T) agenttest.Model {
			return agenttest.NewAnthropic(t, agenttest.AnthropicTools{
				Shell:   "bash",
				MCPTool: func(server, tool string) string { return server + "_" + tool },
			})
		},
		NewAdapter: func(t *testing.T, command string, m agenttest.Model) (agent.Adapter, error) {
			return New(agent.Config{Kind: Kind, Command: command, Options: map[string]any{
				"config":    clis.OpenCodeConfig(m.(*agenttest.Anthropic).Server.URL),
				"state_dir": states.Of(t, m),
			}})
		},
		Env: func(t *testing.T, ws string, m agenttest.Model) []string {
			return clis.OpenCodeEnv(os.Environ(), homes.Of(t, m), sharedCache)
		},
		Sidecar:     mcptest.Server(t),
		SessionIDs:  agenttest.IDFromFirstTurn,
		IssueStates: func(t *testing.T, m agenttest.Model) string { return states.Of(t, m) },
		// opencode 1.18.33 retries a 500 with backoff whatever X-Should-Retry says (four
		// attempts took 36 s); it gives up on a 400 at once.
		ModelErrorStatus: 400,
	})
}
