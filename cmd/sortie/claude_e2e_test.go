package main

// End-to-end: the sortie binary runs the real claude CLI (pinned, from .tools/) against
// the fake model API, through the whole daemon: dispatch, turns, status protocol,
// handoff, run history with the CLI's version, and a stalled agent killed and retried.

import (
	"context"
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

// claudeWorkflow is a file-tracker workflow running claude with extra agent settings.
func claudeWorkflow(claude string, maxTurns int, agentExtra string) string {
	return fmt.Sprintf(`---
tracker:
  kind: file
  path: issues.json
  active_states: [Todo]
  terminal_states: [Done]
  handoff_state: Review
agent:
  kind: claude-code
  command: %s
  max_turns: %d
  max_retry_backoff_ms: 1000
%sworkspace:
  root: ./ws
db_path: ./sortie.db
claude-code:
  permission_mode: bypassPermissions
  model: claude-sonnet-4-5
---
Fix {{ .issue.identifier }}: {{ .issue.title }}.
`, claude, maxTurns, agentExtra)
}

const oneClaudeIssue = `[{"id": "1", "identifier": "C-1", "title": "add hello.txt", "priority": 1, "state": "Todo"}]
`

func TestClaude_DaemonRunsAnIssueToHandoff(t *testing.T) {
	t.Parallel()
	claude := clis.Claude(t)
	m := fakemodel.Start(t,
		fakemodel.Reply{Text: "Adding the file.", ToolUses: []fakemodel.ToolUse{{Name: "Bash", Input: map[string]any{
			"command":     `printf hello > hello.txt && mkdir -p .sortie && echo needs-human-review > .sortie/status`,
			"description": "write hello.txt and ask for review"}}},
			Usage: fakemodel.Usage{InputTokens: 1000, OutputTokens: 60, CacheReadInputTokens: 40}},
		fakemodel.Reply{Text: "Done; ready for review.", Usage: fakemodel.Usage{InputTokens: 1200, OutputTokens: 15}},
	)
	dir := t.TempDir()
	writeFile(t, dir, "issues.json", oneClaudeIssue)
	wf := writeFile(t, dir, "WORKFLOW.md", claudeWorkflow(claude, 3, ""))

	r := runSortie(t, dir, clis.ClaudeEnv(testEnv(t.TempDir()), m.URL, t.TempDir()), "--exit-when-idle", wf)
	if r.code != exitOK {
		t.Fatalf("sortie: %s", r)
	}
	runs := runsByIssue(t, filepath.Join(dir, "sortie.db"))["1"]
	if len(runs) != 1 {
		t.Fatalf("runs = %+v, want one", runs)
	}
	run := runs[0]
	if run.Status != store.StatusHandedOff {
		t.Errorf("run status = %s, want handed_off\n%s", run.Status, r)
	}
	if !strings.HasSuffix(run.CLIVersion, "(Claude Code)") {
		t.Errorf("run CLI version = %q, want the pinned claude's --version", run.CLIVersion)
	}
	if run.Turns != 1 {
		t.Errorf("turns = %d, want 1 (the agent asked for review after the first)", run.Turns)
	}
	if want := (store.Tokens{Input: 2200, Output: 75, Total: 2275, CacheRead: 40}); run.Tokens != want {
		t.Errorf("run tokens = %+v, want %+v (what the fake model reported)", run.Tokens, want)
	}
	if run.Model != "claude-sonnet-4-5" || run.CostUSD <= 0 {
		t.Errorf("model %q cost %v", run.Model, run.CostUSD)
	}
	if data, err := os.ReadFile(filepath.Join(dir, "issues.json")); err != nil || !strings.Contains(string(data), `"Review"`) {
		t.Errorf("issues.json after the run: %s (%v); want C-1 in Review", data, err)
	}
	if data, err := os.ReadFile(filepath.Join(run.Workspace, "hello.txt")); err != nil || string(data) != "hello" {
		t.Errorf("hello.txt = %q, %v", data, err)
	}
	// The first prompt carried the issue and the status protocol.
	reqs := m.Messages()
	if len(reqs) == 0 || !strings.Contains(reqs[0].Transcript(), "Fix C-1: add hello.txt.") ||
		!strings.Contains(reqs[0].Transcript(), ".sortie/status") {
		t.Errorf("first request lacks the rendered prompt:\n%s", reqs[0].Transcript())
	}
}

func TestClaude_StalledAgentIsKilledAndRetried(t *testing.T) {
	t.Parallel()
	claude := clis.Claude(t)
	m := fakemodel.Start(t, fakemodel.Reply{Stall: true}) // then the default reply, "done"
	dir := t.TempDir()
	writeFile(t, dir, "issues.json", oneClaudeIssue)
	wf := writeFile(t, dir, "WORKFLOW.md", claudeWorkflow(claude, 1, "  stall_timeout_ms: 10000\n"))

	r := runSortie(t, dir, clis.ClaudeEnv(testEnv(t.TempDir()), m.URL, t.TempDir()), "--exit-when-idle", wf)
	if r.code != exitOK {
		t.Fatalf("sortie: %s", r)
	}
	runs := runsByIssue(t, filepath.Join(dir, "sortie.db"))["1"]
	if len(runs) != 2 {
		t.Fatalf("runs = %+v, want a stalled one and its retry", runs)
	}
	stalled, retry := runs[0], runs[1]
	if stalled.Attempt > retry.Attempt {
		stalled, retry = retry, stalled
	}
	if stalled.Status != store.StatusStalled || retry.Status != store.StatusHandedOff {
		t.Fatalf("statuses = %s, %s; want stalled then handed_off\n%s", stalled.Status, retry.Status, r)
	}
	if stalled.PGID == 0 {
		t.Fatalf("stalled run has no process group recorded")
	}
	if left := groupMembers(stalled.PGID); len(left) > 0 {
		t.Errorf("the stalled agent's group %d still has processes %v", stalled.PGID, left)
	}
	if n := len(m.Messages()); n != 2 {
		t.Errorf("model requests = %d, want 2 (the stalled one and the retry's)", n)
	}
}

// examples/claude-code runs as shipped, with `command: claude` found on PATH: CC-1 is
// worked for agent.max_turns turns and handed off; CC-2 waits for its blocker.
func TestExamplesClaudeCode_Runs(t *testing.T) {
	t.Parallel()
	claude := clis.Claude(t)
	m := fakemodel.Start(t) // every request gets the default reply
	dir := t.TempDir()
	src := filepath.Join("..", "..", "examples", "claude-code")
	for _, name := range []string{"WORKFLOW.md", "issues.json"} {
		data, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, dir, name, string(data))
	}
	env := clis.ClaudeEnv(testEnv(t.TempDir()), m.URL, t.TempDir())
	for i, kv := range env {
		if strings.HasPrefix(kv, "PATH=") {
			env[i] = "PATH=" + filepath.Dir(claude) + ":" + strings.TrimPrefix(kv, "PATH=")
		}
	}

	r := runSortie(t, dir, env, "--exit-when-idle", filepath.Join(dir, "WORKFLOW.md"))
	if r.code != exitOK {
		t.Fatalf("sortie: %s", r)
	}
	runs := runsByIssue(t, filepath.Join(dir, "sortie.db"))
	if len(runs["1"]) != 1 || runs["1"][0].Status != store.StatusHandedOff || runs["1"][0].Turns != 5 {
		t.Errorf("CC-1 runs = %+v, want one handed off after 5 turns\n%s", runs["1"], r)
	}
	if len(runs["2"]) != 0 {
		t.Errorf("CC-2 ran although its blocker is not done: %+v", runs["2"])
	}
	data, _ := os.ReadFile(filepath.Join(dir, "issues.json"))
	if !strings.Contains(string(data), `"Human Review"`) {
		t.Errorf("issues.json: CC-1 not in Human Review:\n%s", data)
	}
}

