package config

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestLoad_AgentSandbox(t *testing.T) {
	cfg, dir := mustLoad(t, minimalWith("agent:\n  kind: mock\n  sandbox:\n    mode: Landlock\n"+
		"    read_paths: [docs, /opt/sdk]\n    write_paths: [~/.cache/go-build]\n"), map[string]string{"HOME": "/home/op"})
	sb := cfg.Agent.Sandbox
	if sb.Mode != SandboxLandlock {
		t.Errorf("mode %q, want landlock", sb.Mode)
	}
	if want := []string{filepath.Join(dir, "docs"), "/opt/sdk"}; strings.Join(sb.ReadPaths, ",") != strings.Join(want, ",") {
		t.Errorf("read_paths = %q, want %q (relative to WORKFLOW.md's directory)", sb.ReadPaths, want)
	}
	if len(sb.WritePaths) != 1 || sb.WritePaths[0] != "/home/op/.cache/go-build" {
		t.Errorf("write_paths = %q, want ~ expanded", sb.WritePaths)
	}
	if cfg, _ := mustLoad(t, minimalWith("agent: {kind: mock}\n"), nil); cfg.Agent.Sandbox.Mode != "" {
		t.Errorf("absent agent.sandbox: mode %q, want empty (landlock where supported)", cfg.Agent.Sandbox.Mode)
	}
}

func TestLoad_AgentSandboxModeMustBeKnown(t *testing.T) {
	_, problems, _ := checkFrontMatter(t, minimalWith("agent:\n  kind: mock\n  sandbox: {mode: docker}\n"), nil)
	if want := `config: agent.sandbox.mode: must be landlock or off (got "docker")`; !hasProblem(problems, SeverityError, want) {
		t.Fatalf("want error %q\ngot:\n%s", want, problemLines(problems))
	}
}

func TestLoad_AgentRunAs(t *testing.T) {
	cfg, _ := mustLoad(t, minimalWith("agent:\n  kind: mock\n  run_as: ' sortie-agent '\n"), nil)
	if cfg.Agent.RunAs != "sortie-agent" {
		t.Errorf("agent.run_as = %q, want sortie-agent", cfg.Agent.RunAs)
	}
	if cfg, _ := mustLoad(t, minimalWith("agent: {kind: mock}\n"), nil); cfg.Agent.RunAs != "" {
		t.Errorf("absent agent.run_as = %q, want empty", cfg.Agent.RunAs)
	}
}

func TestLoad_BudgetWarnRatio(t *testing.T) {
	if cfg, _ := mustLoad(t, minimalWith("agent: {kind: mock}\n"), nil); cfg.Agent.BudgetWarnRatio != DefaultBudgetWarnRatio {
		t.Errorf("default budget_warn_ratio = %v, want %v", cfg.Agent.BudgetWarnRatio, DefaultBudgetWarnRatio)
	}
	for in, want := range map[string]float64{"0.5": 0.5, "0": 0} {
		cfg, _ := mustLoad(t, minimalWith("agent: {kind: mock, budget_warn_ratio: "+in+"}\n"), nil)
		if cfg.Agent.BudgetWarnRatio != want {
			t.Errorf("budget_warn_ratio %s = %v", in, cfg.Agent.BudgetWarnRatio)
		}
	}
	for _, bad := range []string{"1", "1.5", "-0.1", "lots"} {
		_, problems, _ := checkFrontMatter(t, minimalWith("agent: {kind: mock, budget_warn_ratio: "+bad+"}\n"), nil)
		if !strings.Contains(problemLines(problems), "agent.budget_warn_ratio: must be a number from 0") {
			t.Errorf("budget_warn_ratio %s: problems\n%s", bad, problemLines(problems))
		}
	}
}

func TestDBKey_OneDatabaseOneKey(t *testing.T) {
	a, b := &Config{DBPath: "/srv/a/.sortie.db"}, &Config{DBPath: "/srv/b/.sortie.db"}
	if a.DBKey() != (&Config{DBPath: a.DBPath}).DBKey() || a.DBKey() == b.DBKey() || len(a.DBKey()) != 12 {
		t.Errorf("DBKey: %q, %q; want 12 hex digits, stable per path, different across paths", a.DBKey(), b.DBKey())
	}
}
