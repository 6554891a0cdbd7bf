package file

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
)

// TestWrite_HoldsTheFileLockWhileItWrites: a write holds the advisory lock that every
// writer of the issues file takes, from its read to its rename, so another daemon's
// write waits for it.
func TestWrite_HoldsTheFileLockWhileItWrites(t *testing.T) {
	path := writeIssues(t, twoIssues)
	tr := newTestTracker(t, path)
	lock := filepath.Join(filepath.Dir(path), ".issues.json.lock")
	tr.beforeRename = func() {
		f, err := os.OpenFile(lock, os.O_RDWR, 0)
		if err != nil {
			t.Errorf("the lock file: %v", err)
			return
		}
		defer f.Close()
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); !errors.Is(err, syscall.EWOULDBLOCK) {
			t.Errorf("another writer could take the lock during a write (flock: %v)", err)
		}
	}
	if err := tr.TransitionIssue(context.Background(), "a", "Done"); err != nil {
		t.Fatal(err)
	}
	// Released after the write: another writer takes it at once.
	f, err := os.OpenFile(lock, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Errorf("the lock is still held after the write: %v", err)
	}
}

// TestWrite_SeveralDaemonsOnOneFileLoseNoTransition: three trackers on one issues file,
// as three daemons sharing it, each move their own twenty issues at the same time;
// every transition is in the file afterwards and none failed.
func TestWrite_SeveralDaemonsOnOneFileLoseNoTransition(t *testing.T) {
	const daemons, each = 3, 20
	var issues []map[string]any
	for d := range daemons {
		for i := range each {
			id := fmt.Sprintf("d%d-%d", d, i)
			issues = append(issues, map[string]any{"id": id, "identifier": "P-" + id, "title": id, "state": "Todo"})
		}
	}
	b, _ := json.MarshalIndent(issues, "", "  ")
	path := writeIssues(t, string(b))
	var wg sync.WaitGroup
	errs := make(chan error, daemons*each)
	for d := range daemons {
		tr := newTestTracker(t, path)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				if err := tr.TransitionIssue(context.Background(), fmt.Sprintf("d%d-%d", d, i), "Done"); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("a transition failed: %v", err)
	}
	var got []struct{ ID, State string }
	if err := json.Unmarshal([]byte(readString(t, path)), &got); err != nil {
		t.Fatal(err)
	}
	for _, is := range got {
		if is.State != "Done" {
			t.Errorf("issue %s is %q: its transition was lost", is.ID, is.State)
		}
	}
}
