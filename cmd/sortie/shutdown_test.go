package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"sortie/internal/store"
)

// shutdownBound is how long a graceful shutdown may take (docs/operations.md): up to 30 s
// for the workers, whose agents get SIGTERM and, 5 s later, SIGKILL. The test allows a
// little more before calling the daemon hung; a healthy one takes well under a second.
const shutdownBound = 30*time.Second + 5*time.Second + 10*time.Second

// TestShutdown_SIGTERMInterruptsRunsAndPersistsResumes: SIGTERM while agents hang stops
// them, records their runs as interrupted, persists a resume retry for each issue and
// exits 0; the next start resumes each agent session and finishes. S-1 hangs on its
// first run; S-2 fails once and hangs on its second, so both a first attempt and a
// retry are interrupted.
func TestShutdown_SIGTERMInterruptsRunsAndPersistsResumes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	env := testEnv(t.TempDir())
	writeFile(t, dir, "issues.json", `[
  {"id": "1", "identifier": "S-1", "title": "one", "priority": 1, "state": "Todo"},
  {"id": "2", "identifier": "S-2", "title": "two", "priority": 2, "state": "Todo"}
]
`)
	// agent.command is empty: the agent is the sortie binary under test.
	const perIssue = "S-2: {script: [failure, hang]}"
	wf := writeFile(t, dir, "WORKFLOW.md", hangWorkflow("hang", 1, "", perIssue))
	dbPath := filepath.Join(dir, "sortie.db")

	d := startDaemon(t, env, wf)
	d.waitLine(0, daemonTimeout, "sortie started")
	old := waitRunsInProgress(t, dbPath, 2, 2, map[string]int{"S-1": 1, "S-2": 2})
	for _, r := range old {
		t.Cleanup(func() { killAgentGroup(r.PGID, r.ID) }) // if the test fails half-way
	}

	d.signal(syscall.SIGTERM)
	if code := d.wait(shutdownBound); code != exitOK {
		t.Fatalf("SIGTERM: want exit 0, got %d\n%s", code, d.stderrText())
	}
	d.waitLine(0, time.Second, "shut down gracefully") // already logged: the process has exited
	for _, r := range old {
		if m := groupMembers(r.PGID); len(m) > 0 {
			t.Errorf("after the shutdown, process group %d of %s still has live processes %v", r.PGID, r.Identifier, m)
		}
	}

	st := openStore(t, dbPath)
	ctx := context.Background()
	if inProgress, err := st.RunsInProgress(ctx); err != nil || len(inProgress) != 0 {
		t.Fatalf("runs still running after a graceful shutdown: %+v (err %v)", inProgress, err)
	}
	retries, err := st.LoadRetries(ctx)
	if err != nil {
		t.Fatal(err)
	}
	retryOf := map[string]store.Retry{}
	for _, r := range retries {
		retryOf[r.IssueID] = r
	}
	// problems lists, per issue, what is wrong with its resume.
	problems := map[string][]string{}
	for _, o := range old {
		runs, err := st.RunsForIssue(ctx, o.IssueID, 10) // newest first
		if err != nil {
			t.Fatal(err)
		}
		if len(runs) != o.Attempt || runs[0].ID != o.ID || runs[0].Status != store.StatusInterrupted {
			t.Errorf("%s: runs %+v, want %d, the last (run %d) interrupted", o.Identifier, runs, o.Attempt, o.ID)
		}
		if r, ok := retryOf[o.IssueID]; !ok || r.Kind != store.RetryResume || r.SessionID != o.SessionID {
			problems[o.Identifier] = append(problems[o.Identifier], fmt.Sprintf(
				"%s: persisted retry %+v (present %v), want a resume of session %q", o.Identifier, r, ok, o.SessionID))
		}
	}
	st.Close()

	// The next start finishes both issues, resuming their agent sessions.
	writeFile(t, dir, "WORKFLOW.md", hangWorkflow("success", 1, "", ""))
	again := runSortie(t, dir, env, "--exit-when-idle", wf)
	if again.code != exitOK {
		t.Fatalf("restart after the shutdown: want exit 0, got:\n%s", again)
	}
	runs := runsByIssue(t, dbPath) // oldest first
	for _, o := range old {
		got := runs[o.IssueID]
		if len(got) != o.Attempt+1 || got[o.Attempt-1].ID != o.ID || got[o.Attempt].Status != store.StatusHandedOff {
			t.Errorf("%s: runs %+v, want the interrupted run %d, then a handed_off one", o.Identifier, got, o.ID)
			continue
		}
		t.Logf("%s: interrupted run attempt %d, resumed run attempt %d", o.Identifier, o.Attempt, got[o.Attempt].Attempt)
		if s := got[o.Attempt].SessionID; s != o.SessionID {
			problems[o.Identifier] = append(problems[o.Identifier], fmt.Sprintf(
				"%s: the run after the restart has session %q, want the interrupted session %q resumed", o.Identifier, s, o.SessionID))
		}
	}

	// Every interrupted run, first attempt or not, must be resumed with its session.
	for _, o := range old {
		if p := problems[o.Identifier]; len(p) > 0 {
			t.Error(strings.Join(p, "\n"))
		}
	}
}
