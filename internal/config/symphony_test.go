package config

import (
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"sortie/internal/agent"
)

// A Symphony WORKFLOW.md, as Symphony's users write it, loads unchanged and cleanly.
func TestSymphonyWorkflow_LoadsUnchanged(t *testing.T) {
	path, err := filepath.Abs(filepath.Join("testdata", "symphony", "WORKFLOW.md"))
	if err != nil {
		t.Fatal(err)
	}
	env := baseEnv()
	env[LinearAPIKeyEnv] = "lin_api_test"
	cfg, problems := Check(path, Options{Env: fakeEnv(env)})
	if cfg == nil || len(problems) > 0 {
		t.Fatalf("Check: want no problems, got:\n%s", problemLines(problems))
	}
	tr := cfg.Tracker
	if tr.Kind != "linear" || tr.Project != "symphony-0c79b11b75ea" || tr.APIKey != "lin_api_test" || tr.Endpoint != DefaultLinearEndpoint {
		t.Errorf("Tracker = %+v", tr)
	}
	if !reflect.DeepEqual(tr.ActiveStates, []string{"Todo", "In Progress", "Rework"}) ||
		!reflect.DeepEqual(tr.TerminalStates, []string{"Closed", "Cancelled", "Canceled", "Duplicate", "Done"}) {
		t.Errorf("states = %v / %v", tr.ActiveStates, tr.TerminalStates)
	}
	if !slices.Contains(cfg.SecretEnv, LinearAPIKeyEnv) {
		t.Errorf("SecretEnv = %v, want %s in it", cfg.SecretEnv, LinearAPIKeyEnv)
	}
	if cfg.Agent.Kind != "codex" || cfg.Agent.MaxConcurrentAgents != 10 || cfg.Agent.MaxTurns != 20 {
		t.Errorf("Agent = %+v", cfg.Agent)
	}
	if got := cfg.Block("codex")["command"]; got != "codex --config model_reasoning_effort=high app-server" {
		t.Errorf("codex.command = %v", got)
	}
	if cfg.Polling.Interval != 5*time.Second || cfg.Workspace.Root != "/home/op/code/symphony-workspaces" {
		t.Errorf("Polling = %v, Workspace = %v", cfg.Polling.Interval, cfg.Workspace.Root)
	}
	if cfg.PromptEngine != "" || !strings.Contains(cfg.Prompt, "{% if attempt %}") {
		t.Errorf("PromptEngine = %q, Prompt = %q", cfg.PromptEngine, cfg.Prompt)
	}
}

func TestLinear_DefaultsAndRequirements(t *testing.T) {
	t.Run("team key instead of project, explicit key and endpoint", func(t *testing.T) {
		cfg, _ := mustLoad(t, "tracker:\n  kind: linear\n  team_key: ENG\n  api_key: $MY_LINEAR\n  endpoint: http://127.0.0.1:9/graphql\n  active_states: [Ready]\n", map[string]string{"MY_LINEAR": "k"})
		if cfg.Tracker.Team != "ENG" || cfg.Tracker.Project != "" || cfg.Tracker.APIKey != "k" || cfg.Tracker.Endpoint != "http://127.0.0.1:9/graphql" {
			t.Errorf("Tracker = %+v", cfg.Tracker)
		}
		if !reflect.DeepEqual(cfg.Tracker.ActiveStates, []string{"Ready"}) || len(cfg.Tracker.TerminalStates) != 5 {
			t.Errorf("states = %v / %v", cfg.Tracker.ActiveStates, cfg.Tracker.TerminalStates)
		}
		// The default key's variable is stripped from agents even when another is used.
		if !reflect.DeepEqual(cfg.SecretEnv, []string{LinearAPIKeyEnv, "MY_LINEAR"}) {
			t.Errorf("SecretEnv = %v", cfg.SecretEnv)
		}
	})
	t.Run("default states", func(t *testing.T) {
		cfg, _ := mustLoad(t, "tracker: {kind: linear, project_slug: p}\n", map[string]string{LinearAPIKeyEnv: "k"})
		if !reflect.DeepEqual(cfg.Tracker.ActiveStates, []string{"Todo", "In Progress"}) {
			t.Errorf("ActiveStates = %v", cfg.Tracker.ActiveStates)
		}
	})
	tests := []struct {
		name, fm string
		env      map[string]string
		want     string
	}{
		{"scope required", "tracker: {kind: linear}\n", map[string]string{LinearAPIKeyEnv: "k"},
			"config: tracker.project_slug: is required for tracker.kind linear (tracker.project_slug or tracker.provider.project_slug), or tracker.team_key; set it to the project's slug (the last part of its Linear URL)"},
		{"key required", "tracker: {kind: linear, project_slug: p}\n", nil,
			"config: tracker.api_key: is required for tracker.kind linear; set the environment variable LINEAR_API_KEY, or set tracker.api_key"},
		{"slug and project disagree", "tracker: {kind: linear, project_slug: p, project: q}\n", map[string]string{LinearAPIKeyEnv: "k"},
			`config: tracker.project_slug: conflicts with tracker.project ("p" and "q"); keep one`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, problems, _ := checkFrontMatter(t, tt.fm, tt.env)
			if cfg != nil || !hasProblem(problems, SeverityError, tt.want) {
				t.Fatalf("want error %q, got:\n%s", tt.want, problemLines(problems))
			}
		})
	}
}

