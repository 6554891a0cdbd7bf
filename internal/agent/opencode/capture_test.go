package opencode

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sortie/internal/agent"
	"sortie/internal/agent/agenttest"
	"sortie/internal/agent/remote"
	"sortie/internal/testkit/clis"
	"sortie/internal/testkit/fakemodel"
)

// captures are the transcripts in testdata, each the stdout of the real CLI driven by
// the adapter through the turns listed, against the fake model's script.
var captures = []struct {
	file   string
	opts   map[string]any
	script []fakemodel.Reply
	turns  []string
}{
	{"two_turns.jsonl", nil, []fakemodel.Reply{
		{Text: "Noted: PAPAYA.", Usage: fakemodel.Usage{InputTokens: 120, OutputTokens: 11}},
		{Text: "The word was PAPAYA.", Usage: fakemodel.Usage{InputTokens: 150, OutputTokens: 9, CacheReadInputTokens: 40}},
	}, []string{"Remember the word PAPAYA.", "Which word?"}},
	{"tool_calls.jsonl", nil, []fakemodel.Reply{
		{Text: "Writing it.", ToolUses: []fakemodel.ToolUse{{Name: "bash", Input: map[string]any{"command": "printf x > x.txt", "description": "write x"}}},
			Usage: fakemodel.Usage{InputTokens: 100, OutputTokens: 20, CacheReadInputTokens: 7, CacheCreationInputTokens: 5}},
		{ToolUses: []fakemodel.ToolUse{{Name: "bash", Input: map[string]any{"command": "echo boom >&2; exit 3", "description": "fail"}}},
			Usage: fakemodel.Usage{InputTokens: 150, OutputTokens: 10}},
		{ToolUses: []fakemodel.ToolUse{{Name: "read", Input: map[string]any{"filePath": "missing.txt"}}},
			Usage: fakemodel.Usage{InputTokens: 170, OutputTokens: 12}},
		{Text: "Done.", Usage: fakemodel.Usage{InputTokens: 200, OutputTokens: 30}},
	}, []string{"write x.txt"}},
	{"model_error.jsonl", nil, []fakemodel.Reply{{Status: 400, ErrorMessage: "temperature: must be at most 1"}}, []string{"hello"}},
	{"permission_rejected.jsonl", map[string]any{"permission": map[string]any{"bash": "ask"}}, []fakemodel.Reply{
		{ToolUses: []fakemodel.ToolUse{{Name: "bash", Input: map[string]any{"command": "touch y", "description": "touch"}}}},
	}, []string{"touch y"}},
}

// TestContract_Capture re-captures the committed transcripts from the real CLI with
// -update; otherwise it checks that the committed ones still parse without a malformed
// line.
func TestContract_Capture(t *testing.T) {
	for _, c := range captures {
		t.Run(c.file, func(t *testing.T) {
			path := filepath.Join("testdata", c.file)
			if *update {
				capture(t, path, c.opts, c.script, c.turns)
			}
			lines := readLines(t, path)
			if len(lines) == 0 {
				t.Fatalf("%s has %d lines", path, len(lines))
			}
			events, _ := replay(lines...)
			if m := agenttest.OfType(events, agent.EventMalformed); len(m) > 0 {
				t.Fatalf("%s: malformed events %v", path, describe(m))
			}
		})
	}
}

func capture(t *testing.T, path string, opts map[string]any, script []fakemodel.Reply, turns []string) {
	t.Helper()
	cli := clis.OpenCode(t)
	out := filepath.Join(t.TempDir(), "out.jsonl")
	// bash: the CLI's stdout goes to the transcript after it exits, with its status.
	wrapper := filepath.Join(t.TempDir(), "opencode-capture")
	body := fmt.Sprintf("#!/bin/bash\ntmp=$(mktemp)\n%s \"$@\" > \"$tmp\"\nrc=$?\ncat \"$tmp\"\ncat \"$tmp\" >> %s\nrm -f \"$tmp\"\nexit $rc\n",
		remote.Quote(cli), remote.Quote(out))
	if err := os.WriteFile(wrapper, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	o := map[string]any{}
	for k, v := range opts {
		o[k] = v
	}
	r := newRig(t, o, script...)
	a, err := New(agent.Config{Kind: Kind, Command: wrapper, Options: r.opts})
	if err != nil {
		t.Fatal(err)
	}
	r.Adapter = a
	s := r.Start(t, agent.StartParams{})
	for i, p := range turns {
		r.Turn(t, s, i+1, p)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	scrubbed := strings.NewReplacer(r.WS, "/workspace", r.state, "/state", r.home, "/home/agent", r.model.URL, "http://127.0.0.1:0").Replace(string(b))
	if err := os.WriteFile(path, []byte(scrubbed), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readLines(t *testing.T, path string) [][]byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		out = append(out, []byte(l))
	}
	return out
}

// replay runs lines through a fresh translator and returns the events it emitted.
func replay(lines ...[]byte) ([]agent.Event, *translator) {
	var events []agent.Event
	tr := newTranslator(func(e agent.Event) { events = append(events, e) }, agent.Usage{}, 0, "anthropic/claude-sonnet-4-5")
	for _, l := range lines {
		tr.line(l)
	}
	return events, tr
}
