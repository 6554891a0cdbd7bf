package config

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// examplesDir holds the package's own sample workflows: the shapes sortie 1.x
// workflows take (Jira and Claude Code, GitHub and Copilot, the file tracker with the
// mock agent, agent kinds this Sortie does not run), which must load here.
const examplesDir = "testdata/examples"

// referenceExamplesDir holds Sortie 1.9's sample workflows, third-party files beside the
// repository (/work/shared/testdata/README.md): read in place when present, as in CI,
// never copied.
const referenceExamplesDir = "../../../shared/testdata/sortie-1.9/examples"

func examplePath(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join(examplesDir, name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// referenceExamplePath returns the absolute path of one of Sortie 1.9's samples,
// skipping the test, and saying what was skipped, when the shared data is absent.
func referenceExamplePath(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join(referenceExamplesDir, name))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		t.Skipf("skipped: ../shared/testdata/sortie-1.9/examples/%s not present (third-party sortie 1.9 compatibility data, run in CI)", name)
	}
	return p
}

// promptLineOf returns the 1-based line of the first line of path starting with prefix.
func promptLineOf(t *testing.T, path, prefix string) int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for i, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, prefix) {
			return i + 1
		}
	}
	t.Fatalf("%s has no line starting with %q", path, prefix)
	return 0
}

func exampleEnv(extra map[string]string) func(string) (string, bool) {
	vars := baseEnv()
	for k, v := range extra {
		vars[k] = v
	}
	return fakeEnv(vars)
}

var jiraEnv = map[string]string{
	"SORTIE_JIRA_ENDPOINT":  "https://acme.atlassian.net",
	"SORTIE_JIRA_API_KEY":   "ops@acme.test:tok",
	"SORTIE_JIRA_PROJECT":   "ACME",
	"SORTIE_WORKSPACE_ROOT": "/srv/sortie/ws",
}

func TestExamples_JiraClaudeLoads(t *testing.T) {
	path := examplePath(t, "WORKFLOW.md")
	cfg, err := Load(path, Options{Env: exampleEnv(jiraEnv)})
	if err != nil {
		t.Fatal(err)
	}
	wantTracker := TrackerConfig{
		Kind: "jira", Endpoint: "https://acme.atlassian.net", APIKey: "ops@acme.test:tok", Project: "ACME",
		QueryFilter: "component = 'billing' AND labels = sortie", ActiveStates: []string{"Selected for Development", "In Progress"},
		TerminalStates: []string{"Done", "Rejected"}, HandoffState: "In Review", InProgressState: "In Progress",
	}
	if !reflect.DeepEqual(cfg.Tracker, wantTracker) {
		t.Errorf("Tracker\n got %+v\nwant %+v", cfg.Tracker, wantTracker)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"Polling.Interval", cfg.Polling.Interval, time.Minute},
		{"Workspace.Root", cfg.Workspace.Root, "/srv/sortie/ws"},
		{"Hooks.Timeout", cfg.Hooks.Timeout, 90 * time.Second},
		// $VAR inside hook scripts is left for the shell.
		{"Hooks.AfterCreate", cfg.Hooks.AfterCreate, "git clone --filter=blob:none $SORTIE_REPO_URL .\nmake deps\n"},
		{"Agent.Kind", cfg.Agent.Kind, "claude-code"},
		{"Agent.Command", cfg.Agent.Command, "claude"},
		{"Agent.MaxTurns", cfg.Agent.MaxTurns, 12},
		{"Agent.MaxConcurrentAgents", cfg.Agent.MaxConcurrentAgents, 3},
		{"Agent.TurnTimeout", cfg.Agent.TurnTimeout, 45 * time.Minute},
		{"Agent.StallTimeout", cfg.Agent.StallTimeout, 4 * time.Minute},
		// State keys are matched case-insensitively, so they are kept lowercased.
		{"Agent.MaxConcurrentAgentsByState", cfg.Agent.MaxConcurrentAgentsByState, map[string]int{"in progress": 2, "selected for development": 1}},
		{"Server", cfg.Server, ServerConfig{Host: "127.0.0.1", Port: 8650, PortSet: true}},
		{"claude-code permission_mode", cfg.Block("claude-code")["permission_mode"], "acceptEdits"},
		{"claude-code max_budget_usd", cfg.Block("claude-code")["max_budget_usd"], 3},
		{"SecretEnv", cfg.SecretEnv, []string{"SORTIE_JIRA_API_KEY", "SORTIE_JIRA_ENDPOINT"}},
		{"PromptLine", cfg.PromptLine, promptLineOf(t, path, "{{/* Billing team workflow")},
		{"Warnings", len(cfg.Warnings), 0},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s = %#v, want %#v", c.name, c.got, c.want)
		}
	}
	if !strings.HasPrefix(cfg.Prompt, "{{/* Billing team workflow") || !strings.HasSuffix(cfg.Prompt, `{{ .issue.labels | join ", " }}{{ end }}`) {
		t.Errorf("Prompt is not the trimmed template body: %.60q…", cfg.Prompt)
	}
}

