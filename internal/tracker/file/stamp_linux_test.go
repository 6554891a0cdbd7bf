package file

import (
	"bytes"
	"context"
	"os"
	"syscall"
	"testing"
	"time"
)

// stampedWrite transitions issue a and returns the issues file's path, the tracker,
// and the file's stat right after: our own write, stamped.
func stampedWrite(t *testing.T) (string, *Tracker, os.FileInfo) {
	t.Helper()
	path := writeIssues(t, twoIssues)
	tr := newTestTracker(t, path)
	if err := tr.TransitionIssue(context.Background(), "a", "Done"); err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if tr.cache == nil || !tr.cache.stamped {
		t.Fatal("after our write: want its stamped snapshot cached, got none or one not stamped")
	}
	return path, tr, info
}

// Right after our own write, within any racy window, neither a reader nor the watch
// reads the file again: its stat proves it still holds what we wrote.
func TestStamp_OwnWriteNeedsNoRead(t *testing.T) {
	_, tr, info := stampedWrite(t)
	ctime := info.Sys().(*syscall.Stat_t).Ctim
	if mtime := info.ModTime(); !mtime.Before(time.Unix(ctime.Unix())) {
		t.Errorf("the written file's mtime %v is not behind its change time %v", mtime, time.Unix(ctime.Unix()))
	}
	// The tracker's clock says the write was a moment ago.
	tr.now = func() time.Time { return info.ModTime().Add(time.Millisecond) }
	before := fileReads.Load()
	if iss, err := tr.FetchIssueByID(context.Background(), "a"); err != nil || iss.State != "Done" {
		t.Fatalf("FetchIssueByID after our write: %+v, %v", iss, err)
	}
	if !tr.holdsOwnWrite() {
		t.Fatal("holdsOwnWrite right after our write = false")
	}
	if n := fileReads.Load() - before; n != 0 {
		t.Errorf("reads of the file after our own stamped write: want 0, got %d", n)
	}
}

// An edit right after ours, in the same tick of the file system's clock (so with the
// time the kernel gave our write), same size, same inode, is seen by both.
func TestStamp_EditInTheSameTickIsSeen(t *testing.T) {
	path, tr, info := stampedWrite(t)
	editInPlace(t, path)
	// What the kernel gives a write in the tick of ours: our write's own time, one
	// nanosecond after the stamp.
	setMtime(t, path, info.ModTime().Add(time.Nanosecond))
	assertEditSeen(t, tr)
}

// An edit that puts back the modification time it found (the stamp itself) still
// moves the change time, which no program can set.
func TestStamp_EditThatRestoresTheStampIsSeen(t *testing.T) {
	path, tr, info := stampedWrite(t)
	editInPlace(t, path)
	setMtime(t, path, info.ModTime())
	after, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if info.Sys().(*syscall.Stat_t).Ctim == after.Sys().(*syscall.Stat_t).Ctim {
		t.Skip("this kernel gave the edit the change time of our write (same clock tick, no fine-grained timestamps): the case a stat cannot tell")
	}
	assertEditSeen(t, tr)
}

// editInPlace rewrites the issues file in place with content of the same size.
func editInPlace(t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	edited := bytes.Replace(data, []byte(`"Second"`), []byte(`"Secund"`), 1)
	if bytes.Equal(edited, data) {
		t.Fatal("the edit changed nothing")
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(edited, 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func assertEditSeen(t *testing.T, tr *Tracker) {
	t.Helper()
	if tr.holdsOwnWrite() {
		t.Error("holdsOwnWrite after a hand edit = true: the watch would miss it")
	}
	iss, err := tr.FetchIssueByID(context.Background(), "b")
	if err != nil {
		t.Fatal(err)
	}
	if iss.Title != "Secund" {
		t.Errorf("title after the hand edit = %q, want Secund: a stale cache was trusted", iss.Title)
	}
}
