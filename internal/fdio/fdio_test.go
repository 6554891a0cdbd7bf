package fdio

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestOverwrite_ReplacesLongerAndShorterContent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	fd, err := unix.Open(path, unix.O_WRONLY|unix.O_CREAT|unix.O_CLOEXEC, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	for _, want := range []string{strings.Repeat("long content ", 1000), "short", ""} {
		if err := Overwrite(fd, []byte(want)); err != nil {
			t.Fatal(err)
		}
		if got, _ := os.ReadFile(path); string(got) != want {
			t.Fatalf("after Overwrite(%d bytes) the file holds %d bytes", len(want), len(got))
		}
	}
}

// OpenForOverwrite opens a regular file of ours with one link, and never writes
// through anything else put at the name: it is removed and a file made afresh, and a
// directory is refused as ErrInTheWay.
func TestOpenForOverwrite_NeverWritesThroughWhatWasPlanted(t *testing.T) {
	dir := t.TempDir()
	next := filepath.Join(dir, "next")
	outside := filepath.Join(t.TempDir(), "outside")
	write := func(t *testing.T, uid int) (reused bool) {
		t.Helper()
		fd, st, err := OpenForOverwrite(unix.AT_FDCWD, next, 0o600, uid)
		if err != nil {
			t.Fatal(err)
		}
		defer unix.Close(fd)
		if err := Overwrite(fd, []byte("new")); err != nil {
			t.Fatal(err)
		}
		return st != nil
	}
	if write(t, -1) {
		t.Error("a missing file was reported as opened, not made")
	}
	if !write(t, os.Geteuid()) {
		t.Error("our own single-link file was made afresh, not reused")
	}
	plant := map[string]func() error{
		"symlink":   func() error { return os.Symlink(outside, next) },
		"hard link": func() error { return os.Link(outside, next) },
		"fifo":      func() error { return unix.Mkfifo(next, 0o600) },
	}
	for name, mk := range plant {
		if err := os.WriteFile(outside, []byte("keep"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(next); err != nil {
			t.Fatal(err)
		}
		if err := mk(); err != nil {
			t.Fatal(err)
		}
		if write(t, -1) {
			t.Errorf("%s: opened, not made afresh", name)
		}
		if got, _ := os.ReadFile(outside); string(got) != "keep" {
			t.Errorf("%s: written through: %q", name, got)
		}
		if fi, err := os.Lstat(next); err != nil || !fi.Mode().IsRegular() {
			t.Errorf("%s: next is %v, %v; want a regular file", name, fi, err)
		}
	}
	// A file of another owner is not reused when the owner is asked for.
	if write(t, os.Geteuid()+1) {
		t.Error("a file of another owner was reused")
	}
	if err := os.Remove(next); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(next, "inside"), 0o700); err != nil {
		t.Fatal(err)
	}
	if _, _, err := OpenForOverwrite(unix.AT_FDCWD, next, 0o600, -1); !errors.Is(err, ErrInTheWay) {
		t.Errorf("a directory: err = %v, want ErrInTheWay", err)
	}
}

func TestOpen_IsOpenFileForFilesAndDirectories(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	f, err := Open(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o640)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("content"); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm()&^0o640 != 0 {
		t.Errorf("mode %v, want at most 0640 (umask may take more)", fi.Mode().Perm())
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "content" {
		t.Errorf("the file holds %q, %v", b, err)
	}
	if _, err := Open(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o640); !errors.Is(err, fs.ErrExist) {
		t.Errorf("O_EXCL over an existing file: %v, want fs.ErrExist", err)
	}
	if _, err := Open(filepath.Join(dir, "missing"), os.O_RDONLY, 0); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing file: %v, want fs.ErrNotExist", err)
	}
	var pe *fs.PathError
	if _, err := Open(filepath.Join(dir, "missing"), os.O_RDONLY, 0); !errors.As(err, &pe) || pe.Path != filepath.Join(dir, "missing") {
		t.Errorf("the error %v does not name the path", err)
	}
	d, err := Open(dir, os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil || len(names) != 1 || names[0] != "f" {
		t.Errorf("Readdirnames = %v, %v", names, err)
	}
	flags, err := unix.FcntlInt(d.Fd(), unix.F_GETFD, 0)
	if err != nil || flags&unix.FD_CLOEXEC == 0 {
		t.Errorf("the descriptor is not close-on-exec: %#x, %v", flags, err)
	}
}
