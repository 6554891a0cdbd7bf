package copilot_test

// Drift checks (internal/agent/agenttest/drift.go): what every adapter must do alike,
// held through agent.Adapter alone, so that they outlive the adapters' internals.
// Copilot CLI takes its credential from a token variable and copies no login, so
// agenttest.PlantedLoginNeverCopied does not apply.

import (
	"testing"

	"sortie/internal/agent"
	"sortie/internal/agent/agenttest"
	"sortie/internal/agent/copilot"
)

// driftEnv satisfies StartSession's authentication preflight, so that no `gh` is asked.
var driftEnv = []string{"COPILOT_GITHUB_TOKEN=drift-token"}

func driftAdapter(t *testing.T, command string) agent.Adapter {
	t.Helper()
	a, err := agent.New(agent.Config{Kind: copilot.Kind, Command: command, WorkflowDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestDrift_VersionDoesNotWaitForChildren(t *testing.T) {
	agenttest.VersionDoesNotWaitForChildren(t, driftAdapter)
}

func TestDrift_SSHUnreachableHint(t *testing.T) {
	agenttest.SSHUnreachableHint(t, driftAdapter, driftEnv)
}

func TestDrift_StderrWithoutEscapes(t *testing.T) {
	agenttest.StderrWithoutEscapes(t, driftAdapter, driftEnv)
}
