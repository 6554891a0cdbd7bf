package mock

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"sortie/internal/agent"
)

func TestParseOptions_Defaults(t *testing.T) {
	o, err := parseOptions(nil)
	if err != nil {
		t.Fatal(err)
	}
	d := o.Default
	if !slices.Equal(d.Script, []outcome{outcomeSuccess}) || d.EventsPerTurn != 3 || d.InputTokens != 100 ||
		d.OutputTokens != 50 || d.CacheReadTokens != 0 || d.Model != "mock-model" || d.CrashExitCode != 1 || d.DelayMS != 0 {
		t.Errorf("defaults: want script [success], 3 events, 100/50/0 tokens, mock-model, crash 1, no delay; got %+v", d)
	}
}

func TestParseOptions_IssueBlockReplacesOnlyItsKeys(t *testing.T) {
	o := mustParseYAML(t, `
delay_ms: 200
script: [success]
files: {"a.txt": "a"}
issues:
  DEMO-3: { script: [failure, success] }
  DEMO-5: { files: { "notes/plan.md": "plan" }, status: needs-human-review }
`)
	d3, d5 := o.profileFor("DEMO-3"), o.profileFor("DEMO-5")
	if !slices.Equal(d3.Script, []outcome{outcomeFailure, outcomeSuccess}) || d3.DelayMS != 200 || d3.Files["a.txt"] != "a" {
		t.Errorf("DEMO-3: want its own script and the default delay and files, got %+v", d3)
	}
	if d5.Files["notes/plan.md"] != "plan" || d5.Files["a.txt"] != "" || d5.Status != "needs-human-review" || !slices.Equal(d5.Script, []outcome{outcomeSuccess}) {
		t.Errorf("DEMO-5: want its files replacing the default's, its status, the default script; got %+v", d5)
	}
	if got := o.profileFor("OTHER-1"); got.Status != "" || len(got.Files) != 1 {
		t.Errorf("other issues: want the default profile, got %+v", got)
	}
	// The per-issue copy must not alias the default.
	d3.Files["b.txt"] = "b"
	if _, leaked := o.Default.Files["b.txt"]; leaked {
		t.Error("issue profile shares its files map with the default")
	}
}

func TestParseOptions_RejectsInvalidBlocks(t *testing.T) {
	tests := []struct {
		yaml string
		want string
	}{
		{`script: [success, sucess]`, `mock.script[1]: unknown outcome "sucess" (valid: crash, failure, hang, input_required, success)`},
		{`script: []`, `mock.script: must list at least one outcome`},
		{`script: success`, `mock.script: must be a list of outcomes (got "success")`},
		{`issues: {DEMO-3: {script: [3]}}`, `mock.issues.DEMO-3.script[0]: unknown outcome 3 (valid:`},
		{`delay_ms: -1`, `mock.delay_ms: must be an integer from 0 to 86400000 (got -1)`},
		{`delay_ms: 1.5`, `mock.delay_ms: must be an integer`},
		{`delay_ms: fast`, `mock.delay_ms: must be an integer from 0 to 86400000 (got "fast")`},
		{`input_tokens_per_turn: -5`, `mock.input_tokens_per_turn: must be an integer`},
		{`turn_outcomes: [completed]`, `mock.turn_outcomes: not supported by this mock agent; use script`},
		{`tool_calls: [{duration_ms: 3}]`, `mock.tool_calls[0].name: required`},
		{`tool_calls: [{name: Bash, secs: 3}]`, `mock.tool_calls[0].secs: unknown key`},
		{`tool_calls: [{name: Bash, error: "yes"}]`, `mock.tool_calls[0].error: must be true or false`},
		{`files: {"../x": "y"}`, `mock.files["../x"]: must be a relative path inside the workspace`},
		{`files: {"/etc/x": "y"}`, `mock.files["/etc/x"]: must be a relative path inside the workspace`},
		{`files: {".mock-agent/turns": "0"}`, `mock.files[".mock-agent/turns"]: .mock-agent/ holds the mock's own script counter`},
		{`files: {"a": 3}`, `mock.files["a"]: must be a string (got 3)`},
		{"status: \"a\\nb\"", `mock.status: must be a single line`},
		{`model: ""`, `mock.model: must not be empty`},
		{`crash_exit_code: 0`, `mock.crash_exit_code: must be an integer from 1 to 255 (got 0)`},
		{`helper_processes: 100`, `mock.helper_processes: must be an integer from 0 to 16`},
		{`issues: [DEMO-1]`, `mock.issues: must be a mapping (got a list)`},
		{`issues: {DEMO-1: {issues: {}}}`, `mock.issues.DEMO-1.issues: per-issue blocks cannot contain issues`},
		{`issues: {DEMO-1: {delay_ms: -2}}`, `mock.issues.DEMO-1.delay_ms: must be an integer`},
		{`mcp_calls: {tool: a}`, `mock.mcp_calls: must be a list of turn groups`},
		{`mcp_calls: [{tool: a}]`, `mock.mcp_calls[0]: must be a list of {tool, server, arguments, expect_error} (got a mapping)`},
		{`mcp_calls: [[{tool: a}], [{server: x}]]`, `mock.mcp_calls[1][0].tool: required`},
		{`mcp_calls: [[{tool: " "}]]`, `mock.mcp_calls[0][0].tool: must not be empty`},
		{`mcp_calls: [[{tool: a, argument: {}}]]`, `mock.mcp_calls[0][0].argument: unknown key (known: arguments, expect_error, server, tool)`},
		{`mcp_calls: [[{tool: a, arguments: [1]}]]`, `mock.mcp_calls[0][0].arguments: must be a mapping (got a list)`},
		{`mcp_calls: [[{tool: a, arguments: {at: 2024-01-02T03:04:05Z}}]]`, `mock.mcp_calls[0][0].arguments.at: cannot be sent as JSON`},
		{`mcp_calls: [[{tool: a, expect_error: "yes"}]]`, `mock.mcp_calls[0][0].expect_error: must be true or false`},
		{`mcp_calls: [[{tool: a, server: ""}]]`, `mock.mcp_calls[0][0].server: must not be empty (omit it for sortie-tools)`},
		{`issues: {DEMO-1: {mcp_calls: [[3]]}}`, `mock.issues.DEMO-1.mcp_calls[0][0]: must be a mapping (got 3)`},
		{`files: {".sortie/mock-mcp.json": "{}"}`, `mock.files[".sortie/mock-mcp.json"]: .sortie/mock-mcp.json holds the mock's own mcp_calls state`},
	}
	for _, tt := range tests {
		t.Run(tt.yaml, func(t *testing.T) {
			var raw map[string]any
			if err := yaml.Unmarshal([]byte(tt.yaml), &raw); err != nil {
				t.Fatalf("test YAML: %v", err)
			}
			_, err := New(agent.Config{Kind: Kind, Options: raw})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("New: want an error containing %q, got %v", tt.want, err)
			}
		})
	}
}

