package orchestrator

import (
	"os"
	"path/filepath"
	"testing"

	"sortie/internal/config"
)

func TestSweep_StartupRemovesWorkspacesOfTerminalIssuesOnly(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "removed")
	cfg := testConfig(t, func(c *config.Config) {
		// before_remove proves the hook ran, and for which workspace.
		c.Hooks.BeforeRemove = `basename "$PWD" >> '` + marker + `'`
	})
	h := newHarness(t, cfg, harnessOptions{exitWhenIdle: true})
	h.trk.Put(issue("DONE-1", "Done"), issue("PARKED-2", "Backlog"))
	for _, name := range []string{"DONE-1", "PARKED-2", "UNKNOWN-3"} {
		if err := os.MkdirAll(filepath.Join(cfg.Workspace.Root, name), 0o750); err != nil {
			t.Fatal(err)
		}
	}
	h.start()
	if err := h.wait(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if _, err := os.Stat(filepath.Join(cfg.Workspace.Root, "DONE-1")); !os.IsNotExist(err) {
		t.Errorf("workspace of the Done issue still exists (stat error %v)", err)
	}
	for _, keep := range []string{"PARKED-2", "UNKNOWN-3"} {
		if _, err := os.Stat(filepath.Join(cfg.Workspace.Root, keep)); err != nil {
			t.Errorf("workspace %s of a non-terminal or unknown issue was removed: %v", keep, err)
		}
	}
	got, err := os.ReadFile(marker)
	if err != nil || string(got) != "DONE-1\n" {
		t.Errorf("before_remove ran for %q (err %v), want exactly DONE-1", got, err)
	}
}
