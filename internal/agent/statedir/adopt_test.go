package statedir

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// An issue's state in an earlier layout moves to its directory in the new one, once,
// so its sessions resume after an upgrade; a later Adopt finds the directory there and
// changes nothing.
func TestAdopt_MovesTheLegacyDirectoryOnce(t *testing.T) {
	base := t.TempDir()
	legacy := filepath.Join(base, "issues", "key")
	plant(t, legacy, map[string]string{"sessions/s.jsonl": "thread"})
	os.Chmod(legacy, 0o700)
	dir := filepath.Join(base, "wf", "issue")
	if err := Adopt(dir, legacy, nil); err != nil {
		t.Fatal(err)
	}
	if got := filesIn(t, dir); !slices.Equal(got, []string{"sessions/s.jsonl"}) {
		t.Errorf("the new directory holds %q, want the legacy one's sessions", got)
	}
	if _, err := os.Lstat(legacy); !os.IsNotExist(err) {
		t.Errorf("the legacy directory is still there: %v", err)
	}
	// An older copy turning up again is not moved over the adopted one.
	plant(t, legacy, map[string]string{"sessions/old.jsonl": "older"})
	os.Chmod(legacy, 0o700)
	if err := Adopt(dir, legacy, nil); err != nil {
		t.Fatal(err)
	}
	if got := filesIn(t, dir); !slices.Equal(got, []string{"sessions/s.jsonl"}) {
		t.Errorf("the new directory holds %q after a second Adopt, want it unchanged", got)
	}
	for _, l := range []string{"", filepath.Join(base, "missing")} {
		if err := Adopt(filepath.Join(base, "wf", "other"), l, nil); err != nil {
			t.Errorf("Adopt of legacy %q: %v, want nothing to do", l, err)
		}
	}
}

// A legacy directory is adopted only when it is safe: not a link, the agent user's
// alone. Otherwise Adopt says so, naming it, and moves nothing.
func TestAdopt_RefusesAnUnsafeLegacyDirectory(t *testing.T) {
	elsewhere := t.TempDir()
	plant(t, elsewhere, map[string]string{"precious": "x"})
	base := t.TempDir()
	linked := filepath.Join(base, "linked")
	if err := os.Symlink(elsewhere, linked); err != nil {
		t.Fatal(err)
	}
	open := filepath.Join(base, "open")
	plant(t, open, map[string]string{"sessions/s.jsonl": "x"})
	os.Chmod(open, 0o755)
	for _, legacy := range []string{linked, open} {
		dir := filepath.Join(base, "wf", filepath.Base(legacy))
		wantErr(t, "Adopt of "+legacy, Adopt(dir, legacy, nil), legacy)
		if _, err := os.Lstat(dir); !os.IsNotExist(err) {
			t.Errorf("%s was adopted: %v", legacy, err)
		}
	}
	if got := filesIn(t, elsewhere); len(got) != 1 {
		t.Errorf("the link's target holds %q, want it untouched", got)
	}
}

// With agent.run_as, the legacy directory must be the agent user's: one of root's is
// not handed to the agent.
func TestAdopt_RunAsTakesOnlyTheAgentsOwn(t *testing.T) {
	home, _ := runAsTree(t)
	legacy := filepath.Join(home, ".cache", "sortie", "cli", "legacykey")
	plant(t, legacy, map[string]string{"sessions/s.jsonl": "x"})
	os.Chmod(legacy, 0o700)
	dir := filepath.Join(home, ".cache", "sortie", "cli", "wf", "issue")
	wantErr(t, "Adopt of root's directory", Adopt(dir, legacy, nobody), legacy, "uid 0")
	if _, err := os.Lstat(dir); !os.IsNotExist(err) {
		t.Errorf("root's directory was adopted: %v", err)
	}
	os.Chown(legacy, 65534, 65534)
	if err := Adopt(dir, legacy, nobody); err != nil {
		t.Fatal(err)
	}
	owned(t, dir, 65534, 0o700)
}
