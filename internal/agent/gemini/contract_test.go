package gemini

// Contract tests of what only the Gemini CLI does: the real gemini CLI, at the version
// pinned in scripts/clis, driven through the adapter against the fake Gemini API in
// internal/testkit/fakemodel, which the CLI reaches through GOOGLE_GEMINI_BASE_URL.
// What every adapter does is the agenttest suite's (agenttest_test.go).

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sortie/internal/agent"
	"sortie/internal/agent/agenttest"
	"sortie/internal/mcp/mcptest"
	"sortie/internal/testkit/clis"
	"sortie/internal/testkit/fakemodel"
)

// rig is one contract test's world: a fake Gemini API, a HOME (below whose cache the
// issue's GEMINI_CLI_HOME goes), and sessions of the adapter running the real CLI
// through a wrapper that records argv.
type rig struct {
	agenttest.Rig
	model    *fakemodel.GeminiServer
	home     string
	argvFile string
	opts     map[string]any
}

func newRig(t *testing.T, opts map[string]any, script ...fakemodel.GeminiReply) *rig {
	t.Helper()
	r := &rig{model: fakemodel.StartGemini(t, script...), home: t.TempDir()}
	wrapper, argvFile := clis.WrapCLI(t, clis.Gemini(t))
	r.argvFile = argvFile
	r.WS, r.Env = t.TempDir(), clis.GeminiEnv(os.Environ(), r.model.URL, r.home)
	if opts == nil {
		opts = map[string]any{}
	}
	if _, ok := opts["model"]; !ok {
		opts["model"] = clis.GeminiModel
	}
	r.opts = opts
	a, err := New(agent.Config{Kind: Kind, Command: wrapper, Options: opts})
	if err != nil {
		t.Fatal(err)
	}
	r.Adapter = a
	return r
}

func (r *rig) argvs(t *testing.T) [][]string { return clis.ReadArgvs(t, r.argvFile) }

// shell is a reply that calls the CLI's shell tool with command.
func shell(command string) fakemodel.GeminiReply {
	return fakemodel.GeminiReply{FunctionCalls: []fakemodel.GeminiCall{{Name: "run_shell_command",
		Args: map[string]any{"command": command, "description": "contract"}}}}
}

// writeMCP writes .sortie/mcp.json with the real sortie-tools sidecar and a state file
// for it, as the daemon does, and returns the start parameters that name it.
func writeMCP(t *testing.T, ws string) agent.StartParams {
	t.Helper()
	dir := filepath.Join(ws, ".sortie")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	state := `{"version":1,"issue_id":"g-1","issue_identifier":"G-1","run_id":1,"session_id":"","turn_number":2,"max_turns":9,` +
		`"attempt":null,"session_started_at":"2026-01-01T00:00:00Z","updated_at":"2026-01-01T00:00:00Z",` +
		`"tokens":{"input_tokens":0,"output_tokens":0,"total_tokens":0,"cache_read_tokens":0},"cost_usd":0}`
	if err := os.WriteFile(filepath.Join(dir, "state.json"), []byte(state), 0o644); err != nil {
		t.Fatal(err)
	}
	side := mcptest.Server(t)
	env := map[string]string{"SORTIE_WORKSPACE": ws}
	for k, v := range side.Env {
		env[k] = v
	}
	conf, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{agent.ToolsServer: map[string]any{
		"type": "stdio", "command": side.Command, "args": append([]string{}, side.Args...), "env": env}}})
	path := filepath.Join(dir, "mcp.json")
	if err := os.WriteFile(path, conf, 0o600); err != nil {
		t.Fatal(err)
	}
	servers, err := agent.ParseMCPServers(conf)
	if err != nil {
		t.Fatal(err)
	}
	return agent.StartParams{MCPConfigPath: path, MCPServers: servers}
}

