package opencode

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sortie/internal/agent"
)

func TestMCPServers_ClaudeStyleBecomesOpenCodes(t *testing.T) {
	p := filepath.Join(t.TempDir(), "mcp.json")
	body := `{"mcpServers":{"sortie-tools":{"type":"stdio","command":"/usr/bin/sortie","args":["mcp-server","--workflow","/w/WORKFLOW.md"],"env":{"SORTIE_RUN_ID":"7"}},
		"web":{"type":"http","url":"https://mcp.example/","headers":{"Authorization":"Bearer x"}}}}`
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := mcpEntriesIn(p)
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
	if _, err := mcpEntriesIn(p); err == nil || !strings.Contains(err.Error(), `MCP server "x" has neither a command nor a url`) {
		t.Errorf("server without command: %v", err)
	}
}

func TestInlineConfig_SortiesServerWins(t *testing.T) {
	o := options{
		Config:     map[string]any{"model": "a/b", "mcp": map[string]any{"ops": map[string]any{"type": "remote"}}},
		Permission: map[string]any{"bash": "ask"},
	}
	b, err := o.inlineConfig(map[string]any{agent.ToolsServer: map[string]any{"type": "local"}})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"agent":{"build":{"permission":{"task":"deny"}}},"default_agent":"build","mcp":{"ops":{"type":"remote"},"sortie-tools":{"type":"local"}},` +
		`"model":"a/b","permission":{"bash":"ask","task":"deny"}}`
	if string(b) != want {
		t.Errorf("content = %s, want %s", b, want)
	}
	if len(o.Config["mcp"].(map[string]any)) != 1 {
		t.Errorf("inlineConfig changed the options: %v", o.Config)
	}
	if b, _ := (options{Subagents: true}).inlineConfig(nil); b != nil {
		t.Errorf("empty configuration = %s, want none", b)
	}
}

func TestInlineConfig_DeniesSubagentsUnlessEnabled(t *testing.T) {
	for _, tc := range []struct {
		o    options
		want string
	}{
		{options{}, `{"agent":{"build":{"permission":{"task":"deny"}}},"default_agent":"build","permission":{"task":"deny"}}`},
		{options{Permission: "allow", Agent: "mine"}, `{"agent":{"mine":{"permission":{"task":"deny"}}},"permission":{"*":"allow","task":"deny"}}`},
		{options{fileLevel: "allow"}, `{"agent":{"build":{"permission":{"task":"deny"}}},"default_agent":"build","permission":{"*":"allow","task":"deny"}}`},
		{options{Config: map[string]any{"default_agent": "x", "agent": map[string]any{"x": map[string]any{"permission": map[string]any{"task": "allow"}, "steps": 3}}}},
			`{"agent":{"x":{"permission":{"task":"deny"},"steps":3}},"default_agent":"x","permission":{"task":"deny"}}`},
		{options{Subagents: true, Permission: "allow"}, `{"permission":"allow"}`},
	} {
		b, err := tc.o.inlineConfig(nil)
		if err != nil || string(b) != tc.want {
			t.Errorf("%+v: content = %s, %v; want %s", tc.o, b, err, tc.want)
		}
	}
}

func TestTurnEnv_ReplacesConfigurationAndDirectories(t *testing.T) {
	base := []string{"PATH=/bin", "HOME=/h", "XDG_CONFIG_HOME=/mine", "XDG_CACHE_HOME=/c", "OPENCODE_CONFIG=/mine/oc.json",
		"OPENCODE_CONFIG_DIR=/d", "PWD=/daemon", "OPENCODE_DISABLE_SHARE=false", "ANTHROPIC_API_KEY=k"}
	got := turnEnv(base, []string{"XDG_CONFIG_HOME=/s/config", "PWD=/ws"}, []byte(`{"a":1}`), "/ops.json")
	want := []string{"PATH=/bin", "HOME=/h", "ANTHROPIC_API_KEY=k", "XDG_CONFIG_HOME=/s/config", "PWD=/ws",
		"OPENCODE_DISABLE_AUTOUPDATE=true", "OPENCODE_DISABLE_SHARE=true", `OPENCODE_CONFIG_CONTENT={"a":1}`, "OPENCODE_CONFIG=/ops.json"}
	if !slices.Equal(got, want) {
		t.Errorf("env =\n%q\nwant\n%q", got, want)
	}
}

// An issue's directory of the layout before statedir's, <cache>/sortie/opencode/
// <workflow>/issues/<issue> or <state_dir>/issues/<issue>, is where its next session
// finds it, sessions and all: moved once to the new layout.
func TestIssueDir_AdoptsTheDirectoryOfTheLayoutBefore(t *testing.T) {
	env := []string{"HOME=/home/op", "SORTIE_ISSUE_ID=1"}
	for base, want := range map[string]string{
		"":       "/home/op/.cache/sortie/opencode/875fb59d40696cfc/issues/740a35d7c6631c13",
		"/state": "/state/issues/740a35d7c6631c13",
	} {
		if got := legacyDir(env, base, "/srv/one", "/ws/A-1"); got != want {
			t.Errorf("legacyDir with state_dir %q = %s, want %s, where Sortie kept it", base, got, want)
		}
	}
	env = []string{"HOME=" + t.TempDir(), "SORTIE_ISSUE_ID=1"}
	legacy := legacyDir(env, "", "/srv/one", "/ws/A-1")
	writeFile(t, filepath.Join(legacy, "data", "opencode", "opencode.db"), "sessions")
	dir, err := issueDir(env, "", "/srv/one", "/ws/A-1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := prepareState(dir, env, nil, true); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "data", "opencode", "opencode.db")); err != nil || string(b) != "sessions" {
		t.Errorf("the sessions of the layout before are not in %s: %q, %v", dir, b, err)
	}
	if _, err := os.Lstat(legacy); !os.IsNotExist(err) {
		t.Errorf("the directory of the layout before is still there: %v", err)
	}
}

// writeFile writes body at p, making its directory.
func writeFile(t *testing.T, p, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

// Nothing a confined CLI may write lies outside its issue's directory, and the
// configuration directory is not among it: not git's configuration, not the operator's
// credentials, not the user's cache.
func TestPrepareState_NothingOutsideTheIssueIsWritable(t *testing.T) {
	home := t.TempDir()
	auth := filepath.Join(home, ".local", "share", "opencode", "auth.json")
	writeFile(t, auth, `{"k":1}`)
	git := filepath.Join(home, ".config", "git")
	writeFile(t, filepath.Join(git, "config"), "[user]\n\tname = op\n")
	dir := filepath.Join(t.TempDir(), "issues", "x")
	got, err := prepareState(dir, []string{"HOME=" + home}, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(dir, "cache"), filepath.Join(dir, "data"), filepath.Join(dir, "state")}
	if !slices.Equal(got.write, want) {
		t.Errorf("writable = %q, want only the issue's data, state and cache %q", got.write, want)
	}
	if !slices.Contains(got.read, filepath.Join(dir, "config")) || !slices.Contains(got.read, filepath.Join(git, "config")) {
		t.Errorf("read-only = %q, want the issue's configuration and git's", got.read)
	}
	if slices.Contains(got.read, git) {
		t.Errorf("read-only = %q holds git's whole directory, with its credentials file", got.read)
	}
	for _, v := range []string{"XDG_CACHE_HOME=" + filepath.Join(dir, "cache"), "XDG_CONFIG_HOME=" + filepath.Join(dir, "config")} {
		if !slices.Contains(got.vars, v) {
			t.Errorf("vars = %q, want %s", got.vars, v)
		}
	}
	copied := filepath.Join(dir, "data", "opencode", "auth.json")
	fi, err := os.Lstat(copied)
	if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 {
		t.Fatalf("auth.json in the data directory: %v, %v; want a 0600 copy, not a link", fi, err)
	}
	if b, _ := os.ReadFile(copied); string(b) != `{"k":1}` {
		t.Errorf("copied credentials = %q", b)
	}
	if l, err := os.Readlink(filepath.Join(dir, "config", "git")); err != nil || l != git {
		t.Errorf("config/git = %q, %v; want a link to %s", l, err, git)
	}
}

// What an agent could have planted in the configuration directory (code, instructions,
// configuration) is gone before the next turn; the sessions stay (statedir tests the
// rest).
func TestPrepareState_RemovesWhatTheAgentPlanted(t *testing.T) {
	home := t.TempDir()
	auth := filepath.Join(home, ".local", "share", "opencode", "auth.json")
	writeFile(t, auth, `{}`)
	dir := filepath.Join(t.TempDir(), "issues", "x")
	if _, err := prepareState(dir, []string{"HOME=" + home}, nil, true); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "config", "opencode")
	planted := []string{filepath.Join(cfg, "plugin", "evil.js"), filepath.Join(cfg, "tools", "evil.ts"),
		filepath.Join(cfg, "opencode.json"), filepath.Join(cfg, "AGENTS.md"), filepath.Join(dir, "config", "other", "x")}
	for _, p := range planted {
		writeFile(t, p, "planted")
	}
	sessions := filepath.Join(dir, "data", "opencode", "opencode.db")
	writeFile(t, sessions, "sessions")
	if _, err := prepareState(dir, []string{"HOME=" + home}, nil, true); err != nil {
		t.Fatal(err)
	}
	for _, p := range planted {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s survived: the next turn's CLI would load it", p)
		}
	}
	if b, err := os.ReadFile(sessions); err != nil || string(b) != "sessions" {
		t.Errorf("the sessions did not survive the reset: %q, %v", b, err)
	}
}

// mcpEntriesIn is mcpEntries of the configuration file at p.
func mcpEntriesIn(p string) (map[string]any, error) {
	servers, err := agent.ReadMCPConfig(p)
	if err != nil {
		return nil, err
	}
	return mcpEntries(servers)
}

// Without opencode.use_login the operator's credentials are not copied where the agent
// can read them, and a copy left from when it was on goes.
func TestPrepareState_LoginOnlyWithUseLogin(t *testing.T) {
	home := t.TempDir()
	env := []string{"HOME=" + home}
	writeFile(t, filepath.Join(home, ".local", "share", "opencode", "auth.json"), `{"k":1}`)
	dir := filepath.Join(t.TempDir(), "issues", "x")
	copied := filepath.Join(dir, "data", "opencode", "auth.json")
	if _, err := prepareState(dir, env, nil, false); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(copied); err == nil {
		t.Fatal("auth.json copied without opencode.use_login")
	}
	if n := loginNote(env); !strings.Contains(n, "opencode.use_login: true") {
		t.Errorf("loginNote = %q, want it to say how to give the login", n)
	}
	if _, err := prepareState(dir, env, nil, true); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(copied); err != nil {
		t.Fatalf("auth.json not copied with opencode.use_login: %v", err)
	}
	if _, err := prepareState(dir, env, nil, false); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(copied); err == nil {
		t.Error("the copy made with opencode.use_login survived once it was turned off")
	}
	if n := loginNote([]string{"HOME=" + t.TempDir()}); n != "" {
		t.Errorf("loginNote without a login = %q", n)
	}
}
