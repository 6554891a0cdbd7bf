package workspace

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestLinkFreeDir: true only for a directory reached through no link, the case where
// filepath.EvalSymlinks would have returned the path itself.
func TestLinkFreeDir(t *testing.T) {
	if fd, err := unix.Openat2(unix.AT_FDCWD, "/", &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC}); err != nil {
		t.Skipf("skipped: openat2 is not available here (%v); EvalSymlinks decides instead", err)
	} else {
		unix.Close(fd)
	}
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	real := filepath.Join(dir, "real")
	if err := os.MkdirAll(filepath.Join(real, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]bool{
		filepath.Join(real, "sub"):        true,
		filepath.Join(dir, "link"):        false, // the last element is a link
		filepath.Join(dir, "link", "sub"): false, // a link on the way
		filepath.Join(dir, "file"):        false,
		filepath.Join(dir, "missing"):     false,
	} {
		if got := linkFreeDir(path); got != want {
			t.Errorf("linkFreeDir(%s) = %v, want %v", path, got, want)
		}
	}
}
