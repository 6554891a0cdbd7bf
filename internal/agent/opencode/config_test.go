package opencode

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestMCPServers_ClaudeStyleBecomesOpenCodes(t *testing.T) {
	p := filepath.Join(t.TempDir(), "mcp.json")
	body := `{"mcpServers":{"sortie-tools":{"type":"stdio","command":"/usr/bin/sortie","args":["mcp-server","--workflow","/w/WORKFLOW.md"],"env":{"SORTIE_RUN_ID":"7"}},
		"web":{"type":"http","url":"https://mcp.example/","headers":{"Authorization":"Bearer x"}}}}`
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := mcpServers(p)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(got)
	want := `{"sortie-tools":{"command":["/usr/bin/sortie","mcp-server","--workflow","/w/WORKFLOW.md"],"enabled":true,"environment":{"SORTIE_RUN_ID":"7"},"type":"local"},` +
		`"web":{"enabled":true,"headers":{"Authorization":"Bearer x"},"type":"remote","url":"https://mcp.example/"}}`
	if string(b) != want {
		t.Errorf("servers =\n%s\nwant\n%s", b, want)
	}
	if err := os.WriteFile(p, []byte(`{"mcpServers":{"x":{"type":"stdio"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := mcpServers(p); err == nil || !strings.Contains(err.Error(), "mcpServers.x has neither a command nor a url") {
		t.Errorf("server without command: %v", err)
	}
}

func TestInlineConfig_SortiesServerWins(t *testing.T) {
	o := options{
		Config:     map[string]any{"model": "a/b", "mcp": map[string]any{"ops": map[string]any{"type": "remote"}}},
		Permission: map[string]any{"bash": "ask"},
	}
	b, err := o.inlineConfig(map[string]any{ToolsServer: map[string]any{"type": "local"}})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"mcp":{"ops":{"type":"remote"},"sortie-tools":{"type":"local"}},"model":"a/b","permission":{"bash":"ask"}}`
	if string(b) != want {
		t.Errorf("content = %s, want %s", b, want)
	}
	if len(o.Config["mcp"].(map[string]any)) != 1 {
		t.Errorf("inlineConfig changed the options: %v", o.Config)
	}
	if b, _ := (options{}).inlineConfig(nil); b != nil {
		t.Errorf("empty configuration = %s, want none", b)
	}
}

func TestTurnEnv_ReplacesConfigurationAndDirectories(t *testing.T) {
	base := []string{"PATH=/bin", "HOME=/h", "XDG_CONFIG_HOME=/mine", "XDG_CACHE_HOME=/c", "OPENCODE_CONFIG=/mine/oc.json",
		"OPENCODE_CONFIG_DIR=/d", "PWD=/daemon", "OPENCODE_DISABLE_SHARE=false", "ANTHROPIC_API_KEY=k"}
	got := turnEnv(base, []string{"XDG_CONFIG_HOME=/s/config", "PWD=/ws"}, []byte(`{"a":1}`), "/ops.json")
	want := []string{"PATH=/bin", "HOME=/h", "XDG_CACHE_HOME=/c", "ANTHROPIC_API_KEY=k", "XDG_CONFIG_HOME=/s/config", "PWD=/ws",
		"OPENCODE_DISABLE_AUTOUPDATE=true", "OPENCODE_DISABLE_SHARE=true", `OPENCODE_CONFIG_CONTENT={"a":1}`, "OPENCODE_CONFIG=/ops.json"}
	if !slices.Equal(got, want) {
		t.Errorf("env =\n%q\nwant\n%q", got, want)
	}
}

func TestStateRoot_StablePerWorkflow(t *testing.T) {
	env := []string{"HOME=/home/op"}
	a, _ := stateRoot(env, "/srv/one")
	b, _ := stateRoot(env, "/srv/one")
	c, _ := stateRoot(env, "/srv/two")
	if a != b || a == c || !strings.HasPrefix(a, "/home/op/.cache/sortie/opencode/") {
		t.Errorf("roots %q, %q, %q: want one stable directory per workflow under ~/.cache", a, b, c)
	}
	if d, _ := stateRoot([]string{"HOME=/home/op", "XDG_CACHE_HOME=/var/cache/op"}, "/srv/one"); !strings.HasPrefix(d, "/var/cache/op/sortie/opencode/") {
		t.Errorf("root %q ignores XDG_CACHE_HOME", d)
	}
}

func TestPrepareState_LinksTheOperatorsCredentials(t *testing.T) {
	home := t.TempDir()
	auth := filepath.Join(home, ".local", "share", "opencode", "auth.json")
	if err := os.MkdirAll(filepath.Dir(auth), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(auth, []byte(`{}`), 0o600); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(t.TempDir(), "state")
	vars, write, err := prepareState(root, []string{"HOME=" + home}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(vars) != 3 || !slices.Contains(vars, "XDG_DATA_HOME="+filepath.Join(root, "data")) {
		t.Errorf("vars = %q", vars)
	}
	if got, err := os.Readlink(filepath.Join(root, "data", "opencode", "auth.json")); err != nil || got != auth {
		t.Errorf("auth.json link = %q, %v; want %s", got, err, auth)
	}
	if !slices.Contains(write, auth) {
		t.Errorf("writable paths %q lack the credentials the CLI refreshes", write)
	}
	// Again: nothing changes, nothing fails.
	if _, _, err := prepareState(root, []string{"HOME=" + home}, nil); err != nil {
		t.Fatal(err)
	}
}
