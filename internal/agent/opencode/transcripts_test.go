package opencode

import (
	"path/filepath"
	"strings"
	"testing"

	"sortie/internal/agent"
	"sortie/internal/agent/agenttest"
)

// Parser tests over transcripts the real CLI (1.18.33) wrote (TestContract_Capture).
func TestTranscripts(t *testing.T) {
	cases := []struct {
		file      string
		usage     agent.Usage
		steps     int // token_usage events
		tools     []string
		toolErrs  []bool
		errors    int
		rejected  string
		lastSteps string
	}{
		{file: "two_turns.jsonl", usage: agent.Usage{Input: 270, Output: 20, Total: 290, CacheRead: 40}, steps: 2, lastSteps: "stop"},
		{file: "tool_calls.jsonl", usage: agent.Usage{Input: 620, Output: 72, Total: 692, CacheRead: 7}, steps: 4,
			tools: []string{"bash", "bash", "read"}, toolErrs: []bool{false, true, true}, lastSteps: "stop"},
		{file: "model_error.jsonl", errors: 1},
		{file: "permission_rejected.jsonl", usage: agent.Usage{Input: 10, Output: 5, Total: 15}, steps: 1,
			tools: []string{"bash"}, toolErrs: []bool{true}, rejected: "bash", lastSteps: "tool-calls"},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			events, tr := replay(readLines(t, filepath.Join("testdata", c.file))...)
			if m := agenttest.OfType(events, agent.EventMalformed); len(m) > 0 {
				t.Fatalf("malformed: %v", describe(m))
			}
			if tr.usage != c.usage {
				t.Errorf("usage = %+v, want %+v", tr.usage, c.usage)
			}
			usage := agenttest.OfType(events, agent.EventTokenUsage)
			if len(usage) != c.steps {
				t.Errorf("token_usage events = %d, want %d", len(usage), c.steps)
			}
			var prev float64
			for _, u := range usage {
				if u.CostUSD <= prev {
					t.Errorf("cost %v after %v: every step costs something and the total only grows", u.CostUSD, prev)
				}
				prev = u.CostUSD
			}
			tools := agenttest.OfType(events, agent.EventToolResult)
			if len(tools) != len(c.tools) {
				t.Fatalf("tool_result events = %v, want %v", describe(tools), c.tools)
			}
			for i, e := range tools {
				if e.ToolName != c.tools[i] || e.ToolError != c.toolErrs[i] || e.ToolDurationMS <= 0 {
					t.Errorf("tool_result %d = %+v, want %s (error %v) with a duration", i, e, c.tools[i], c.toolErrs[i])
				}
				if e.ToolError && e.Message == "" {
					t.Errorf("tool_result %d: a failed call without a message", i)
				}
			}
			if len(tr.errors) != c.errors {
				t.Errorf("errors = %q, want %d", tr.errors, c.errors)
			}
			if tr.rejected != c.rejected || tr.lastReason != c.lastSteps {
				t.Errorf("rejected %q, last step reason %q; want %q, %q", tr.rejected, tr.lastReason, c.rejected, c.lastSteps)
			}
			started := agenttest.OfType(events, agent.EventSessionStarted)
			if len(started) != 1 || !strings.HasPrefix(tr.sessionID, "ses_") {
				t.Errorf("session_started = %v, session %q: want one, for the CLI's ses_ id", describe(started), tr.sessionID)
			}
		})
	}
}

func TestTranscripts_ModelErrorNamesStatusAndMessage(t *testing.T) {
	_, tr := replay(readLines(t, filepath.Join("testdata", "model_error.jsonl"))...)
	if len(tr.errors) != 1 || tr.errors[0] != "APIError, status 400: temperature: must be at most 1" {
		t.Errorf("errors = %q", tr.errors)
	}
}
