package copilot

import (
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"sortie/internal/agent"
)

func TestRegister_KindNeedsACommandAndDefaultsToCopilot(t *testing.T) {
	meta, ok := agent.Lookup(Kind)
	if !ok {
		t.Fatalf("kind %q is not registered", Kind)
	}
	if !meta.RequiresCommand || meta.DefaultCommand != "copilot" || !slices.Equal(meta.Env, EnvNames) || meta.EnvFrom != nil ||
		!slices.Equal(meta.Options.Known(), optionSpecs.Known()) || meta.Options.Strict {
		t.Errorf("meta = %+v, want a required command defaulting to copilot, EnvNames and optionSpecs", meta)
	}
	a, err := agent.New(agent.Config{Kind: Kind, Command: "copilot"})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := a.(agent.Versioner); !ok {
		t.Error("the adapter does not implement agent.Versioner")
	}
	if _, ok := a.(agent.Warner); !ok {
		t.Error("the adapter does not implement agent.Warner")
	}
}

func TestOptions_DefaultsAndEveryKey(t *testing.T) {
	o, warnings, err := parseOptions(nil, "/wf")
	if err != nil || len(warnings) > 0 {
		t.Fatalf("empty block: %v, %v", err, warnings)
	}
	if want := (options{MaxAutopilotContinues: 50}); o != want {
		t.Errorf("defaults = %+v, want %+v", o, want)
	}

	o, warnings, err = parseOptions(map[string]any{
		"model": " gpt-4.1 ", "max_autopilot_continues": 100, "agent": "coding-agent",
		"allowed_tools": []any{"shell(git:*)", " write "}, "denied_tools": "shell(git push), url",
		"available_tools": "bash,view", "excluded_tools": []any{"fetch"},
		"mcp_config": "./mcp-servers.json", "disable_builtin_mcps": true,
		"no_custom_instructions": true, "experimental": false,
	}, "/wf")
	if err != nil || len(warnings) > 0 {
		t.Fatalf("full block: %v, %v", err, warnings)
	}
	want := options{Model: "gpt-4.1", MaxAutopilotContinues: 100, Agent: "coding-agent",
		AllowedTools: "shell(git:*),write", DeniedTools: "shell(git push),url", AvailableTools: "bash,view",
		ExcludedTools: "fetch", MCPConfig: "/wf/mcp-servers.json", DisableBuiltinMCPs: true, NoCustomInstructions: true}
	if o != want {
		t.Errorf("options = %+v\nwant      %+v", o, want)
	}
}

// TestOptions_CopilotsOwnReadings: what only copilot makes of a value. How any key is
// read, and what an unknown key draws, is option.Set's (internal/option/option_test.go).
func TestOptions_CopilotsOwnReadings(t *testing.T) {
	cases := []struct {
		key  string
		val  any
		want options
	}{
		{"max_autopilot_continues", 0, options{MaxAutopilotContinues: 0}},
		{"max_autopilot_continues", nil, options{MaxAutopilotContinues: 50}},
		{"mcp_config", "rel.json", options{MaxAutopilotContinues: 50, MCPConfig: "/wf/rel.json"}},
		{"allowed_tools", " , shell , ", options{MaxAutopilotContinues: 50, AllowedTools: "shell"}},
	}
	for _, c := range cases {
		o, _, err := parseOptions(map[string]any{c.key: c.val}, "/wf")
		if err != nil || o != c.want {
			t.Errorf("%s: %#v → %+v, %v; want %+v", c.key, c.val, o, err, c.want)
		}
	}
	for _, key := range []string{"model", "agent"} {
		raw := map[string]any{key: "--yolo"}
		want := "copilot-cli." + key + `: must not start with '-' (got "--yolo")`
		if _, _, err := parseOptions(raw, ""); err == nil || err.Error() != want {
			t.Errorf("%s: --yolo → %v, want %q", key, err, want)
		}
		if _, err := New(agent.Config{Kind: Kind, Command: "copilot", Options: raw}); err == nil {
			t.Errorf("New accepted %s: --yolo", key)
		}
	}
}

