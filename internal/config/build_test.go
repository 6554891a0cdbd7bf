package config

import (
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"sortie/internal/agent"
)

func TestLoad_Defaults(t *testing.T) {
	cfg, dir := mustLoad(t, minimal, nil)
	checks := []struct {
		name      string
		got, want any
	}{
		{"Path", cfg.Path, filepath.Join(dir, "WORKFLOW.md")},
		{"Dir", cfg.Dir, dir},
		{"Polling.Interval", cfg.Polling.Interval, 30 * time.Second},
		{"Workspace.Root", cfg.Workspace.Root, "/scratch/sortie_workspaces"},
		{"Hooks.Timeout", cfg.Hooks.Timeout, 60 * time.Second},
		{"Hooks.AfterCreate", cfg.Hooks.AfterCreate, ""},
		{"Agent.Command", cfg.Agent.Command, ""},
		{"Agent.TurnTimeout", cfg.Agent.TurnTimeout, time.Hour},
		{"Agent.ReadTimeout", cfg.Agent.ReadTimeout, 5 * time.Second},
		{"Agent.StallTimeout", cfg.Agent.StallTimeout, 5 * time.Minute},
		{"Agent.MaxRetryBackoff", cfg.Agent.MaxRetryBackoff, 5 * time.Minute},
		{"Agent.MaxConcurrentAgents", cfg.Agent.MaxConcurrentAgents, 10},
		{"Agent.MaxTurns", cfg.Agent.MaxTurns, 20},
		{"Agent.MaxSessions", cfg.Agent.MaxSessions, 0},
		{"Agent.MaxTokens", cfg.Agent.MaxTokens, int64(0)},
		{"Agent.MaxConcurrentAgentsByState", cfg.Agent.MaxConcurrentAgentsByState, map[string]int{}},
		{"DBPath", cfg.DBPath, filepath.Join(dir, ".sortie.db")},
		{"Server", cfg.Server, ServerConfig{Host: "127.0.0.1", Port: 7678}},
		{"Logging", cfg.Logging, LoggingConfig{Level: "info", Format: "text"}},
		{"Worker", cfg.Worker, WorkerConfig{SSHStrictHostKeyChecking: "accept-new"}},
		{"TokenRates", cfg.TokenRates, map[string]TokenRate{}},
		{"Tracker.TerminalStates", cfg.Tracker.TerminalStates, []string(nil)},
		{"Tracker.HandoffState", cfg.Tracker.HandoffState, ""},
		{"Tracker.InProgressState", cfg.Tracker.InProgressState, ""},
		{"Tracker.Comments.OnDispatch", cfg.Tracker.Comments.OnDispatch, false},
		{"Extensions", cfg.Extensions, map[string]any{}},
		{"Prompt", cfg.Prompt, "Do {{ .issue.title }}"},
		{"PromptLine", cfg.PromptLine, 9},
		{"SecretEnv", cfg.SecretEnv, []string(nil)},
		{"Warnings", cfg.Warnings, []Problem(nil)},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s = %#v, want %#v", c.name, c.got, c.want)
		}
	}
}

func TestLoad_AgentKindDefaultsToClaudeCode(t *testing.T) {
	cfg, _ := mustLoad(t, "tracker: {kind: file, path: x.json, active_states: [a]}\nagent: {command: claude}\n", nil)
	if cfg.Agent.Kind != "claude-code" {
		t.Errorf("Agent.Kind = %q, want claude-code", cfg.Agent.Kind)
	}
}

// TestLoad_AgentCommandDefaultsPerKind: agent.command defaults to the CLI the adapter
// registered (agent.Meta.DefaultCommand), so a WORKFLOW.md without it (the 1.9 README
// example) loads.
func TestLoad_AgentCommandDefaultsPerKind(t *testing.T) {
	want := map[string]string{"claude-code": "claude", "copilot-cli": "copilot", "mock": ""}
	for _, kind := range agent.Kinds() {
		meta, _ := agent.Lookup(kind)
		if w, pinned := want[kind]; pinned && w != meta.DefaultCommand {
			t.Errorf("agent.kind %s: the adapter's default command is %q, want %q (the adapter specs)", kind, meta.DefaultCommand, w)
		}
		cfg, _ := mustLoad(t, minimalWith("agent: {kind: "+kind+"}\n"), nil)
		if cfg.Agent.Command != meta.DefaultCommand {
			t.Errorf("agent.kind %s: Agent.Command = %q, want the adapter's default %q", kind, cfg.Agent.Command, meta.DefaultCommand)
		}
	}
	cfg, _ := mustLoad(t, minimalWith("agent: {kind: claude-code, command: /opt/claude/bin/claude}\n"), nil)
	if cfg.Agent.Command != "/opt/claude/bin/claude" {
		t.Errorf("an explicit agent.command = %q, want it kept", cfg.Agent.Command)
	}
}

