package confine

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A finished run's temporary directory is emptied and renamed for the next run, with
// its mode set back; one whose run may have left something running is removed.
func TestRunTmpPool_ReusesOnlyWhatIsSafe(t *testing.T) {
	parent := t.TempDir()
	var p TmpPool
	a, err := p.Get(parent, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(filepath.Base(a), "run-1-") {
		t.Fatalf("first directory %s, want run-1-*", a)
	}
	for _, f := range []string{"x", "sub/y"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(a, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(a, f), []byte("left by run 1"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(a, 0o777); err != nil { // the agent opened it up
		t.Fatal(err)
	}
	ino := func(dir string) uint64 {
		t.Helper()
		fi, err := os.Stat(dir)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Sys().(*syscall.Stat_t).Ino
	}
	inoA := ino(a)
	p.Put(a, true)

	b, err := p.Get(parent, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(filepath.Base(b), "run-2-") || strings.Count(filepath.Base(b), "-") != 2 {
		t.Fatalf("reused directory named %s, want run-2-<random>", b)
	}
	if ino(b) != inoA {
		t.Errorf("run 2 got a new directory, not run 1's")
	}
	if entries, _ := os.ReadDir(b); len(entries) != 0 {
		t.Errorf("run 1's files are still there for run 2: %v", entries)
	}
	if fi, _ := os.Stat(b); fi.Mode().Perm() != 0o700 {
		t.Errorf("mode %v, want 0700", fi.Mode().Perm())
	}
	if _, err := os.Stat(a); !os.IsNotExist(err) {
		t.Errorf("run 1's name is still there: %v", err)
	}

	p.Put(b, false) // its cgroup was not emptied
	if _, err := os.Stat(b); !os.IsNotExist(err) {
		t.Errorf("a directory whose run may still run is kept: %v", err)
	}
	c, err := p.Get(parent, 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	p.Put(c, true)
	p.Drain()
	if entries, _ := os.ReadDir(parent); len(entries) != 0 {
		t.Errorf("left after drain: %v", entries)
	}
}
