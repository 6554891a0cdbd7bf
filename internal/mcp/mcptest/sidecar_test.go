package mcptest

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestMain makes this test binary the sidecar when Env says so, as a contract test
// binary does.
func TestMain(m *testing.M) {
	Main()
	os.Exit(m.Run())
}

func TestMain_ReturnsWhenNotTheSidecar(t *testing.T) {
	t.Setenv(Env, "")
	Main() // were it to serve, it would exit the test binary
	t.Setenv(Env, "0")
	Main()
}

func TestServer_NamesThisBinary(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	s := Server(t)
	if s.Command != self || len(s.Env) != 1 || s.Env[Env] != "1" {
		t.Errorf("Server = %+v, want %s with %s=1", s, self, Env)
	}
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestSidecar_ServesSortieStatusOverStdio(t *testing.T) {
	s := Server(t)
	ws := t.TempDir()
	// The state file the daemon's worker would write; sortie_status reads it from
	// SORTIE_WORKSPACE.
	if err := os.MkdirAll(filepath.Join(ws, ".sortie"), 0o755); err != nil {
		t.Fatal(err)
	}
	state := `{"version":1,"issue_id":"10007","issue_identifier":"PROJ-7","turn_number":2,"max_turns":9,
		"session_started_at":"2025-01-02T03:04:05Z","updated_at":"2025-01-02T03:05:00Z",
		"tokens":{"input_tokens":1234,"output_tokens":56,"total_tokens":1290,"cache_read_tokens":0}}`
	if err := os.WriteFile(filepath.Join(ws, ".sortie", "state.json"), []byte(state), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(s.Command)
	cmd.Env = append(os.Environ(), Env+"=1", "SORTIE_WORKSPACE="+ws)
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "agenttest-sidecar-test", Version: "v0"}, nil).
		Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connecting to the sidecar: %v\n%s", err, stderr.String())
	}
	if got := cs.InitializeResult().ServerInfo.Version; got != "agenttest" {
		t.Errorf("server version %q, want agenttest", got)
	}

	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("tools/list: %v\n%s", err, stderr.String())
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	if !slices.Contains(names, "sortie_status") {
		t.Fatalf("tools = %v, want sortie_status", names)
	}

	call, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "sortie_status"})
	if err != nil {
		t.Fatalf("tools/call sortie_status: %v\n%s", err, stderr.String())
	}
	var text strings.Builder
	for _, c := range call.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			text.WriteString(tc.Text)
		}
	}
	if call.IsError || !strings.Contains(text.String(), `"turns_remaining":7`) || !strings.Contains(text.String(), "1234") {
		t.Errorf("sortie_status answered isError=%v %q, want the workspace's state (7 turns remaining, 1234 input tokens)", call.IsError, text.String())
	}

	if err := cs.Close(); err != nil {
		t.Errorf("closing: %v\n%s", err, stderr.String())
	}
	if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 0 {
		t.Errorf("the sidecar did not exit 0 when its stdin closed: %v\n%s", cmd.ProcessState, stderr.String())
	}
	if strings.Contains(stderr.String(), "WARNING: DATA RACE") {
		t.Errorf("the race detector fired in the sidecar:\n%s", stderr.String())
	}
}