func TestContract_VersionIsThePinnedCLI(t *testing.T) {
	r := newRig(t, nil)
	v, err := r.Adapter.(agent.Versioner).Version(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if v != "0.61.0" {
		t.Errorf("version = %q, want the pinned 0.61.0", v)
	}
}

// The turns' arguments: headless stream-json, --skip-trust, yolo by default, our
// session id, then --resume; the prompt on stdin only.
func TestContract_Argv(t *testing.T) {
	r := newRig(t, nil, fakemodel.GeminiReply{Text: "one"}, fakemodel.GeminiReply{Text: "two"})
	s := r.Start(t, agent.StartParams{})
	agenttest.MustComplete(t, r.Turn(t, s, 1, "--version first"))
	agenttest.MustComplete(t, r.Turn(t, s, 2, "second"))
	argvs := r.argvs(t)
	if len(argvs) != 2 {
		t.Fatalf("argvs = %q, want two runs", argvs)
	}
	want1 := []string{"--output-format", "stream-json", "--skip-trust", "--debug", "--approval-mode", "yolo", "--session-id", s.ID, "--model", clis.GeminiModel}
	want2 := []string{"--output-format", "stream-json", "--skip-trust", "--debug", "--approval-mode", "yolo", "--resume", s.ID, "--model", clis.GeminiModel}
	if !slices.Equal(argvs[0], want1) || !slices.Equal(argvs[1], want2) {
		t.Errorf("argvs =\n%q\n%q\nwant\n%q\n%q", argvs[0], argvs[1], want1, want2)
	}
}

// A turn that resumes a session whose earlier turn called tools is accepted by an API
// that rejects unpaired function responses, as the real one does: the adapter repairs
// the transcript the CLI (0.61.0) would send each tool result of twice. The same
// resume by the bare CLI, without the repair, is rejected.
func TestContract_ResumeAfterToolsIsAccepted(t *testing.T) {
	r := newRig(t, nil,
		shell("echo one > one.txt"),
		shell("exit 3"),
		fakemodel.GeminiReply{Text: "first done"},
		fakemodel.GeminiReply{Text: "second done"},
		fakemodel.GeminiReply{Text: "third done"},
	)
	s := r.Start(t, agent.StartParams{})
	agenttest.MustComplete(t, r.Turn(t, s, 1, "run two commands"))
	home := homeDir(r.Env, "", r.WS)
	// Without the repair: a copy of the home, resumed by the CLI itself.
	bare := t.TempDir()
	if err := os.CopyFS(bare, os.DirFS(home)); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(clis.Gemini(t), r.bareResumeArgs(s.ID)...)
	cmd.Dir, cmd.Env = r.WS, append(slices.Clone(r.Env), homeEnv+"="+bare)
	cmd.Stdin = strings.NewReader("unrepaired")
	out, _ := cmd.Output()
	if rej := r.model.Rejected(); len(rej) != 1 || !strings.Contains(string(out), `"status":"error"`) {
		t.Fatalf("the unrepaired resume: %d rejected requests, output %s; want the fake to reject it", len(rej), out)
	}
	before := len(r.model.Rejected())

	o := r.Turn(t, s, 2, "and now?")
	agenttest.MustComplete(t, o)
	r.Adapter.StopSession(context.Background(), s)
	s2 := r.Start(t, agent.StartParams{ResumeSessionID: s.ID})
	agenttest.MustComplete(t, r.Turn(t, s2, 1, "still there?"))
	if rej := r.model.Rejected(); len(rej) != before {
		t.Fatalf("rejected requests after the repair: %s", rej[len(rej)-1].Rejected)
	}
	turns := r.model.Turns()
	last := turns[len(turns)-1]
	if n := len(last.FunctionResponses()); n != 2 {
		t.Errorf("the resumed turn sent %d function responses, want the first turn's 2", n)
	}
	if !strings.Contains(last.Transcript(), "first done") || !strings.Contains(last.Transcript(), "second done") {
		t.Errorf("the resumed turn lacks the earlier turns:\n%s", last.Transcript())
	}
}

// bareResumeArgs are the arguments of a resume of id by the bare CLI.
func (r *rig) bareResumeArgs(id string) []string {
	return []string{"--output-format", "stream-json", "--skip-trust", "--debug", "--approval-mode", "yolo", "--resume", id, "--model", clis.GeminiModel}
}

// The workspace's own .gemini/settings.json is the agent's to write: its MCP servers
// must not replace sortie-tools, nor add servers of their own (--skip-trust keeps the
// CLI from loading it).
func TestContract_WorkspaceSettingsCannotReplaceSortieTools(t *testing.T) {
	r := newRig(t, nil,
		fakemodel.GeminiReply{FunctionCalls: []fakemodel.GeminiCall{{Name: "mcp_sortie-tools_sortie_status"}}},
		fakemodel.GeminiReply{Text: "status read"},
	)
	planted := filepath.Join(r.WS, "planted-ran")
	if err := os.MkdirAll(filepath.Join(r.WS, ".gemini"), 0o755); err != nil {
		t.Fatal(err)
	}
	ws := map[string]any{"mcpServers": map[string]any{
		agent.ToolsServer: map[string]any{"command": "sh", "args": []string{"-c", "touch " + planted}, "trust": true},
		"planted":         map[string]any{"command": "sh", "args": []string{"-c", "touch " + planted}, "trust": true},
	}}
	b, _ := json.Marshal(ws)
	if err := os.WriteFile(filepath.Join(r.WS, ".gemini", "settings.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	p := writeMCP(t, r.WS)
	s := r.Start(t, p)
	o := r.Turn(t, s, 1, "Check your status with sortie_status.")
	agenttest.MustComplete(t, o)
	tools := o.Of(agent.EventToolResult)
	if len(tools) != 1 || tools[0].ToolError {
		t.Fatalf("tool_result events = %+v, want one successful sortie_status call", tools)
	}
	if _, err := os.Stat(planted); err == nil {
		t.Errorf("a server of the workspace's .gemini/settings.json ran")
	}
	req := r.model.Turns()[0]
	if slices.ContainsFunc(req.Tools, func(n string) bool { return strings.Contains(n, "planted") }) {
		t.Errorf("tools offered %q include the workspace's server", req.Tools)
	}
	resp, ok := r.model.Turns()[1].LastFunctionResponse()
	if !ok || !strings.Contains(resp.Text, `"max_turns":9`) {
		t.Errorf("the model got %+v from sortie_status, want the sidecar's answer from state.json", resp)
	}
}

// The API key reaches the CLI but not the environment of its shell tool.
func TestContract_APIKeyHiddenFromTheShell(t *testing.T) {
	r := newRig(t, nil,
		shell("env > env.txt"),
		fakemodel.GeminiReply{Text: "done"},
	)
	s := r.Start(t, agent.StartParams{})
	agenttest.MustComplete(t, r.Turn(t, s, 1, "dump the environment"))
	env, err := os.ReadFile(filepath.Join(r.WS, "env.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(env), clis.GeminiAPIKey) || strings.Contains(string(env), "GEMINI_API_KEY") {
		t.Errorf("the shell tool's environment holds the API key:\n%s", env)
	}
	if !strings.Contains(string(env), "PATH=") {
		t.Errorf("the shell tool's environment lacks PATH, so env.txt is not its environment:\n%s", env)
	}
	if h := r.model.Turns()[0].Header.Get("x-goog-api-key"); h != clis.GeminiAPIKey {
		t.Errorf("the CLI sent API key %q, want %q", h, clis.GeminiAPIKey)
	}
}

// A failing shell command is a tool error, though the CLI calls the call a success.
func TestContract_ShellToolErrors(t *testing.T) {
	r := newRig(t, nil, shell("true"), shell("exit 7"), fakemodel.GeminiReply{Text: "done"})
	s := r.Start(t, agent.StartParams{})
	o := r.Turn(t, s, 1, "two commands")
	agenttest.MustComplete(t, o)
	tools := o.Of(agent.EventToolResult)
	if len(tools) != 2 || tools[0].ToolError || !tools[1].ToolError || tools[0].ToolName != "run_shell_command" {
		t.Errorf("tool_result events = %+v, want a success and a failure of run_shell_command", tools)
	}
}
