package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"sortie/internal/store"
	"sortie/internal/store/postgres"
	"sortie/internal/testkit/pgtest"
)

// clusterWorkflow is three daemons' shared WORKFLOW.md: the file tracker (one issues
// file, locked), the mock agent taking its workspace's lock for the overlap check, a
// short lease so that a killed daemon's issues are taken over within seconds.
func clusterWorkflow(dbURL, agentCmd, tmp string) string {
	return fmt.Sprintf(`---
tracker:
  kind: file
  path: issues.json
  active_states: [Todo]
  terminal_states: [Done]
  handoff_state: Review
polling:
  interval_ms: 500
agent:
  kind: mock
  command: %s
  max_turns: 1
  max_concurrent_agents: 4
  max_retry_backoff_ms: 1000
  sandbox: {write_paths: [%s]}
workspace:
  root: ./ws
db_path: ./sortie.db
database_url: %s
cluster:
  lease_ms: 3000
server: {port: 0}
mock:
  script: [success]
  delay_ms: 1500
---
Work on {{ .issue.identifier }}.
`, agentCmd, tmp, dbURL)
}

// TestCluster_Kill9OneOfThreeDaemonsTheOthersDrainEverything is the failover test of
// docs/cluster.md: three daemons on one PostgreSQL share 60 issues; one is killed -9
// while its agents run. The other two take its runs over once its leases lapse and
// drain the backlog: every issue is handed off exactly once, no two agents ever work
// one issue at once (the agents' own workspace lock says so), and the killed daemon's
// runs resume their agent sessions.
func TestCluster_Kill9OneOfThreeDaemonsTheOthersDrainEverything(t *testing.T) {
	pg := pgtest.Start(t)
	dbURL := pg.URL("postgres")
	dir := t.TempDir()
	tmp := t.TempDir()
	env := testEnv(tmp)
	lockLog := filepath.Join(tmp, "agent-locks.log")
	agentCmd := testBin + " " + agentLockArg + " " + lockLog
	if strings.ContainsAny(testBin+lockLog, " \t\n") {
		t.Skipf("agent.command is split on white space, and a path here contains some: %s", agentCmd)
	}
	const n = 60
	var issues []map[string]any
	for i := 1; i <= n; i++ {
		issues = append(issues, map[string]any{"id": fmt.Sprint(i), "identifier": fmt.Sprintf("C-%d", i),
			"title": fmt.Sprintf("issue %d", i), "priority": 1 + i%4, "state": "Todo"})
	}
	b, _ := json.Marshal(issues)
	writeFile(t, dir, "issues.json", string(b))
	wf := writeFile(t, dir, "WORKFLOW.md", clusterWorkflow(dbURL, agentCmd, tmp))

	daemons := make([]*runningDaemon, 3)
	for i := range daemons {
		daemons[i] = startDaemon(t, env, wf)
	}
	for _, d := range daemons {
		d.waitLine(0, daemonTimeout, "joined the cluster")
	}
	ctx := context.Background()
	st, err := postgres.Open(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()

	// Kill the first daemon while it runs agents, and after others have finished work.
	victim := daemons[0]
	var killedRuns []store.Run
	pollUntil(t, 2*daemonTimeout, "the first daemon running agents after 8 runs ended", func() (bool, string) {
		runs, err := st.RecentRuns(ctx, 1000)
		if err != nil {
			return false, err.Error()
		}
		ended, mine := 0, []store.Run(nil)
		for _, r := range runs {
			switch {
			case r.Status != store.StatusRunning:
				ended++
			case r.DaemonPID == victim.pid() && r.PGID > 0 && r.SessionID != "" && time.Since(r.StartedAt) < 700*time.Millisecond:
				// Well inside its 1.5 s turn: a run about to end could be handed off
				// between this read and the kill, and then it is not resumed.
				mine = append(mine, r)
			}
		}
		killedRuns = mine
		return ended >= 8 && len(mine) > 0, fmt.Sprintf("%d runs ended, %d of the victim's running", ended, len(mine))
	})
	victim.signal(syscall.SIGKILL)
	if code := victim.wait(daemonTimeout); code != -1 {
		t.Fatalf("the SIGKILLed daemon exited with %d", code)
	}
	t.Logf("killed daemon pid %d with %d runs in progress", victim.pid(), len(killedRuns))

	// The other two drain the backlog.
	pollUntil(t, 4*daemonTimeout, "every issue handed off", func() (bool, string) {
		b, err := os.ReadFile(filepath.Join(dir, "issues.json"))
		if err != nil {
			return false, err.Error()
		}
		var got []struct{ State string }
		if err := json.Unmarshal(b, &got); err != nil {
			return false, err.Error()
		}
		left := 0
		for _, is := range got {
			if is.State != "Review" {
				left++
			}
		}
		inProgress, _ := st.RunsInProgress(ctx)
		return left == 0 && len(inProgress) == 0, fmt.Sprintf("%d issues not in Review, %d runs running", left, len(inProgress))
	})
	for _, d := range daemons[1:] {
		d.signal(syscall.SIGTERM)
	}
	for _, d := range daemons[1:] {
		if code := d.wait(daemonTimeout); code != exitOK {
			t.Errorf("daemon pid %d: exit %d after SIGTERM\n%s", d.pid(), code, d.stderrText())
		}
	}

	// No two agents ever worked one issue at the same time.
	if locks := snapshotFile(t, lockLog); strings.Contains(locks, "OVERLAP") {
		t.Errorf("two agents worked one issue at the same time:\n%s", locks)
	}
	// Every issue was handed off exactly once; the killed daemon's runs were
	// interrupted and resumed with their sessions.
	runs, err := st.RecentRuns(ctx, 10000)
	if err != nil {
		t.Fatal(err)
	}
	byIssue := map[string][]store.Run{}
	for i := len(runs) - 1; i >= 0; i-- {
		byIssue[runs[i].IssueID] = append(byIssue[runs[i].IssueID], runs[i])
	}
	// A kill that lands after the victim moved an issue to Review but before it
	// recorded the hand-off (a loaded host can stretch the turn's last moments past the
	// guard above) leaves that run interrupted and the issue handed off in the tracker:
	// the survivors find it no longer active and release it, as they must.
	handedBeforeKill := map[string]bool{}
	for _, k := range killedRuns {
		for _, d := range daemons[1:] {
			if strings.Contains(d.stderrText(), `msg="retry released: issue not eligible" issue_identifier=`+k.Identifier+` why="state is not active"`) {
				handedBeforeKill[k.IssueID] = true
			}
		}
	}
	for i := 1; i <= n; i++ {
		id := fmt.Sprint(i)
		handed := 0
		for _, r := range byIssue[id] {
			if r.Status == store.StatusHandedOff {
				handed++
			}
		}
		if handed == 0 && handedBeforeKill[id] && len(byIssue[id]) == 1 && byIssue[id][0].Status == store.StatusInterrupted {
			t.Logf("C-%d was moved to Review by the killed daemon just before the kill; its run stays interrupted", i)
			continue
		}
		if handed != 1 {
			t.Errorf("C-%d was handed off %d times, want once: %+v", i, handed, byIssue[id])
		}
	}
	for _, k := range killedRuns {
		got := byIssue[k.IssueID]
		var killed *store.Run
		for i := range got {
			if got[i].ID == k.ID {
				killed = &got[i]
			}
		}
		if killed == nil || killed.Status != store.StatusInterrupted {
			t.Errorf("%s: the killed daemon's run %d is %+v, want interrupted", k.Identifier, k.ID, killed)
			continue
		}
		if handedBeforeKill[k.IssueID] {
			continue // nothing to resume: the issue had left the active states
		}
		last := got[len(got)-1]
		if last.ID == k.ID || last.SessionID != k.SessionID || last.DaemonPID == victim.pid() {
			t.Errorf("%s: the run after the killed one is %d (session %q, daemon pid %d), want another daemon resuming session %q",
				k.Identifier, last.ID, last.SessionID, last.DaemonPID, k.SessionID)
		}
	}
	took := daemons[1].countLines("took over") + daemons[2].countLines("took over") +
		daemons[1].countLines("runs interrupted by a previous daemon found") + daemons[2].countLines("runs interrupted by a previous daemon found")
	if took == 0 {
		t.Errorf("neither surviving daemon logged taking the killed one's runs over")
	}
	if retries, err := st.LoadRetries(ctx); err != nil || len(retries) != 0 {
		t.Errorf("retries left: %+v (err %v)", retries, err)
	}
	t.Logf("%d runs for %d issues; %d interrupted by the kill and resumed", len(runs), n, len(killedRuns))
	_ = time.Now
}
