package gemini

import (
	"os"
	"testing"

	"sortie/internal/agent"
	"sortie/internal/agent/agenttest"
	"sortie/internal/mcp/mcptest"
	"sortie/internal/testkit/clis"
)

// TestAgentContract runs the contract suite every adapter passes (internal/agent/agenttest)
// against the real gemini CLI and the fake Gemini API.
func TestAgentContract(t *testing.T) {
	// One HOME per case, shared by its sessions: the GEMINI_CLI_HOME, which
	// holds the transcripts a resume reads, goes below its cache.
	var homes agenttest.Homes
	agenttest.Run(t, agenttest.Harness{
		Command:  func(t *testing.T) string { return clis.Gemini(t) },
		NewModel: func(t *testing.T) agenttest.Model { m, _ := agenttest.NewGeminiModel(t); return m },
		NewAdapter: func(t *testing.T, command string, _ agenttest.Model) (agent.Adapter, error) {
			return New(agent.Config{Kind: Kind, Command: command, Options: map[string]any{"model": clis.GeminiModel}})
		},
		Env: func(t *testing.T, ws string, m agenttest.Model) []string {
			return clis.GeminiEnv(os.Environ(), m.(*agenttest.Gemini).Server.URL, homes.Of(t, m))
		},
		Sidecar:    mcptest.Server(t),
		SessionIDs: agenttest.IDAtStart,
		// The CLI (0.61.0) retries a 500 with backoff from 5 seconds whatever the
		// response says; it gives up on a 400 at once.
		ModelErrorStatus: 400,
	})
}
