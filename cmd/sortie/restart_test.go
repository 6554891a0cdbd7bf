package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"sortie/internal/store"
	"sortie/internal/store/sqlite"
	"sortie/internal/workspace"
)

// hangWorkflow is a file-tracker workflow whose mock agents play script (hang or
// success), each turn a process group of the agent and helpers helper processes.
// command, when not empty, is agent.command; perIssue, when not empty, is the mock
// block's issues map in YAML flow style.
func hangWorkflow(script string, helpers int, command, perIssue string) string {
	cmd := ""
	if command != "" {
		cmd = "  command: " + command + "\n"
	}
	return fmt.Sprintf(`---
tracker:
  kind: file
  path: issues.json
  active_states: [Todo]
  terminal_states: [Done]
  handoff_state: Review
agent:
  kind: mock
%s  max_turns: 1
  max_concurrent_agents: 3
  max_retry_backoff_ms: 1000
workspace:
  root: ./ws
db_path: ./sortie.db
mock:
  script: [%s]
  helper_processes: %d
  issues: {%s}
---
Work on {{ .issue.identifier }}.
`, cmd, script, helpers, perIssue)
}

// threeIssues is an issues file with three dispatchable issues.
const threeIssues = `[
  {"id": "1", "identifier": "R-1", "title": "one", "priority": 1, "state": "Todo"},
  {"id": "2", "identifier": "R-2", "title": "two", "priority": 2, "state": "Todo"},
  {"id": "3", "identifier": "R-3", "title": "three", "priority": 3, "state": "Todo"}
]
`

// daemonTimeout guards each wait on a daemon in the tests below: long enough for a
// loaded machine under -race, and far longer than a healthy run takes.
const daemonTimeout = 60 * time.Second

// waitRunsInProgress waits until the database shows n runs in status running, each
// with its agent's process group and session recorded and at least members live
// processes in that group, and returns them. attempts, when not nil, gives the run
// attempt each identifier's running run must have.
//
// It polls, because the daemon under test is a separate process that writes these
// rows (and starts these processes) without printing anything a test could wait on;
// the deadline turns a daemon that never gets there into a failure.
func waitRunsInProgress(t *testing.T, dbPath string, n, members int, attempts map[string]int) []store.Run {
	t.Helper()
	st := openStore(t, dbPath)
	var runs []store.Run
	pollUntil(t, daemonTimeout, fmt.Sprintf("%d runs running with their process groups", n), func() (bool, string) {
		var err error
		runs, err = st.RunsInProgress(context.Background())
		if err != nil {
			return false, err.Error()
		}
		if len(runs) != n {
			return false, fmt.Sprintf("%d runs running", len(runs))
		}
		for _, r := range runs {
			if a, ok := attempts[r.Identifier]; ok && r.Attempt != a {
				return false, fmt.Sprintf("run %d of %s is attempt %d, waiting for attempt %d", r.ID, r.Identifier, r.Attempt, a)
			}
			if r.PGID <= 0 || r.SessionID == "" {
				return false, fmt.Sprintf("run %d (%s) has pgid %d, session %q", r.ID, r.Identifier, r.PGID, r.SessionID)
			}
			if got := len(groupMembers(r.PGID)); got < members {
				return false, fmt.Sprintf("process group %d of %s has %d live processes", r.PGID, r.Identifier, got)
			}
		}
		return true, ""
	})
	return runs
}

// pollUntil calls cond every 20 ms until it reports true, and fails the test with
// cond's last explanation after timeout. Only for conditions set by another process
// (a daemon writing its database, processes starting and dying), which offer nothing
// to wait on.
func pollUntil(t testing.TB, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, why := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: still not there after %s: %s", what, timeout, why)
		}
		<-tick.C
	}
}

// tryWorkspaceLock reports whether the agent lock of the workspace at ws is free, by
// taking it and releasing it at once.
func tryWorkspaceLock(t *testing.T, ws string) bool {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(ws, agentLockFile), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close() // releases the lock if we took it
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	return true
}

func workspaceOf(t *testing.T, root, identifier string) string {
	t.Helper()
	key, err := workspace.Key(identifier)
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(root, key)
}