func TestLinearKeysOnAnotherTrackerWarn(t *testing.T) {
	_, problems, _ := checkFrontMatter(t, minimal+"prompt: {}\n", nil)
	if len(problems) != 0 {
		t.Fatalf("minimal: %s", problemLines(problems))
	}
	fm := strings.Replace(minimal, "  kind: file\n", "  kind: file\n  team_key: ENG\n", 1)
	cfg, problems, _ := checkFrontMatter(t, fm, nil)
	want := "config: tracker.team_key: is read only by tracker.kind linear; it is ignored for tracker.kind file"
	if cfg == nil || !hasProblem(problems, SeverityWarning, want) {
		t.Fatalf("want warning %q, got:\n%s", want, problemLines(problems))
	}
}

func TestRequiredLabels(t *testing.T) {
	fm := strings.Replace(minimal, "  kind: file\n", "  kind: file\n  required_labels: [\" Agent \", agent, Backend, \"\"]\n", 1)
	cfg, problems, _ := checkFrontMatter(t, fm, nil)
	if cfg == nil {
		t.Fatalf("Check failed:\n%s", problemLines(problems))
	}
	if want := []string{"agent", "backend", ""}; !reflect.DeepEqual(cfg.Tracker.RequiredLabels, want) {
		t.Errorf("RequiredLabels = %q, want %q", cfg.Tracker.RequiredLabels, want)
	}
	if want := "config: tracker.required_labels[3]: is blank: a blank label matches no issue, so no issue will be dispatched"; !hasProblem(problems, SeverityWarning, want) {
		t.Errorf("want warning %q, got:\n%s", want, problemLines(problems))
	}
	for _, bad := range []string{"required_labels: agent", "required_labels: [1]"} {
		fm := strings.Replace(minimal, "  kind: file\n", "  kind: file\n  "+bad+"\n", 1)
		if cfg, problems, _ := checkFrontMatter(t, fm, nil); cfg != nil {
			t.Errorf("%s: loaded, want an error (problems:\n%s)", bad, problemLines(problems))
		}
	}
}

func TestTrackerProvider_PreservedAndItsSecretsStripped(t *testing.T) {
	fm := strings.Replace(minimal, "  kind: file\n", "  kind: file\n  provider:\n    board: 7\n    auth:\n      api_token: $BOARD_TOKEN\n    custom_fields: [a, b]\n", 1)
	cfg, problems, _ := checkFrontMatter(t, fm, map[string]string{"BOARD_TOKEN": "t"})
	if cfg == nil || len(problems) > 0 {
		t.Fatalf("Check: want no problems, got:\n%s", problemLines(problems))
	}
	want := map[string]any{"board": 7, "auth": map[string]any{"api_token": "$BOARD_TOKEN"}, "custom_fields": []any{"a", "b"}}
	if !reflect.DeepEqual(cfg.Tracker.Provider, want) {
		t.Errorf("Provider = %#v, want %#v (unchanged)", cfg.Tracker.Provider, want)
	}
	if !slices.Contains(cfg.SecretEnv, "BOARD_TOKEN") {
		t.Errorf("SecretEnv = %v, want BOARD_TOKEN", cfg.SecretEnv)
	}
	fm = strings.Replace(minimal, "  kind: file\n", "  kind: file\n  provider: [x]\n", 1)
	if cfg, _, _ := checkFrontMatter(t, fm, nil); cfg != nil {
		t.Error("a provider that is not a map loaded")
	}
}

