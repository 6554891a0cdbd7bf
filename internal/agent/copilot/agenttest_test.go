package copilot

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"sortie/internal/agent"
	"sortie/internal/agent/agenttest"
	"sortie/internal/mcp/mcptest"
	"sortie/internal/testkit/clis"
	"sortie/internal/testkit/fakemodel"
)

// The test binary is also the sortie-tools sidecar the agenttest suite's MCP case
// writes into .sortie/mcp.json; this runs before TestMain.
func init() { mcptest.Main() }

// TestAgentContract runs the contract suite every adapter passes (internal/agent/agenttest)
// against the real copilot CLI in BYOK mode and the fake Anthropic API.
func TestAgentContract(t *testing.T) {
	// One HOME per case, shared by its sessions: the CLI keeps its conversations there.
	var homes agenttest.Homes
	agenttest.Run(t, agenttest.Harness{
		Command: copilotCLI,
		NewModel: func(t *testing.T) agenttest.Model {
			return agenttest.NewAnthropic(t, agenttest.AnthropicTools{
				Shell:   "bash",
				MCPTool: func(server, tool string) string { return server + "-" + tool },
				// In autopilot mode the CLI asks the model to continue until it calls
				// task_complete.
				Finish: func(text string) fakemodel.ToolUse { return done(text) },
			})
		},
		NewAdapter: func(t *testing.T, command string, _ agenttest.Model) (agent.Adapter, error) {
			a, err := New(agent.Config{Kind: Kind, Command: command, ReadTimeout: 60 * time.Second})
			if err != nil {
				return nil, err
			}
			dialectOf(a.(*adapter)).gh = filepath.Join(t.TempDir(), "no-gh") // never the machine's gh login
			return a, nil
		},
		Env: func(t *testing.T, ws string, m agenttest.Model) []string {
			return clis.CopilotEnv(os.Environ(), m.(*agenttest.Anthropic).Server.URL, homes.Of(t, m), cliCache)
		},
		Sidecar:          mcptest.Server(t),
		SessionIDs:       agenttest.IDFromFirstTurn,
		BookkeepingTools: []string{"task_complete"},
		Unsupported: map[string]string{
			agenttest.CaseUsageExactIn: "copilot 1.0.102 reports output tokens only (its usage file and stream carry no input " +
				"or cache figures), so the adapter reports input 0 (docs/agents/copilot-cli.md)",
			agenttest.CaseResumeUsage: "copilot 1.0.102 reports tokens only as totals of the CLI session, in the usage file it " +
				"writes on exit; on the first turn of a session resumed from an earlier run the adapter cannot tell that run's " +
				"share, so it counts only the stream's figures (none with this CLI) and undercounts that turn (copilot.go, settle)",
		},
	})
}
