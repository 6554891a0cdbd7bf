package claude

import (
	"slices"
	"strings"
	"testing"
)

func TestParseOptions_AllFieldsMapToTheirFlags(t *testing.T) {
	o, warnings, err := parseOptions(map[string]any{
		"permission_mode":     "bypassPermissions",
		"model":               "claude-sonnet-4-20250514",
		"fallback_model":      "claude-haiku-4-5",
		"max_turns":           50,
		"max_budget_usd":      5,
		"effort":              "high",
		"allowed_tools":       "Edit,Write,Bash",
		"disallowed_tools":    []any{"WebFetch", "WebSearch"},
		"system_prompt":       "Be brief.",
		"mcp_config":          "./mcp-servers.json",
		"session_persistence": false,
	}, "/etc/sortie")
	if err != nil || len(warnings) > 0 {
		t.Fatalf("parseOptions: %v, warnings %v", err, warnings)
	}
	got := o.args("11111111-2222-4333-8444-555555555555", false, []string{"/ws/.sortie/mcp.json"})
	want := []string{"-p", "--output-format", "stream-json", "--verbose",
		"--session-id", "11111111-2222-4333-8444-555555555555",
		"--permission-mode", "bypassPermissions",
		"--model", "claude-sonnet-4-20250514",
		"--fallback-model", "claude-haiku-4-5",
		"--max-turns", "50",
		"--max-budget-usd", "5",
		"--effort", "high",
		"--allowedTools", "Edit,Write,Bash",
		"--disallowedTools", "WebFetch,WebSearch",
		"--append-system-prompt", "Be brief.",
		"--mcp-config", "/ws/.sortie/mcp.json",
		"--no-session-persistence",
	}
	if !slices.Equal(got, want) {
		t.Errorf("args =\n%q\nwant\n%q", got, want)
	}
	if o.MCPConfig != "/etc/sortie/mcp-servers.json" {
		t.Errorf("mcp_config = %q, want it resolved against the WORKFLOW.md directory", o.MCPConfig)
	}
}

func TestParseOptions_Defaults(t *testing.T) {
	o, _, err := parseOptions(nil, "")
	if err != nil {
		t.Fatal(err)
	}
	got := o.args("id", true, nil)
	want := []string{"-p", "--output-format", "stream-json", "--verbose", "--resume", "id", "--dangerously-skip-permissions"}
	if !slices.Equal(got, want) {
		t.Errorf("default args = %q, want %q", got, want)
	}
	if !o.SessionPersistence {
		t.Error("session_persistence defaults to true")
	}
}

// TestParseOptions_ClaudesOwnValues: the values only claude takes; how any key is read,
// and what an unknown key draws, is option.Set's (internal/option/option_test.go).
func TestParseOptions_ClaudesOwnValues(t *testing.T) {
	cases := []struct {
		raw  map[string]any
		want string
	}{
		{map[string]any{"permission_mode": "yolo"}, `claude-code.permission_mode: unknown value "yolo" (valid: acceptEdits, auto, bypassPermissions, default, dontAsk, manual, plan)`},
		{map[string]any{"effort": "extreme"}, `claude-code.effort: unknown value "extreme" (valid: low, medium, high, xhigh, max)`},
	}
	for _, c := range cases {
		if _, _, err := parseOptions(c.raw, ""); err == nil || err.Error() != c.want {
			t.Errorf("%v: err = %v, want %q", c.raw, err, c.want)
		}
	}
}

func TestParseOptions_ReferenceExampleBlock(t *testing.T) {
	// The claude-code block of the reference's examples/WORKFLOW.md.
	_, warnings, err := parseOptions(map[string]any{
		"permission_mode": "bypassPermissions", "model": "claude-sonnet-4-20250514", "max_turns": 50, "max_budget_usd": 5,
	}, "")
	if err != nil || len(warnings) > 0 {
		t.Fatalf("reference block: %v %v", err, warnings)
	}
}

// TestParseOptions_SpecExampleFallbackEqualsModel: the spec's own claude-code example sets
// fallback_model equal to model. The CLI refuses that, so the fallback is dropped with a
// warning and the daemon still starts.
func TestParseOptions_SpecExampleFallbackEqualsModel(t *testing.T) {
	o, warnings, err := parseOptions(map[string]any{
		"permission_mode": "bypassPermissions", "model": "claude-sonnet-4-20250514",
		"fallback_model": "claude-sonnet-4-20250514", "max_turns": 50, "max_budget_usd": 5, "effort": "high",
		"allowed_tools": "Edit,Write,Bash",
	}, "")
	if err != nil {
		t.Fatalf("the spec's example block: %v", err)
	}
	if o.FallbackModel != "" || slices.Contains(o.args("s", false, nil), "--fallback-model") {
		t.Errorf("fallback model %q kept (args %q); want it dropped", o.FallbackModel, o.args("s", false, nil))
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "claude-code.fallback_model: the same model as claude-code.model") {
		t.Errorf("warnings = %q, want one about the dropped fallback model", warnings)
	}
}
