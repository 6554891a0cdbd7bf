package daemon

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"

	"sortie/internal/config"
	"sortie/internal/metrics"
	"sortie/internal/orchestrator"
)

// adapterWorkflow is a file-tracker WORKFLOW.md running claude-code as command with
// the given active states and prompt.
func adapterWorkflow(command, active, prompt string) string {
	return fmt.Sprintf(`---
tracker:
  kind: file
  path: issues.json
  active_states: [%s]
  terminal_states: [Done]
agent:
  kind: claude-code
  command: %s
db_path: ./sortie.db
---
%s
`, active, command, prompt)
}

// TestAdapterSet_RebuildsWhatChangedAndKeepsTheSetOnFailure drives the adapters of a
// daemon through the edits a reload validates: a prompt edit keeps both adapters, a
// new active state rebuilds the tracker only, an agent.command whose --version fails
// is rejected with the set in force kept (and not run again for the same file), and a
// working one rebuilds the agent with its version.
func TestAdapterSet_RebuildsWhatChangedAndKeepsTheSetOnFailure(t *testing.T) {
	dir := t.TempDir()
	cli := func(name, body string) string {
		p := writeFile(t, dir, name, "#!/bin/sh\n"+body+"\n")
		if err := os.Chmod(p, 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	v1 := cli("claude-v1", `echo "2.1.330 (Claude Code)"`)
	v2 := cli("claude-v2", `echo "2.2.0 (Claude Code)"`)
	broken := cli("claude-broken", `echo run >> `+dir+`/broken-runs; echo "node: not found" >&2; exit 127`)
	writeFile(t, dir, "issues.json", "[]\n")
	wf := dir + "/WORKFLOW.md"
	load := func(content string) *config.Config {
		t.Helper()
		writeFile(t, dir, "WORKFLOW.md", content)
		cfg, err := config.Load(wf, config.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	mets := metrics.New(testVersion)
	b := &adapterSet{ctx: t.Context(), log: slog.New(slog.NewTextHandler(io.Discard, nil)), mets: mets, version: testVersion}
	if err := b.validate(load(adapterWorkflow(v1, "Todo", "Work."))); err != nil {
		t.Fatalf("validate before startUp: %v, want nil (nothing to build yet)", err)
	}
	first, err := b.startUp(load(adapterWorkflow(v1, "Todo", "Work.")))
	if err != nil {
		t.Fatal(err)
	}
	if first.AgentVersion != "2.1.330 (Claude Code)" {
		t.Errorf("start-up agent version = %q", first.AgentVersion)
	}
	current := func() orchestrator.Adapters {
		a, err := b.current(nil)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}

	steps := []struct {
		name                 string
		workflow             string
		wantErr              string // "" for a valid edit
		newTracker, newAgent bool
		wantVersion          string
	}{
		{"prompt edit", adapterWorkflow(v1, "Todo", "Work carefully."), "", false, false, "2.1.330 (Claude Code)"},
		{"new active state", adapterWorkflow(v1, "Todo, Ready", "Work carefully."), "", true, false, "2.1.330 (Claude Code)"},
		{"agent that does not run", adapterWorkflow(broken, "Todo, Ready, Later", "Work."), "claude-code preflight", false, false, "2.1.330 (Claude Code)"},
		{"the same file again", adapterWorkflow(broken, "Todo, Ready, Later", "Work."), "claude-code preflight", false, false, "2.1.330 (Claude Code)"},
		{"agent that runs", adapterWorkflow(v2, "Todo, Ready", "Work."), "", false, true, "2.2.0 (Claude Code)"},
	}
	for _, s := range steps {
		before := current()
		err := b.validate(load(s.workflow))
		switch {
		case s.wantErr == "" && err != nil:
			t.Fatalf("%s: validate = %v, want the edit accepted", s.name, err)
		case s.wantErr != "" && (err == nil || !strings.Contains(err.Error(), s.wantErr)):
			t.Fatalf("%s: validate = %v, want an error containing %q", s.name, err, s.wantErr)
		}
		after := current()
		if got := after.Tracker != before.Tracker; got != s.newTracker {
			t.Errorf("%s: tracker rebuilt = %v, want %v", s.name, got, s.newTracker)
		}
		if got := after.Agent != before.Agent; got != s.newAgent {
			t.Errorf("%s: agent rebuilt = %v, want %v", s.name, got, s.newAgent)
		}
		if after.AgentVersion != s.wantVersion {
			t.Errorf("%s: agent version = %q, want %q", s.name, after.AgentVersion, s.wantVersion)
		}
	}
	if runs, _ := os.ReadFile(dir + "/broken-runs"); strings.Count(string(runs), "run") != 1 {
		t.Errorf("the failing agent.command ran %d times, want once for one file", strings.Count(string(runs), "run"))
	}
}