func TestParseOptions_AcceptsJSONNumbers(t *testing.T) {
	// A config decoded from JSON has float64 numbers and map[string]any blocks.
	o, err := parseOptions(map[string]any{"delay_ms": float64(200), "issues": map[any]any{42: map[string]any{"delay_ms": 5}}})
	if err != nil {
		t.Fatal(err)
	}
	if o.Default.DelayMS != 200 || o.profileFor("42").DelayMS != 5 {
		t.Errorf("want delay 200 and 5 for issue 42, got %+v", o)
	}
}

func TestParseOptions_MCPCallsDefaultsAndArguments(t *testing.T) {
	o := mustParseYAML(t, `
mcp_calls:
  - [{tool: a}, {tool: b, server: other, expect_error: true, arguments: {n: 12345678901234567890, m: {1: x}, l: [$session_token, null]}}]
  - []
  -
`)
	g := o.Default.MCPCalls
	if len(g) != 3 || len(g[0]) != 2 || len(g[1]) != 0 || len(g[2]) != 0 {
		t.Fatalf("want groups of 2, 0 and 0 calls, got %+v", g)
	}
	if a := g[0][0]; a.Tool != "a" || a.Server != "sortie-tools" || a.ExpectError || string(a.Arguments) != "{}" {
		t.Errorf("want server sortie-tools, no expected error and {} arguments by default, got %+v", a)
	}
	// Integers keep every digit; YAML's non-string keys become JSON strings.
	want := `{"l":["$session_token",null],"m":{"1":"x"},"n":12345678901234567890}`
	if b := g[0][1]; b.Server != "other" || !b.ExpectError || string(b.Arguments) != want {
		t.Errorf("want server other, expect_error and arguments %s; got %+v (%s)", want, b, b.Arguments)
	}
}

// TestDocs_ExamplesAreValid keeps docs/agents/mock.md true: every YAML example in it
// must be accepted by New.
func TestDocs_ExamplesAreValid(t *testing.T) {
	doc, err := os.ReadFile("../../../docs/agents/mock.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllSubmatch(doc, -1)
	if len(blocks) == 0 {
		t.Fatal("docs/agents/mock.md: want YAML examples, found none")
	}
	for i, b := range blocks {
		var front struct {
			Agent struct {
				Kind string `yaml:"kind"`
			} `yaml:"agent"`
			Mock map[string]any `yaml:"mock"`
		}
		if err := yaml.Unmarshal(b[1], &front); err != nil {
			t.Errorf("example %d: YAML: %v", i+1, err)
			continue
		}
		if front.Agent.Kind != Kind || front.Mock == nil {
			continue // a fragment that is not a mock configuration
		}
		if _, err := New(agent.Config{Kind: Kind, Options: front.Mock}); err != nil {
			t.Errorf("example %d: %v", i+1, err)
		}
	}
}

func mustParseYAML(t *testing.T, src string) options {
	t.Helper()
	var raw map[string]any
	if err := yaml.Unmarshal([]byte(src), &raw); err != nil {
		t.Fatal(err)
	}
	o, err := parseOptions(raw)
	if err != nil {
		t.Fatal(err)
	}
	return o
}
