package workspace

import (
	"context"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"testing"

	"sortie/internal/runas"
)

// TestPrepare_RunAsGivesTheWorkspaceToTheAgentsUser: with agent.run_as, a new
// workspace, what its hooks make in it and the files the daemon writes in .sortie/
// are the user's; hooks run as the user with its HOME; a workspace made before
// run_as is given to the user whole. Needs root and the user nobody.
func TestPrepare_RunAsGivesTheWorkspaceToTheAgentsUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("skipped: agent.run_as needs root")
	}
	u, err := runas.Lookup("nobody")
	if err != nil {
		t.Skipf("skipped: no user nobody: %v", err)
	}
	base := t.TempDir()
	os.Chmod(filepath.Dir(base), 0o755)
	os.Chmod(base, 0o755)
	root := filepath.Join(base, "workspaces")
	m := newManager(t, Config{Root: root, RunAs: u, BaseEnv: []string{"PATH=" + os.Getenv("PATH"), "HOME=/root"},
		Hooks: Hooks{AfterCreate: `id -un > made-by; echo "$HOME" > home`}})

	// A workspace of the daemon's from before run_as.
	old := filepath.Join(root, "OLD-1")
	os.MkdirAll(filepath.Join(old, "src"), 0o755)
	os.WriteFile(filepath.Join(old, "src", "f"), []byte("x"), 0o644)

	ctx := context.Background()
	ws, err := m.Prepare(ctx, Issue{ID: "1", Identifier: "NEW-1"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteFileAtomic(ws.Path, "mcp.json", []byte("{}")); err != nil {
		t.Fatal(err)
	}
	nobody, _ := user.Lookup("nobody")
	for name, want := range map[string]string{"made-by": nobody.Username, "home": nobody.HomeDir} {
		if b, err := os.ReadFile(filepath.Join(ws.Path, name)); err != nil || strings.TrimSpace(string(b)) != want {
			t.Errorf("after_create's %s = %q (%v), want %q", name, b, err, want)
		}
	}
	for _, p := range []string{ws.Path, filepath.Join(ws.Path, "made-by"), filepath.Join(ws.Path, SortieDir),
		filepath.Join(ws.Path, SortieDir, GitignoreFile), filepath.Join(ws.Path, SortieDir, "mcp.json")} {
		if ok, err := u.Owns(p); !ok {
			t.Errorf("%s is not %s's (%v)", p, u, err)
		}
	}

	if _, err := m.Prepare(ctx, Issue{ID: "2", Identifier: "OLD-1"}, 0); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{old, filepath.Join(old, "src", "f")} {
		if ok, _ := u.Owns(p); !ok {
			t.Errorf("%s of a workspace made before run_as was not given to %s", p, u)
		}
	}
}

// TestWriteFileAtomic_ALinkedSortieDirIsRefused: a .sortie/ that is a link out of the
// workspace never receives the daemon's files.
func TestWriteFileAtomic_ALinkedSortieDirIsRefused(t *testing.T) {
	ws := t.TempDir()
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(ws, SortieDir)); err != nil {
		t.Fatal(err)
	}
	if err := WriteFileAtomic(ws, "mcp.json", []byte("{}")); err == nil {
		t.Fatal("WriteFileAtomic wrote through a linked .sortie/")
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Errorf("files landed outside the workspace: %v", entries)
	}
}