func TestLoad_ExplicitValues(t *testing.T) {
	cfg, dir := mustLoad(t, `tracker:
  kind: jira
  endpoint: https://example.atlassian.net
  api_key: me@example.com:tok
  project: PROJ
  query_filter: labels = x
  active_states: [" To Do ", In Progress]
  terminal_states: [Done]
  handoff_state: Human Review
  in_progress_state: in progress
  comments: {on_dispatch: true, on_completion: true, on_failure: false}
polling: {interval_ms: "5000"}
workspace: {root: ws}
hooks:
  after_create: git clone x .
  before_run: make deps
  after_run: make fmt
  before_remove: echo bye
  timeout_ms: 1500
agent:
  kind: claude-code
  command: claude --verbose
  turn_timeout_ms: 1000
  read_timeout_ms: 2000
  stall_timeout_ms: 0
  max_retry_backoff_ms: 4000.0
  max_concurrent_agents: 3
  max_turns: 7
  max_sessions: 2
  max_retries: 4
  max_tokens: 5000000000
  max_concurrent_agents_by_state: {"In Progress": 2, TODO: "1"}
db_path: ~/sortie/state.db
server: {host: "::1", port: 0}
logging: {level: DEBUG, format: json}
worker:
  ssh_hosts: [a, " b ", a]
  max_concurrent_agents_per_host: 2
  ssh_strict_host_key_checking: "no"
token_rates:
  claude-code: {input_per_mtok: 3, output_per_mtok: 15.5, cache_read_per_mtok: 0.3}
notify_operator:
  rate_limit: {per_issue: {burst: 3, every_ms: "120000"}, global: {burst: 9, every_ms: 30000.0}}
`, nil)
	want := &Config{
		Path: filepath.Join(dir, "WORKFLOW.md"), Dir: dir,
		Tracker: TrackerConfig{
			Kind: "jira", Endpoint: "https://example.atlassian.net", APIKey: "me@example.com:tok",
			Project: "PROJ", QueryFilter: "labels = x",
			ActiveStates: []string{"To Do", "In Progress"}, TerminalStates: []string{"Done"},
			HandoffState: "Human Review", InProgressState: "in progress",
		},
		Hooks: HooksConfig{AfterCreate: "git clone x .", BeforeRun: "make deps", AfterRun: "make fmt", BeforeRemove: "echo bye", Timeout: 1500 * time.Millisecond},
		Agent: AgentConfig{
			Kind: "claude-code", Command: "claude --verbose",
			TurnTimeout: time.Second, ReadTimeout: 2 * time.Second, StallTimeout: 0, MaxRetryBackoff: 4 * time.Second,
			MaxConcurrentAgents: 3, MaxTurns: 7, MaxSessions: 2, MaxRetries: 4, MaxTokens: 5000000000, BudgetWarnRatio: DefaultBudgetWarnRatio,
			MaxConcurrentAgentsByState: map[string]int{"in progress": 2, "todo": 1},
		},
		DBPath:     "/home/op/sortie/state.db",
		Server:     ServerConfig{Host: "::1", Port: 0, PortSet: true},
		Logging:    LoggingConfig{Level: "debug", Format: "json"},
		Worker:     WorkerConfig{SSHHosts: []string{"a", "b"}, MaxConcurrentAgentsPerHost: 2, SSHStrictHostKeyChecking: "no"},
		TokenRates: map[string]TokenRate{"claude-code": {InputPerMTok: 3, OutputPerMTok: 15.5, CacheReadPerMTok: 0.3}},
		Extensions: map[string]any{},
		Prompt:     "Do {{ .issue.title }}", PromptLine: cfgPromptLine(t, cfgPath(dir)),
	}
	want.Tracker.Comments.OnDispatch, want.Tracker.Comments.OnCompletion = true, true
	want.Polling.Interval = 5 * time.Second
	want.Polling.WebhookInterval = DefaultWebhookInterval
	want.Workspace.Root = filepath.Join(dir, "ws")
	want.NotifyOperator.RateLimit = NotifyRateLimit{PerIssue: TokenBucket{3, 2 * time.Minute}, Global: TokenBucket{9, 30 * time.Second}}
	want.Cluster.Lease = DefaultClusterLease
	if !reflect.DeepEqual(cfg, want) {
		t.Errorf("config mismatch\n got %+v\nwant %+v", cfg, want)
	}
}

