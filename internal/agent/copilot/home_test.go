package copilot

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sortie/internal/agent"
)

// A reset leaves only the sessions (statedir tests the rest).
func TestResetHome_KeepsOnlySessions(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "home")
	for _, rel := range []string{"copilot-instructions.md", "hooks/h.json", "settings.json", "mcp-config.json", "agents/a.md",
		"skills/s/SKILL.md", "pkg/linux-x64/9.9.9/index.js", "session-store.db", "session-state/s1/events.jsonl"} {
		p := filepath.Join(dir, rel)
		os.MkdirAll(filepath.Dir(p), 0o700)
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := resetHome(dir, nil); err != nil {
		t.Fatal(err)
	}
	var left []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			left = append(left, rel)
		}
		return nil
	})
	if !slices.Equal(left, []string{"session-state/s1/events.jsonl"}) {
		t.Errorf("left after the reset: %q", left)
	}
}

func TestRuntimeDirs(t *testing.T) {
	got := runtimeDirs([]string{"HOME=/h", "COPILOT_CACHE_HOME=/cc"})
	if !slices.Equal(got, []string{"/cc", "/h/.cache/copilot"}) {
		t.Errorf("runtimeDirs = %q", got)
	}
}

func TestNew_WarnsOfASharedHome(t *testing.T) {
	a, err := New(agent.Config{Kind: Kind, Command: "copilot", Env: []string{"HOME=/h", "COPILOT_HOME=/shared"}})
	if err != nil {
		t.Fatal(err)
	}
	if w := a.(agent.Warner).Warnings(); len(w) != 1 || !strings.Contains(w[0], "COPILOT_HOME=/shared") {
		t.Errorf("warnings = %q, want one naming the shared home", w)
	}
}