func TestCodexBlock(t *testing.T) {
	const tracker = "tracker: {kind: file, path: i.json, active_states: [Todo]}\n"
	t.Run("implies the agent and maps the timeouts", func(t *testing.T) {
		cfg, _ := mustLoad(t, tracker+"codex: {command: codex app-server, stall_timeout_ms: 0, read_timeout_ms: 9000, turn_timeout_ms: 60000}\n", nil)
		a := cfg.Agent
		if a.Kind != "codex" || a.StallTimeout != 0 || a.ReadTimeout != 9*time.Second || a.TurnTimeout != DefaultTurnTimeout {
			t.Errorf("Agent = kind %q stall %v read %v turn %v", a.Kind, a.StallTimeout, a.ReadTimeout, a.TurnTimeout)
		}
	})
	t.Run("negative stall timeout disables, as in Symphony", func(t *testing.T) {
		cfg, _ := mustLoad(t, tracker+"codex: {stall_timeout_ms: -1}\n", nil)
		if cfg.Agent.StallTimeout != 0 {
			t.Errorf("StallTimeout = %v", cfg.Agent.StallTimeout)
		}
	})
	t.Run("agent keys win", func(t *testing.T) {
		cfg, _ := mustLoad(t, tracker+"agent: {stall_timeout_ms: 1000, read_timeout_ms: 2000}\ncodex: {stall_timeout_ms: 0, read_timeout_ms: 9000}\n", nil)
		if cfg.Agent.StallTimeout != time.Second || cfg.Agent.ReadTimeout != 2*time.Second {
			t.Errorf("Agent = stall %v read %v", cfg.Agent.StallTimeout, cfg.Agent.ReadTimeout)
		}
	})
	t.Run("explicit agent kind wins and the block is not read", func(t *testing.T) {
		cfg, _ := mustLoad(t, tracker+"agent: {kind: mock}\ncodex: {stall_timeout_ms: 0, bogus: 1}\n", nil)
		if cfg.Agent.Kind != "mock" || cfg.Agent.StallTimeout != DefaultStallTimeout {
			t.Errorf("Agent = kind %q stall %v", cfg.Agent.Kind, cfg.Agent.StallTimeout)
		}
	})
	t.Run("unknown keys are named", func(t *testing.T) {
		cfg, problems, _ := checkFrontMatter(t, tracker+"codex: {command: codex app-server, sandbox_mode: x}\n", nil)
		if cfg == nil || !slices.ContainsFunc(problems, func(p Problem) bool {
			return p.Severity == SeverityWarning && p.Field == "codex.sandbox_mode" && strings.Contains(p.Message, "unknown key in codex")
		}) {
			t.Fatalf("want a warning naming codex.sandbox_mode, got:\n%s", problemLines(problems))
		}
	})
	t.Run("the keys are those the codex adapter declares, Symphony's among them", func(t *testing.T) {
		meta, ok := agent.Lookup("codex")
		if !ok {
			t.Fatal("the codex adapter is not registered")
		}
		known := meta.Options.Known()
		// Symphony's own keys (docs/configuration.md, "Symphony compatibility").
		for _, k := range []string{"command", "approval_policy", "thread_sandbox", "turn_sandbox_policy", "turn_timeout_ms", "read_timeout_ms", "stall_timeout_ms"} {
			if !slices.Contains(known, k) {
				t.Errorf("Symphony's codex.%s is not among the codex adapter's keys %v", k, known)
			}
		}
		block := "codex:\n"
		for _, k := range known {
			block += "  " + k + ":\n"
		}
		cfg, problems, _ := checkFrontMatter(t, tracker+block, nil)
		if cfg == nil || slices.ContainsFunc(problems, func(p Problem) bool { return p.Check == CheckUnknownSubKey }) {
			t.Errorf("every declared key, empty: want no error and no unknown_sub_key warning, got:\n%s", problemLines(problems))
		}
	})
	t.Run("bad timeout is an error naming the codex key", func(t *testing.T) {
		cfg, problems, _ := checkFrontMatter(t, tracker+"codex: {read_timeout_ms: soon}\n", nil)
		if cfg != nil || !slices.ContainsFunc(problems, func(p Problem) bool { return p.IsError() && p.Field == "codex.read_timeout_ms" }) {
			t.Fatalf("want an error on codex.read_timeout_ms, got:\n%s", problemLines(problems))
		}
	})
}