// SORTIE_WORKSPACE_ROOT may be left unset: the default root applies, with a warning.
func TestExamples_WorkspaceRootVariableIsOptional(t *testing.T) {
	path := examplePath(t, "WORKFLOW.md")
	env := map[string]string{}
	for k, v := range jiraEnv {
		if k != "SORTIE_WORKSPACE_ROOT" {
			env[k] = v
		}
	}
	cfg, err := Load(path, Options{Env: exampleEnv(env)})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Workspace.Root != "/scratch/sortie_workspaces" {
		t.Errorf("Workspace.Root = %q, want the default", cfg.Workspace.Root)
	}
	if len(cfg.Warnings) != 1 || cfg.Warnings[0].Field != "workspace.root" {
		t.Errorf("want one workspace.root warning, got:\n%s", problemLines(cfg.Warnings))
	}
}

func TestExamples_JiraNeedsItsVariables(t *testing.T) {
	path := examplePath(t, "WORKFLOW.md")
	_, err := Load(path, Options{Env: exampleEnv(nil)})
	if err == nil {
		t.Fatal("Load succeeded without the Jira variables")
	}
	for _, want := range []string{
		"config: tracker.endpoint: environment variable SORTIE_JIRA_ENDPOINT is not set",
		"config: tracker.api_key: environment variable SORTIE_JIRA_API_KEY is not set",
		"config: tracker.project: environment variable SORTIE_JIRA_PROJECT is not set",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}

func TestExamples_TestWorkflowLoads(t *testing.T) {
	path := examplePath(t, "WORKFLOW.test.md")
	cfg, err := Load(path, Options{Env: exampleEnv(nil)})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Tracker.Kind != "file" || cfg.Agent.Kind != "mock" || cfg.Agent.MaxTurns != 2 || cfg.Agent.MaxConcurrentAgents != 1 {
		t.Errorf("unexpected config: tracker %q agent %q turns %d concurrency %d",
			cfg.Tracker.Kind, cfg.Agent.Kind, cfg.Agent.MaxTurns, cfg.Agent.MaxConcurrentAgents)
	}
	if cfg.Workspace.Root != "/tmp/sortie-example-workspaces" || cfg.Polling.Interval != 20*time.Second {
		t.Errorf("Workspace.Root = %q, Polling.Interval = %v", cfg.Workspace.Root, cfg.Polling.Interval)
	}
	// file.path is resolved against the WORKFLOW.md directory.
	if want := filepath.Join(cfg.Dir, "data", "issues.json"); cfg.TrackerPath() != want {
		t.Errorf("TrackerPath() = %q, want %q", cfg.TrackerPath(), want)
	}
	if len(cfg.Warnings) != 0 {
		t.Errorf("unexpected warnings:\n%s", problemLines(cfg.Warnings))
	}
}

func TestExamples_CopilotLoads(t *testing.T) {
	path := examplePath(t, "WORKFLOW.copilot.md")
	cfg, err := Load(path, Options{Env: exampleEnv(map[string]string{
		"GITHUB_TOKEN": "ghp_x", "SORTIE_GITHUB_PROJECT": "acme/app",
	})})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Tracker.Kind != "github" || cfg.Tracker.Project != "acme/app" || cfg.Tracker.APIKey != "ghp_x" ||
		cfg.Tracker.InProgressState != "doing" || cfg.Tracker.HandoffState != "needs-review" {
		t.Errorf("Tracker = %+v", cfg.Tracker)
	}
	if cfg.Agent.Kind != "copilot-cli" || cfg.Agent.Command != "copilot" || cfg.Agent.TurnTimeout != 20*time.Minute || cfg.Agent.MaxTurns != 6 {
		t.Errorf("Agent = %+v", cfg.Agent)
	}
	if got := cfg.Block("copilot-cli")["model"]; got != "gpt-5-mini" {
		t.Errorf(`copilot-cli block model = %v`, got)
	}
	if !reflect.DeepEqual(cfg.SecretEnv, []string{"GITHUB_TOKEN"}) {
		t.Errorf("SecretEnv = %v, want [GITHUB_TOKEN]", cfg.SecretEnv)
	}
	// $SORTIE_WORKSPACE_ROOT is unset here, so the default applies with a warning.
	if cfg.Workspace.Root != "/scratch/sortie_workspaces" {
		t.Errorf("Workspace.Root = %q", cfg.Workspace.Root)
	}
}

func TestExamples_CodexAndOpenCodeAgentsLoad(t *testing.T) {
	for _, tt := range []struct{ file, kind string }{
		{"WORKFLOW.codex.md", "codex"},
		{"WORKFLOW.opencode.md", "opencode"},
	} {
		t.Run(tt.file, func(t *testing.T) {
			path := examplePath(t, tt.file)
			cfg, problems := Check(path, Options{Env: exampleEnv(jiraEnv)})
			if cfg == nil {
				t.Fatalf("Check failed:\n%s", problemLines(problems))
			}
			if cfg.Agent.Kind != tt.kind {
				t.Errorf("Agent.Kind = %q, want %q", cfg.Agent.Kind, tt.kind)
			}
		})
	}
}

// The tests below read Sortie 1.9's own samples, when the shared data is beside the
// repository, and expect what those files say.

func TestReferenceExamples_JiraClaudeLoads(t *testing.T) {
	path := referenceExamplePath(t, "WORKFLOW.md")
	cfg, err := Load(path, Options{Env: exampleEnv(jiraEnv)})
	if err != nil {
		t.Fatal(err)
	}
	wantTracker := TrackerConfig{
		Kind: "jira", Endpoint: "https://acme.atlassian.net", APIKey: "ops@acme.test:tok", Project: "ACME",
		QueryFilter: "labels = 'agent-ready'", ActiveStates: []string{"To Do", "In Progress"},
		TerminalStates: []string{"Done", "Won't Do"}, HandoffState: "Human Review", InProgressState: "In Progress",
	}
	if !reflect.DeepEqual(cfg.Tracker, wantTracker) {
		t.Errorf("Tracker\n got %+v\nwant %+v", cfg.Tracker, wantTracker)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"Polling.Interval", cfg.Polling.Interval, 45 * time.Second},
		{"Workspace.Root", cfg.Workspace.Root, "/srv/sortie/ws"},
		{"Hooks.Timeout", cfg.Hooks.Timeout, 2 * time.Minute},
		{"Hooks.AfterCreate", cfg.Hooks.AfterCreate, "git clone --depth 1 $SORTIE_REPO_URL .\ngo mod download\n"},
		{"Agent.Kind", cfg.Agent.Kind, "claude-code"},
		{"Agent.Command", cfg.Agent.Command, "claude"},
		{"Agent.MaxTurns", cfg.Agent.MaxTurns, 15},
		{"Agent.MaxConcurrentAgents", cfg.Agent.MaxConcurrentAgents, 4},
		{"Agent.MaxConcurrentAgentsByState", cfg.Agent.MaxConcurrentAgentsByState, map[string]int{"in progress": 3, "to do": 1}},
		{"Server", cfg.Server, ServerConfig{Host: "127.0.0.1", Port: 8642, PortSet: true}},
		{"claude-code block", cfg.Block("claude-code")["permission_mode"], "bypassPermissions"},
		{"SecretEnv", cfg.SecretEnv, []string{"SORTIE_JIRA_API_KEY", "SORTIE_JIRA_ENDPOINT"}},
		{"PromptLine", cfg.PromptLine, promptLineOf(t, path, "{{/* Sortie sample workflow")},
		{"Warnings", len(cfg.Warnings), 0},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s = %#v, want %#v", c.name, c.got, c.want)
		}
	}
	if !strings.HasPrefix(cfg.Prompt, "{{/* Sortie sample workflow") || !strings.HasSuffix(cfg.Prompt, "{{ end }}") {
		t.Errorf("Prompt is not the trimmed template body: %.60q…", cfg.Prompt)
	}
}

