package claude

import (
	"errors"
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

// transcript is one conversation recorded from the pinned CLI against the fake model
// for the translation tests in events_test.go. The script is built from the workspace
// path, so tools can be given absolute paths; scrub turns it into /workspace in the
// committed file.
type transcript struct {
	file   string
	setup  map[string]string // files written into the workspace first
	script func(ws string) []fakemodel.Reply
	prompt string
	extra  []string // arguments after the adapter's
	// resume, when set, resumes this session id (one the CLI never saw) instead of
	// starting a new session.
	resume string
}

// noteLines is the file the recorded sessions read and edit.
const noteLines = "tide tables\nstation ids\nstation ids\nstation ids\n"

var transcripts = []transcript{
	{
		// Three requests, each reporting more input, with a Read and a Bash call whose
		// results come back in user events.
		file:  "session_tools.jsonl",
		setup: map[string]string{"notes.txt": noteLines},
		script: func(ws string) []fakemodel.Reply {
			return []fakemodel.Reply{
				{Text: "Reading the notes first.", ToolUses: []fakemodel.ToolUse{{Name: "Read",
					Input: map[string]any{"file_path": filepath.Join(ws, "notes.txt")}}},
					Usage: fakemodel.Usage{InputTokens: 1000, OutputTokens: 40, CacheReadInputTokens: 200}},
				{Text: "Counting the lines.", ToolUses: []fakemodel.ToolUse{{Name: "Bash",
					Input: map[string]any{"command": "wc -l < notes.txt", "description": "count lines"}}},
					Usage: fakemodel.Usage{InputTokens: 2000, OutputTokens: 60, CacheReadInputTokens: 300}},
				{Text: "notes.txt has 4 lines.", Usage: fakemodel.Usage{InputTokens: 3000, OutputTokens: 80, CacheReadInputTokens: 500}},
			}
		},
		prompt: "How many lines does notes.txt have?",
	},
	{
		// A command that does not exist: the Bash tool's result is an error.
		file: "bash_not_found.jsonl",
		script: func(string) []fakemodel.Reply {
			return []fakemodel.Reply{
				{ToolUses: []fakemodel.ToolUse{{Name: "Bash", Input: map[string]any{"command": "sortie-no-such-tool --check", "description": "run the checker"}}}},
				{Text: "The checker is not installed."},
			}
		},
		prompt: "Run the checker.",
	},
	{
		// An Edit whose old_string matches three times: the CLI wraps its refusal in
		// <tool_use_error>.
		file:  "edit_not_unique.jsonl",
		setup: map[string]string{"notes.txt": noteLines},
		script: func(ws string) []fakemodel.Reply {
			path := filepath.Join(ws, "notes.txt")
			return []fakemodel.Reply{
				{ToolUses: []fakemodel.ToolUse{{Name: "Read", Input: map[string]any{"file_path": path}}}},
				{ToolUses: []fakemodel.ToolUse{{Name: "Edit", Input: map[string]any{"file_path": path,
					"old_string": "station ids", "new_string": "station names"}}}},
				{Text: "The text occurs three times; I need more context."},
			}
		},
		prompt: "Rename station ids to station names in notes.txt.",
	},
	{
		// --max-turns 1 with a model that keeps calling tools: error_max_turns.
		file: "max_turns.jsonl",
		script: func(string) []fakemodel.Reply {
			return []fakemodel.Reply{
				{Text: "Step one.", ToolUses: []fakemodel.ToolUse{{Name: "Bash", Input: map[string]any{"command": "true", "description": "step one"}}},
					Usage: fakemodel.Usage{InputTokens: 700, OutputTokens: 30, CacheReadInputTokens: 100}},
				{Text: "Step two.", ToolUses: []fakemodel.ToolUse{{Name: "Bash", Input: map[string]any{"command": "true", "description": "step two"}}},
					Usage: fakemodel.Usage{InputTokens: 800, OutputTokens: 30}},
			}
		},
		prompt: "Do the steps.",
		extra:  []string{"--max-turns", "1"},
	},
	{
		// --include-partial-messages adds the stream's raw events as stream_event lines.
		file: "partial_messages.jsonl",
		script: func(string) []fakemodel.Reply {
			return []fakemodel.Reply{{Text: "Streaming in parts."}}
		},
		prompt: "Say something.",
		extra:  []string{"--include-partial-messages"},
	},
	{
		// Two content blocks of one message (text, then a Bash call) with their usage.
		file: "two_blocks_tool_call.jsonl",
		script: func(string) []fakemodel.Reply {
			return []fakemodel.Reply{
				{Text: "Writing it.", ToolUses: []fakemodel.ToolUse{{Name: "Bash", Input: map[string]any{"command": "printf x > x.txt", "description": "write x"}}},
					Usage: fakemodel.Usage{InputTokens: 100, OutputTokens: 20, CacheReadInputTokens: 7}},
				{Text: "Done.", Usage: fakemodel.Usage{InputTokens: 200, OutputTokens: 30}},
			}
		},
		prompt: "write x.txt",
	},
	{
		// A Bash call that fails with coloured stderr.
		file: "tool_error.jsonl",
		script: func(string) []fakemodel.Reply {
			return []fakemodel.Reply{
				{ToolUses: []fakemodel.ToolUse{{Name: "Bash", Input: map[string]any{"command": "printf '\\033[31mboom\\033[0m\\n' >&2; exit 3", "description": "fail"}}},
					Usage: fakemodel.Usage{InputTokens: 50, OutputTokens: 10}},
				{Text: "It failed.", Usage: fakemodel.Usage{InputTokens: 80, OutputTokens: 5}},
			}
		},
		prompt: "run the failing command",
	},
	{
		// A 429 the CLI retries, then gives up on.
		file:   "api_error_429.jsonl",
		script: func(string) []fakemodel.Reply { return []fakemodel.Reply{{Status: 429, RetryAfter: "0", Times: 2}} },
		prompt: "hello",
	},
	{
		// Resuming a session the CLI has no record of: error_during_execution.
		file: "resume_unknown.jsonl",
		script: func(string) []fakemodel.Reply {
			return []fakemodel.Reply{{Text: "never asked"}}
		},
		prompt: "Carry on.",
		resume: "00000000-0000-4000-8000-00000000dead",
	},
}

// TestTranscripts_Capture re-captures the transcripts above from the pinned CLI with
// -update; otherwise it checks that the committed ones parse cleanly.
func TestTranscripts_Capture(t *testing.T) {
	for _, c := range transcripts {
		t.Run(c.file, func(t *testing.T) {
			path := filepath.Join("testdata", c.file)
			if *update {
				if err := os.WriteFile(path, recordTranscript(t, c), 0o644); err != nil {
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

// recordTranscript runs the CLI once as the adapter does, with the capture's extra
// arguments, and returns its scrubbed stdout.
func recordTranscript(t *testing.T, c transcript) []byte {
	t.Helper()
	claude := clis.Claude(t)
	ws, home := t.TempDir(), t.TempDir()
	for name, body := range c.setup {
		if err := os.WriteFile(filepath.Join(ws, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	m := fakemodel.Start(t, c.script(ws)...)
	session := []string{"--session-id", "00000000-0000-4000-8000-000000000002"}
	if c.resume != "" {
		session = []string{"--resume", c.resume}
	}
	args := append([]string{"-p", "--output-format", "stream-json", "--verbose"}, session...)
	args = append(append(args, "--permission-mode", "bypassPermissions", "--model", model), c.extra...)
	cmd := exec.Command(claude, args...)
	cmd.Dir, cmd.Env, cmd.Stdin = ws, clis.ClaudeEnv(os.Environ(), m.URL, home), strings.NewReader(c.prompt)
	out, err := cmd.Output()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return scrub(out, ws, home)
}

// scrub replaces the capture's temp paths so that committed transcripts do not depend
// on the machine that captured them.
func scrub(b []byte, ws, home string) []byte {
	// The CLI also names the workspace in paths with / and . turned into -.
	dashed := strings.NewReplacer("/", "-", ".", "-", "_", "-")
	s := strings.NewReplacer(ws, "/workspace", home, "/home/agent", dashed.Replace(ws), "-workspace").Replace(string(b))
	return []byte(s)
}