func cfgPath(dir string) string { return filepath.Join(dir, "WORKFLOW.md") }

// cfgPromptLine finds the line of the prompt in a file written by checkFrontMatter.
func cfgPromptLine(t *testing.T, path string) int {
	t.Helper()
	cfg, problems := Check(path, Options{Env: fakeEnv(baseEnv())})
	if cfg == nil {
		t.Fatalf("Check: %v", problems)
	}
	return cfg.PromptLine
}

// TestLoad_Errors lists every error rule with the exact message the operator sees.
func TestLoad_Errors(t *testing.T) {
	tests := []struct {
		name string
		fm   string
		env  map[string]string
		want string
	}{
		{"tracker kind is required", "tracker: {active_states: [a]}\nagent: {kind: mock}\n", nil,
			"config: tracker.kind: is required; set it to one of file, github, jira, linear"},
		{"unknown tracker kind lists the known ones", "tracker: {kind: asana, active_states: [a]}\nagent: {kind: mock}\n", nil,
			`config: tracker.kind: unknown tracker kind; known kinds: file, github, jira, linear (got "asana")`},
		{"unknown agent kind lists the known ones", minimalWith("agent: {kind: aider}\n"), nil,
			`config: agent.kind: unknown agent kind; known kinds: claude-code, codex, copilot-cli, gemini, mock, opencode (got "aider")`},
		{"active and terminal states both empty", "tracker: {kind: file, path: x.json}\nagent: {kind: mock}\n", nil,
			"config: tracker: active_states and terminal_states are both empty; list at least one state"},
		{"jira needs a project", "tracker: {kind: jira, api_key: k, active_states: [a]}\nagent: {kind: mock}\n", nil,
			"config: tracker.project: is required for tracker.kind jira; set it to the Jira project key"},
		{"github needs an api key", "tracker: {kind: github, project: o/r, active_states: [a]}\nagent: {kind: mock}\n", nil,
			"config: tracker.api_key: is required for tracker.kind github; set it, for example to $GITHUB_TOKEN"},
		{"github project is owner/repo", "tracker: {kind: github, api_key: k, project: repo, active_states: [a]}\nagent: {kind: mock}\n", nil,
			`config: tracker.project: must be owner/repo for tracker.kind github (got "repo")`},
		{"file tracker needs a path", "tracker: {kind: file, active_states: [a]}\nagent: {kind: mock}\n", nil,
			"config: tracker.path: is required for tracker.kind file; set tracker.path (or file.path) to the issues JSON file"},
		{"unset api key variable", "tracker: {kind: jira, api_key: $SORTIE_JIRA_API_KEY, project: P, active_states: [a]}\nagent: {kind: mock}\n", nil,
			"config: tracker.api_key: environment variable SORTIE_JIRA_API_KEY is not set"},
		{"empty api key variable", "tracker: {kind: jira, api_key: $K, project: P, active_states: [a]}\nagent: {kind: mock}\n", map[string]string{"K": ""},
			"config: tracker.api_key: environment variable K is empty"},
		{"unset project variable", "tracker: {kind: jira, api_key: k, project: '${PROJ}', active_states: [a]}\nagent: {kind: mock}\n", nil,
			"config: tracker.project: environment variable PROJ is not set"},
		{"unset endpoint variable", minimalWith("tracker: {kind: file, path: x, endpoint: $EP, active_states: [a]}\n"), nil,
			"config: tracker.endpoint: environment variable EP is not set"},
		{"empty handoff state", minimalWith("tracker: {kind: file, path: x, active_states: [a], handoff_state: ''}\n"), nil,
			"config: tracker.handoff_state: must not be empty; remove the key to turn it off"},
		{"handoff state from unset variable", minimalWith("tracker: {kind: file, path: x, active_states: [a], handoff_state: $H}\n"), nil,
			"config: tracker.handoff_state: environment variable H is not set"},
		{"handoff state must not be active", minimalWith("tracker: {kind: file, path: x, active_states: [Review], handoff_state: review}\n"), nil,
			`config: tracker.handoff_state: must not be one of active_states, or handed-off issues would be dispatched again (got "review")`},
		{"handoff state must not be terminal", minimalWith("tracker: {kind: file, path: x, active_states: [a], terminal_states: [Done], handoff_state: DONE}\n"), nil,
			`config: tracker.handoff_state: must not be one of terminal_states, or handoff would close the issue and delete its workspace (got "DONE")`},
		{"in-progress state must be active", minimalWith("tracker: {kind: file, path: x, active_states: [Todo], in_progress_state: Doing}\n"), nil,
			`config: tracker.in_progress_state: "Doing" is not in active_states; reconciliation would immediately cancel the worker`},
		{"in-progress state must differ from handoff", minimalWith("tracker: {kind: file, path: x, active_states: [Todo], handoff_state: Todo, in_progress_state: todo}\n"), nil,
			`config: tracker.in_progress_state: must differ from tracker.handoff_state (got "todo")`},
		{"state list must be a list", minimalWith("tracker: {kind: file, path: x, active_states: Todo}\n"), nil,
			`config: tracker.active_states: must be a list of strings (got "Todo")`},
		{"state list items must be strings", minimalWith("tracker: {kind: file, path: x, active_states: [a, {b: c}]}\n"), nil,
			"config: tracker.active_states[1]: must be a string (got a map)"},
		{"comments flags are booleans", minimalWith("tracker: {kind: file, path: x, active_states: [a], comments: {on_failure: 'yes'}}\n"), nil,
			`config: tracker.comments.on_failure: must be true or false (got "yes")`},
		{"section must be a map", minimal + "polling: 5\n", nil,
			"config: polling: must be a map (got 5)"},
		{"negative max_sessions", minimalWith("agent: {kind: mock, max_sessions: -1}\n"), nil,
			"config: agent.max_sessions: must be non-negative (got -1)"},
		{"fractional int", minimalWith("agent: {kind: mock, max_turns: 1.5}\n"), nil,
			"config: agent.max_turns: must be a whole number (got 1.5)"},
		{"boolean int", minimalWith("agent: {kind: mock, max_concurrent_agents: true}\n"), nil,
			"config: agent.max_concurrent_agents: must be an integer (got true)"},
		{"non-numeric int-string", minimal + "polling: {interval_ms: 'soon'}\n", nil,
			`config: polling.interval_ms: must be an integer (got "soon")`},
		{"negative timeout", minimalWith("agent: {kind: mock, turn_timeout_ms: -5}\n"), nil,
			"config: agent.turn_timeout_ms: must be non-negative (got -5)"},
		{"huge timeout", minimalWith("agent: {kind: mock, read_timeout_ms: 99999999999999999}\n"), nil,
			"config: agent.read_timeout_ms: is too large (got 99999999999999999)"},
		{"negative max_tokens", minimalWith("agent: {kind: mock, max_tokens: -10}\n"), nil,
			"config: agent.max_tokens: must be non-negative (got -10)"},
		{"by-state must be a map", minimalWith("agent: {kind: mock, max_concurrent_agents_by_state: [1]}\n"), nil,
			"config: agent.max_concurrent_agents_by_state: must be a map of state to limit (got a list)"},
		{"hooks are strings", minimal + "hooks: {after_create: [git, clone]}\n", nil,
			"config: hooks.after_create: must be a shell script string (got a list)"},
		{"db_path must be a string", minimal + "db_path: 5\n", nil,
			"config: db_path: must be a string (got 5)"},
		{"db_path from unset variable", minimal + "db_path: $DB\n", nil,
			"config: db_path: environment variable DB is not set"},
		{"server port range", minimal + "server: {port: 70000}\n", nil,
			"config: server.port: must be between 0 and 65535 (0 turns the server off) (got 70000)"},
		{"server port fraction", minimal + "server: {port: 80.5}\n", nil,
			"config: server.port: must be a whole number (got 80.5)"},
		{"server host must be an IP", minimal + "server: {host: localhost}\n", nil,
			`config: server.host: must be an IP address such as 127.0.0.1 or 0.0.0.0 (got "localhost")`},
		{"log level", minimal + "logging: {level: loud}\n", nil,
			`config: logging.level: must be debug, info, warn or error (got "loud")`},
		{"log format", minimal + "logging: {format: xml}\n", nil,
			`config: logging.format: must be text or json (got "xml")`},
		{"ssh hosts must be a list", minimal + "worker: {ssh_hosts: host1}\n", nil,
			`config: worker.ssh_hosts: must be a list of strings (got "host1")`},
		{"per-host limit non-negative", minimal + "worker: {max_concurrent_agents_per_host: -2}\n", nil,
			"config: worker.max_concurrent_agents_per_host: must be non-negative (got -2)"},
		{"api key value is never echoed", "tracker: {kind: jira, api_key: 123456, project: P, active_states: [a]}\nagent: {kind: mock}\n", nil,
			"config: tracker.api_key: must be a string (got an integer)"},
		{"~ needs HOME", minimal + "workspace: {root: ~/ws}\n", map[string]string{"HOME": ""},
			"config: workspace.root: cannot expand ~: HOME is not set"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, problems, _ := checkFrontMatter(t, tt.fm, tt.env)
			if !hasProblem(problems, SeverityError, tt.want) {
				t.Errorf("want error %q\ngot:\n%s", tt.want, problemLines(problems))
			}
			if cfg != nil {
				t.Errorf("Check returned a config despite errors")
			}
		})
	}
}