// TestArgs_FlagMapping pins the command line of a turn for each configuration: the
// fixed autopilot flags, tool scoping replacing --allow-all, and the resume flags.
func TestArgs_FlagMapping(t *testing.T) {
	fixed := []string{"--prompt=fix it", "--output-format", "json", "-s", "--autopilot", "--no-ask-user", "--max-autopilot-continues", "50"}
	cases := []struct {
		name string
		opts map[string]any
		ta   turnArgs
		want []string // after the fixed flags
	}{
		{"no scoping allows all", nil, turnArgs{}, []string{"--allow-all"}},
		{"allowed_tools", map[string]any{"allowed_tools": []any{"shell(git:*)", "write"}}, turnArgs{},
			[]string{"--allow-tool=shell(git:*),write"}},
		{"denied_tools", map[string]any{"denied_tools": "shell(git push)"}, turnArgs{},
			[]string{"--deny-tool=shell(git push)"}},
		{"available_tools", map[string]any{"available_tools": "bash,view"}, turnArgs{},
			[]string{"--available-tools=bash,view"}},
		{"excluded_tools", map[string]any{"excluded_tools": "fetch"}, turnArgs{},
			[]string{"--excluded-tools=fetch"}},
		{"all four scoping keys, in a fixed order", map[string]any{"excluded_tools": "d", "available_tools": "c",
			"denied_tools": "b", "allowed_tools": "a"}, turnArgs{},
			[]string{"--allow-tool=a", "--deny-tool=b", "--available-tools=c", "--excluded-tools=d"}},
		{"an empty scoping list scopes nothing", map[string]any{"allowed_tools": ""}, turnArgs{}, []string{"--allow-all"}},
		{"resume by id", nil, turnArgs{mode: resumeID, sessionID: "aa778ea0-6eab-4ce9-b87e-11d6d33dab4f"},
			[]string{"--allow-all", "--resume", "aa778ea0-6eab-4ce9-b87e-11d6d33dab4f"}},
		{"continue fallback", nil, turnArgs{mode: resumeContinue}, []string{"--allow-all", "--continue"}},
		{"pass-through flags", map[string]any{"model": "gpt-4.1", "agent": "coding-agent",
			"disable_builtin_mcps": true, "no_custom_instructions": true, "experimental": true}, turnArgs{},
			[]string{"--allow-all", "--model", "gpt-4.1", "--agent", "coding-agent", "--disable-builtin-mcps",
				"--no-custom-instructions", "--experimental"}},
		{"mcp configs and usage file", nil, turnArgs{mcpConfigs: []string{"/ops/mcp.json", "/ws/.sortie/mcp.json"}, usageFile: "/tmp/u.json"},
			[]string{"--allow-all", "--additional-mcp-config", "@/ops/mcp.json", "--additional-mcp-config", "@/ws/.sortie/mcp.json",
				"--usage-output-file", "/tmp/u.json"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o, _, err := parseOptions(c.opts, "")
			if err != nil {
				t.Fatal(err)
			}
			c.ta.prompt = "fix it"
			got := o.args(c.ta)
			if want := append(slices.Clone(fixed), c.want...); !reflect.DeepEqual(got, want) {
				t.Errorf("args =\n  %q\nwant\n  %q", got, want)
			}
		})
	}
}

func TestArgs_PromptOnStdinHasNoPromptFlag(t *testing.T) {
	got := options{MaxAutopilotContinues: 3}.args(turnArgs{})
	if slices.ContainsFunc(got, func(a string) bool { return a == "-p" || strings.HasPrefix(a, "--prompt") }) {
		t.Errorf("args = %q, want no prompt flag", got)
	}
	if got[0] != "--output-format" {
		t.Errorf("args = %q", got)
	}
}

func TestArgs_MaxAutopilotContinuesZeroIsPassed(t *testing.T) {
	o, _, _ := parseOptions(map[string]any{"max_autopilot_continues": 0}, "")
	got := strings.Join(o.args(turnArgs{prompt: "p"}), " ")
	if !strings.Contains(got, "--max-autopilot-continues 0 ") {
		t.Errorf("args = %q, want --max-autopilot-continues 0", got)
	}
}

func TestNew_CommandWordsAndDefaults(t *testing.T) {
	a, err := New(agent.Config{Kind: Kind, Command: "npx  @github/copilot ", Options: map[string]any{"mcp_config": "m.json"}, WorkflowDir: "/srv/wf"})
	if err != nil {
		t.Fatal(err)
	}
	ad := a.(*adapter)
	if !reflect.DeepEqual(ad.Program, []string{"npx", "@github/copilot"}) || dialectOf(ad).gh != "gh" {
		t.Errorf("adapter = %+v", ad)
	}
	if dialectOf(ad).opts.MCPConfig != filepath.Join("/srv/wf", "m.json") {
		t.Errorf("mcp_config = %q, want it resolved against WORKFLOW.md's directory", dialectOf(ad).opts.MCPConfig)
	}
}
