// Package clis finds the real agent CLIs that scripts/install-clis.sh installs into the
// repository's .tools/ folder, for contract tests. Without them a test is skipped with
// the command to run, except under CI (CI set), where their absence is a failure. It
// also builds the environments that run them offline against internal/testkit/fakemodel.
package clis

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
)

var (
	rootOnce sync.Once
	root     string
)

// repoRoot is the directory holding go.mod, found upwards from the working directory.
func repoRoot() string {
	rootOnce.Do(func() {
		dir, err := os.Getwd()
		if err != nil {
			return
		}
		for {
			if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
				root = dir
				return
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				return
			}
			dir = parent
		}
	})
	return root
}

// Path returns the absolute path of the installed CLI name ("claude", "copilot", "codex",
// "opencode").
func Path(t testing.TB, name string) string {
	t.Helper()
	r := repoRoot()
	if r == "" {
		t.Fatalf("clis: no go.mod above the working directory")
	}
	p := filepath.Join(r, ".tools", "node_modules", ".bin", name)
	if fi, err := os.Stat(p); err != nil || fi.Mode()&0o111 == 0 {
		if os.Getenv("CI") != "" {
			t.Fatalf("clis: %s is not installed at %s; .ci/run must run scripts/install-clis.sh", name, p)
		}
		t.Skipf("clis: %s is not installed; run scripts/install-clis.sh (or make clis) to run the contract tests", name)
	}
	return p
}

// Claude returns the path of the pinned claude CLI.
func Claude(t testing.TB) string { return Path(t, "claude") }

// Copilot returns the path of the pinned copilot CLI.
func Copilot(t testing.TB) string { return Path(t, "copilot") }

// Codex returns the path of the pinned codex CLI.
func Codex(t testing.TB) string { return Path(t, "codex") }

// OpenCode returns the path of the pinned opencode CLI.
func OpenCode(t testing.TB) string { return Path(t, "opencode") }
