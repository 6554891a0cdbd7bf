package fakemodel

// These tests run the real Gemini CLI against GeminiServer: they prove the fake speaks
// the dialect the pinned CLI expects, and record its stream-json output into testdata
// (go test -run TestGeminiCLI -update-gemini) for the adapter's translator tests.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

var updateGemini = flag.Bool("update-gemini", false, "rewrite testdata/gemini_*.jsonl from the real Gemini CLI")

// geminiCLI returns the Gemini CLI to run: $GEMINI_CLI, else the repository's
// .tools/node_modules/.bin/gemini; it skips t when there is none.
func geminiCLI(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("GEMINI_CLI"); p != "" {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("GEMINI_CLI=%s: %v", p, err)
		}
		return p
	}
	dir, _ := os.Getwd()
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Skip("gemini CLI: no go.mod above the working directory")
		}
		dir = parent
	}
	p := filepath.Join(dir, ".tools", "node_modules", ".bin", "gemini")
	if _, err := os.Stat(p); err != nil {
		t.Skipf("gemini CLI not installed at %s (run scripts/install-clis.sh, or set GEMINI_CLI to its path)", p)
	}
	return p
}

// geminiHome makes a GEMINI_CLI_HOME whose settings.json lets the CLI run headless,
// offline, against the fake: api-key auth, no usage statistics, and mcpServers.
func geminiHome(t *testing.T, mcpServers map[string]any) string {
	t.Helper()
	home := t.TempDir()
	settings := map[string]any{
		"security": map[string]any{"auth": map[string]any{"selectedType": "gemini-api-key"}},
		"privacy":  map[string]any{"usageStatisticsEnabled": false},
	}
	if mcpServers != nil {
		settings["mcpServers"] = mcpServers
	}
	b, _ := json.MarshalIndent(settings, "", "  ")
	if err := os.MkdirAll(filepath.Join(home, ".gemini"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".gemini", "settings.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return home
}

// geminiRun is one run of the CLI.
type geminiRun struct {
	stdout, stderr string
	exit           int
}

// events decodes stdout's stream-json lines.
func (r geminiRun) events(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(r.stdout))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var ev map[string]any
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("stdout line is not JSON: %q", line)
		}
		out = append(out, ev)
	}
	return out
}

// ofType returns the events of type typ.
func ofType(evs []map[string]any, typ string) []map[string]any {
	var out []map[string]any
	for _, ev := range evs {
		if ev["type"] == typ {
			out = append(out, ev)
		}
	}
	return out
}

// runGemini runs the CLI headless in ws with home as GEMINI_CLI_HOME against s, the
// prompt on stdin, plus extra arguments.
func runGemini(t *testing.T, s *GeminiServer, home, ws, prompt string, extra ...string) geminiRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	args := append([]string{"-p", "", "--output-format", "stream-json", "--approval-mode", "yolo", "--skip-trust",
		"-m", "gemini-2.5-pro"}, extra...)
	cmd := exec.CommandContext(ctx, geminiCLI(t), args...)
	cmd.Dir = ws
	cmd.Env = append(os.Environ(),
		"GEMINI_CLI_HOME="+home,
		"GOOGLE_GEMINI_BASE_URL="+s.URL,
		"GEMINI_API_KEY=fakemodel-key",
		"NO_COLOR=1",
		// The CLI writes its error reports (gemini-client-error-*.json) to the
		// temporary directory.
		"TMPDIR="+t.TempDir(),
	)
	cmd.Stdin = strings.NewReader(prompt)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	run := geminiRun{stdout: stdout.String(), stderr: stderr.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		run.exit = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running gemini: %v", err)
	}
	if ctx.Err() != nil {
		t.Fatalf("gemini did not finish in time; stderr:\n%s", run.stderr)
	}
	return run
}