// minimalWith returns the minimal front matter with its tracker or agent section replaced.
func minimalWith(section string) string {
	tracker := "tracker:\n  kind: file\n  path: issues.json\n  active_states: [Todo]\n"
	agent := "agent:\n  kind: mock\n"
	if strings.HasPrefix(section, "tracker:") {
		return section + agent
	}
	return tracker + section
}

// TestLoad_Warnings lists every warning rule; a file with only warnings loads.
func TestLoad_Warnings(t *testing.T) {
	tests := []struct {
		name  string
		fm    string
		want  string
		check string
	}{
		{"unknown top-level key", minimal + "trackr: {}\n",
			"config: trackr: unknown top-level key; kept as an extension block but nothing reads it", CheckUnknownKey},
		{"unknown sub-key", minimalWith("agent: {kind: mock, max_turn: 3}\n"),
			"config: agent.max_turn: unknown key in agent; it is ignored (known: kind, command, turn_timeout_ms, read_timeout_ms, stall_timeout_ms, max_concurrent_agents, max_turns, max_retry_backoff_ms, max_concurrent_agents_by_state, max_sessions, max_tokens, max_cost_usd, max_retries, sandbox, run_as, keep_processes, budget_warn_ratio, tracker_reads, env)", CheckUnknownSubKey},
		{"hook timeout not positive", minimal + "hooks: {timeout_ms: 0}\n",
			"config: hooks.timeout_ms: must be positive; using the default 60000 (got 0)", CheckTypeMismatch},
		{"hook timeout not an int", minimal + "hooks: {timeout_ms: soon}\n",
			`config: hooks.timeout_ms: must be an integer; using the default 60000 (got "soon")`, CheckTypeMismatch},
		{"by-state entry not positive", minimalWith("agent: {kind: mock, max_concurrent_agents_by_state: {todo: 0}}\n"),
			"config: agent.max_concurrent_agents_by_state.todo: must be a positive integer; entry ignored (got 0)", CheckTypeMismatch},
		{"by-state entry not numeric", minimalWith("agent: {kind: mock, max_concurrent_agents_by_state: {todo: many}}\n"),
			`config: agent.max_concurrent_agents_by_state.todo: must be a positive integer; entry ignored (got "many")`, CheckTypeMismatch},
		{"max turns below one", minimalWith("agent: {kind: mock, max_turns: 0}\n"),
			"config: agent.max_turns: must be at least 1; using 1 (got 0)", CheckTypeMismatch},
		{"ssh host key checking", minimal + "worker: {ssh_strict_host_key_checking: maybe}\n",
			`config: worker.ssh_strict_host_key_checking: must be accept-new, yes or no; using accept-new (got "maybe")`, CheckTypeMismatch},
		{"per-host limit without hosts", minimal + "worker: {max_concurrent_agents_per_host: 2}\n",
			"config: worker.max_concurrent_agents_per_host: has no effect without worker.ssh_hosts; agents run locally", "worker.max_concurrent_agents_per_host"},
		{"token rate negative", minimal + "token_rates: {mock: {input_per_mtok: -1}}\n",
			"config: token_rates.mock.input_per_mtok: must be a non-negative number; token_rates.mock ignored (got -1)", CheckTypeMismatch},
		{"token rate entry not a map", minimal + "token_rates: {mock: 3}\n",
			"config: token_rates.mock: must be a map of rates; entry ignored (got 3)", CheckTypeMismatch},
		{"empty state entry", minimalWith("tracker: {kind: file, path: x, active_states: [a, '']}\n"),
			"config: tracker.active_states[1]: empty entry ignored", CheckTypeMismatch},
		{"state both active and terminal", minimalWith("tracker: {kind: file, path: x, active_states: [a], terminal_states: [A]}\n"),
			`config: tracker.terminal_states: "a" is both an active and a terminal state; it is treated as terminal`, "tracker.states.overlap"},
		{"unset workspace root variable falls back to the default", minimal + "workspace: {root: $SORTIE_WORKSPACE_ROOT}\n",
			"config: workspace.root: environment variable SORTIE_WORKSPACE_ROOT is not set; using the default /scratch/sortie_workspaces", "workspace.root"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, problems, _ := checkFrontMatter(t, tt.fm, nil)
			if cfg == nil {
				t.Fatalf("a warning must not make the file unusable:\n%s", problemLines(problems))
			}
			if !hasProblem(cfg.Warnings, SeverityWarning, tt.want) {
				t.Fatalf("want warning %q\ngot:\n%s", tt.want, problemLines(problems))
			}
			for _, p := range cfg.Warnings {
				if p.String() == tt.want && p.Check != tt.check {
					t.Errorf("check = %q, want %q", p.Check, tt.check)
				}
			}
		})
	}
}

