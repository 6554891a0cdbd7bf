package main

// End-to-end: the sortie binary runs the real opencode CLI (pinned, from .tools/)
// against the fake model API, through the whole daemon: dispatch, a call to Sortie's
// tools through the CLI's MCP client, the status protocol, handoff, and run history
// with the CLI's version, tokens and cost.

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

func TestOpenCode_DaemonRunsAnIssueToHandoff(t *testing.T) {
	t.Parallel()
	opencode := clis.OpenCode(t)
	m := fakemodel.Start(t,
		fakemodel.Reply{Text: "Checking my budget.", ToolUses: []fakemodel.ToolUse{{Name: "sortie-tools_sortie_status", Input: map[string]any{}}},
			Usage: fakemodel.Usage{InputTokens: 900, OutputTokens: 20}},
		fakemodel.Reply{Text: "Adding the file.", ToolUses: []fakemodel.ToolUse{{Name: "bash", Input: map[string]any{
			"command":     `printf hello > hello.txt && mkdir -p .sortie && echo needs-human-review > .sortie/status`,
			"description": "write hello.txt and ask for review"}}},
			Usage: fakemodel.Usage{InputTokens: 1000, OutputTokens: 60, CacheReadInputTokens: 40}},
		fakemodel.Reply{Text: "Done; ready for review.", Usage: fakemodel.Usage{InputTokens: 1200, OutputTokens: 15}},
	)
	dir := t.TempDir()
	writeFile(t, dir, "issues.json", `[{"id": "1", "identifier": "O-1", "title": "add hello.txt", "priority": 1, "state": "Todo"}]`)
	provider, err := json.Marshal(clis.OpenCodeConfig(m.URL)["provider"])
	if err != nil {
		t.Fatal(err)
	}
	wf := writeFile(t, dir, "WORKFLOW.md", fmt.Sprintf(`---
tracker:
  kind: file
  path: issues.json
  active_states: [Todo]
  terminal_states: [Done]
  handoff_state: Review
agent:
  kind: opencode
  command: %s
  max_turns: 3
  read_timeout_ms: 60000
workspace:
  root: ./ws
db_path: ./sortie.db
opencode:
  model: %s
  config:
    provider: %s
---
Fix {{ .issue.identifier }}: {{ .issue.title }}.
`, opencode, clis.OpenCodeModel, provider))

	home := t.TempDir()
	env := clis.OpenCodeEnv(testEnv(t.TempDir()), home, filepath.Join(home, ".cache"))
	r := runSortie(t, dir, env, "--exit-when-idle", wf)
	if r.code != exitOK {
		t.Fatalf("sortie: %s", r)
	}
	runs := runsByIssue(t, filepath.Join(dir, "sortie.db"))["1"]
	if len(runs) != 1 {
		t.Fatalf("runs = %+v, want one\n%s", runs, r)
	}
	run := runs[0]
	if run.Status != store.StatusHandedOff || run.Turns != 1 {
		t.Errorf("run status = %s after %d turns, want handed_off after 1\n%s", run.Status, run.Turns, r)
	}
	if run.CLIVersion != "1.18.33" {
		t.Errorf("run CLI version = %q, want the pinned opencode's --version", run.CLIVersion)
	}
	if want := (store.Tokens{Input: 3100, Output: 95, Total: 3195, CacheRead: 40}); run.Tokens != want {
		t.Errorf("run tokens = %+v, want %+v (what the fake model reported)", run.Tokens, want)
	}
	if run.CostUSD <= 0 || run.Model != clis.OpenCodeModel {
		t.Errorf("run cost = %v, model %q; want the CLI's step costs and %s", run.CostUSD, run.Model, clis.OpenCodeModel)
	}
	if data, err := os.ReadFile(filepath.Join(dir, "issues.json")); err != nil || !strings.Contains(string(data), `"Review"`) {
		t.Errorf("issues.json after the run: %s (%v); want O-1 in Review", data, err)
	}
	if data, err := os.ReadFile(filepath.Join(run.Workspace, "hello.txt")); err != nil || string(data) != "hello" {
		t.Errorf("hello.txt = %q, %v", data, err)
	}

	reqs := m.Messages()
	if len(reqs) != 3 {
		t.Fatalf("model requests = %d, want 3 (no title request)\n%s", len(reqs), r)
	}
	if !strings.Contains(reqs[0].Transcript(), "Fix O-1: add hello.txt.") || !strings.Contains(reqs[0].Transcript(), ".sortie/status") {
		t.Errorf("first request lacks the rendered prompt:\n%s", reqs[0].Transcript())
	}
	for _, tool := range []string{"sortie_status", "tracker_api"} {
		if !strings.Contains(strings.Join(reqs[0].Tools, " "), "sortie-tools_"+tool) {
			t.Errorf("the first request does not offer sortie-tools_%s: %v", tool, reqs[0].Tools)
		}
	}
	res, ok := reqs[1].LastToolResult()
	var st struct {
		TurnNumber int `json:"turn_number"`
		MaxTurns   int `json:"max_turns"`
	}
	if !ok || res.IsError || json.NewDecoder(strings.NewReader(res.Text)).Decode(&st) != nil || st.TurnNumber != 1 || st.MaxTurns != 3 {
		t.Errorf("sortie_status through opencode = %+v", res)
	}
}
