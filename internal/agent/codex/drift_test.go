package codex_test

// Drift checks (internal/agent/agenttest/drift.go): what every adapter must do alike,
// held through agent.Adapter alone, so that they outlive the adapters' internals.
// Codex refuses SSH hosts at StartSession (not supported yet), so
// agenttest.SSHUnreachableHint does not apply.

import (
	"path/filepath"
	"testing"

	"sortie/internal/agent"
	"sortie/internal/agent/agenttest"
	"sortie/internal/agent/codex"
)

// driftAdapter builds the codex adapter running the fake CLI at command (as
// `<command> app-server`), with options as its `codex:` block.
func driftAdapter(options map[string]any) agenttest.AdapterFor {
	return func(t *testing.T, command string) agent.Adapter {
		t.Helper()
		a, err := agent.New(agent.Config{Kind: codex.Kind, Command: command, WorkflowDir: t.TempDir(), Options: options})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
}

func TestDrift_VersionDoesNotWaitForChildren(t *testing.T) {
	agenttest.VersionDoesNotWaitForChildren(t, driftAdapter(nil))
}

// The app-server's stderr, quoted when it exits, is held to the same rule as a
// fork-per-turn CLI's.
func TestDrift_StderrWithoutEscapes(t *testing.T) {
	agenttest.StderrWithoutEscapes(t, driftAdapter(nil), nil)
}

func TestDrift_PlantedLoginNeverCopied(t *testing.T) {
	agenttest.PlantedLoginNeverCopied(t, driftAdapter(map[string]any{"use_login": true}), nil,
		func(home string) string { return filepath.Join(home, ".codex", "auth.json") })
}
