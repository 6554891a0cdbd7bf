package sqlite

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"sortie/internal/store"
	"sortie/internal/store/storetest"
)

// Tests that need a second process re-run this test binary as a helper: TestMain sees
// helperEnv and runs the helper instead of the tests.
const (
	helperEnv   = "SORTIE_STORE_TEST_HELPER" // "hold" or "crash"
	helperDBEnv = "SORTIE_STORE_TEST_DB"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(runHelper(mode, os.Getenv(helperDBEnv)))
	}
	os.Exit(m.Run())
}

// runHelper is the child process. "hold" opens the store, says "ready" and holds it
// until stdin closes. "crash" starts runs forever, printing "started <id>" after each
// StartRun has returned, until it is killed.
func runHelper(mode, db string) int {
	ctx := context.Background()
	s, err := Open(ctx, db)
	if err != nil {
		fmt.Println("error:", err)
		return 1
	}
	switch mode {
	case "hold":
		fmt.Println("ready")
		_, _ = io.Copy(io.Discard, os.Stdin)
		if err := s.Close(); err != nil {
			fmt.Println("error:", err)
			return 1
		}
		return 0
	case "crash":
		for i := 1; ; i++ {
			issue := fmt.Sprint(i % 7)
			id, err := s.StartRun(ctx, storetest.NewRun(issue, i))
			if err != nil {
				fmt.Println("error:", err)
				return 1
			}
			fmt.Printf("started %d\n", id) // os.Stdout is unbuffered: one write per line
			// Keep the writer busy with the other kinds of write, so the kill lands
			// anywhere: mid-transaction, mid-checkpoint, between statements.
			_ = s.UpdateRunProcess(ctx, id, store.Process{PID: 1_000_000 + i, PGID: 1_000_000 + i})
			_ = s.AppendEvents(ctx, id, make([]store.Event, 16))
			_ = s.UpdateRunProgress(ctx, id, store.Progress{Turns: 1, Tokens: store.Tokens{Input: int64(i)}, SessionID: "s"})
			_ = s.SaveRetry(ctx, store.Retry{IssueID: issue, Identifier: "P", Attempt: i, DueAt: time.Now(), Kind: store.RetryFailure})
		}
	}
	fmt.Println("error: unknown helper mode", mode)
	return 2
}

// helper is a started helper process and its stdout, line by line.
type helper struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines *bufio.Scanner
}

func startHelper(t *testing.T, mode, db string) *helper {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+mode, helperDBEnv+"="+db)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h := &helper{cmd: cmd, stdin: stdin, lines: bufio.NewScanner(stdout)}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return h
}

// next returns the helper's next line, failing the test at EOF.
func (h *helper) next(t *testing.T) string {
	t.Helper()
	if !h.lines.Scan() {
		t.Fatalf("helper exited early (%v)", h.lines.Err())
	}
	return h.lines.Text()
}

// openTemp opens a daemon store in a new temporary directory.
func openTemp(t testing.TB) (*Store, string) {
	t.Helper()
	db := filepath.Join(t.TempDir(), ".sortie.db")
	s, err := Open(context.Background(), db)
	if err != nil {
		t.Fatalf("Open(%s): %v", db, err)
	}
	return s, db
}
