package copilot

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sortie/internal/agent"
	"sortie/internal/agent/agenttest"
	"sortie/internal/testkit/clis"
)

// ownLines returns the lines of one of the package's own transcripts in testdata/,
// captured from the pinned CLI (capture_test.go and TestTranscripts_CaptureAuthFailure
// record them).
func ownLines(t *testing.T, name string) []string {
	t.Helper()
	return readLines(t, filepath.Join("testdata", name))
}

// withOutputTokens returns lines with outputTokens set on each assistant.message, as
// CLIs before 1.0.102 wrote them, the number of messages and the total it added: the
// first message gets step tokens, the next 2*step, and so on.
func withOutputTokens(t *testing.T, lines []string, step int64) (out []string, messages int, total int64) {
	t.Helper()
	out = slices.Clone(lines)
	var n int64
	for i, l := range out {
		if !strings.HasPrefix(l, `{"type":"assistant.message"`) {
			continue
		}
		var ev map[string]any
		if err := json.Unmarshal([]byte(l), &ev); err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		n++
		ev["data"].(map[string]any)["outputTokens"] = n * step
		total += n * step
		b, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = string(b)
	}
	if n == 0 {
		t.Fatal("no assistant.message line to add outputTokens to")
	}
	return out, int(n), total
}

// Older CLIs put the message's output tokens on assistant.message; 1.0.102 leaves them
// out and the adapter reads its usage file instead. The stream's figures, when there,
// must still count: the pinned CLI's own transcripts with outputTokens added are read
// as an older CLI's would be.
func TestTranscripts_OutputTokensOnAssistantMessages(t *testing.T) {
	cases := []struct {
		file   string
		tools  []string // tool_result events, with failures marked !
		turns  int      // results in the file, all of one session
		failed bool
	}{
		{"simple.jsonl", []string{"task_complete"}, 1, false},
		{"tool_calls.jsonl", []string{"bash", "no_such_tool!", "task_complete"}, 1, false},
		{"two_turns.jsonl", []string{"task_complete", "task_complete"}, 2, false},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			lines, messages, total := withOutputTokens(t, ownLines(t, c.file), 7)
			events, tr := run(t, lines...)
			if m := agenttest.OfType(events, agent.EventMalformed); len(m) > 0 {
				t.Fatalf("malformed: %+v", m)
			}
			if u := tr.usage(); u != (agent.Usage{Output: total, Total: total}) {
				t.Errorf("usage = %+v, want %d output tokens and no input", u, total)
			}
			usage := agenttest.OfType(events, agent.EventTokenUsage)
			if len(usage) != messages {
				t.Errorf("token_usage events = %d, want one per assistant.message (%d)", len(usage), messages)
			}
			for i := 1; i < len(usage); i++ {
				if usage[i].Usage.Output <= usage[i-1].Usage.Output {
					t.Errorf("token_usage %d went from %d to %d output tokens; want it cumulative", i, usage[i-1].Usage.Output, usage[i].Usage.Output)
				}
			}
			var tools []string
			for _, e := range agenttest.OfType(events, agent.EventToolResult) {
				name := e.ToolName
				if e.ToolError {
					name += "!"
				}
				tools = append(tools, name)
			}
			if !slices.Equal(tools, c.tools) {
				t.Errorf("tool results = %q, want %q", tools, c.tools)
			}
			var sessions []string
			for _, l := range ownLines(t, c.file) {
				if strings.HasPrefix(l, `{"type":"result"`) {
					_, one := run(t, l)
					sessions = append(sessions, one.sessionID)
				}
			}
			if len(sessions) != c.turns || len(tr.sessionID) != 36 || slices.ContainsFunc(sessions, func(s string) bool { return s != tr.sessionID }) {
				t.Errorf("result sessions = %q, final %q; want %d results of one session", sessions, tr.sessionID, c.turns)
			}
			if tr.result == nil || tr.resultFailed() != c.failed {
				t.Errorf("result = %+v, want failed=%t", tr.result, c.failed)
			}
		})
	}
}

// A stray line that is not JSON and an event type the translator does not know, in
// the middle of a real transcript, are one malformed and one other_message event; the
// rest of the transcript reads as without them.
func TestTranscripts_MalformedAndUnknownLinesInARealStream(t *testing.T) {
	clean := ownLines(t, "simple.jsonl")
	dirty := slices.Insert(slices.Clone(clean), 3,
		"this is not json",
		`{"type":"future.event.type","data":{"something":"unknown"},"id":"x","timestamp":"2026-11-22T15:14:41.000Z"}`)
	count := func(lines []string) (map[agent.EventType]int, *translator) {
		events, tr := run(t, lines...)
		n := map[agent.EventType]int{}
		for _, e := range events {
			n[e.Type]++
		}
		return n, tr
	}
	before, _ := count(clean)
	after, tr := count(dirty)
	before[agent.EventMalformed]++
	before[agent.EventOtherMessage]++
	if fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("event counts = %v, want %v (the clean stream's plus one malformed and one other_message)", after, before)
	}
	if tr.result == nil || tr.resultFailed() || len(tr.sessionID) != 36 {
		t.Errorf("result = %+v, session %q; want the clean stream's result", tr.result, tr.sessionID)
	}
}

// authFailure is the pinned CLI's output, stdout and stderr together, when it has no
// credential and no BYOK provider.
const authFailure = "auth_failure.txt"

// TestTranscripts_CaptureAuthFailure records authFailure with -update; otherwise it
// checks the committed file is the CLI's error text.
func TestTranscripts_CaptureAuthFailure(t *testing.T) {
	path := filepath.Join("testdata", authFailure)
	if *update {
		cli := copilotCLI(t)
		ws, home := t.TempDir(), t.TempDir()
		var env []string
		for _, kv := range clis.CopilotEnv(os.Environ(), "http://127.0.0.1:9", home, cliCache) {
			// Neither a BYOK provider nor offline mode: the CLI wants a GitHub login.
			if strings.HasPrefix(kv, "COPILOT_PROVIDER_") || strings.HasPrefix(kv, "COPILOT_MODEL=") || kv == "COPILOT_OFFLINE=true" {
				continue
			}
			env = append(env, kv)
		}
		o := options{MaxAutopilotContinues: DefaultMaxAutopilotContinues}
		cmd := exec.Command(cli, o.args(turnArgs{prompt: "hello"})...)
		cmd.Dir, cmd.Env = ws, env
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatalf("copilot without a credential: %v, want it to exit non-zero\n%s", err, out)
		}
		if err := os.WriteFile(path, scrub(out, ws, home), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if lines := readLines(t, path); len(lines) == 0 || !strings.HasPrefix(lines[0], "Error: ") {
		t.Fatalf("%s does not start with the CLI's error: %q", path, lines)
	}
}

// The CLI's error text, should it reach stdout (older CLIs printed it there; a wrapper
// may merge the streams), is malformed lines and nothing else: no usage, no session.
func TestTranscripts_AuthFailureTextIsMalformed(t *testing.T) {
	lines := ownLines(t, authFailure)
	events, tr := run(t, lines...)
	if len(events) != len(lines) || len(agenttest.OfType(events, agent.EventMalformed)) != len(lines) {
		t.Fatalf("events = %v, want one malformed event per line (%d)", agenttest.Types(events), len(lines))
	}
	if events[0].Message != "Error: No authentication information found." {
		t.Errorf("first malformed message = %q", events[0].Message)
	}
	if tr.usage() != (agent.Usage{}) || tr.sessionID != "" || tr.result != nil {
		t.Errorf("usage %+v, session %q, result %+v; want none", tr.usage(), tr.sessionID, tr.result)
	}
}
