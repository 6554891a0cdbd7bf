package daemon

import (
	"os"
	"path/filepath"
	"testing"

	// The command links the adapters; the daemon's tests link the ones they use.
	_ "sortie/internal/agent/all"
	_ "sortie/internal/tracker/file"
)

// testVersion is the version the tests' daemons report.
const testVersion = "v0.0.0-test"

// writeFile writes content to dir/name, making its directories, and returns its path.
func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// miniLibrary is a three-activity workflow: write → approve (one blocking checkpoint
// "ship") → done, or back to write.
var miniLibrary = map[string]string{
	"mini/workflow.json": `{"id": "mini", "version": "1.0.0", "title": "Write, approve, done",
	  "initialActivity": "write",
	  "executionModel": {"roles": [{"id": "orchestrator", "description": "The Sortie daemon."}, {"id": "worker", "description": "The agent."}]}}`,
	"mini/activities/01-write.json": `{"id": "write", "version": "1.0.0", "name": "Write the change",
	  "steps": [{"id": "draft", "name": "Draft it"}],
	  "transitions": [{"to": "approve", "isDefault": true}]}`,
	"mini/activities/02-approve.json": `{"id": "approve", "version": "1.0.0", "name": "Approval",
	  "checkpoints": [{"id": "ship", "name": "Ship it?", "message": "Is the change ready to hand off?",
	    "options": [{"id": "ship-it", "label": "Ship it", "effect": {"transitionTo": "done"}},
	                {"id": "rework", "label": "Rework", "effect": {"transitionTo": "write"}}]}],
	  "transitions": [{"to": "done", "isDefault": true}, {"to": "write", "condition": {"type": "simple", "variable": "rework", "operator": "==", "value": true}}]}`,
	"mini/activities/03-done.json": `{"id": "done", "version": "1.0.0", "name": "Done"}`,
}