// Sortie 1.9's samples document SORTIE_WORKSPACE_ROOT as optional, defaulting to the temp dir.
func TestReferenceExamples_WorkspaceRootVariableIsOptional(t *testing.T) {
	path := referenceExamplePath(t, "WORKFLOW.md")
	env := map[string]string{}
	for k, v := range jiraEnv {
		if k != "SORTIE_WORKSPACE_ROOT" {
			env[k] = v
		}
	}
	cfg, err := Load(path, Options{Env: exampleEnv(env)})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Workspace.Root != "/scratch/sortie_workspaces" {
		t.Errorf("Workspace.Root = %q, want the default", cfg.Workspace.Root)
	}
	if len(cfg.Warnings) != 1 || cfg.Warnings[0].Field != "workspace.root" {
		t.Errorf("want one workspace.root warning, got:\n%s", problemLines(cfg.Warnings))
	}
}

func TestReferenceExamples_JiraNeedsItsVariables(t *testing.T) {
	path := referenceExamplePath(t, "WORKFLOW.md")
	_, err := Load(path, Options{Env: exampleEnv(nil)})
	if err == nil {
		t.Fatal("Load succeeded without the Jira variables")
	}
	for _, want := range []string{
		"config: tracker.endpoint: environment variable SORTIE_JIRA_ENDPOINT is not set",
		"config: tracker.api_key: environment variable SORTIE_JIRA_API_KEY is not set",
		"config: tracker.project: environment variable SORTIE_JIRA_PROJECT is not set",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}

func TestReferenceExamples_TestWorkflowLoads(t *testing.T) {
	path := referenceExamplePath(t, "WORKFLOW.test.md")
	cfg, err := Load(path, Options{Env: exampleEnv(nil)})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Tracker.Kind != "file" || cfg.Agent.Kind != "mock" || cfg.Agent.MaxTurns != 3 || cfg.Agent.MaxConcurrentAgents != 2 {
		t.Errorf("unexpected config: tracker %q agent %q turns %d concurrency %d",
			cfg.Tracker.Kind, cfg.Agent.Kind, cfg.Agent.MaxTurns, cfg.Agent.MaxConcurrentAgents)
	}
	if cfg.Workspace.Root != "/tmp/sortie-test-workspaces" {
		t.Errorf("Workspace.Root = %q", cfg.Workspace.Root)
	}
	// file.path is resolved against the WORKFLOW.md directory.
	if want := filepath.Join(cfg.Dir, "examples", "issues.json"); cfg.TrackerPath() != want {
		t.Errorf("TrackerPath() = %q, want %q", cfg.TrackerPath(), want)
	}
	if len(cfg.Warnings) != 0 {
		t.Errorf("unexpected warnings:\n%s", problemLines(cfg.Warnings))
	}
}

func TestReferenceExamples_CopilotLoads(t *testing.T) {
	path := referenceExamplePath(t, "WORKFLOW.copilot.md")
	cfg, err := Load(path, Options{Env: exampleEnv(map[string]string{
		"GITHUB_TOKEN": "ghp_x", "SORTIE_GITHUB_PROJECT": "acme/app",
	})})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Tracker.Kind != "github" || cfg.Tracker.Project != "acme/app" || cfg.Tracker.APIKey != "ghp_x" {
		t.Errorf("Tracker = %+v", cfg.Tracker)
	}
	if cfg.Agent.Kind != "copilot-cli" || cfg.Agent.Command != "copilot" || cfg.Agent.TurnTimeout != 30*time.Minute {
		t.Errorf("Agent = %+v", cfg.Agent)
	}
	if got := cfg.Block("copilot-cli")["model"]; got != "gpt-4.1" {
		t.Errorf(`copilot-cli block model = %v`, got)
	}
	if !reflect.DeepEqual(cfg.SecretEnv, []string{"GITHUB_TOKEN"}) {
		t.Errorf("SecretEnv = %v, want [GITHUB_TOKEN]", cfg.SecretEnv)
	}
	// $SORTIE_WORKSPACE_ROOT is unset here, so the default applies with a warning.
	if cfg.Workspace.Root != "/scratch/sortie_workspaces" {
		t.Errorf("Workspace.Root = %q", cfg.Workspace.Root)
	}
}

// Sortie 1.9's codex and opencode samples load now that both agents exist; a key of
// the codex block that the codex adapter does not read is named in a warning.
func TestReferenceExamples_CodexAndOpenCodeAgentsLoad(t *testing.T) {
	for _, tt := range []struct{ file, kind, warning string }{
		{"WORKFLOW.codex.md", "codex", "config: codex.skip_git_repo_check: unknown key in codex"},
		{"WORKFLOW.opencode.md", "opencode", ""},
	} {
		t.Run(tt.file, func(t *testing.T) {
			path := referenceExamplePath(t, tt.file)
			cfg, problems := Check(path, Options{Env: exampleEnv(jiraEnv)})
			if cfg == nil {
				t.Fatalf("Check failed:\n%s", problemLines(problems))
			}
			if cfg.Agent.Kind != tt.kind {
				t.Errorf("Agent.Kind = %q, want %q", cfg.Agent.Kind, tt.kind)
			}
			if tt.warning != "" && !slices.ContainsFunc(problems, func(p Problem) bool { return strings.HasPrefix(p.String(), tt.warning) }) {
				t.Errorf("no warning %q in:\n%s", tt.warning, problemLines(problems))
			}
		})
	}
}
