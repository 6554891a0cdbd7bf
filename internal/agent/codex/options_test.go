package codex

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sortie/internal/agent"
	"sortie/internal/agent/statedir"
)

// TestOptions_Errors: the values only codex refuses. How any key is read, and what an
// unknown key draws, is option.Set's (internal/option/option_test.go).
func TestOptions_Errors(t *testing.T) {
	cases := []struct {
		name string
		raw  map[string]any
		want string
	}{
		{"approval policy enum", map[string]any{"approval_policy": "always"}, `codex.approval_policy: unknown value "always"`},
		{"approval policy mapping", map[string]any{"approval_policy": map[string]any{"other": true}}, "codex.approval_policy: a mapping must be {granular: {...}}"},
		{"sandbox enum", map[string]any{"thread_sandbox": "open"}, `codex.thread_sandbox: unknown value "open"`},
		{"turn sandbox policy type", map[string]any{"turn_sandbox_policy": "workspaceWrite"}, "codex.turn_sandbox_policy: must be a mapping"},
		{"turn sandbox policy without type", map[string]any{"turn_sandbox_policy": map[string]any{"networkAccess": true}}, "codex.turn_sandbox_policy: must have a type"},
		{"stall timeout", map[string]any{"stall_timeout_ms": "never"}, "codex.stall_timeout_ms: must be a whole number of milliseconds"},
		{"timeout", map[string]any{"read_timeout_ms": -1}, "codex.read_timeout_ms: must be a non-negative number of milliseconds (got -1)"},
		{"effort", map[string]any{"effort": "extreme"}, `codex.effort: unknown value "extreme"`},
		{"providers", map[string]any{"model_providers": "x"}, "codex.model_providers: must be a mapping"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := parseOptions(c.raw, "/wf")
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error = %v, want %q", err, c.want)
			}
			if _, err := New(agent.Config{Kind: Kind, Options: c.raw}); err == nil {
				t.Error("New accepted what parseOptions refuses")
			}
		})
	}
}

func TestOptions_SymphonyBlock(t *testing.T) {
	raw := map[string]any{
		"command": "codex app-server", "approval_policy": "never", "thread_sandbox": "workspace-write",
		"turn_sandbox_policy": map[string]any{"type": "workspaceWrite", "writableRoots": []any{"/ws"}, "networkAccess": false},
		"read_timeout_ms":     7000, "turn_timeout_ms": 120000, "stall_timeout_ms": 300000,
		"model": "gpt-6.1-sol", "effort": "high", "personality": "friendly", "codex_home": "state/codex",
	}
	o, warnings, err := parseOptions(raw, "/wf")
	if err != nil {
		t.Fatal(err)
	}
	if o.ReadTimeout != 7*time.Second || o.TurnTimeout != 2*time.Minute || o.StallTimeout != 5*time.Minute {
		t.Errorf("timeouts = %s, %s, %s", o.ReadTimeout, o.TurnTimeout, o.StallTimeout)
	}
	if o.CodexHome != "/wf/state/codex" || o.ApprovalPolicy != "never" || o.TurnSandboxPolicy["type"] != "workspaceWrite" {
		t.Errorf("options = %+v", o)
	}
	if o, _, err := parseOptions(map[string]any{"stall_timeout_ms": -1}, ""); err != nil || o.StallTimeout >= 0 {
		t.Errorf("stall_timeout_ms -1 = %v, %v; Symphony's way to turn stall detection off must be accepted", o.StallTimeout, err)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "codex.personality: unknown key, ignored") {
		t.Errorf("warnings = %q, want one for personality", warnings)
	}
}

