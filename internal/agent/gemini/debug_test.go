package gemini

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"sortie/internal/testkit/clis"
	"sortie/internal/testkit/fakemodel"
)

// TestContract_DebugOutputHoldsNoAPIKey: the adapter runs the CLI with --debug (the
// only way 0.61.0 reports a failed shell command's exit code), whose stderr Sortie
// keeps a tail of for a crash's message, in run history and the log. That output, and
// stdout, must not carry the API key, though they carry the conversation.
func TestContract_DebugOutputHoldsNoAPIKey(t *testing.T) {
	bin := clis.Gemini(t)
	m := fakemodel.StartGemini(t, fakemodel.GeminiReply{FunctionCalls: []fakemodel.GeminiCall{{Name: "run_shell_command", Args: map[string]any{"command": "echo hi"}}}}, fakemodel.GeminiReply{Text: "done"})
	home := t.TempDir()
	gh := filepath.Join(home, "gh")
	if err := os.MkdirAll(filepath.Join(gh, ".gemini"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(gh, ".gemini", "settings.json"), []byte(`{"security":{"auth":{"selectedType":"gemini-api-key"}},"privacy":{"usageStatisticsEnabled":false}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	ws := t.TempDir()
	cmd := exec.Command(bin, "-p", "", "--output-format", "stream-json", "--skip-trust", "--debug", "--approval-mode", "yolo", "--model", clis.GeminiModel)
	cmd.Dir = ws
	cmd.Env = append(clis.GeminiEnv(os.Environ(), m.URL, home), "GEMINI_CLI_HOME="+gh, "TMPDIR="+t.TempDir())
	cmd.Stdin = strings.NewReader("run echo hi")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("the CLI failed: %v\n%s", err, errb.String())
	}
	if !strings.Contains(out.String(), `"type":"result"`) || errb.Len() == 0 {
		t.Fatalf("no turn ran (stdout %d bytes, stderr %d bytes):\n%s", out.Len(), errb.Len(), out.String())
	}
	if strings.Contains(errb.String(), clis.GeminiAPIKey) || strings.Contains(out.String(), clis.GeminiAPIKey) {
		i := strings.Index(errb.String(), clis.GeminiAPIKey)
		t.Fatalf("the key is in the CLI's output: ...%s...", errb.String()[max(0, i-300):min(len(errb.String()), i+100)])
	}
}
