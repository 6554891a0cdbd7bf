package opencode_test

// Drift checks (internal/agent/agenttest/drift.go): what every adapter must do alike,
// held through agent.Adapter alone, so that they outlive the adapters' internals.

import (
	"path/filepath"
	"testing"

	"sortie/internal/agent"
	"sortie/internal/agent/agenttest"
	"sortie/internal/agent/opencode"
)

func driftAdapter(t *testing.T, command string) agent.Adapter {
	t.Helper()
	a, err := agent.New(agent.Config{Kind: opencode.Kind, Command: command, WorkflowDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestDrift_VersionDoesNotWaitForChildren(t *testing.T) {
	agenttest.VersionDoesNotWaitForChildren(t, driftAdapter)
}

func TestDrift_SSHUnreachableHint(t *testing.T) {
	agenttest.SSHUnreachableHint(t, driftAdapter, nil)
}

func TestDrift_StderrWithoutEscapes(t *testing.T) {
	agenttest.StderrWithoutEscapes(t, driftAdapter, nil)
}

// OpenCode's credentials (`opencode auth login`) are copied into every session's data
// directory, with no option to ask for it.
func TestDrift_PlantedLoginNeverCopied(t *testing.T) {
	agenttest.PlantedLoginNeverCopied(t, driftAdapter, nil,
		func(home string) string { return filepath.Join(home, ".local", "share", "opencode", "auth.json") })
}
