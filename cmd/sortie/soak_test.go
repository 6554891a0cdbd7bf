//go:build soak

package main

// The soak test (make soak; not part of make test): hundreds of runs whose agents
// daemonise processes, fail, crash, stall and overspend, while the daemon is killed -9
// and restarted three times. At the end nothing an agent started may be left running,
// no issue may ever have had two agents at once, and every issue must be where its
// script leads. Its figures go to docs/operations.md.

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
)

// soakKinds are the issues' scripts, with how many runs each takes when nothing
// interrupts it and the state it must end in.
var soakKinds = []struct {
	name       string
	mock       string // the issue's mock profile, YAML flow style
	runs       int
	finalState string
}{
	{"ok", `{script: [success]}`, 1, "Review"},
	{"flaky", `{script: [failure, crash, failure, success], crash_exit_code: 3}`, 4, "Review"},
	{"stall", `{script: [hang, failure, success]}`, 3, "Review"},
	{"budget", `{script: [success], input_tokens_per_turn: 5000}`, 1, "Todo"},
}

func TestSoak(t *testing.T) {
	const perKind = 60
	dir := t.TempDir()
	tmp := t.TempDir()
	lockLog := filepath.Join(tmp, "agent-locks.log")
	marker := sleepMarker(9)
	// Every agent daemonises a process holding its stdout, and one with a cleared
	// environment, before it becomes the mock agent (which takes the workspace's
	// agent lock).
	agent := writeFile(t, tmp, "agent.sh", fmt.Sprintf(`#!/bin/sh
setsid sleep 302%s &
env -i setsid sleep 303%s </dev/null >/dev/null 2>&1 &
exec %s %s %s "$@"
`, marker, marker, testBin, agentLockArg, lockLog))
	if err := os.Chmod(agent, 0o755); err != nil {
		t.Fatal(err)
	}
	var issues []map[string]any
	var profiles []string
	want := map[string]string{}
	expectedRuns := 0
	for _, k := range soakKinds {
		for i := 1; i <= perKind; i++ {
			id := fmt.Sprintf("%s-%d", strings.ToUpper(k.name), i)
			issues = append(issues, map[string]any{"id": id, "identifier": id, "title": id, "state": "Todo"})
			profiles = append(profiles, fmt.Sprintf("%q: %s", id, k.mock))
			want[id] = k.finalState
			expectedRuns += k.runs
		}
	}
	b, _ := json.Marshal(issues)
	writeFile(t, dir, "issues.json", string(b))
	wf := writeFile(t, dir, "WORKFLOW.md", fmt.Sprintf(`---
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
  max_concurrent_agents: 8
  max_retry_backoff_ms: 1000
  stall_timeout_ms: 5000
  max_tokens: 1000
  sandbox: {write_paths: [%s], read_paths: [%s]}
workspace:
  root: ./ws
db_path: ./sortie.db
server: {port: 0}
mock:
  input_tokens_per_turn: 10
  output_tokens_per_turn: 5
  delay_ms: 50
  issues: {%s}
---
Work on {{ .issue.identifier }}.
`, agent, tmp, filepath.Dir(testBin), strings.Join(profiles, ", ")))
	dbPath := filepath.Join(dir, "sortie.db")
	env := testEnv(tmp)
	start := time.Now()
	runCount := func() int {
		st := openStore(t, dbPath)
		runs, err := st.RecentRuns(context.Background(), 10000)
		if err != nil {
			return 0
		}
		return len(runs)
	}

	kills := 0
	for _, at := range []int{expectedRuns / 5, expectedRuns / 2, expectedRuns * 4 / 5} {
		d := startDaemon(t, env, wf)
		d.waitLine(0, daemonTimeout, "sortie started")
		pollUntil(t, 10*time.Minute, fmt.Sprintf("%d runs before kill %d", at, kills+1), func() (bool, string) {
			n := runCount()
			return n >= at, fmt.Sprintf("%d runs", n)
		})
		d.signal(syscall.SIGKILL)
		d.wait(daemonTimeout)
		kills++
	}
	last := startDaemon(t, env, "--exit-when-idle", wf)
	if code := last.wait(20 * time.Minute); code != 0 {
		t.Fatalf("the last daemon exited %d:\n%s", code, last.stderrText())
	}
	elapsed := time.Since(start)

	// Give the kernel a moment to reap what was killed last, then count.
	var left []int
	pollUntil(t, 10*time.Second, "no process an agent started", func() (bool, string) {
		left = sleepers(marker)
		return len(left) == 0, fmt.Sprintf("%d left: %v", len(left), left)
	})
	if runTmp, _ := filepath.Glob(filepath.Join(tmp, "sortie-runs-*", "*")); len(runTmp) > 0 {
		t.Errorf("%d run temporary directories were left: %v", len(runTmp), runTmp[:min(5, len(runTmp))])
	}
	locks, _ := os.ReadFile(lockLog)
	if n := strings.Count(string(locks), "OVERLAP"); n > 0 {
		t.Errorf("%d agents started while an earlier agent of their issue still ran:\n%s", n, locks)
	}
	var final []struct{ Identifier, State string }
	b, _ = os.ReadFile(filepath.Join(dir, "issues.json"))
	if err := json.Unmarshal(b, &final); err != nil {
		t.Fatal(err)
	}
	wrong := 0
	for _, is := range final {
		if want[is.Identifier] != is.State {
			wrong++
			t.Errorf("%s ended in %q, want %q", is.Identifier, is.State, want[is.Identifier])
		}
	}
	st := openStore(t, dbPath)
	runs, err := st.RecentRuns(context.Background(), 100000)
	if err != nil {
		t.Fatal(err)
	}
	byStatus := map[store.RunStatus]int{}
	for _, r := range runs {
		byStatus[r.Status]++
	}
	if byStatus[store.StatusRunning] != 0 {
		t.Errorf("%d runs still marked running", byStatus[store.StatusRunning])
	}
	t.Logf("soak: %d issues, %d runs (%d expected without kills) %v, %d kill -9 and restarts, %d leftover processes, %d overlaps, %d issues in a wrong state, %s",
		len(final), len(runs), expectedRuns, byStatus, kills, len(left), strings.Count(string(locks), "OVERLAP"), wrong, elapsed.Round(time.Second))
}
