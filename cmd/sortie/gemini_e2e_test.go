package main

// End-to-end: the sortie binary runs the real gemini CLI (pinned, from .tools/)
// against the fake Gemini API, through the whole daemon: dispatch, a shell command in
// the workspace, a call to Sortie's sortie_status through the CLI's MCP client (the
// issue's settings.json), the status protocol, handoff, and run history with the CLI's
// version and tokens.

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

func TestGemini_DaemonRunsAnIssueToHandoff(t *testing.T) {
	t.Parallel()
	gemini := clis.Gemini(t)
	m := fakemodel.StartGemini(t,
		fakemodel.GeminiReply{Text: "Checking my budget.", FunctionCalls: []fakemodel.GeminiCall{{Name: "mcp_sortie-tools_sortie_status"}},
			Usage: fakemodel.Usage{InputTokens: 900, OutputTokens: 20}},
		fakemodel.GeminiReply{Text: "Adding the file.", FunctionCalls: []fakemodel.GeminiCall{{Name: "run_shell_command", Args: map[string]any{
			"command":     `printf hello > hello.txt && mkdir -p .sortie && echo needs-human-review > .sortie/status`,
			"description": "write hello.txt and ask for review"}}},
			Usage: fakemodel.Usage{InputTokens: 1000, OutputTokens: 60, CacheReadInputTokens: 40}},
		fakemodel.GeminiReply{Text: "Done; ready for review.", Usage: fakemodel.Usage{InputTokens: 1200, OutputTokens: 15}},
	)
	dir := t.TempDir()
	writeFile(t, dir, "issues.json", `[{"id": "1", "identifier": "G-1", "title": "add hello.txt", "priority": 1, "state": "Todo"}]`)
	wf := writeFile(t, dir, "WORKFLOW.md", fmt.Sprintf(`---
tracker:
  kind: file
  path: issues.json
  active_states: [Todo]
  terminal_states: [Done]
  handoff_state: Review
agent:
  kind: gemini
  command: %s
  max_turns: 3
  read_timeout_ms: 60000
workspace:
  root: ./ws
db_path: ./sortie.db
gemini:
  model: %s
---
Fix {{ .issue.identifier }}: {{ .issue.title }}.
`, gemini, clis.GeminiModel))

	env := clis.GeminiEnv(testEnv(t.TempDir()), m.URL, t.TempDir())
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
	if run.CLIVersion != "0.61.0" {
		t.Errorf("run CLI version = %q, want the pinned gemini's --version", run.CLIVersion)
	}
	if want := (store.Tokens{Input: 3100, Output: 95, Total: 3195, CacheRead: 40}); run.Tokens != want {
		t.Errorf("run tokens = %+v, want %+v (what the fake model reported)", run.Tokens, want)
	}
	if data, err := os.ReadFile(filepath.Join(dir, "issues.json")); err != nil || !strings.Contains(string(data), `"Review"`) {
		t.Errorf("issues.json after the run: %s (%v); want G-1 in Review", data, err)
	}
	if data, err := os.ReadFile(filepath.Join(run.Workspace, "hello.txt")); err != nil || string(data) != "hello" {
		t.Errorf("hello.txt = %q, %v", data, err)
	}

	reqs := m.Turns()
	if len(reqs) != 3 {
		t.Fatalf("model requests = %d, want 3\n%s", len(reqs), r)
	}
	if !strings.Contains(reqs[0].Transcript(), "Fix G-1: add hello.txt.") {
		t.Errorf("first request lacks the rendered prompt:\n%s", reqs[0].Transcript())
	}
	for _, tool := range []string{"sortie_status", "tracker_api"} {
		if !strings.Contains(strings.Join(reqs[0].Tools, " "), "mcp_sortie-tools_"+tool) {
			t.Errorf("the first request does not offer mcp_sortie-tools_%s: %v", tool, reqs[0].Tools)
		}
	}
	res, ok := reqs[1].LastFunctionResponse()
	var st struct {
		TurnNumber int `json:"turn_number"`
		MaxTurns   int `json:"max_turns"`
	}
	text := strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(res.Text), "<untrusted_context>"), "</untrusted_context>"))
	if !ok || json.Unmarshal([]byte(text), &st) != nil || st.TurnNumber != 1 || st.MaxTurns != 3 {
		t.Errorf("sortie_status through gemini = %+v", res)
	}
}
