package main

// End-to-end: the sortie binary runs the real copilot CLI (pinned, from .tools/, in
// BYOK mode against the fake model), and the model calls Sortie's tools through it.

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sortie/internal/store"
	"sortie/internal/testkit/clis"
	"sortie/internal/testkit/fakemodel"
)

// The model calls sortie_status and tracker_api through the real copilot CLI: the
// status comes from the session's state file, and transition_issue moves the issue in
// the file tracker through the daemon's socket.
func TestCopilot_AgentToolsThroughTheCLI(t *testing.T) {
	t.Parallel()
	copilot := clis.Copilot(t)
	m := fakemodel.Start(t,
		fakemodel.Reply{Text: "Checking my budget.", ToolUses: []fakemodel.ToolUse{{Name: "sortie-tools-sortie_status", Input: map[string]any{}}}},
		fakemodel.Reply{Text: "Moving the issue.", ToolUses: []fakemodel.ToolUse{{Name: "sortie-tools-tracker_api",
			Input: map[string]any{"operation": "transition_issue", "issue_id": "1", "target_state": "Done"}}}},
		// Autopilot runs until the model calls task_complete.
		fakemodel.Reply{ToolUses: []fakemodel.ToolUse{{Name: "task_complete", Input: map[string]any{"summary": "moved"}}}},
	)
	dir := t.TempDir()
	writeFile(t, dir, "issues.json", `[{"id": "1", "identifier": "P-1", "title": "use the tools", "priority": 1, "state": "Todo"}]`)
	wf := writeFile(t, dir, "WORKFLOW.md", fmt.Sprintf(`---
tracker:
  kind: file
  path: issues.json
  active_states: [Todo]
  terminal_states: [Done]
  handoff_state: Review
agent:
  kind: copilot-cli
  command: %s
  max_turns: 1
  read_timeout_ms: 60000
workspace:
  root: ./ws
db_path: ./sortie.db
---
Fix {{ .issue.identifier }}: {{ .issue.title }}.
`, copilot))

	home := t.TempDir()
	env := clis.CopilotEnv(testEnv(t.TempDir()), m.URL, home, filepath.Join(home, ".cache"))
	r := runSortie(t, dir, env, "--exit-when-idle", wf)
	if r.code != exitOK {
		t.Fatalf("sortie: %s", r)
	}
	reqs := m.Messages()
	if len(reqs) < 3 {
		t.Fatalf("model requests = %d, want 3\n%s", len(reqs), r)
	}
	for _, tool := range []string{"sortie_status", "workspace_history", "cost_budget", "tracker_api"} {
		if !strings.Contains(string(reqs[0].Body), "sortie-tools-"+tool) {
			t.Errorf("the first request does not offer %s", tool)
		}
	}
	firstJSON := func(s string) []byte {
		var raw json.RawMessage
		json.NewDecoder(strings.NewReader(s)).Decode(&raw)
		return raw
	}
	results := reqs[2].ToolResults()
	if len(results) < 2 {
		t.Fatalf("tool results = %+v", results)
	}
	var st struct {
		TurnNumber int `json:"turn_number"`
		MaxTurns   int `json:"max_turns"`
	}
	if err := json.Unmarshal(firstJSON(results[0].Text), &st); err != nil || st.TurnNumber != 1 || st.MaxTurns != 1 {
		t.Errorf("sortie_status = %q (%v)", results[0].Text, err)
	}
	if !strings.Contains(results[1].Text, `"transitioned":true`) || results[1].IsError {
		t.Errorf("tracker_api = %+v", results[1])
	}
	if data, _ := os.ReadFile(filepath.Join(dir, "issues.json")); !strings.Contains(string(data), `"Done"`) {
		t.Errorf("issues.json after transition_issue:\n%s", data)
	}
	runs := runsByIssue(t, filepath.Join(dir, "sortie.db"))["1"]
	if len(runs) != 1 || runs[0].Status != store.StatusSucceeded || !strings.Contains(runs[0].CLIVersion, "1.0.102") {
		t.Errorf("runs = %+v, want one succeeded run recorded with the CLI's version", runs)
	}
}