func TestLoad_WarningsKeepDefaults(t *testing.T) {
	cfg, _ := mustLoad(t, minimalWith("agent: {kind: mock, max_concurrent_agents_by_state: {Todo: 2, doing: -1}}\n")+
		"hooks: {timeout_ms: -1}\nworker: {ssh_strict_host_key_checking: 3}\ntoken_rates: {mock: {input_per_mtok: x}, other: {output_per_mtok: 2}}\n", nil)
	if cfg.Hooks.Timeout != DefaultHookTimeout {
		t.Errorf("Hooks.Timeout = %v, want the default %v", cfg.Hooks.Timeout, DefaultHookTimeout)
	}
	if want := map[string]int{"todo": 2}; !reflect.DeepEqual(cfg.Agent.MaxConcurrentAgentsByState, want) {
		t.Errorf("by-state = %v, want %v (bad entries dropped)", cfg.Agent.MaxConcurrentAgentsByState, want)
	}
	if cfg.Worker.SSHStrictHostKeyChecking != "accept-new" {
		t.Errorf("SSHStrictHostKeyChecking = %q, want accept-new", cfg.Worker.SSHStrictHostKeyChecking)
	}
	if want := map[string]TokenRate{"other": {OutputPerMTok: 2}}; !reflect.DeepEqual(cfg.TokenRates, want) {
		t.Errorf("TokenRates = %v, want %v (bad entry dropped)", cfg.TokenRates, want)
	}
}

