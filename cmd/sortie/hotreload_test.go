package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// hotReloadWorkflow is a file-tracker workflow with the given active states and
// handoff state, and a mock agent that finishes in one turn.
func hotReloadWorkflow(active, handoff string) string {
	return fmt.Sprintf(`---
tracker:
  kind: file
  path: issues.json
  active_states: [%s]
  terminal_states: [Done]
  handoff_state: %s
agent:
  kind: mock
  max_turns: 1
workspace:
  root: ./ws
db_path: ./sortie.db
---
Work on {{ .issue.identifier }}.
`, active, handoff)
}

// TestHotReload_NewActiveStateReachesTheTracker edits WORKFLOW.md under a running
// daemon to add an active state and change the handoff state. The tracker adapter is
// built from those states, so the daemon must rebuild it: the issue waiting in the new
// state is dispatched without a restart and handed off to the new handoff state.
func TestHotReload_NewActiveStateReachesTheTracker(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	issues := writeFile(t, dir, "issues.json", `[{"id": "1", "identifier": "HR-1", "title": "waits in Ready", "state": "Ready"}]`+"\n")
	wf := writeFile(t, dir, "WORKFLOW.md", hotReloadWorkflow("Todo", "Review"))
	// A short TMPDIR: the agent socket lives under it, and a socket path has at most 107
	// bytes.
	tmp, err := os.MkdirTemp("", "hr-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })

	d := startDaemon(t, testEnv(tmp), "--port", "0", wf)
	started := d.waitLine(0, daemonTimeout, "sortie started")
	if n := d.countLines("dispatching"); n != 0 {
		t.Fatalf("an issue in a state that is not active was dispatched:\n%s", d.stderrText())
	}

	// Rename a new version over the file, as editors do.
	next := filepath.Join(dir, ".WORKFLOW.md.new")
	if err := os.WriteFile(next, []byte(hotReloadWorkflow("Todo, Ready", "Human Review")), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(next, wf); err != nil {
		t.Fatal(err)
	}
	d.waitLine(started, daemonTimeout, "workflow reloaded")
	d.waitLine(started, daemonTimeout, "dispatching", "HR-1")
	d.waitLine(started, daemonTimeout, "handed off", "HR-1", "Human Review")
	if got := snapshotFile(t, issues); !strings.Contains(got, `"state": "Human Review"`) {
		t.Errorf("the issue was not moved to the new handoff state; issues.json:\n%s", got)
	}

	d.signal(syscall.SIGTERM)
	if code := d.wait(daemonTimeout); code != exitOK {
		t.Fatalf("SIGTERM: want exit 0, got %d", code)
	}
}
