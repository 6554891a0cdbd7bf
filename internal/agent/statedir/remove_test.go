package statedir

import (
	"os"
	"path/filepath"
	"testing"
)

// Remove removes the directory with everything in it, a link inside it but not what
// the link points to; a missing directory is not an error.
func TestRemove(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "wf", "issue")
	v := victim(t)
	if err := Prepare(dir, nil, Spec{}); err != nil {
		t.Fatal(err)
	}
	plant(t, dir, map[string]string{"projects/p/s.jsonl": "x"})
	if err := os.Symlink(filepath.Dir(v), filepath.Join(dir, "projects", "out")); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := Remove(dir, nil); err != nil {
			t.Fatalf("Remove: %v", err)
		}
	}
	if _, err := os.Lstat(dir); !os.IsNotExist(err) {
		t.Errorf("%s after Remove: %v, want it gone", dir, err)
	}
	untouched(t, v)
	if err := Remove(filepath.Join(t.TempDir(), "missing", "issue"), nil); err != nil {
		t.Errorf("Remove below a missing directory: %v, want nil", err)
	}
}

// A layout without a cache directory has no directory to remove (opencode's legacy one
// without HOME or XDG_CACHE_HOME): nothing to do, no error for every ended issue.
func TestRemove_NoDirectory(t *testing.T) {
	if err := Remove("", nil); err != nil {
		t.Errorf(`Remove("") = %v, want nil`, err)
	}
}