func TestNew_CommandAndTimeouts(t *testing.T) {
	a, err := New(agent.Config{Kind: Kind, Command: "/opt/codex/bin/codex", ReadTimeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ad := a.(*adapter)
	if strings.Join(ad.program, " ") != "/opt/codex/bin/codex app-server" {
		t.Errorf("program = %q, want app-server appended", ad.program)
	}
	if ad.readTimeout != 3*time.Second || ad.turnTimeout != DefaultTurnTimeout {
		t.Errorf("timeouts = %s, %s", ad.readTimeout, ad.turnTimeout)
	}
	a, _ = New(agent.Config{Kind: Kind, Command: "codex app-server --listen stdio://"})
	if got := strings.Join(a.(*adapter).program, " "); got != "codex app-server --listen stdio://" {
		t.Errorf("program = %q, want it as written", got)
	}
	a, _ = New(agent.Config{Kind: Kind, Command: "mycodex", Options: map[string]any{"command": "mycodex app-server"}})
	if w := a.(*adapter).Warnings(); len(w) != 1 || !strings.Contains(w[0], "agent.command") {
		t.Errorf("warnings = %q, want one about agent.command being ignored", w)
	}
}

func TestStartSession_SSHIsRefused(t *testing.T) {
	a, _ := New(agent.Config{Kind: Kind, Command: "sh"})
	_, err := a.StartSession(t.Context(), agent.StartParams{Workspace: t.TempDir(), SSHHost: "build1"})
	if agent.KindOf(err) != agent.ErrNotFound || !strings.Contains(err.Error(), "not supported yet") {
		t.Fatalf("StartSession over SSH = %v, want a clear refusal", err)
	}
}

func TestHome_ConfigAndAuth(t *testing.T) {
	user := t.TempDir()
	if err := os.MkdirAll(filepath.Join(user, ".codex"), 0o700); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(user, ".codex", "auth.json"), []byte(`{"tokens":{}}`), 0o600)
	os.WriteFile(filepath.Join(user, ".codex", "config.toml"), []byte("model = \"personal\"\n"), 0o600)
	env := []string{"HOME=" + user}
	home := statedir.Dir(env, Kind, "", "/srv/wf", "/ws/a")
	if !strings.HasPrefix(home, filepath.Join(user, ".cache", "sortie", "codex")+"/") {
		t.Fatalf("homeDir = %s: want one below the user's cache", home)
	}
	o := options{ModelProvider: "corp", Model: "m", ModelProviders: map[string]any{"corp": map[string]any{
		"base_url": "https://llm.corp/v1", "wire_api": "responses", "query_params": map[string]any{"api-version": "2025"}}}}
	notes, err := prepareHome(home, nil, o.configTOML(), env, true)
	if err != nil {
		t.Fatal(err)
	}
	cfg, _ := os.ReadFile(filepath.Join(home, "config.toml"))
	for _, want := range []string{"check_for_update_on_startup = false", `model_provider = "corp"`, "[model_providers.corp]",
		`base_url = "https://llm.corp/v1"`, `query_params = { api-version = "2025" }`, "[analytics]\nenabled = false"} {
		if !strings.Contains(string(cfg), want) {
			t.Errorf("config.toml lacks %q:\n%s", want, cfg)
		}
	}
	if strings.Contains(string(cfg), "personal") {
		t.Error("the user's own config.toml leaked into the isolated one")
	}
	fi, err := os.Stat(filepath.Join(home, "auth.json"))
	if err != nil || fi.Mode().Perm() != 0o600 || len(notes) != 1 {
		t.Fatalf("auth.json copy = %v, %v; notes %q", fi, err, notes)
	}
	// With an API key in the environment nothing is copied.
	other := statedir.Dir(env, Kind, "", "/srv/keyed", "/ws/a")
	if _, err := prepareHome(other, nil, o.configTOML(), append(env, "OPENAI_API_KEY=sk-x"), true); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(other, "auth.json")); !os.IsNotExist(err) {
		t.Errorf("auth.json copied although OPENAI_API_KEY is set: %v", err)
	}
}

func TestMCPServers_FromClaudeStyleConfig(t *testing.T) {
	p := filepath.Join(t.TempDir(), "mcp.json")
	os.WriteFile(p, []byte(`{"mcpServers":{"sortie-tools":{"command":"/usr/bin/sortie","args":["mcp-server"],"env":{"SORTIE_SESSION":"x"}},
		"docs":{"type":"http","url":"https://docs/mcp","headers":{"A":"b"}}}}`), 0o600)
	got, err := mcpServersIn(p)
	if err != nil {
		t.Fatal(err)
	}
	st := got["sortie-tools"].(map[string]any)
	if st["command"] != "/usr/bin/sortie" || st["default_tools_approval_mode"] != "approve" || st["env"].(map[string]string)["SORTIE_SESSION"] != "x" {
		t.Errorf("sortie-tools = %+v", st)
	}
	if d := got["docs"].(map[string]any); d["url"] != "https://docs/mcp" || d["http_headers"].(map[string]string)["A"] != "b" {
		t.Errorf("docs = %+v", d)
	}
	os.WriteFile(p, []byte(`{"mcpServers":{"x":{}}}`), 0o600)
	if _, err := mcpServersIn(p); err == nil {
		t.Error("a server with neither command nor url was accepted")
	}
}

// mcpServersIn is mcpServers of the configuration file at p.
func mcpServersIn(p string) (map[string]any, error) {
	servers, err := agent.ReadMCPConfig(p)
	if err != nil {
		return nil, err
	}
	return mcpServers(servers)
}
