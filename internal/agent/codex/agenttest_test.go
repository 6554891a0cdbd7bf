package codex

import (
	"os"
	"strings"
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
// against the real codex CLI and the fake Responses API.
func TestAgentContract(t *testing.T) {
	// One HOME per case, shared by its sessions: the CLI keeps its threads there.
	var homes agenttest.Homes
	agenttest.Run(t, agenttest.Harness{
		Command: func(t *testing.T) string { return clis.Codex(t) },
		NewModel: func(t *testing.T) agenttest.Model {
			return agenttest.NewResponses(t, agenttest.ResponsesTools{
				Shell: "exec_command",
				MCPTool: func(server, tool string) (string, string) {
					return "mcp__" + strings.ReplaceAll(server, "-", "_"), tool
				},
			})
		},
		NewAdapter: func(t *testing.T, command string, m agenttest.Model) (agent.Adapter, error) {
			url := m.(*agenttest.Responses).Server.URL
			return New(agent.Config{Kind: Kind, Command: command, WorkflowDir: t.TempDir(),
				Env: clis.CodexEnv(os.Environ(), homes.Of(t, m)),
				Options: map[string]any{
					"model":           clis.CodexModel,
					"model_provider":  "fakemodel",
					"model_providers": map[string]any{"fakemodel": clis.CodexProvider(url)},
				}})
		},
		Env: func(t *testing.T, ws string, m agenttest.Model) []string {
			return clis.CodexEnv(os.Environ(), homes.Of(t, m))
		},
		Sidecar:           mcptest.Server(t),
		SessionIDs:        agenttest.IDFromFirstTurn,
		ProcessPerSession: true,
		Unsupported: map[string]string{
			agenttest.CaseModelErrorText: "codex 0.169.0 replaces a 5xx response's message with its own (\"We're currently " +
				"experiencing high demand\", internalServerError); a 4xx's message gets through (TestContract_ModelErrorFailsTheTurn)",
		},
	})
}
