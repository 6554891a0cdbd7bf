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
