package claude_test

// Drift checks (internal/agent/agenttest/drift.go): what every adapter must do alike,
// held through agent.Adapter alone, so that they outlive the adapters' internals.

import (
	"path/filepath"
	"testing"

	"sortie/internal/agent"
	"sortie/internal/agent/agenttest"
	"sortie/internal/agent/claude"
)

// driftAdapter builds the claude-code adapter running the fake CLI at command, with
// options as its `claude-code:` block.
func driftAdapter(options map[string]any) agenttest.AdapterFor {
	return func(t *testing.T, command string) agent.Adapter {
		t.Helper()
		a, err := agent.New(agent.Config{Kind: claude.Kind, Command: command, WorkflowDir: t.TempDir(), Options: options})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
}

func TestDrift_VersionDoesNotWaitForChildren(t *testing.T) {
	agenttest.VersionDoesNotWaitForChildren(t, driftAdapter(nil))
}

func TestDrift_SSHUnreachableHint(t *testing.T) {
	agenttest.SSHUnreachableHint(t, driftAdapter(nil), nil)
}

func TestDrift_StderrWithoutEscapes(t *testing.T) {
	agenttest.StderrWithoutEscapes(t, driftAdapter(nil), nil)
}

func TestDrift_PlantedLoginNeverCopied(t *testing.T) {
	agenttest.PlantedLoginNeverCopied(t, driftAdapter(map[string]any{"use_login": true}), nil,
		func(home string) string { return filepath.Join(home, ".claude", ".credentials.json") })
}
