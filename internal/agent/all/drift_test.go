package all_test

// Drift checks (internal/agent/agenttest/drift.go): what every adapter must do alike,
// held through agent.Adapter alone for every adapter that runs a CLI, so that a new
// adapter is held to them by being linked here.

import (
	"path/filepath"
	"testing"

	"sortie/internal/agent"
	"sortie/internal/agent/agenttest"
	_ "sortie/internal/agent/all"
)

// drifts are the adapters that run a CLI, with what the checks need of each.
var drifts = []struct {
	kind string
	// env satisfies a start-up preflight (copilot's authentication) without the
	// machine's own credentials.
	env []string
	// noSSH: the adapter refuses SSH hosts at StartSession (codex, not supported yet).
	noSSH bool
	// login is where the CLI's own login lives below a HOME, copied into the issue's
	// state only with use_login; "" for a CLI that copies none (copilot takes a token
	// variable).
	login string
}{
	{kind: "claude-code", login: ".claude/.credentials.json"},
	{kind: "codex", noSSH: true, login: ".codex/auth.json"},
	{kind: "copilot-cli", env: []string{"COPILOT_GITHUB_TOKEN=drift-token"}},
	{kind: "opencode", login: ".local/share/opencode/auth.json"},
	{kind: "gemini"},
}

// adapterOf builds the adapter of kind running the fake CLI at command, with options
// as its block.
func adapterOf(kind string, options map[string]any) agenttest.AdapterFor {
	return func(t *testing.T, command string) agent.Adapter {
		t.Helper()
		a, err := agent.New(agent.Config{Kind: kind, Command: command, WorkflowDir: t.TempDir(), Options: options})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
}

func TestDrift_VersionDoesNotWaitForChildren(t *testing.T) {
	for _, d := range drifts {
		t.Run(d.kind, func(t *testing.T) { agenttest.VersionDoesNotWaitForChildren(t, adapterOf(d.kind, nil)) })
	}
}

func TestDrift_SSHUnreachableHint(t *testing.T) {
	for _, d := range drifts {
		t.Run(d.kind, func(t *testing.T) {
			if d.noSSH {
				t.Skip(d.kind + " refuses SSH hosts at StartSession")
			}
			agenttest.SSHUnreachableHint(t, adapterOf(d.kind, nil), d.env)
		})
	}
}

func TestDrift_StderrWithoutEscapes(t *testing.T) {
	for _, d := range drifts {
		t.Run(d.kind, func(t *testing.T) { agenttest.StderrWithoutEscapes(t, adapterOf(d.kind, nil), d.env) })
	}
}

func TestDrift_PlantedLoginNeverCopied(t *testing.T) {
	for _, d := range drifts {
		t.Run(d.kind, func(t *testing.T) {
			if d.login == "" {
				t.Skip(d.kind + " copies no login")
			}
			agenttest.PlantedLoginNeverCopied(t, adapterOf(d.kind, map[string]any{"use_login": true}), d.env,
				func(home string) string { return filepath.Join(home, filepath.FromSlash(d.login)) })
		})
	}
}

// A new adapter that runs a CLI is held to the drift checks: it must be listed above.
func TestDrift_EveryCLIAdapterIsChecked(t *testing.T) {
	for _, kind := range agent.Kinds() {
		m, ok := agent.Lookup(kind)
		if !ok {
			t.Errorf("agent.Kinds lists %q, which agent.Lookup does not know", kind)
			continue
		}
		if !m.RequiresCommand {
			continue // no CLI of its own (the mock)
		}
		found := false
		for _, d := range drifts {
			found = found || d.kind == kind
		}
		if !found {
			t.Errorf("adapter %q runs a CLI but is not in drifts", kind)
		}
	}
}
