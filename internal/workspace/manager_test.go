package workspace

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var testIssue = Issue{ID: "10001", Identifier: "PROJ-1"}

func newManager(t *testing.T, cfg Config) *Manager {
	t.Helper()
	if cfg.Root == "" {
		cfg.Root = filepath.Join(t.TempDir(), "workspaces")
	}
	if cfg.BaseEnv == nil {
		cfg.BaseEnv = []string{"PATH=" + os.Getenv("PATH")}
	}
	m, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return m
}

// realDir returns dir resolved through symlinks (t.TempDir is under a symlink on macOS).
func realDir(t *testing.T, dir string) string {
	t.Helper()
	r, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestNew_RejectsEmptyRoot(t *testing.T) {
	if _, err := New(Config{Root: "  "}); err == nil || !strings.Contains(err.Error(), "workspace.root") {
		t.Fatalf("New with blank root: err = %v, want an error naming workspace.root", err)
	}
}

func TestPrepare_CreatesWorkspaceInsideRoot(t *testing.T) {
	m := newManager(t, Config{})
	ws, err := m.Prepare(t.Context(), testIssue, 0)
	if err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	want := filepath.Join(realDir(t, m.Root()), "PROJ-1")
	if ws.Path != want || !ws.CreatedNow {
		t.Fatalf("Prepare = %+v, want {Path:%s CreatedNow:true}", ws, want)
	}
	fi, err := os.Stat(ws.Path)
	if err != nil || !fi.IsDir() {
		t.Fatalf("workspace %s is not a directory: %v", ws.Path, err)
	}
	gi, err := os.ReadFile(filepath.Join(ws.Path, ".sortie", ".gitignore"))
	if err != nil || string(gi) != "*\n" {
		t.Fatalf(".sortie/.gitignore = %q, %v; want %q", gi, err, "*\n")
	}

	again, err := m.Prepare(t.Context(), testIssue, 1)
	if err != nil {
		t.Fatalf("second Prepare: %v", err)
	}
	if again.Path != ws.Path || again.CreatedNow {
		t.Fatalf("second Prepare = %+v, want same path with CreatedNow false", again)
	}
}

func TestPrepare_SymlinkedRootIsResolved(t *testing.T) {
	real := t.TempDir()
	link := filepath.Join(t.TempDir(), "root-link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	m := newManager(t, Config{Root: link})
	ws, err := m.Prepare(t.Context(), testIssue, 0)
	if err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	if want := filepath.Join(realDir(t, real), "PROJ-1"); ws.Path != want {
		t.Fatalf("Path = %s, want %s (root resolved through the link)", ws.Path, want)
	}
}

func TestPrepare_RefusesSymlinkAtWorkspacePath(t *testing.T) {
	m := newManager(t, Config{})
	if err := os.MkdirAll(m.Root(), 0o750); err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(m.Root(), "PROJ-1")); err != nil {
		t.Fatal(err)
	}
	_, err := m.Prepare(t.Context(), testIssue, 0)
	if !errors.Is(err, ErrSymlink) {
		t.Fatalf("Prepare over a symlink: err = %v, want ErrSymlink", err)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Fatalf("link target was written to: %v", entries)
	}
}

func TestPrepare_NonDirectoryIsAConflictAndKept(t *testing.T) {
	m := newManager(t, Config{})
	if err := os.MkdirAll(m.Root(), 0o750); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(m.Root(), "PROJ-1")
	if err := os.WriteFile(path, []byte("keep me"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := m.Prepare(t.Context(), testIssue, 0)
	if !errors.Is(err, ErrConflict) {
		t.Fatalf("Prepare over a file: err = %v, want ErrConflict", err)
	}
	if got, _ := os.ReadFile(path); string(got) != "keep me" {
		t.Fatalf("conflicting file changed to %q", got)
	}
}

func TestPrepare_InvalidIdentifier(t *testing.T) {
	m := newManager(t, Config{})
	if _, err := m.Prepare(t.Context(), Issue{ID: "1", Identifier: ".."}, 0); !errors.Is(err, ErrInvalidKey) {
		t.Fatalf("Prepare(..): err = %v, want ErrInvalidKey", err)
	}
}

func TestPrepare_AfterCreateRunsOnlyWhenCreated(t *testing.T) {
	m := newManager(t, Config{Hooks: Hooks{AfterCreate: `echo "$SORTIE_ATTEMPT" >> created.log`}})
	for attempt := range 3 {
		if _, err := m.Prepare(t.Context(), testIssue, attempt); err != nil {
			t.Fatalf("Prepare #%d: %v", attempt, err)
		}
	}
	got, err := os.ReadFile(filepath.Join(realDir(t, m.Root()), "PROJ-1", "created.log"))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != "0\n" {
		t.Fatalf("after_create log = %q, want one run on attempt 0", got)
	}
}

func TestPrepare_AfterCreateFailureRollsBack(t *testing.T) {
	failing := newManager(t, Config{Hooks: Hooks{AfterCreate: "touch half-cloned; echo clone failed >&2; exit 3"}})
	_, err := failing.Prepare(t.Context(), testIssue, 0)
	he, ok := errors.AsType[*HookError](err)
	if !ok || he.Hook != HookAfterCreate || he.Op != HookOpRun || he.ExitCode != 3 {
		t.Fatalf("Prepare err = %#v, want after_create HookError run exit 3", err)
	}
	if !strings.Contains(he.Output, "clone failed") {
		t.Errorf("HookError.Output = %q, want the hook's stderr", he.Output)
	}
	path := filepath.Join(failing.Root(), "PROJ-1")
	if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("workspace after failed after_create: Lstat err = %v, want not exist", err)
	}

	// The next dispatch starts from scratch and runs after_create again.
	fixed := newManager(t, Config{Root: failing.Root(), Hooks: Hooks{AfterCreate: "touch cloned"}})
	ws, err := fixed.Prepare(t.Context(), testIssue, 1)
	if err != nil || !ws.CreatedNow {
		t.Fatalf("Prepare after rollback = %+v, %v; want CreatedNow", ws, err)
	}
	if _, err := os.Stat(filepath.Join(ws.Path, "cloned")); err != nil {
		t.Fatalf("after_create did not run again: %v", err)
	}
}

func TestPrepare_OrderClearsStatusBeforeBeforeRun(t *testing.T) {
	// before_run sees no stale status, and may itself write one for the run.
	m := newManager(t, Config{Hooks: Hooks{
		AfterCreate: "ls -A > after_create.ls",
		BeforeRun:   `test ! -e .sortie/status && test -f .sortie/.gitignore && echo blocked > .sortie/status`,
	}})
	ws, err := m.Prepare(t.Context(), testIssue, 0)
	if err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	if ls, _ := os.ReadFile(filepath.Join(ws.Path, "after_create.ls")); strings.Contains(string(ls), ".sortie") {
		t.Errorf("after_create saw .sortie already (%q); it must get an empty directory", ls)
	}
	if st, err := ReadStatus(ws.Path); err != nil || st.Kind != StatusBlocked {
		t.Fatalf("status after before_run = %+v, %v; want blocked", st, err)
	}
	// A second dispatch deletes the stale signal before before_run.
	if _, err := m.Prepare(t.Context(), testIssue, 1); err != nil {
		t.Fatalf("second Prepare: %v (before_run saw a stale status)", err)
	}
}

func TestPrepare_BeforeRunFailureKeepsWorkspace(t *testing.T) {
	m := newManager(t, Config{Hooks: Hooks{BeforeRun: "exit 7"}})
	ws, err := m.Prepare(t.Context(), testIssue, 0)
	he, ok := errors.AsType[*HookError](err)
	if !ok || he.Hook != HookBeforeRun || he.ExitCode != 7 {
		t.Fatalf("Prepare err = %v, want before_run HookError exit 7", err)
	}
	if ws.Path == "" {
		t.Fatal("Prepare returned no path; the caller needs it to run after_run")
	}
	if _, err := os.Stat(ws.Path); err != nil {
		t.Fatalf("workspace removed after before_run failure: %v", err)
	}
}

func TestPrepare_RefusesSymlinkedSortieDir(t *testing.T) {
	m := newManager(t, Config{})
	ws, err := m.Prepare(t.Context(), testIssue, 0)
	if err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	if err := os.RemoveAll(filepath.Join(ws.Path, ".sortie")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(ws.Path, ".sortie")); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Prepare(t.Context(), testIssue, 1); !errors.Is(err, ErrSymlink) {
		t.Fatalf("Prepare with symlinked .sortie: err = %v, want ErrSymlink", err)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Fatalf("wrote through the .sortie link: %v", entries)
	}
}

func TestAfterRun_RunsWhenContextCancelled(t *testing.T) {
	m := newManager(t, Config{Hooks: Hooks{AfterRun: `echo "$SORTIE_SELF_REVIEW_STATUS" > after_run.out`}})
	ws, err := m.Prepare(t.Context(), testIssue, 0)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := m.AfterRun(ctx, ws, testIssue, map[string]string{"SORTIE_SELF_REVIEW_STATUS": "disabled"}); err != nil {
		t.Fatalf("AfterRun: %v", err)
	}
	got, err := os.ReadFile(filepath.Join(ws.Path, "after_run.out"))
	if err != nil || string(got) != "disabled\n" {
		t.Fatalf("after_run output = %q, %v; want it to run despite cancellation", got, err)
	}
}

func TestAfterRun_FailureIsLoggedAndReturned(t *testing.T) {
	var logs bytes.Buffer
	m := newManager(t, Config{
		Hooks:  Hooks{AfterRun: "echo nope; exit 2"},
		Logger: slog.New(slog.NewTextHandler(&logs, nil)),
	})
	ws, err := m.Prepare(t.Context(), testIssue, 0)
	if err != nil {
		t.Fatal(err)
	}
	err = m.AfterRun(t.Context(), ws, testIssue, nil)
	if he, ok := errors.AsType[*HookError](err); !ok || he.Hook != HookAfterRun {
		t.Fatalf("AfterRun err = %v, want an after_run HookError", err)
	}
	if !strings.Contains(logs.String(), "hook=after_run") {
		t.Fatalf("log = %q, want a warning naming after_run", logs.String())
	}
}

func TestRemove_RunsBeforeRemoveAndDeletes(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "removed")
	m := newManager(t, Config{
		Hooks:   Hooks{BeforeRemove: `echo "$SORTIE_WORKSPACE" > "$MARKER"; exit 1`},
		PassEnv: []string{"MARKER"},
		BaseEnv: []string{"PATH=" + os.Getenv("PATH"), "MARKER=" + marker},
	})
	ws, err := m.Prepare(t.Context(), testIssue, 0)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel() // before_remove runs detached from cancellation, and its failure is ignored
	if err := m.Remove(ctx, ws.Path, testIssue); err != nil {
		t.Fatalf("Remove: %v", err)
	}
	if _, err := os.Lstat(ws.Path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("workspace still there: %v", err)
	}
	if got, _ := os.ReadFile(marker); strings.TrimSpace(string(got)) != ws.Path {
		t.Fatalf("before_remove saw SORTIE_WORKSPACE=%q, want %q", got, ws.Path)
	}
	if err := m.Remove(t.Context(), ws.Path, testIssue); err != nil {
		t.Fatalf("Remove of a gone workspace: %v, want nil", err)
	}
}

func TestRemove_RefusesPathsOutsideRoot(t *testing.T) {
	m := newManager(t, Config{})
	ws, err := m.Prepare(t.Context(), testIssue, 0)
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Dir(ws.Path)
	outside := t.TempDir()
	nested := filepath.Join(ws.Path, "sub")
	if err := os.Mkdir(nested, 0o750); err != nil {
		t.Fatal(err)
	}
	tests := []struct{ name, path string }{
		{"empty", ""},
		{"filesystem root", "/"},
		{"relative", "PROJ-1"},
		{"not clean", root + "/x/../PROJ-1"},
		{"trailing slash", ws.Path + "/"},
		{"the root itself", root},
		{"outside root", outside},
		{"nested below a workspace", nested},
		{"dot dot escape", filepath.Join(root, "..")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := m.Remove(t.Context(), tt.path, testIssue); err == nil {
				t.Fatalf("Remove(%q) = nil, want a refusal", tt.path)
			}
		})
	}
	for _, p := range []string{ws.Path, outside, nested} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s was removed: %v", p, err)
		}
	}
}

