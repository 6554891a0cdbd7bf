package file

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A write swaps the issues file with its next version and keeps the old one there for
// the following write: after the first write no file is created or deleted, the old
// version stays readable beside the file, and a next file that is not the daemon's
// own (a hard link to the operator's old file) is replaced, never written through.
func TestWrite_SwapsWithTheNextFile(t *testing.T) {
	path := writeIssues(t, `[{"id": "a", "identifier": "A-1", "title": "t", "state": "Todo"}]`)
	next := filepath.Join(filepath.Dir(path), ".issues.json.next")
	tr := newTestTracker(t, path, "Todo", "In Progress")
	ctx := context.Background()
	ino := func(p string) uint64 {
		t.Helper()
		fi, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Sys().(*syscall.Stat_t).Ino
	}
	if err := tr.TransitionIssue(ctx, "a", "In Progress"); err != nil {
		t.Fatal(err)
	}
	inodes := map[uint64]bool{ino(path): true, ino(next): true}
	if !strings.Contains(readString(t, next), `"Todo"`) {
		t.Fatalf("the next file does not hold the version before the write: %s", readString(t, next))
	}
	for _, state := range []string{"In Review", "Todo", "In Progress"} {
		if err := tr.TransitionIssue(ctx, "a", state); err != nil {
			t.Fatal(err)
		}
		if !inodes[ino(path)] || !inodes[ino(next)] {
			t.Fatalf("the write to %s made a new file", state)
		}
		if !strings.Contains(readString(t, path), `"`+state+`"`) {
			t.Fatalf("issues file after the write to %s: %s", state, readString(t, path))
		}
	}
	assertNoTempFiles(t, filepath.Dir(path))

	// The operator's other name for the old version must keep what it holds.
	keep := filepath.Join(t.TempDir(), "keep.json")
	if err := os.Link(next, keep); err != nil {
		t.Fatal(err)
	}
	before := readString(t, keep)
	if err := tr.TransitionIssue(ctx, "a", "In Review"); err != nil {
		t.Fatal(err)
	}
	if got := readString(t, keep); got != before {
		t.Fatalf("written through a hard link to the next file: %s", got)
	}
	if !strings.Contains(readString(t, path), `"In Review"`) {
		t.Fatalf("issues file: %s", readString(t, path))
	}
}

// A write starts from the cached content when the file's stat has not changed, and a
// change the stat cannot show (same inode, size and modification time) is caught
// before the rename: the write starts again from the file and keeps the change.
func TestWrite_StaleCacheIsCaughtBeforeTheRename(t *testing.T) {
	path := writeIssues(t, `[
  {"id": "a", "identifier": "A-1", "title": "aaaa", "state": "Todo"},
  {"id": "b", "identifier": "B-1", "title": "b", "state": "Todo"}
]`)
	tr := newTestTracker(t, path, "Todo", "In Progress")
	ctx := context.Background()
	if err := tr.TransitionIssue(ctx, "a", "In Progress"); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	// An edit in place, same size, with the modification time put back.
	edited := strings.Replace(readString(t, path), `"aaaa"`, `"zzzz"`, 1)
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte(edited), 0); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := os.Chtimes(path, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	if err := tr.TransitionIssue(ctx, "b", "In Progress"); err != nil {
		t.Fatal(err)
	}
	got := readString(t, path)
	if !strings.Contains(got, `"zzzz"`) {
		t.Fatalf("the edit made meanwhile was lost:\n%s", got)
	}
	if strings.Count(got, `"In Progress"`) != 2 {
		t.Fatalf("want both issues In Progress:\n%s", got)
	}
}