// saveTranscript writes stdout to testdata/name with -update-gemini.
func saveTranscript(t *testing.T, name string, run geminiRun) {
	t.Helper()
	if !*updateGemini {
		return
	}
	if err := os.WriteFile(filepath.Join("testdata", name), []byte(run.stdout), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestGeminiCLI_PlainReply(t *testing.T) {
	s := StartGemini(t, GeminiReply{Text: "Hello from the fake.", Usage: Usage{InputTokens: 1200, OutputTokens: 34}})
	run := runGemini(t, s, geminiHome(t, nil), t.TempDir(), "say hello")
	if run.exit != 0 {
		t.Fatalf("exit %d; stderr:\n%s\nstdout:\n%s", run.exit, run.stderr, run.stdout)
	}
	evs := run.events(t)
	if msgs := ofType(evs, "message"); len(msgs) != 2 || msgs[1]["role"] != "assistant" || msgs[1]["content"] != "Hello from the fake." {
		t.Errorf("messages %v", msgs)
	}
	res := ofType(evs, "result")
	if len(res) != 1 || res[0]["status"] != "success" {
		t.Fatalf("result %v", res)
	}
	if st := res[0]["stats"].(map[string]any); st["input_tokens"] != 1200.0 || st["output_tokens"] != 34.0 {
		t.Errorf("stats %v", st)
	}
	if turns := s.Turns(); len(turns) != 1 || !strings.Contains(turns[0].Transcript(), "say hello") || turns[0].Model != "gemini-2.5-pro" {
		t.Errorf("turns %+v", turns)
	}
	saveTranscript(t, "gemini_plain.jsonl", run)
}

func TestGeminiCLI_ShellToolCall(t *testing.T) {
	s := StartGemini(t,
		GeminiReply{Text: "Writing the marker.", FunctionCalls: []GeminiCall{{Name: "run_shell_command",
			Args: map[string]any{"command": "echo gemini-marker > marker.txt && echo wrote-it"}}},
			Usage: Usage{InputTokens: 1000, OutputTokens: 20}},
		GeminiReply{FunctionCalls: []GeminiCall{{Name: "run_shell_command", Args: map[string]any{"command": "printf gemini-boom >&2; exit 3"}}},
			Usage: Usage{InputTokens: 1100, OutputTokens: 23}},
		GeminiReply{Text: "The marker is written.", Usage: Usage{InputTokens: 1200, OutputTokens: 26}})
	ws := t.TempDir()
	run := runGemini(t, s, geminiHome(t, nil), ws, "write the marker")
	if run.exit != 0 {
		t.Fatalf("exit %d; stderr:\n%s\nstdout:\n%s", run.exit, run.stderr, run.stdout)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "marker.txt")); err != nil || strings.TrimSpace(string(b)) != "gemini-marker" {
		t.Fatalf("the CLI did not run the command: %q, %v", b, err)
	}
	turns := s.Turns()
	if len(turns) != 3 {
		t.Fatalf("%d turns, want 3", len(turns))
	}
	if !slices.Contains(turns[0].Tools, "run_shell_command") {
		t.Errorf("run_shell_command not offered: %v", turns[0].Tools)
	}
	fr, ok := turns[1].LastFunctionResponse()
	if !ok || fr.Name != "run_shell_command" || !strings.Contains(fr.Text, "wrote-it") || fr.IsError {
		t.Errorf("function response %+v", fr)
	}
	res := turns[2].FunctionResponses()
	if len(res) != 2 || !strings.Contains(res[1].Text, "gemini-boom") || !strings.Contains(res[1].Text, "Exit Code: 3") {
		t.Errorf("function responses of the last turn %+v", res)
	}
	t.Logf("failing command's response: %s", res[len(res)-1].Response)
	evs := run.events(t)
	uses, results := ofType(evs, "tool_use"), ofType(evs, "tool_result")
	if len(uses) != 2 || uses[0]["tool_name"] != "run_shell_command" || len(results) != 2 || results[0]["status"] != "success" {
		t.Errorf("tool events %v %v", uses, results)
	}
	t.Logf("failing command's tool_result: %v", results[len(results)-1])
	if res := ofType(evs, "result"); len(res) != 1 || res[0]["status"] != "success" ||
		res[0]["stats"].(map[string]any)["input_tokens"] != 3300.0 || res[0]["stats"].(map[string]any)["output_tokens"] != 69.0 {
		t.Errorf("result %v", res)
	}
	saveTranscript(t, "gemini_shell.jsonl", run)
}

func TestGeminiCLI_APIError(t *testing.T) {
	s := StartGemini(t, GeminiReply{Status: 400, ErrorMessage: "fakemodel says no"})
	run := runGemini(t, s, geminiHome(t, nil), t.TempDir(), "fail please")
	if run.exit == 0 {
		t.Fatalf("exit 0; stdout:\n%s", run.stdout)
	}
	if len(s.Turns()) != 1 {
		t.Errorf("%d turns: the CLI retried a 400", len(s.Turns()))
	}
	if !strings.Contains(run.stdout+run.stderr, "fakemodel says no") {
		t.Errorf("the API's message is not reported; stdout:\n%s\nstderr:\n%s", run.stdout, run.stderr)
	}
	t.Logf("exit %d; stdout:\n%s\nstderr:\n%s", run.exit, run.stdout, run.stderr)
	saveTranscript(t, "gemini_error.jsonl", run)
}

// TestGeminiCLI_ResumeSendsToolResultsTwice records the CLI's resume bug (upstream
// issue 29365): a --resume after a turn that used a tool sends that tool's
// functionResponse twice, which the API (and the fake) refuses with 400. The session
// file is $GEMINI_CLI_HOME/.gemini/tmp/<project>/chats/session-<start>-<id[:8]>.jsonl;
// dropping its user records that only repeat function responses already recorded in a
// gemini record's toolCalls (repairGeminiSession) makes the resume work.
func TestGeminiCLI_ResumeSendsToolResultsTwice(t *testing.T) {
	s := StartGemini(t,
		GeminiReply{FunctionCalls: []GeminiCall{{Name: "run_shell_command", Args: map[string]any{"command": "echo first-turn"}}}},
		GeminiReply{Text: "first done"},
		GeminiReply{Text: "second done"})
	home, ws := geminiHome(t, nil), t.TempDir()
	id := "0b9a1f3e-5c1d-4e6f-8a7b-1c2d3e4f5a6b"
	if run := runGemini(t, s, home, ws, "turn one", "--session-id", id); run.exit != 0 {
		t.Fatalf("first turn: exit %d\n%s", run.exit, run.stderr)
	}
	files, _ := filepath.Glob(filepath.Join(home, ".gemini", "tmp", "*", "chats", "session-*-"+id[:8]+".jsonl"))
	if len(files) != 1 {
		t.Fatalf("session files %v", files)
	}

	run := runGemini(t, s, home, ws, "turn two", "--resume", id)
	if run.exit == 0 {
		t.Fatalf("the resume succeeded: the CLI no longer repeats tool results? stdout:\n%s", run.stdout)
	}
	rejected := s.Rejected()
	if len(rejected) != 1 || rejected[0].Rejected != GeminiMismatchedResponses {
		t.Fatalf("rejected %+v", rejected)
	}
	if calls, res := rejected[0].FunctionCalls(), rejected[0].FunctionResponses(); len(calls) != 1 || len(res) != 2 || res[0].ID != res[1].ID {
		t.Errorf("the resume sent %d calls and %d responses: %+v", len(calls), len(res), res)
	}
	if !strings.Contains(run.stdout, GeminiMismatchedResponses) {
		t.Errorf("stdout does not carry the API's message:\n%s", run.stdout)
	}
	saveTranscript(t, "gemini_resume_rejected.jsonl", run)

	repairGeminiSession(t, files[0])
	run = runGemini(t, s, home, ws, "turn three", "--resume", id)
	if run.exit != 0 {
		t.Fatalf("the resume of the repaired session: exit %d\n%s\n%s", run.exit, run.stdout, run.stderr)
	}
	last := s.Turns()[len(s.Turns())-1]
	if last.Rejected != "" || len(last.FunctionResponses()) != 1 || !strings.Contains(last.Transcript(), "turn three") {
		t.Errorf("the repaired resume sent %+v", last)
	}
}

// repairGeminiSession drops from a session file the user messages that only repeat
// function responses the session already holds, as top-level records and inside
// {"$set":{"messages":[...]}} records.
func repairGeminiSession(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	type message struct {
		ID        string `json:"id"`
		Type      string `json:"type"`
		Content   any    `json:"content"`
		ToolCalls []struct {
			ID     string `json:"id"`
			Result any    `json:"result"`
		} `json:"toolCalls"`
	}
	// duplicate reports whether m only repeats responses in seen, and adds m's.
	duplicate := func(raw json.RawMessage, seen map[string]bool) bool {
		var m message
		if json.Unmarshal(raw, &m) != nil {
			return false
		}
		for _, tc := range m.ToolCalls {
			if tc.Result != nil {
				seen[tc.ID] = true
			}
		}
		parts, _ := m.Content.([]any)
		if m.Type != "user" || len(parts) == 0 {
			return false
		}
		var ids []string
		for _, p := range parts {
			fr, _ := p.(map[string]any)["functionResponse"].(map[string]any)
			if fr == nil {
				return false
			}
			id, _ := fr["id"].(string)
			ids = append(ids, id)
		}
		dup := true
		for _, id := range ids {
			dup = dup && seen[id]
			seen[id] = true
		}
		return dup
	}
	seen := map[string]bool{}
	var out []string
	for _, line := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		var set struct {
			Set map[string]json.RawMessage `json:"$set"`
		}
		if json.Unmarshal([]byte(line), &set) == nil && set.Set["messages"] != nil {
			var msgs []json.RawMessage
			json.Unmarshal(set.Set["messages"], &msgs)
			seen = map[string]bool{}
			kept := []json.RawMessage{}
			for _, m := range msgs {
				if !duplicate(m, seen) {
					kept = append(kept, m)
				}
			}
			set.Set["messages"], _ = json.Marshal(kept)
			nb, _ := json.Marshal(set)
			line = string(nb)
		} else if duplicate(json.RawMessage(line), seen) {
			continue
		}
		out = append(out, line)
	}
	if err := os.WriteFile(path, []byte(strings.Join(out, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}
