package daemon

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sortie/internal/config"
)

// The daemon's library follows edits of its files: a good edit is served from the
// next check, a broken one is reported and the previous library kept.
func TestLibraryCache_ReloadsGoodEditsAndKeepsTheLastGoodLibrary(t *testing.T) {
	dir := t.TempDir()
	for name, body := range miniLibrary {
		writeFile(t, dir, name, body)
	}
	lib, err := loadLibrary(dir)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &config.Config{Workflows: config.WorkflowsConfig{Dir: dir}}
	c := newLibraryCache(lib, func() *config.Config { return cfg }, slog.New(slog.DiscardHandler))
	recheck := func() { c.mu.Lock(); c.checkedAt = time.Time{}; c.mu.Unlock() }
	wfFile := filepath.Join(dir, "mini", "workflow.json")
	edit := func(from, to string) {
		b, err := os.ReadFile(wfFile)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(wfFile, []byte(strings.Replace(string(b), from, to, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		// The fingerprint includes the modification time, which a fast edit may not change.
		later := time.Now().Add(time.Minute)
		if err := os.Chtimes(wfFile, later, later); err != nil {
			t.Fatal(err)
		}
		recheck()
	}

	edit(`"version": "1.0.0"`, `"version": "1.1.0"`)
	w, _ := c.get().Workflow("mini")
	if w == nil || w.Version != "1.1.0" || c.err() != nil {
		t.Fatalf("after a good edit: version %v, err %v; want 1.1.0 served", w, c.err())
	}

	edit(`"version": "1.1.0"`, `"version": "one"`)
	w, _ = c.get().Workflow("mini")
	if w == nil || w.Version != "1.1.0" {
		t.Fatalf("after a broken edit the library served is %+v, want the last good one", w)
	}
	if err := configError(func() error { return nil }, &daemonWorkflows{lib: c})(); err == nil || !strings.Contains(err.Error(), "workflow.json") {
		t.Fatalf("workflow_error after a broken edit = %v, want the problem naming the file", err)
	}

	edit(`"version": "one"`, `"version": "1.2.0"`)
	if w, _ = c.get().Workflow("mini"); w == nil || w.Version != "1.2.0" || c.err() != nil {
		t.Fatalf("after the fix: %+v, err %v", w, c.err())
	}
}
