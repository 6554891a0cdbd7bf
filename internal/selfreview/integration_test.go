package selfreview

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sortie/internal/workspace"
)

// TestTakeDiff_RealScript runs the diff script through a real workspace.Manager
// (unconfined here, git neutralised) in a git repository: a new file shows
// (intent-to-add), the size counts the whole diff and the text is its start, and no
// external diff or textconv program the repository configures is run.
func TestTakeDiff_RealScript(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	m, err := workspace.New(workspace.Config{Root: t.TempDir(), BaseEnv: []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	issue := workspace.Issue{ID: "1", Identifier: "PROJ-1"}
	ws, err := m.Prepare(t.Context(), issue, 0)
	if err != nil {
		t.Fatal(err)
	}
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"}, args...)...)
		cmd.Dir = ws.Path
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+t.TempDir())
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q")
	must(t, os.WriteFile(filepath.Join(ws.Path, "a.txt"), []byte("one\n"), 0o644))
	git("add", "a.txt")
	git("commit", "-q", "-m", "first")
	// What an agent may configure to run a program on every diff.
	marker := filepath.Join(t.TempDir(), "ran")
	must(t, os.WriteFile(filepath.Join(ws.Path, "evil.sh"), []byte("#!/bin/sh\ntouch "+marker+"\n"), 0o755))
	git("config", "diff.external", filepath.Join(ws.Path, "evil.sh"))
	git("config", "diff.evil.textconv", filepath.Join(ws.Path, "evil.sh"))
	must(t, os.WriteFile(filepath.Join(ws.Path, ".gitattributes"), []byte("*.txt diff=evil\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(ws.Path, "a.txt"), []byte("one\ntwo\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(ws.Path, "new.txt"), []byte(strings.Repeat("new line\n", 200)), 0o644))

	run := func(max int) diff {
		t.Helper()
		r, err := m.Verify(t.Context(), DiffCommandName, diffScript(max), ws, issue, time.Minute)
		if err != nil || r.ExitCode != 0 {
			t.Fatalf("diff script: %+v, %v", r, err)
		}
		d, err := takeDiff(t.Context(), Params{Run: func(_ context.Context, _, _ string, _ time.Duration) (workspace.CommandResult, error) { return r, nil }}, max, time.Minute)
		if err != nil {
			t.Fatalf("takeDiff: %v (output %q)", err, r.Output)
		}
		return d
	}
	full := run(maxDiffOutput)
	if full.truncated || !strings.Contains(full.text, "+two") || !strings.Contains(full.text, "+++ b/new.txt") || full.size != int64(len(full.text)) {
		t.Fatalf("full diff = %+v", full)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the diff ran a program the repository's configuration chose")
	}
	cut := run(100)
	if !cut.truncated || len(cut.text) != 100 || cut.size != full.size || cut.text != full.text[:100] {
		t.Errorf("cut diff = %d bytes of %d, truncated %v; want the first 100 of %d", len(cut.text), cut.size, cut.truncated, full.size)
	}
}
