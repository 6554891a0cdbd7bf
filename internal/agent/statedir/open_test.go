package statedir

import (
	"os"
	"path/filepath"
	"testing"
)

// A state directory that is not the agent user's alone is refused, naming it and the
// fix, and nothing is written into it or removed from it.
func TestOpen_RefusesADirectoryThatIsNotPrivate(t *testing.T) {
	open := filepath.Join(t.TempDir(), "open")
	if err := os.Mkdir(open, 0o700); err != nil {
		t.Fatal(err)
	}
	os.Chmod(open, 0o755)
	plant(t, open, map[string]string{"AGENTS.md": "someone's"})
	wantErr(t, "Prepare of a directory with mode 0755", Prepare(open, nil, Spec{}), open, "chmod 700")
	wantErr(t, "Remove of a directory with mode 0755", Remove(open, nil), open, "chmod 700")
	if got := filesIn(t, open); len(got) != 1 {
		t.Errorf("left %q, want the directory as it was", got)
	}

	needRoot(t)
	foreign := filepath.Join(t.TempDir(), "foreign")
	if err := os.Mkdir(foreign, 0o700); err != nil {
		t.Fatal(err)
	}
	os.Chown(foreign, 65534, 65534)
	wantErr(t, "Prepare of uid 65534's directory", Prepare(foreign, nil, Spec{Files: []File{{Name: "config.toml", Content: func([]byte) []byte { return nil }}}}), foreign, "uid 65534")
	if _, err := os.Lstat(filepath.Join(foreign, "config.toml")); err == nil {
		t.Error("a file was written into another user's directory")
	}
}

// The state directory itself is never reached through a link, whoever owns the
// directory the link is in.
func TestOpen_RefusesALinkForTheDirectory(t *testing.T) {
	elsewhere := t.TempDir()
	plant(t, elsewhere, map[string]string{"precious": "x"})
	dir := filepath.Join(t.TempDir(), "issue")
	if err := os.Symlink(elsewhere, dir); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "Prepare through a link", Prepare(dir, nil, Spec{}), dir, "link")
	wantErr(t, "Remove through a link", Remove(dir, nil), dir, "link")
	if got := filesIn(t, elsewhere); len(got) != 1 {
		t.Errorf("the link's target holds %q, want it untouched", got)
	}
}

// runAsTree is an agent user's home (uid 65534) in a directory of root's, and the
// issue's state directory below its cache, prepared once, with a transcript kept and
// a planted file that the next reset would remove.
func runAsTree(t *testing.T) (home, dir string) {
	t.Helper()
	needRoot(t)
	top := t.TempDir()
	os.Chmod(top, 0o755)
	home = filepath.Join(top, "agent")
	if err := os.Mkdir(home, 0o700); err != nil {
		t.Fatal(err)
	}
	os.Chown(home, 65534, 65534)
	dir = Dir([]string{"HOME=" + home, "SORTIE_ISSUE_ID=1"}, "cli", "", "/srv/wf", "/ws/A")
	if err := Prepare(dir, nobody, Spec{Keep: []string{"sessions/"}, Dirs: []string{"sessions"}}); err != nil {
		t.Fatal(err)
	}
	plant(t, dir, map[string]string{"sessions/s.jsonl": "x", "AGENTS.md": "planted"})
	return home, dir
}

// With agent.run_as the daemon (root) makes every missing directory the agent user's,
// 0700; and it follows no link that user plants on the way: each level of the state
// directory, swapped for a link to a copy of itself, is refused by Prepare and Remove,
// and nothing in the copy changes.
func TestOpen_RunAsFollowsNoLinkOfTheAgent(t *testing.T) {
	home, dir := runAsTree(t)
	for d := dir; d != home; d = filepath.Dir(d) {
		owned(t, d, 65534, 0o700)
	}
	for _, level := range []string{"sortie", "cli", "workflow", "issue"} {
		t.Run("a link at "+level, func(t *testing.T) {
			home, dir := runAsTree(t)
			at := dir
			for range map[string]int{"sortie": 3, "cli": 2, "workflow": 1, "issue": 0}[level] {
				at = filepath.Dir(at)
			}
			moved := filepath.Join(home, "moved")
			if err := os.Rename(at, moved); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(moved, at); err != nil {
				t.Fatal(err)
			}
			os.Lchown(at, 65534, 65534)
			if _, err := os.Stat(filepath.Join(dir, "AGENTS.md")); err != nil {
				t.Fatalf("the link does not lead to the state directory: %v", err)
			}
			wantErr(t, "Prepare", Prepare(dir, nobody, Spec{}), "link")
			wantErr(t, "Remove", Remove(dir, nobody), "link")
			if got := filesIn(t, moved); len(got) != 2 {
				t.Errorf("below the link: %q, want the two files untouched", got)
			}
		})
	}
}