func TestLoad_KnownExtensionBlocksDrawNoWarning(t *testing.T) {
	fm := minimal + "file: {path: x}\nmock: {turn_outcomes: [completed]}\nclaude-code: {model: m}\ncopilot-cli: {}\n" +
		"notifications: []\n"
	cfg, _ := mustLoad(t, fm, nil)
	if len(cfg.Warnings) > 0 {
		t.Errorf("unexpected warnings:\n%s", problemLines(cfg.Warnings))
	}
	if got := cfg.Block("mock"); !reflect.DeepEqual(got, map[string]any{"turn_outcomes": []any{"completed"}}) {
		t.Errorf(`Block("mock") = %#v`, got)
	}
	if cfg.Block("notifications") != nil {
		t.Errorf(`Block("notifications") = %v, want nil for a non-map`, cfg.Block("notifications"))
	}
	if cfg.Block("absent") != nil {
		t.Errorf(`Block("absent") is not nil`)
	}
	if _, ok := cfg.Extensions["notifications"]; !ok {
		t.Errorf("notifications missing from Extensions")
	}
}

func TestLoad_SubObjectsNamedAfterKindsAreExempt(t *testing.T) {
	cfg, _ := mustLoad(t, "tracker: {kind: file, path: x, active_states: [a], jira: {x: 1}}\nagent: {kind: mock, mock: {y: 2}}\n", nil)
	if len(cfg.Warnings) > 0 {
		t.Errorf("unexpected warnings:\n%s", problemLines(cfg.Warnings))
	}
}