func TestPromptEngine(t *testing.T) {
	for _, e := range []string{"go", "liquid", "Liquid"} {
		cfg, _ := mustLoad(t, minimal+"prompt: {engine: "+e+"}\n", nil)
		if cfg.PromptEngine != strings.ToLower(e) {
			t.Errorf("engine %s: PromptEngine = %q", e, cfg.PromptEngine)
		}
	}
	cfg, problems, _ := checkFrontMatter(t, minimal+"prompt: {engine: jinja, style: x}\n", nil)
	if cfg != nil || !hasProblem(problems, SeverityError, `config: prompt.engine: must be go or liquid; remove it to detect the dialect from the template (got "jinja")`) {
		t.Fatalf("got:\n%s", problemLines(problems))
	}
	if !slices.ContainsFunc(problems, func(p Problem) bool { return p.Field == "prompt.style" && p.Severity == SeverityWarning }) {
		t.Errorf("no warning naming prompt.style:\n%s", problemLines(problems))
	}
}

// Unknown keys nested in any known section are named in a warning, never dropped
// silently.
func TestUnknownNestedKeysAreNamed(t *testing.T) {
	fm := "tracker: {kind: file, path: i.json, active_states: [Todo], owner: me}\n" +
		"polling: {interval_ms: 1000, jitter_ms: 5}\nworkspace: {root: /w, keep: true}\n" +
		"hooks: {after_create: x, on_error: y}\nagent: {kind: mock, model: m}\nserver: {port: 0, tls: true}\n"
	cfg, problems, _ := checkFrontMatter(t, fm, nil)
	if cfg == nil {
		t.Fatalf("Check failed:\n%s", problemLines(problems))
	}
	for _, f := range []string{"tracker.owner", "polling.jitter_ms", "workspace.keep", "hooks.on_error", "agent.model", "server.tls"} {
		if !slices.ContainsFunc(problems, func(p Problem) bool {
			return p.Severity == SeverityWarning && p.Field == f && strings.Contains(p.String(), f)
		}) {
			t.Errorf("no warning naming %s:\n%s", f, problemLines(problems))
		}
	}
}

// tracker.assignee (Symphony's) limits a Linear tracker to one user's issues, with
// $LINEAR_ASSIGNEE as the default. Any other tracker kind refuses it rather than
// dispatch everyone's issues.
func TestTrackerAssignee(t *testing.T) {
	const linear = "tracker: {kind: linear, project_slug: p%s}\n"
	tests := []struct {
		name, extra string
		env         map[string]string
		want        string
	}{
		{"absent: no filter", "", nil, ""},
		{"me", ", assignee: me", nil, "me"},
		{"e-mail, trimmed", ", assignee: ' dev@example.com '", nil, "dev@example.com"},
		{"variable", ", assignee: $WHO", map[string]string{"WHO": "user-uuid-1"}, "user-uuid-1"},
		{"LINEAR_ASSIGNEE default", "", map[string]string{LinearAssigneeEnv: " me "}, "me"},
		{"written key wins over LINEAR_ASSIGNEE", ", assignee: a@b.c", map[string]string{LinearAssigneeEnv: "me"}, "a@b.c"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := map[string]string{LinearAPIKeyEnv: "k"}
			for k, v := range tt.env {
				env[k] = v
			}
			cfg, _ := mustLoad(t, fmt.Sprintf(linear, tt.extra), env)
			if cfg.Tracker.Assignee != tt.want {
				t.Errorf("Assignee = %q, want %q", cfg.Tracker.Assignee, tt.want)
			}
		})
	}
	errs := []struct {
		name, fm string
		env      map[string]string
		want     string
	}{
		{"other kinds refuse it", "tracker: {kind: github, project: o/r, api_key: k, assignee: me}\n", nil,
			"config: tracker.assignee: is only supported for tracker.kind linear (got tracker.kind github); remove it, or scope with tracker.query_filter"},
		{"file tracker too", "tracker: {kind: file, path: i.json, active_states: [Todo], assignee: me}\nagent: {kind: mock}\n", nil,
			"config: tracker.assignee: is only supported for tracker.kind linear (got tracker.kind file); remove it, or scope with tracker.query_filter"},
		{"unset variable", fmt.Sprintf(linear, ", assignee: $WHO"), map[string]string{LinearAPIKeyEnv: "k"},
			"config: tracker.assignee: environment variable WHO is not set"},
		{"blank", fmt.Sprintf(linear, ", assignee: ' '"), map[string]string{LinearAPIKeyEnv: "k"},
			"config: tracker.assignee: must not be empty (me, a user id or an e-mail); remove the key to dispatch every assignee's issues"},
	}
	for _, tt := range errs {
		t.Run(tt.name, func(t *testing.T) {
			cfg, problems, _ := checkFrontMatter(t, tt.fm, tt.env)
			if cfg != nil || !hasProblem(problems, SeverityError, tt.want) {
				t.Fatalf("want the error %q, got:\n%s", tt.want, problemLines(problems))
			}
		})
	}
}
