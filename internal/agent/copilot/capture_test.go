package copilot

import (
	"errors"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"sortie/internal/agent"
	"sortie/internal/agent/agenttest"
	"sortie/internal/testkit/clis"
	"sortie/internal/testkit/fakemodel"
)

var update = flag.Bool("update", false, "re-capture testdata/*.jsonl from the real copilot CLI")

// capture is one recorded conversation: the CLI run once per prompt in one workspace,
// the second and later runs resuming the first run's session, stdout concatenated.
type capture struct {
	file   string
	script []fakemodel.Reply
	turns  []string
	extra  []string // arguments after the adapter's
}

var captures = []capture{
	{"simple.jsonl", []fakemodel.Reply{
		{Text: "hello world", ToolUses: []fakemodel.ToolUse{done("said hello")}},
	}, []string{"Say exactly: hello world"}, nil},
	{"tool_calls.jsonl", []fakemodel.Reply{
		{Text: "Writing it.", ToolUses: []fakemodel.ToolUse{{Name: "bash", Input: map[string]any{"command": "printf x > x.txt", "description": "write x"}}}},
		{ToolUses: []fakemodel.ToolUse{{Name: "no_such_tool", Input: map[string]any{}}}},
		{ToolUses: []fakemodel.ToolUse{done("wrote x.txt")}},
	}, []string{"write x.txt"}, nil},
	{"two_turns.jsonl", []fakemodel.Reply{
		{Text: "Noted: PAPAYA.", ToolUses: []fakemodel.ToolUse{done("noted")}},
		{Text: "The word was PAPAYA.", ToolUses: []fakemodel.ToolUse{done("recalled")}},
	}, []string{"Remember the word PAPAYA.", "Which word?"}, nil},
	{"model_error.jsonl", []fakemodel.Reply{
		{Status: 500, NoRetry: true, ErrorMessage: "model is down"},
	}, []string{"hello"}, nil},
	{"retry.jsonl", []fakemodel.Reply{
		{Status: 500, RetryAfter: "0"},
		{Text: "recovered", ToolUses: []fakemodel.ToolUse{done("recovered")}},
	}, []string{"hello"}, nil},
	{"autopilot_cap.jsonl", []fakemodel.Reply{
		{Text: "still thinking"}, {Text: "still thinking"},
	}, []string{"think"}, []string{"--max-autopilot-continues", "1"}},
	{"mcp_failed.jsonl", []fakemodel.Reply{
		{ToolUses: []fakemodel.ToolUse{done("no tools needed")}},
	}, []string{"hello"}, []string{"--additional-mcp-config", `{"mcpServers":{"broken":{"type":"stdio","command":"/nonexistent/mcp-server","args":[]}}}`}},
}

// TestContract_Capture re-captures the committed transcripts from the real CLI with
// -update; otherwise it checks that the committed ones still parse cleanly.
func TestContract_Capture(t *testing.T) {
	for _, c := range captures {
		t.Run(c.file, func(t *testing.T) {
			path := filepath.Join("testdata", c.file)
			if *update {
				if err := os.WriteFile(path, record(t, c), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			lines := readLines(t, path)
			events, tr := run(t, lines...)
			if m := agenttest.OfType(events, agent.EventMalformed); len(m) > 0 || tr.result == nil {
				t.Fatalf("%s: malformed events %v or no result", path, m)
			}
		})
	}
}

// record runs the capture against the real CLI and returns its scrubbed stdout.
func record(t *testing.T, c capture) []byte {
	t.Helper()
	cli := copilotCLI(t)
	m := fakemodel.Start(t, c.script...)
	ws, home := t.TempDir(), t.TempDir()
	o := options{MaxAutopilotContinues: DefaultMaxAutopilotContinues}
	var out []byte
	for i, p := range c.turns {
		ta := turnArgs{prompt: p}
		if i > 0 {
			ta.mode, ta.sessionID = resumeID, sessionOf(t, out)
		}
		cmd := exec.Command(cli, append(o.args(ta), c.extra...)...)
		cmd.Dir, cmd.Env = ws, clis.CopilotEnv(os.Environ(), m.URL, home, cliCache)
		b, err := cmd.Output()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatal(err)
		}
		out = append(out, b...)
	}
	return scrub(out, ws, home)
}

// sessionOf is the session id of the last result event in out.
func sessionOf(t *testing.T, out []byte) string {
	t.Helper()
	_, tr := run(t, strings.Split(strings.TrimSpace(string(out)), "\n")...)
	if tr.sessionID == "" {
		t.Fatal("the first turn reported no session id")
	}
	return tr.sessionID
}

// scrub replaces the capture's temp paths so that committed transcripts do not depend
// on the machine that captured them.
func scrub(b []byte, ws, home string) []byte {
	return []byte(strings.NewReplacer(ws, "/workspace", home, "/home/agent", cliCache, "/cache").Replace(string(b)))
}
