//go:build unix

package sqlite

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"sortie/internal/store"
)

var t0 = time.Date(2026, 3, 30, 14, 20, 0, 0, time.UTC)

// A daemon closed without finishing its runs (as if it crashed) leaves them running;
// the next daemon finds them with their process groups and ends them as interrupted at
// the time of their last write.
func TestRunsInProgress_AfterSimulatedCrash(t *testing.T) {
	ctx := context.Background()
	s, db := openTemp(t)
	lastWrite := t0.Add(42 * time.Second)
	s.now = func() time.Time { return lastWrite }
	a, _ := s.StartRun(ctx, newRun("a"))
	b, _ := s.StartRun(ctx, newRun("b"))
	if err := s.UpdateRunProcess(ctx, b, store.Process{PID: 321, PGID: 320}); err != nil {
		t.Fatal(err)
	}
	if err := s.UpdateRunProgress(ctx, b, store.Progress{SessionID: "sb"}); err != nil {
		t.Fatal(err)
	}
	s.Close() // no FinishRun

	s, err := Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	runs, err := s.RunsInProgress(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 2 || runs[0].ID != a || runs[1].ID != b || runs[1].PGID != 320 || runs[1].SessionID != "sb" {
		t.Fatalf("RunsInProgress after restart = %+v, want runs %d and %d, the second with pgid 320", runs, a, b)
	}
	if err := s.MarkInterrupted(ctx, []int64{a, b}); err != nil {
		t.Fatal(err)
	}
	s.Close()

	s, err = Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if runs, _ := s.RunsInProgress(ctx); len(runs) != 0 {
		t.Fatalf("RunsInProgress after MarkInterrupted and restart = %+v, want none", runs)
	}
	got, _ := s.RunsForIssue(ctx, "b", 1)
	if got[0].Status != store.StatusInterrupted || !got[0].EndedAt.Equal(lastWrite) || !strings.Contains(got[0].Error, "stopped while this run was in progress") {
		t.Fatalf("interrupted run = status %s ended %v error %q; want interrupted at its last write %v",
			got[0].Status, got[0].EndedAt, got[0].Error, lastWrite)
	}
}

// A child process that starts runs as fast as it can is SIGKILLed at a random moment,
// several times over the same file. Every run it reported started is found again, and
// the file is intact.
func TestCrash_SIGKILLLosesNoStartedRun(t *testing.T) {
	ctx := context.Background()
	s, db := openTemp(t)
	s.Close()
	for round := range 3 {
		h := startHelper(t, "crash", db)
		var started []int64
		killAfter := 20 + rand.IntN(100)
		for len(started) < killAfter {
			started = append(started, parseStarted(t, h.next(t)))
		}
		if err := h.cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		for h.lines.Scan() { // lines written before the kill landed
			started = append(started, parseStarted(t, h.lines.Text()))
		}
		_ = h.cmd.Wait()

		s, err := Open(ctx, db)
		if err != nil {
			t.Fatalf("round %d: Open after SIGKILL: %v", round, err)
		}
		var integrity string
		if err := s.w.QueryRowContext(ctx, `PRAGMA integrity_check`).Scan(&integrity); err != nil || integrity != "ok" {
			t.Fatalf("round %d: integrity_check = %q, %v; want ok", round, integrity, err)
		}
		inProgress, err := s.RunsInProgress(ctx)
		if err != nil {
			t.Fatal(err)
		}
		found := map[int64]bool{}
		for _, r := range inProgress {
			found[r.ID] = true
		}
		for _, id := range started {
			if !found[id] {
				t.Fatalf("round %d: run %d was reported started before the kill but is not running after it (%d started, %d found)",
					round, id, len(started), len(inProgress))
			}
		}
		ids := make([]int64, 0, len(inProgress))
		for _, r := range inProgress {
			ids = append(ids, r.ID)
		}
		if err := s.MarkInterrupted(ctx, ids); err != nil {
			t.Fatal(err)
		}
		t.Logf("round %d: killed after %d reported runs; %d runs were running, all marked interrupted", round, len(started), len(inProgress))
		s.Close()
	}
}

func parseStarted(t *testing.T, line string) int64 {
	t.Helper()
	var id int64
	if _, err := fmt.Sscanf(line, "started %d", &id); err != nil {
		t.Fatalf("helper said %q, want \"started <id>\"", line)
	}
	return id
}
