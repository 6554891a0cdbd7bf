package opencode

import (
	"strings"
	"testing"

	"sortie/internal/agent"
	"sortie/internal/agent/agenttest"
	"sortie/internal/testkit/fakemodel"
)

// TestContract_SubagentsDeniedByDefault: a subagent's model requests never reach the
// adapter (the CLI prints only the main session), so by default the real CLI must
// refuse the task tool, with --auto and with an operator's blanket "allow" alike; with
// opencode.subagents the subagent runs.
func TestContract_SubagentsDeniedByDefault(t *testing.T) {
	task := fakemodel.Reply{Text: "Delegating.", ToolUses: []fakemodel.ToolUse{{Name: "task",
		Input: map[string]any{"description": "look", "prompt": "Say hi.", "subagent_type": "general"}}},
		Usage: fakemodel.Usage{InputTokens: 10, OutputTokens: 1}}
	sub := fakemodel.Reply{Text: "hi from the subagent", Usage: fakemodel.Usage{InputTokens: 5000, OutputTokens: 700}}
	done := fakemodel.Reply{Text: "Done.", Usage: fakemodel.Usage{InputTokens: 20, OutputTokens: 2}}
	for _, tc := range []struct {
		name     string
		opts     map[string]any
		requests int
	}{
		{"default", nil, 2},
		{"blanket allow", map[string]any{"permission": "allow"}, 2},
		{"workspace agent allows task", nil, 2},
		{"subagents enabled", map[string]any{"subagents": true}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, tc.opts, task, sub, done)
			if strings.HasPrefix(tc.name, "workspace") {
				// What an agent could write into its workspace for the next turn.
				writeFile(t, r.WS+"/opencode.json", `{"permission":{"task":"allow"},"agent":{"build":{"permission":{"task":"allow"}}}}`)
			}
			s := r.Start(t, agent.StartParams{})
			o := r.Turn(t, s, 1, "Use a subagent.")
			agenttest.MustComplete(t, o)
			if got := len(r.model.Messages()); got != tc.requests {
				t.Fatalf("model requests = %d, want %d; events: %v", got, tc.requests, describe(o.Events))
			}
			if tc.requests == 2 {
				// No subagent request: a denied tool is not offered at all (1.18.33), and
				// the main session's next request says so.
				res, ok := r.model.Messages()[1].LastToolResult()
				if !ok || !strings.Contains(res.Text, "unavailable tool 'task'") {
					t.Errorf("the request after the task call has tool result %+v (%t), want the task tool unavailable", res, ok)
				}
			}
		})
	}
}