// TestRestart_AfterKill9NoRunIsLostAndNoIssueGetsTwoAgents is the crash test: a daemon
// is SIGKILLed while three agents (each a process group of an agent and two helpers)
// work; its agents outlive it. The next daemon must stop those groups before it starts
// anything, mark their runs interrupted, resume each issue once, and finish.
//
// "Never two agents on one issue" is checked by the agents themselves: every agent
// process (the test binary, as agent.command) takes an exclusive flock in its workspace
// on a descriptor its helpers inherit, and logs when it cannot get it (see
// holdAgentLock). So a new agent started while any process of the old group still
// lived would be caught at the moment it started.
func TestRestart_AfterKill9NoRunIsLostAndNoIssueGetsTwoAgents(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tmp := t.TempDir()
	env := testEnv(tmp)
	lockLog := filepath.Join(tmp, "agent-locks.log")
	agentCmd := testBin + " " + agentLockArg + " " + lockLog
	if strings.ContainsAny(testBin+lockLog, " \t\n") {
		t.Skipf("agent.command is split on white space, and a path here contains some: %s", agentCmd)
	}
	writeFile(t, dir, "issues.json", threeIssues)
	// The agents, confined, may write their lock log.
	lockWorkflow := func(script string) string {
		return strings.Replace(hangWorkflow(script, 2, agentCmd, ""),
			"  max_turns: 1\n", "  max_turns: 1\n  sandbox: {write_paths: ["+tmp+"]}\n", 1)
	}
	wf := writeFile(t, dir, "WORKFLOW.md", lockWorkflow("hang"))
	dbPath := filepath.Join(dir, "sortie.db")
	root := filepath.Join(dir, "ws")

	// 1. Three agents hang, each a group of three processes.
	first := startDaemon(t, env, wf)
	first.waitLine(0, daemonTimeout, "sortie started")
	old := waitRunsInProgress(t, dbPath, 3, 3, nil)
	for _, r := range old {
		t.Cleanup(func() { killAgentGroup(r.PGID, r.ID) }) // if the test fails half-way
		if tryWorkspaceLock(t, workspaceOf(t, root, r.Identifier)) {
			t.Fatalf("the agent lock of %s is free while its agent runs; the overlap check would prove nothing", r.Identifier)
		}
	}

	// 2. A second daemon on the same database is refused, and touches nothing.
	second := runSortie(t, dir, env, wf)
	wantLocked := fmt.Sprintf("is in use by another sortie daemon (pid %d)", first.pid())
	if second.code != exitFailure || !strings.Contains(second.stderr, dbPath) || !strings.Contains(second.stderr, wantLocked) {
		t.Fatalf("a second daemon on %s: want exit 1 naming the database and %q, got:\n%s", dbPath, wantLocked, second)
	}
	if n := len(waitRunsInProgress(t, dbPath, 3, 3, nil)); n != 3 {
		t.Fatalf("after the refused second daemon: %d runs running, want 3", n)
	}

	// 3. kill -9: the agents, in their own process groups, keep running.
	first.signal(syscall.SIGKILL)
	if code := first.wait(daemonTimeout); code != -1 {
		t.Fatalf("the SIGKILLed daemon exited with %d", code)
	}
	for _, r := range old {
		members := groupMembers(r.PGID)
		if len(members) < 3 {
			t.Fatalf("after the daemon's kill -9, process group %d of %s has %d live processes, want 3 (agent and two helpers)",
				r.PGID, r.Identifier, len(members))
		}
		if !hasEnv(processEnv(r.PGID), "SORTIE_RUN_ID="+strconv.FormatInt(r.ID, 10)) {
			t.Fatalf("process %d (group leader of %s) does not carry SORTIE_RUN_ID=%d", r.PGID, r.Identifier, r.ID)
		}
		lock := filepath.Join(workspaceOf(t, root, r.Identifier), agentLockFile)
		for _, pid := range members {
			if isSupervisor(pid) {
				continue // sortie supervise, the group's leader, opens nothing of the agent's
			}
			if !holdsFile(pid, lock) {
				t.Fatalf("process %d of %s's group does not hold %s; the overlap check would miss it", pid, r.Identifier, lock)
			}
		}
	}

	// 4. Restart with a script that finishes.
	writeFile(t, dir, "WORKFLOW.md", lockWorkflow("success"))
	restarted := startDaemon(t, env, "--exit-when-idle", wf)
	if code := restarted.wait(daemonTimeout); code != exitOK {
		t.Fatalf("the restarted daemon: want exit 0 (--exit-when-idle), got %d\n%s", code, restarted.stderrText())
	}

	// The old groups are gone: no live process is left in any of them.
	for _, r := range old {
		if m := groupMembers(r.PGID); len(m) > 0 {
			t.Errorf("process group %d of %s's interrupted run still has live processes %v", r.PGID, r.Identifier, m)
		}
	}
	if n := restarted.countLines("stopped an agent left running by a previous daemon"); n != 3 {
		t.Errorf("the restarted daemon logged stopping %d orphaned agents, want 3\n%s", n, restarted.stderrText())
	}

	// Every agent took its workspace's lock, and none found another agent there.
	locks := snapshotFile(t, lockLog)
	if strings.Contains(locks, "OVERLAP") {
		t.Errorf("two agents worked one issue at the same time:\n%s", locks)
	}
	for _, r := range old {
		if n := strings.Count(locks, r.Identifier+" (pid "); n != 2 {
			t.Errorf("%s: want 2 agent starts (the interrupted one and the resumed one) in the lock log, got %d:\n%s", r.Identifier, n, locks)
		}
		if !tryWorkspaceLock(t, workspaceOf(t, root, r.Identifier)) {
			t.Errorf("the agent lock of %s is still held after the daemon exited: an agent outlived it", r.Identifier)
		}
	}

	// No run was lost: the three interrupted ones and one resumed run per issue, which
	// continued the interrupted agent session; nothing is left running.
	runs := runsByIssue(t, dbPath)
	total := 0
	for _, o := range old {
		got := runs[o.IssueID]
		total += len(got)
		if len(got) != 2 {
			t.Errorf("%s has %d runs, want 2 (interrupted, then resumed): %+v", o.Identifier, len(got), got)
			continue
		}
		before, after := got[0], got[1]
		if before.ID != o.ID || before.Status != store.StatusInterrupted {
			t.Errorf("%s: first run %d is %s, want run %d interrupted", o.Identifier, before.ID, before.Status, o.ID)
		}
		if after.Status != store.StatusHandedOff || after.SessionID != o.SessionID {
			t.Errorf("%s: resumed run is %s with session %q, want handed_off resuming session %q",
				o.Identifier, after.Status, after.SessionID, o.SessionID)
		}
		running := 0
		for _, r := range got {
			if r.Status == store.StatusRunning {
				running++
			}
		}
		if running != 0 {
			t.Errorf("%s: %d runs still running", o.Identifier, running)
		}
		t.Logf("%s: interrupted run attempt %d, resumed run attempt %d", o.Identifier, before.Attempt, after.Attempt)
	}
	if total != 6 {
		t.Errorf("the database holds %d runs, want 6 (3 interrupted + 3 resumed)", total)
	}
	st, err := sqlite.OpenReadOnly(context.Background(), dbPath)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if inProgress, err := st.RunsInProgress(context.Background()); err != nil || len(inProgress) != 0 {
		t.Errorf("runs still in progress after the restart: %+v (err %v)", inProgress, err)
	}
	if retries, err := st.LoadRetries(context.Background()); err != nil || len(retries) != 0 {
		t.Errorf("retries left after the restart: %+v (err %v)", retries, err)
	}
}

// holdsFile reports whether process pid has path open.
func holdsFile(pid int, path string) bool {
	dir := "/proc/" + strconv.Itoa(pid) + "/fd"
	fds, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, fd := range fds {
		if target, err := os.Readlink(filepath.Join(dir, fd.Name())); err == nil && target == path {
			return true
		}
	}
	return false
}

func hasEnv(env []string, kv string) bool {
	for _, e := range env {
		if e == kv {
			return true
		}
	}
	return false
}

// isSupervisor reports whether pid is a `sortie supervise` process, which leads each
// local agent's process group (internal/agent/supervise).
func isSupervisor(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	args := strings.Split(string(b), "\x00")
	return err == nil && len(args) > 1 && args[1] == "supervise"
}
