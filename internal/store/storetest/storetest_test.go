package storetest_test

// These tests check the suite itself: that it fails when a store breaks one of the
// rules it checks. The suite takes a *testing.T, so a failing run cannot be captured in
// process; instead the test binary runs itself (TestBrokenStoreChild) on a real SQLite
// store, wrapped to corrupt one answer, and the parent reads the child's verdict.

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sortie/internal/store"
	"sortie/internal/store/sqlite"
	"sortie/internal/store/storetest"
)

const corruptEnv = "STORETEST_CORRUPT"

// broken is a real store with one answer corrupted, chosen by mode.
type broken struct {
	store.Store
	mode string
}

func (b broken) LoadRetries(ctx context.Context) ([]store.Retry, error) {
	rs, err := b.Store.LoadRetries(ctx)
	if b.mode == "retries-reversed" {
		slices.Reverse(rs)
	}
	return rs, err
}

func (b broken) RunsForIssue(ctx context.Context, issueID string, limit int) ([]store.Run, error) {
	rs, err := b.Store.RunsForIssue(ctx, issueID, limit)
	if b.mode == "run-loses-ssh-host" {
		for i := range rs {
			rs[i].SSHHost = ""
		}
	}
	return rs, err
}

func openSQLite(t *testing.T, path string) store.Store {
	t.Helper()
	s, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatalf("sqlite.Open(%s): %v", path, err)
	}
	return s
}

// TestBrokenStoreChild runs the suite against a corrupted store; it does something
// only when the parent test starts it with corruptEnv set.
func TestBrokenStoreChild(t *testing.T) {
	mode := os.Getenv(corruptEnv)
	if mode == "" {
		t.Skip("run by TestSuiteFailsOnBrokenStore")
	}
	if strings.HasPrefix(mode, "reopen-") {
		dir := t.TempDir()
		n := 0
		storetest.Reopen(t, func(t *testing.T) store.Store {
			n++
			path := filepath.Join(dir, "a.db")
			if mode == "reopen-fresh-db" && n > 1 {
				path = filepath.Join(dir, "b.db") // "reopens" an empty database
			}
			return openSQLite(t, path)
		})
		return
	}
	storetest.Test(t, func(t *testing.T) store.Store {
		return broken{Store: openSQLite(t, filepath.Join(t.TempDir(), "s.db")), mode: mode}
	})
}

func runChild(t *testing.T, mode, run string) (string, error) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestBrokenStoreChild$"+run, "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), corruptEnv+"="+mode)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func TestSuiteFailsOnBrokenStore(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the test binary again")
	}
	cases := []struct {
		mode, run string
		fail      string // the subtest that must fail ("" when the whole child must fail)
		message   string // what its failure must say
	}{
		{"retries-reversed", "/^RetriesRoundTripInDueOrder$", "TestBrokenStoreChild/RetriesRoundTripInDueOrder", "LoadRetries ="},
		{"run-loses-ssh-host", "/^RunLifecycle$", "TestBrokenStoreChild/RunLifecycle", "after StartRun"},
		{"reopen-fresh-db", "", "TestBrokenStoreChild", "after reopening:"},
	}
	for _, c := range cases {
		t.Run(c.mode, func(t *testing.T) {
			out, err := runChild(t, c.mode, c.run)
			if err == nil {
				t.Fatalf("the suite passed a store with %s; output:\n%s", c.mode, out)
			}
			if !strings.Contains(out, "--- FAIL: "+c.fail+" ") || !strings.Contains(out, c.message) {
				t.Fatalf("want %s to fail saying %q; output:\n%s", c.fail, c.message, out)
			}
		})
	}
	// Controls: the same subsets pass on the uncorrupted store, so the failures above
	// come from the corruption, not from the set-up.
	for _, c := range []struct{ mode, run, pass string }{
		{"none", "/^(RetriesRoundTripInDueOrder|RunLifecycle)$", "TestBrokenStoreChild/RunLifecycle"},
		{"reopen-same-db", "", "TestBrokenStoreChild"},
	} {
		t.Run("control-"+c.mode, func(t *testing.T) {
			out, err := runChild(t, c.mode, c.run)
			if err != nil || !strings.Contains(out, "--- PASS: "+c.pass+" ") {
				t.Fatalf("uncorrupted store: err %v, want %s to pass; output:\n%s", err, c.pass, out)
			}
		})
	}
}