func TestLoad_CollectsAllProblems(t *testing.T) {
	_, problems, _ := checkFrontMatter(t, "tracker: {kind: nope}\nagent: {kind: mock, max_sessions: -1, max_turns: x}\nserver: {port: -1}\n", nil)
	errs := filterProblems(problems, SeverityError)
	if len(errs) < 4 {
		t.Errorf("got %d errors, want at least 4 (kind, states, max_sessions, max_turns, port):\n%s", len(errs), problemLines(problems))
	}
}

func TestLoad_ErrorListsEachProblemOnItsOwnLine(t *testing.T) {
	dir := t.TempDir()
	path := writeFile(t, dir, "WORKFLOW.md", "---\ntracker: {kind: nope, active_states: [a]}\nagent: {kind: mock, max_sessions: -1}\n---\n")
	_, err := Load(path, Options{Env: fakeEnv(baseEnv())})
	var verr *ValidationError
	if !errors.As(err, &verr) {
		t.Fatalf("Load error = %v (%T), want *ValidationError", err, err)
	}
	want := "config: " + path + ": 2 problems:\n" +
		`config: tracker.kind: unknown tracker kind; known kinds: file, github, jira, linear (got "nope")` + "\n" +
		"config: agent.max_sessions: must be non-negative (got -1)"
	if err.Error() != want {
		t.Errorf("error text:\n got %q\nwant %q", err.Error(), want)
	}
	if len(verr.Errors()) != 2 {
		t.Errorf("Errors() = %v, want 2", verr.Errors())
	}
}

func TestLoad_SingleErrorIsOneLine(t *testing.T) {
	dir := t.TempDir()
	path := writeFile(t, dir, "WORKFLOW.md", "---\n"+minimalWith("agent: {kind: mock, max_sessions: -1}\n")+"---\n")
	_, err := Load(path, Options{Env: fakeEnv(baseEnv())})
	if want := "config: agent.max_sessions: must be non-negative (got -1)"; err == nil || err.Error() != want {
		t.Errorf("error = %v, want %q", err, want)
	}
}

func TestLoad_MissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "WORKFLOW.md")
	_, err := Load(path, Options{Env: fakeEnv(baseEnv())})
	if want := "config: " + path + ": file not found"; err == nil || err.Error() != want {
		t.Errorf("error = %v, want %q", err, want)
	}
}

func TestLoad_NoFrontMatterNeedsTrackerKind(t *testing.T) {
	dir := t.TempDir()
	path := writeFile(t, dir, "WORKFLOW.md", "Just a prompt\n")
	cfg, problems := Check(path, Options{Env: fakeEnv(baseEnv())})
	if cfg != nil || !hasProblem(problems, SeverityError, "config: tracker.kind: is required; set it to one of file, github, jira, linear") {
		t.Errorf("want tracker.kind required, got:\n%s", problemLines(problems))
	}
}

func TestValidate_JiraProjectKey(t *testing.T) {
	for _, bad := range []string{"bad key!", "1PROJ", "PROJ-1", `P"ROJ`} {
		fm := "tracker:\n  kind: jira\n  project: '" + strings.ReplaceAll(bad, "'", "''") +
			"'\n  api_key: x\n  endpoint: https://jira.example.com\n  active_states: [todo]\nagent: {kind: mock}\n"
		_, problems, _ := checkFrontMatter(t, fm, nil)
		if !strings.Contains(problemLines(problems), "tracker.project: must be a Jira project key") {
			t.Errorf("project %q: problems =\n%s", bad, problemLines(problems))
		}
	}
	if _, problems, _ := checkFrontMatter(t, "tracker: {kind: jira, project: PROJ_2, api_key: x, endpoint: https://j.example.com, active_states: [todo]}\nagent: {kind: mock}\n", nil); strings.Contains(problemLines(problems), "tracker.project") {
		t.Errorf("PROJ_2 rejected:\n%s", problemLines(problems))
	}
}
