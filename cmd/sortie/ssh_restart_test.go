package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"sortie/internal/testkit/sshd"
)

// TestSSH_RestartStopsTheRemoteAgentBeforeTheIssueResumes: a daemon is killed -9 while
// its agent runs on an SSH host (the private sshd). The remote agent outlives it (no
// terminal, no hangup). The restarted daemon stops it there before the issue resumes:
// the resumed agent finds no earlier one alive.
func TestSSH_RestartStopsTheRemoteAgentBeforeTheIssueResumes(t *testing.T) {
	fx := sshd.Start(t) // changes PATH: not parallel
	dir := t.TempDir()
	rec := t.TempDir()
	// The "agent": it notes whether an earlier one of it still lives, then works
	// (sleeps) after a first stream-json line. It answers --version like claude for the
	// adapter's preflight, which runs it locally.
	agentCmd := writeFile(t, rec, "remote-agent", fmt.Sprintf(`#!/bin/sh
case "$1" in --version) echo "2.1.330 (Claude Code)"; exit 0;; esac
rec=%s
if [ -f "$rec/agent.pid" ] && kill -0 "$(cat "$rec/agent.pid")" 2>/dev/null; then echo "$(cat "$rec/agent.pid")" >> "$rec/overlap"; fi
echo $$ > "$rec/agent.pid"
echo start >> "$rec/starts"
echo '{"type":"system","subtype":"init","session_id":"remote-session","model":"m","tools":[]}'
exec sleep 300
`, rec))
	if err := os.Chmod(agentCmd, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "issues.json", `[{"id": "1", "identifier": "SSH-1", "title": "t", "state": "Todo"}]`)
	wf := writeFile(t, dir, "WORKFLOW.md", fmt.Sprintf(`---
tracker:
  kind: file
  path: issues.json
  active_states: [Todo]
  terminal_states: [Done]
agent:
  kind: claude-code
  command: %s
  max_turns: 1
  stall_timeout_ms: 0
worker:
  ssh_hosts: [%q]
  ssh_strict_host_key_checking: "no"
workspace:
  root: %s
db_path: ./sortie.db
server: {port: 0}
---
Work on {{ .issue.identifier }}.
`, agentCmd, fx.Host(), filepath.Join(dir, "ws")))
	if err := os.MkdirAll(filepath.Join(dir, "ws"), 0o755); err != nil {
		t.Fatal(err)
	}
	dbPath := filepath.Join(dir, "sortie.db")
	starts := func() int {
		b, _ := os.ReadFile(filepath.Join(rec, "starts"))
		return strings.Count(string(b), "start")
	}

	first := startDaemon(t, testEnv(t.TempDir()), wf)
	first.waitLine(0, daemonTimeout, "sortie started")
	st := openStore(t, dbPath)
	var remotePGID int
	pollUntil(t, daemonTimeout, "the remote agent running with its process group recorded", func() (bool, string) {
		runs, err := st.RunsInProgress(context.Background())
		if err != nil || len(runs) != 1 {
			return false, fmt.Sprintf("runs %v, %v", runs, err)
		}
		remotePGID = runs[0].RemotePGID
		return starts() == 1 && remotePGID > 0, fmt.Sprintf("starts %d, remote pgid %d", starts(), remotePGID)
	})
	oldAgent, _ := os.ReadFile(filepath.Join(rec, "agent.pid"))
	first.signal(syscall.SIGKILL)
	first.wait(daemonTimeout)
	oldPID, _ := strconv.Atoi(strings.TrimSpace(string(oldAgent)))
	if oldPID <= 0 || syscall.Kill(oldPID, 0) != nil {
		t.Fatalf("the remote agent (pid %q) did not outlive the killed daemon; the test proves nothing", oldAgent)
	}

	second := startDaemon(t, testEnv(t.TempDir()), wf)
	pollUntil(t, daemonTimeout, "the issue resumed on the host", func() (bool, string) {
		return starts() == 2, fmt.Sprintf("starts %d", starts())
	})
	if b, err := os.ReadFile(filepath.Join(rec, "overlap")); err == nil {
		t.Fatalf("the resumed agent found the earlier one (pid %s) still running: two agents on one issue\n%s", b, second.stderrText())
	}
	if syscall.Kill(oldPID, 0) == nil {
		t.Errorf("the earlier remote agent (pid %d) is still running", oldPID)
	}
	if !strings.Contains(second.stderrText(), "stopped an agent a previous daemon left running on an SSH host") {
		t.Errorf("the restarted daemon did not say it stopped the remote agent:\n%s", second.stderrText())
	}
	second.signal(syscall.SIGTERM)
	second.wait(daemonTimeout)
}