// The model calls Sortie's tools through the real CLI: sortie_status answers from the
// session's state file, and tracker_api's transition_issue really moves the issue in
// the file tracker, through the daemon's socket.
func TestClaude_AgentToolsThroughTheCLI(t *testing.T) {
	t.Parallel()
	claude := clis.Claude(t)
	m := fakemodel.Start(t,
		fakemodel.Reply{Text: "Checking my budget.", ToolUses: []fakemodel.ToolUse{{Name: "mcp__sortie-tools__sortie_status", Input: map[string]any{}}}},
		fakemodel.Reply{Text: "Moving the issue.", ToolUses: []fakemodel.ToolUse{{Name: "mcp__sortie-tools__tracker_api",
			Input: map[string]any{"operation": "transition_issue", "issue_id": "1", "target_state": "Done"}}}},
		fakemodel.Reply{Text: "Done."},
	)
	dir := t.TempDir()
	writeFile(t, dir, "issues.json", oneClaudeIssue)
	wf := writeFile(t, dir, "WORKFLOW.md", claudeWorkflow(claude, 1, ""))

	r := runSortie(t, dir, clis.ClaudeEnv(testEnv(t.TempDir()), m.URL, t.TempDir()), "--exit-when-idle", wf)
	if r.code != exitOK {
		t.Fatalf("sortie: %s", r)
	}
	reqs := m.Messages()
	if len(reqs) != 3 {
		for i, q := range reqs {
			t.Logf("request %d tools %v results %+v", i, q.Tools, q.ToolResults())
		}
		st := openStore(t, filepath.Join(dir, "sortie.db"))
		for _, run := range runsByIssue(t, filepath.Join(dir, "sortie.db"))["1"] {
			evs, _ := st.RunEvents(context.Background(), run.ID, 50)
			t.Logf("run %+v events %+v", run, evs)
		}
		t.Fatalf("model requests = %d, want 3\n%s", len(reqs), r)
	}
	// Claude Code defers MCP tools behind its ToolSearch tool: they are named in the
	// request rather than listed in its tools, and callable by name.
	offered := string(reqs[0].Body)
	for _, tool := range []string{"sortie_status", "workspace_history", "cost_budget", "tracker_api"} {
		if !strings.Contains(offered, "mcp__sortie-tools__"+tool) {
			t.Errorf("the first request does not offer %s", tool)
		}
	}
	if strings.Contains(offered, "mcp__sortie-tools__notify_operator") {
		t.Error("notify_operator offered without a notification backend")
	}
	if !strings.Contains(reqs[0].Transcript(), "sortie_status") {
		t.Error("the first prompt does not describe the tools")
	}

	status := reqs[1].ToolResults()
	if len(status) != 1 || status[0].IsError {
		t.Fatalf("sortie_status result = %+v", status)
	}
	// The CLI may append its own reminders after the tool's JSON.
	firstJSON := func(s string) []byte {
		var raw json.RawMessage
		json.NewDecoder(strings.NewReader(s)).Decode(&raw)
		return raw
	}
	var st struct {
		TurnNumber     int  `json:"turn_number"`
		MaxTurns       int  `json:"max_turns"`
		TurnsRemaining int  `json:"turns_remaining"`
		Attempt        *int `json:"attempt"`
	}
	if err := json.Unmarshal(firstJSON(status[0].Text), &st); err != nil || st.TurnNumber != 1 || st.MaxTurns != 1 || st.TurnsRemaining != 0 || st.Attempt != nil {
		t.Errorf("sortie_status = %s (%v)", status[0].Text, err)
	}

	results := reqs[2].ToolResults() // the whole conversation: the status, then the move
	if len(results) != 2 {
		t.Fatalf("tool results in the last request = %+v", results)
	}
	var moved struct {
		Success bool            `json:"success"`
		Data    map[string]bool `json:"data"`
	}
	if err := json.Unmarshal(firstJSON(results[1].Text), &moved); err != nil || results[1].IsError || !moved.Success || !moved.Data["transitioned"] {
		t.Fatalf("tracker_api result = %+v (%v)", results[1], err)
	}
	if data, _ := os.ReadFile(filepath.Join(dir, "issues.json")); !strings.Contains(string(data), `"Done"`) {
		t.Errorf("issues.json after transition_issue:\n%s", data)
	}
	runs := runsByIssue(t, filepath.Join(dir, "sortie.db"))["1"]
	if len(runs) != 1 || runs[0].Status != store.StatusSucceeded {
		t.Errorf("runs = %+v, want one succeeded run (the agent moved the issue out of the active states)", runs)
	}
}