func TestRemove_RefusesSymlinkAtWorkspacePath(t *testing.T) {
	m := newManager(t, Config{})
	if _, err := m.Prepare(t.Context(), Issue{ID: "1", Identifier: "OTHER-1"}, 0); err != nil {
		t.Fatal(err)
	}
	root := realDir(t, m.Root())
	target := t.TempDir()
	link := filepath.Join(root, "PROJ-1")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if err := m.Remove(t.Context(), link, testIssue); !errors.Is(err, ErrSymlink) {
		t.Fatalf("Remove(symlink) = %v, want ErrSymlink", err)
	}
	if _, err := os.Lstat(link); err != nil {
		t.Fatalf("link removed: %v", err)
	}
}

func TestList_OnlyWorkspaceDirectories(t *testing.T) {
	m := newManager(t, Config{})
	if got, err := m.List(); err != nil || len(got) != 0 {
		t.Fatalf("List before root exists = %v, %v; want empty", got, err)
	}
	for _, id := range []string{"PROJ-2", "PROJ-1"} {
		if _, err := m.Prepare(t.Context(), Issue{ID: id, Identifier: id}, 0); err != nil {
			t.Fatal(err)
		}
	}
	root := realDir(t, m.Root())
	if err := os.WriteFile(filepath.Join(root, "stray-file"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(t.TempDir(), filepath.Join(root, "linked-dir")); err != nil {
		t.Fatal(err)
	}
	got, err := m.List()
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"PROJ-1", "PROJ-2"}; !slices.Equal(got, want) {
		t.Fatalf("List = %v, want %v", got, want)
	}
}
