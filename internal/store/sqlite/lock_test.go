//go:build unix

package sqlite

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"sortie/internal/store"
)

func wantLocked(t *testing.T, err error, db string, pid int) {
	t.Helper()
	var le *store.LockedError
	if !errors.As(err, &le) || le.PID != pid {
		t.Fatalf("Open of a held database: err = %v, want *store.LockedError with pid %d", err, pid)
	}
	want := fmt.Sprintf("store: %s is in use by another sortie daemon (pid %d)", db, pid)
	if got := err.Error(); len(got) < len(want) || got[:len(want)] != want {
		t.Fatalf("error = %q, want it to start %q", got, want)
	}
}

func TestOpen_LockExcludesSecondOpenInProcess(t *testing.T) {
	ctx := context.Background()
	first, db := openTemp(t)
	_, err := Open(ctx, db)
	wantLocked(t, err, db, os.Getpid())

	ro, err := OpenReadOnly(ctx, db)
	if err != nil {
		t.Fatalf("OpenReadOnly while the daemon holds the lock: %v", err)
	}
	ro.Close()

	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	second, err := Open(ctx, db)
	if err != nil {
		t.Fatalf("Open after the holder closed: %v", err)
	}
	second.Close()
}

func TestOpen_LockExcludesOtherProcess(t *testing.T) {
	tests := []struct {
		name string
		stop func(h *helper) error
	}{
		{"holder exits", func(h *helper) error { return h.stdin.Close() }},
		{"holder is killed with SIGKILL", func(h *helper) error { return h.cmd.Process.Kill() }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			s, db := openTemp(t)
			s.Close() // create the file, then hand it to the child

			h := startHelper(t, "hold", db)
			if line := h.next(t); line != "ready" {
				t.Fatalf("helper said %q, want ready", line)
			}
			_, err := Open(ctx, db)
			wantLocked(t, err, db, h.cmd.Process.Pid)

			if err := tt.stop(h); err != nil {
				t.Fatal(err)
			}
			_ = h.cmd.Wait() // the kernel drops the flock once the process is gone

			s, err = Open(ctx, db)
			if err != nil {
				t.Fatalf("Open after the holder stopped: %v (a stale lock?)", err)
			}
			s.Close()
		})
	}
}

func TestOpen_LockCoversEverySpellingOfThePath(t *testing.T) {
	ctx := context.Background()
	s, db := openTemp(t)
	defer s.Close()
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(filepath.Dir(db), link); err != nil {
		t.Fatal(err)
	}
	for _, other := range []string{
		filepath.Join(link, filepath.Base(db)),
		filepath.Join(filepath.Dir(db), ".", "x", "..", filepath.Base(db)),
	} {
		if _, err := Open(ctx, other); !errors.As(err, new(*store.LockedError)) {
			t.Errorf("Open(%s) while %s is held: err = %v, want *store.LockedError", other, db, err)
		}
	}
}
