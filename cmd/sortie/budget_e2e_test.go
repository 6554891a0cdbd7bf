package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sortie/internal/testkit/clis"
	"sortie/internal/testkit/fakemodel"
)

// TestBudget_ClaudeIsStoppedMidTurnWhenItCrossesMaxCost: the real claude CLI works
// through a long turn whose every model reply costs $3 (1M input tokens at
// token_rates' $3/MTok); with agent.max_cost_usd 5, the turn is stopped at the event
// that crosses it — the second reply — not at the turn's end: the model sees at most
// one more request, the Bash calls stop, and the issue is not handed off.
func TestBudget_ClaudeIsStoppedMidTurnWhenItCrossesMaxCost(t *testing.T) {
	t.Parallel()
	claude := clis.Claude(t)
	dir := t.TempDir()
	writeFile(t, dir, "issues.json", `[{"id": "1", "identifier": "BU-1", "title": "t", "state": "Todo"}]`)
	const replies = 10
	var script []fakemodel.Reply
	for i := 1; i < replies; i++ {
		script = append(script, fakemodel.Reply{
			Text:  fmt.Sprintf("Step %d.", i),
			Usage: fakemodel.Usage{InputTokens: 1_000_000, OutputTokens: 10},
			ToolUses: []fakemodel.ToolUse{{Name: "Bash", Input: map[string]any{
				"command": fmt.Sprintf("mkdir -p steps && touch steps/%d", i), "description": "a step"}}},
		})
	}
	script = append(script, fakemodel.Reply{Text: "Done."})
	m := fakemodel.Start(t, script...)
	wf := writeFile(t, dir, "WORKFLOW.md", fmt.Sprintf(`---
tracker:
  kind: file
  path: issues.json
  active_states: [Todo]
  terminal_states: [Done]
  handoff_state: Review
agent:
  kind: claude-code
  command: %s
  max_turns: 1
  max_cost_usd: 5
token_rates:
  claude-code: {input_per_mtok: 3, output_per_mtok: 15}
workspace:
  root: ./ws
db_path: ./sortie.db
claude-code:
  permission_mode: bypassPermissions
  model: claude-sonnet-4-5
---
Work on {{ .issue.identifier }}.
`, claude))
	env := clis.ClaudeEnv(testEnv(t.TempDir()), m.URL, t.TempDir())
	r := runSortie(t, dir, env, "--exit-when-idle", wf)
	if r.code != exitOK {
		t.Fatalf("sortie: %s", r)
	}
	if !strings.Contains(r.stderr, "budget crossed during a turn") {
		t.Errorf("the daemon did not stop the turn at the crossing:\n%s", r)
	}
	// The second reply crosses $5; at most the request claude had already sent after
	// it may have been answered.
	if n := len(m.Messages()); n > 3 {
		t.Errorf("the model got %d requests; the turn went on past the crossing at the 2nd\n%s", n, r)
	}
	steps, _ := os.ReadDir(filepath.Join(dir, "ws", "BU-1", "steps"))
	if len(steps) > 3 {
		t.Errorf("%d Bash steps ran; the agent went on past the crossing", len(steps))
	}
	b, _ := os.ReadFile(filepath.Join(dir, "issues.json"))
	if strings.Contains(string(b), "Review") {
		t.Errorf("an issue stopped by its budget was handed off: %s", b)
	}
	if !strings.Contains(r.stderr, "issue budget used up") {
		t.Errorf("the run did not end as budget used up:\n%s", r)
	}
}
