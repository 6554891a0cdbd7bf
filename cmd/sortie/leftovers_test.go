package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"sortie/internal/agent/cgroup"
)

// leftoverWorkflow runs an agent whose command starts daemons before it becomes the
// mock agent: one that leaves its session (setsid) holding the agent's stdout, as a
// daemonising dev server does, and one that also clears its environment, so that no
// SORTIE_RUN_ID marks it. keep is agent.keep_processes.
func leftoverWorkflow(t *testing.T, dir, marker string, keep bool) string {
	t.Helper()
	script := writeFile(t, dir, "agent.sh", fmt.Sprintf(`#!/bin/sh
setsid sleep 302%s &
env -i setsid sleep 303%s </dev/null >/dev/null 2>&1 &
exec %s "$@"
`, marker, marker, sortieBin))
	if err := os.Chmod(script, 0o755); err != nil {
		t.Fatal(err)
	}
	return writeFile(t, dir, "WORKFLOW.md", fmt.Sprintf(`---
tracker:
  kind: file
  path: issues.json
  active_states: [Todo]
  terminal_states: [Done]
  handoff_state: Review
agent:
  kind: mock
  command: %s
  max_turns: 1
  keep_processes: %t
workspace:
  root: ./ws
db_path: ./sortie.db
---
Work on {{ .issue.identifier }}.
`, script, keep))
}

// sleepMarker makes sleep durations unique to this test process and case (GNU sleep
// takes fractions): "302" + marker sleeps 302.<pid><n> seconds.
func sleepMarker(n int) string { return "." + strconv.Itoa(os.Getpid()) + strconv.Itoa(n) }

// sleepers lists the living processes whose command line holds marker.
func sleepers(marker string) []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmd, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !strings.Contains(string(cmd), marker) {
			continue
		}
		if st, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil {
			s := string(st)
			if i := strings.LastIndexByte(s, ')'); i > 0 && strings.HasPrefix(strings.TrimSpace(s[i+1:]), "Z") {
				continue
			}
		}
		out = append(out, pid)
	}
	return out
}

// TestLeftovers_ADaemonisingAgentIsHandedOffAndLeavesNothing: an agent that starts
// setsid'd processes (one holding its stdout, one with a cleared environment) and then
// succeeds is a success, handed off, and when the daemon has exited no process it
// started is alive.
func TestLeftovers_ADaemonisingAgentIsHandedOffAndLeavesNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	marker := sleepMarker(1)
	writeFile(t, dir, "issues.json", `[{"id": "1", "identifier": "LO-1", "title": "t", "state": "Todo"}]`)
	wf := leftoverWorkflow(t, dir, marker, false)
	r := runSortie(t, dir, testEnv(t.TempDir()), "--exit-when-idle", wf)
	if r.code != exitOK {
		t.Fatalf("sortie: %s", r)
	}
	if left := sleepers(marker); len(left) > 0 {
		t.Errorf("processes the agent started outlived its run: %v\n%s", left, r)
	}
	var issues []struct{ State string }
	b, _ := os.ReadFile(filepath.Join(dir, "issues.json"))
	if err := json.Unmarshal(b, &issues); err != nil || len(issues) != 1 || issues[0].State != "Review" {
		t.Errorf("issue after the run: %s (%v), want it handed off to Review\n%s", b, err, r)
	}
	if strings.Contains(r.stderr, "port_exit") {
		t.Errorf("the run was recorded as port_exit:\n%s", r.stderr)
	}
}

// TestLeftovers_KeepProcessesLeavesThemRunning: agent.keep_processes leaves the agent's
// services up, on purpose, and the run still succeeds.
func TestLeftovers_KeepProcessesLeavesThemRunning(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	marker := sleepMarker(2)
	t.Cleanup(func() {
		for _, pid := range sleepers(marker) {
			if p, err := os.FindProcess(pid); err == nil {
				_ = p.Kill()
			}
		}
	})
	writeFile(t, dir, "issues.json", `[{"id": "1", "identifier": "LO-2", "title": "t", "state": "Todo"}]`)
	wf := leftoverWorkflow(t, dir, marker, true)
	r := runSortie(t, dir, testEnv(t.TempDir()), "--exit-when-idle", wf)
	if r.code != exitOK {
		t.Fatalf("sortie: %s", r)
	}
	if left := sleepers(marker); len(left) != 2 {
		t.Errorf("with keep_processes, %d of the agent's 2 services are running, want both\n%s", len(left), r)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "issues.json"))
	if !strings.Contains(string(b), `"Review"`) {
		t.Errorf("issue after the run: %s, want it handed off\n%s", b, r)
	}
}

// TestSupervise_SweepsWhatTheProgramLeaves: `sortie supervise` returns the program's
// status and leaves none of its descendants, however they detached.
func TestSupervise_SweepsWhatTheProgramLeaves(t *testing.T) {
	t.Parallel()
	marker := sleepMarker(3)
	r := runSortie(t, t.TempDir(), nil, "supervise", "--grace", "1s", "--", "/bin/sh", "-c",
		"setsid sleep 304"+marker+" </dev/null >/dev/null 2>&1 & (sleep 305"+marker+" </dev/null >/dev/null 2>&1 &) ; exit 3")
	if r.code != 3 {
		t.Errorf("supervise exit %d, want the program's 3\n%s", r.code, r)
	}
	if left := sleepers(marker); len(left) > 0 {
		t.Errorf("descendants outlived supervise: %v", left)
	}
}

// TestLeftovers_EachRunHasItsOwnCgroup: where cgroup v2 is writable, a run's agent
// runs in the run's own group, which is gone once the daemon has exited.
func TestLeftovers_EachRunHasItsOwnCgroup(t *testing.T) {
	t.Parallel()
	probe, err := cgroup.Setup("sortie-probe-" + strconv.Itoa(os.Getpid()))
	if err != nil {
		t.Skipf("skipped: cgroup v2 is not writable here, so runs get no cgroups: %v", err)
	}
	probe.Close()
	dir := t.TempDir()
	writeFile(t, dir, "issues.json", `[{"id": "1", "identifier": "CG-1", "title": "t", "state": "Todo"}]`)
	wf := writeFile(t, dir, "WORKFLOW.md", `---
tracker:
  kind: file
  path: issues.json
  active_states: [Todo]
  terminal_states: [Done]
  handoff_state: Review
agent:
  kind: mock
  max_turns: 1
workspace:
  root: ./ws
db_path: ./sortie.db
server: {port: 0}
mock:
  shell:
    - {name: cgroup, run: "cat /proc/self/cgroup"}
---
Work on {{ .issue.identifier }}.
`)
	r := runSortie(t, dir, testEnv(t.TempDir()), "--exit-when-idle", wf)
	if r.code != exitOK {
		t.Fatalf("sortie: %s", r)
	}
	b, err := os.ReadFile(filepath.Join(dir, "ws", "CG-1", ".mock-agent", "shell", "cgroup.out"))
	if err != nil || !strings.Contains(string(b), "/run-1\n") {
		t.Fatalf("the agent's cgroup: %q (%v), want the run's own group .../run-1\n%s", b, err, r)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "0::"); ok {
			if _, err := os.Stat(filepath.Join("/sys/fs/cgroup", rest)); err == nil {
				t.Errorf("the run's cgroup %s outlived the daemon", rest)
			}
			if _, err := os.Stat(filepath.Join("/sys/fs/cgroup/unified", rest)); err == nil {
				t.Errorf("the run's cgroup %s outlived the daemon", rest)
			}
		}
	}
}
