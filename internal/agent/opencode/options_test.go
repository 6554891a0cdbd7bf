package opencode

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sortie/internal/agent"
)

func TestParseOptions_EveryKey(t *testing.T) {
	dir := t.TempDir()
	o, warnings, err := parseOptions(map[string]any{
		"model":      "anthropic/claude-sonnet-4-5",
		"agent":      "build",
		"variant":    "high",
		"permission": map[any]any{"bash": map[string]any{"git *": "allow", "*": "ask"}},
		"config":     map[string]any{"provider": map[string]any{"anthropic": map[string]any{"options": map[string]any{"timeout": 600}}}},
		"mcp_config": "mcp.json",
		"state_dir":  "state",
	}, dir)
	if err != nil || len(warnings) > 0 {
		t.Fatalf("parseOptions: %v, warnings %q", err, warnings)
	}
	if o.Model != "anthropic/claude-sonnet-4-5" || o.Agent != "build" || o.Variant != "high" {
		t.Errorf("options = %+v", o)
	}
	if o.MCPConfig != filepath.Join(dir, "mcp.json") || o.StateDir != filepath.Join(dir, "state") {
		t.Errorf("paths not resolved against the workflow's directory: %q, %q", o.MCPConfig, o.StateDir)
	}
	if o.autoApprove() {
		t.Errorf("a permission configuration must turn --auto off")
	}
}

// TestParseOptions_ErrorsNameTheKey: the values only opencode refuses. How any key is
// read, and what an unknown key draws, is option.Set's (internal/option/option_test.go).
func TestParseOptions_ErrorsNameTheKey(t *testing.T) {
	cases := map[string]struct {
		raw  map[string]any
		want string
	}{
		"model form":      {map[string]any{"model": "claude-sonnet-4-5"}, "opencode.model: must be provider/model"},
		"model flag":      {map[string]any{"model": "--auto"}, "opencode.model: must not start with '-'"},
		"permission word": {map[string]any{"permission": "yes"}, "opencode.permission: unknown value \"yes\""},
		"permission list": {map[string]any{"permission": []any{"allow"}}, "opencode.permission: must be allow, ask, deny or a mapping"},
		"config string":   {map[string]any{"config": "x.json"}, "opencode.config: must be a mapping"},
		"reserved":        {map[string]any{"config": map[string]any{"mcp": map[string]any{agent.ToolsServer: map[string]any{}}}}, "mcp.sortie-tools: the server name is reserved"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, _, err := parseOptions(c.raw, "")
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error = %v, want %q", err, c.want)
			}
		})
	}
}

func TestParseOptions_ConfigFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return name
	}
	jsonc := write("plain.jsonc", "{\n  // a comment with \"quotes\"\n  \"model\": \"a/b\", /* block */\n  \"url\": \"http://x//y\",\n  \"list\": [1, 2,],\n}\n")
	o, _, err := parseOptions(map[string]any{"config_file": jsonc}, dir)
	if err != nil || o.ConfigFile != filepath.Join(dir, jsonc) || !o.autoApprove() {
		t.Errorf("JSONC file without permission: %+v, %v", o, err)
	}
	perm := write("perm.json", `{"permission": {"bash": "ask"}}`)
	if o, _, err := parseOptions(map[string]any{"config_file": perm}, dir); err != nil || o.autoApprove() {
		t.Errorf("a file with permission must turn --auto off: %v", err)
	}
	reserved := write("reserved.json", `{"mcp": {"sortie-tools": {"type": "local", "command": ["x"]}}}`)
	if _, _, err := parseOptions(map[string]any{"config_file": reserved}, dir); err == nil || !strings.Contains(err.Error(), "reserved") {
		t.Errorf("reserved server name: %v", err)
	}
	broken := write("broken.json", `{"model": `)
	if _, _, err := parseOptions(map[string]any{"config_file": broken}, dir); err == nil || !strings.Contains(err.Error(), "opencode.config_file") {
		t.Errorf("broken file: %v", err)
	}
	_, warnings, err := parseOptions(map[string]any{"config_file": "/nowhere/opencode.json"}, dir)
	if err != nil || len(warnings) != 1 || !strings.Contains(warnings[0], "does not exist here") {
		t.Errorf("missing file: %v, %q", err, warnings)
	}
}

func TestArgs(t *testing.T) {
	a := &dialect{opts: options{Model: "anthropic/m", Agent: "build", Variant: "max"}}
	got := a.args("", "/ws/ABC-1")
	want := []string{"run", "--format", "json", "--title=sortie ABC-1", "--model", "anthropic/m", "--agent", "build", "--variant", "max", "--auto"}
	if !slices.Equal(got, want) {
		t.Errorf("new session args = %q, want %q", got, want)
	}
	a.opts.Permission = "allow"
	got = a.args("ses_1", "/ws/ABC-1")
	want = []string{"run", "--format", "json", "--session", "ses_1", "--model", "anthropic/m", "--agent", "build", "--variant", "max"}
	if !slices.Equal(got, want) {
		t.Errorf("continued session args = %q, want %q", got, want)
	}
}

func TestModelName_FromTheBlockOrItsConfig(t *testing.T) {
	if got := (options{Model: "a/b", Config: map[string]any{"model": "c/d"}}).modelName(); got != "a/b" {
		t.Errorf("modelName = %q, want opencode.model", got)
	}
	if got := (options{Config: map[string]any{"model": "c/d"}}).modelName(); got != "c/d" {
		t.Errorf("modelName = %q, want the inline configuration's model", got)
	}
	if got := (options{}).modelName(); got != "" {
		t.Errorf("modelName = %q, want none", got)
	}
}
