package agent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestOpenStateDir(t *testing.T) {
	levels := []string{"sortie", "cli", "workflow", "issue"}
	t.Run("real dir", func(t *testing.T) {
		dir := filepath.Join(append([]string{t.TempDir()}, levels...)...)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		root, err := OpenStateDir(dir)
		if err != nil {
			t.Fatalf("OpenStateDir(%s): %v", dir, err)
		}
		defer root.Close()
		if err := root.WriteFile("f", []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		if b, err := os.ReadFile(filepath.Join(dir, "f")); err != nil || string(b) != "x" {
			t.Fatalf("file written through the root: %q, %v", b, err)
		}
	})
	// A link at each checked level, pointing at a real directory with the same tree
	// below it, is refused.
	for i, name := range levels {
		t.Run("link at "+name, func(t *testing.T) {
			cache := t.TempDir()
			elsewhere := t.TempDir()
			target := filepath.Join(append([]string{elsewhere}, levels[i:]...)...)
			if err := os.MkdirAll(target, 0o700); err != nil {
				t.Fatal(err)
			}
			parent := filepath.Join(append([]string{cache}, levels[:i]...)...)
			if err := os.MkdirAll(parent, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(filepath.Join(elsewhere, name), filepath.Join(parent, name)); err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join(append([]string{cache}, levels...)...)
			if _, err := os.Stat(dir); err != nil {
				t.Fatalf("the dir should resolve through the link: %v", err)
			}
			if root, err := OpenStateDir(dir); err == nil {
				root.Close()
				t.Fatalf("OpenStateDir(%s) opened it with a link at %s", dir, name)
			}
		})
	}
	t.Run("missing", func(t *testing.T) {
		if _, err := OpenStateDir(filepath.Join(t.TempDir(), "sortie", "cli", "workflow", "issue")); err == nil {
			t.Fatal("OpenStateDir opened a directory that does not exist")
		}
	})
}

// IssueStateDir is one directory per issue of a workflow, the same at every call, below
// the agent user's cache directory.
func TestIssueStateDir_OnePerIssue(t *testing.T) {
	env := func(issue string) []string { return []string{"HOME=/home/u", "SORTIE_ISSUE_ID=" + issue} }
	a := IssueStateDir(env("1"), "claude", "/srv/wf", "/ws/A")
	if a != IssueStateDir(env("1"), "claude", "/srv/wf", "/ws/A") || !strings.HasPrefix(a, "/home/u/.cache/sortie/claude/") {
		t.Fatalf("issue 1's dir %q: want it stable and below ~/.cache/sortie/claude", a)
	}
	for _, other := range []string{
		IssueStateDir(env("2"), "claude", "/srv/wf", "/ws/A"),
		IssueStateDir(env("1"), "claude", "/srv/other", "/ws/A"),
		IssueStateDir(env("1"), "copilot", "/srv/wf", "/ws/A"),
		IssueStateDir([]string{"HOME=/home/u"}, "claude", "/srv/wf", "/ws/A"),
	} {
		if other == a {
			t.Errorf("another issue, workflow or CLI shares %q", a)
		}
	}
	if got := IssueStateDir([]string{"XDG_CACHE_HOME=/c", "HOME=/home/u"}, "claude", "/w", "/ws"); !strings.HasPrefix(got, "/c/sortie/claude/") {
		t.Errorf("with XDG_CACHE_HOME: %q", got)
	}
}

// RemoveStateDir removes the directory with everything in it, a link inside it but not
// what the link points at; a missing directory is no error; a link at one of its levels
// removes nothing.
func TestRemoveStateDir(t *testing.T) {
	levels := []string{"sortie", "cli", "workflow", "issue"}
	cache, outside := t.TempDir(), t.TempDir()
	dir := filepath.Join(append([]string{cache}, levels...)...)
	if err := os.MkdirAll(filepath.Join(dir, "projects", "p"), 0o700); err != nil {
		t.Fatal(err)
	}
	kept := filepath.Join(outside, "kept")
	for path, data := range map[string]string{filepath.Join(dir, "projects", "p", "s.jsonl"): "transcript", kept: "not the issue's"} {
		if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(outside, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	sibling := filepath.Join(filepath.Dir(dir), "other-issue")
	if err := os.Mkdir(sibling, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := RemoveStateDir(dir); err != nil {
		t.Fatalf("RemoveStateDir: %v", err)
	}
	if _, err := os.Lstat(dir); !os.IsNotExist(err) {
		t.Errorf("%s after RemoveStateDir: %v, want it gone", dir, err)
	}
	for _, keep := range []string{kept, sibling} {
		if _, err := os.Stat(keep); err != nil {
			t.Errorf("%s: %v, want it kept", keep, err)
		}
	}
	if err := RemoveStateDir(dir); err != nil {
		t.Errorf("RemoveStateDir of a missing directory: %v, want nil", err)
	}

	// A link in place of the workflow level: nothing is removed where it points.
	elsewhere := t.TempDir()
	target := filepath.Join(elsewhere, "workflow", "issue")
	if err := os.MkdirAll(target, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(target, "f"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	linked := t.TempDir()
	if err := os.MkdirAll(filepath.Join(linked, "sortie", "cli"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(elsewhere, "workflow"), filepath.Join(linked, "sortie", "cli", "workflow")); err != nil {
		t.Fatal(err)
	}
	if err := RemoveStateDir(filepath.Join(linked, "sortie", "cli", "workflow", "issue")); err == nil {
		t.Error("RemoveStateDir through a link succeeded, want an error")
	}
	if _, err := os.Stat(filepath.Join(target, "f")); err != nil {
		t.Errorf("the link's target lost its file: %v", err)
	}
}
