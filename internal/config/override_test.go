package config

import (
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

func TestLoad_EnvOverridesEveryField(t *testing.T) {
	env := map[string]string{
		"SORTIE_TRACKER_KIND":                   "jira",
		"SORTIE_TRACKER_ENDPOINT":               "https://j.example.com",
		"SORTIE_TRACKER_API_KEY":                "$NOT_EXPANDED",
		"SORTIE_TRACKER_PROJECT":                "PRJ",
		"SORTIE_TRACKER_QUERY_FILTER":           "labels = x",
		"SORTIE_TRACKER_HANDOFF_STATE":          "Review",
		"SORTIE_TRACKER_IN_PROGRESS_STATE":      "Doing",
		"SORTIE_TRACKER_ACTIVE_STATES":          " Todo, Doing ,,",
		"SORTIE_TRACKER_TERMINAL_STATES":        "Done",
		"SORTIE_TRACKER_COMMENTS_ON_DISPATCH":   "TRUE",
		"SORTIE_TRACKER_COMMENTS_ON_COMPLETION": "1",
		"SORTIE_TRACKER_COMMENTS_ON_FAILURE":    "0",
		"SORTIE_POLLING_INTERVAL_MS":            " 1000 ",
		"SORTIE_WORKSPACE_ROOT":                 "~/ws",
		"SORTIE_AGENT_KIND":                     "copilot-cli",
		"SORTIE_AGENT_COMMAND":                  "copilot",
		"SORTIE_AGENT_TURN_TIMEOUT_MS":          "2000",
		"SORTIE_AGENT_READ_TIMEOUT_MS":          "3000",
		"SORTIE_AGENT_STALL_TIMEOUT_MS":         "4000",
		"SORTIE_AGENT_MAX_CONCURRENT_AGENTS":    "5",
		"SORTIE_AGENT_MAX_TURNS":                "6",
		"SORTIE_AGENT_MAX_RETRY_BACKOFF_MS":     "7000",
		"SORTIE_AGENT_MAX_SESSIONS":             "8",
		"SORTIE_AGENT_MAX_TOKENS":               "9000",
		"SORTIE_AGENT_MAX_RETRIES":              "3",
		"SORTIE_DB_PATH":                        "state/$X.db",
	}
	cfg, dir := mustLoad(t, minimal, env)
	want := TrackerConfig{
		Kind: "jira", Endpoint: "https://j.example.com", APIKey: "$NOT_EXPANDED", Project: "PRJ",
		QueryFilter: "labels = x", ActiveStates: []string{"Todo", "Doing"}, TerminalStates: []string{"Done"},
		HandoffState: "Review", InProgressState: "Doing", Path: filepath.Join(dir, "issues.json"),
	}
	want.Comments.OnDispatch, want.Comments.OnCompletion = true, true
	if !reflect.DeepEqual(cfg.Tracker, want) {
		t.Errorf("Tracker\n got %+v\nwant %+v", cfg.Tracker, want)
	}
	wantAgent := AgentConfig{
		Kind: "copilot-cli", Command: "copilot", TurnTimeout: 2 * time.Second, ReadTimeout: 3 * time.Second,
		StallTimeout: 4 * time.Second, MaxConcurrentAgents: 5, MaxTurns: 6, MaxRetryBackoff: 7 * time.Second,
		MaxSessions: 8, MaxRetries: 3, MaxTokens: 9000, BudgetWarnRatio: DefaultBudgetWarnRatio, MaxConcurrentAgentsByState: map[string]int{},
	}
	if !reflect.DeepEqual(cfg.Agent, wantAgent) {
		t.Errorf("Agent\n got %+v\nwant %+v", cfg.Agent, wantAgent)
	}
	if cfg.Polling.Interval != time.Second {
		t.Errorf("Polling.Interval = %v, want 1s", cfg.Polling.Interval)
	}
	if cfg.Workspace.Root != "/home/op/ws" {
		t.Errorf("Workspace.Root = %q, want ~ expanded even from an override", cfg.Workspace.Root)
	}
	if want := filepath.Join(dir, "state/$X.db"); cfg.DBPath != want {
		t.Errorf("DBPath = %q, want %q (override values are not $-expanded)", cfg.DBPath, want)
	}
}

func TestLoad_OverridePrecedence(t *testing.T) {
	const fm = minimal + "polling: {interval_ms: 1000}\n"
	tests := []struct {
		name   string
		env    map[string]string
		dotenv string // "" = no .env file
		want   time.Duration
	}{
		{"YAML without overrides", nil, "", time.Second},
		{".env beats YAML", nil, "SORTIE_POLLING_INTERVAL_MS=2000\n", 2 * time.Second},
		{"environment beats .env", map[string]string{"SORTIE_POLLING_INTERVAL_MS": "3000"}, "SORTIE_POLLING_INTERVAL_MS=2000\n", 3 * time.Second},
		{"empty environment value falls through to .env", map[string]string{"SORTIE_POLLING_INTERVAL_MS": ""}, "SORTIE_POLLING_INTERVAL_MS=2000\n", 2 * time.Second},
		{"empty .env value falls through to YAML", nil, "SORTIE_POLLING_INTERVAL_MS=\n", time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := writeFile(t, dir, "WORKFLOW.md", "---\n"+fm+"---\n")
			vars := baseEnv()
			for k, v := range tt.env {
				vars[k] = v
			}
			opts := Options{Env: fakeEnv(vars)}
			if tt.dotenv != "" {
				opts.EnvFile = writeFile(t, dir, ".env", tt.dotenv)
			}
			cfg, err := Load(path, opts)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Polling.Interval != tt.want {
				t.Errorf("Polling.Interval = %v, want %v", cfg.Polling.Interval, tt.want)
			}
		})
	}
}

func TestLoad_EnvFileFromSORTIE_ENV_FILE(t *testing.T) {
	dir := t.TempDir()
	path := writeFile(t, dir, "WORKFLOW.md", "---\n"+minimal+"---\n")
	envFile := writeFile(t, dir, "custom.env", "SORTIE_AGENT_MAX_TURNS=4\nOTHER=ignored\n")
	other := writeFile(t, dir, "other.env", "SORTIE_AGENT_MAX_TURNS=9\n")
	vars := baseEnv()
	vars["SORTIE_ENV_FILE"] = envFile
	cfg, err := Load(path, Options{Env: fakeEnv(vars)})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Agent.MaxTurns != 4 {
		t.Errorf("MaxTurns = %d, want 4 from SORTIE_ENV_FILE", cfg.Agent.MaxTurns)
	}
	cfg, err = Load(path, Options{Env: fakeEnv(vars), EnvFile: other})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Agent.MaxTurns != 9 {
		t.Errorf("MaxTurns = %d, want 9: Options.EnvFile (--env-file) beats SORTIE_ENV_FILE", cfg.Agent.MaxTurns)
	}
}

func TestLoad_DotenvSuppliesVarReferences(t *testing.T) {
	dir := t.TempDir()
	path := writeFile(t, dir, "WORKFLOW.md", "---\ntracker: {kind: jira, api_key: $SORTIE_JIRA_API_KEY, project: P, active_states: [a]}\nagent: {kind: mock}\n---\n")
	envFile := writeFile(t, dir, ".env", "SORTIE_JIRA_API_KEY=from-dotenv\n")
	cfg, err := Load(path, Options{Env: fakeEnv(baseEnv()), EnvFile: envFile})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Tracker.APIKey != "from-dotenv" {
		t.Errorf("APIKey = %q, want the .env value", cfg.Tracker.APIKey)
	}
}

func TestLoad_OverrideErrorsNameTheVariable(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"int", map[string]string{"SORTIE_AGENT_MAX_TURNS": "many"},
			`config: agent.max_turns: must be an integer (got "many") (from SORTIE_AGENT_MAX_TURNS)`},
		{"negative", map[string]string{"SORTIE_AGENT_MAX_SESSIONS": "-1"},
			`config: agent.max_sessions: must be non-negative (got "-1") (from SORTIE_AGENT_MAX_SESSIONS)`},
		{"bool", map[string]string{"SORTIE_TRACKER_COMMENTS_ON_FAILURE": "yes"},
			`config: tracker.comments.on_failure: must be true, false, 1 or 0 (got "yes") (from SORTIE_TRACKER_COMMENTS_ON_FAILURE)`},
		{"kind", map[string]string{"SORTIE_AGENT_KIND": "aider"},
			`config: agent.kind: unknown agent kind; known kinds: claude-code, codex, copilot-cli, gemini, mock, opencode (got "aider") (from SORTIE_AGENT_KIND)`},
		{"in-progress state", map[string]string{"SORTIE_TRACKER_IN_PROGRESS_STATE": "Nope"},
			`config: tracker.in_progress_state: "Nope" is not in active_states; reconciliation would immediately cancel the worker (from SORTIE_TRACKER_IN_PROGRESS_STATE)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, problems, _ := checkFrontMatter(t, minimal, tt.env)
			if !hasProblem(problems, SeverityError, tt.want) {
				t.Errorf("want %q\ngot:\n%s", tt.want, problemLines(problems))
			}
		})
	}
}

func TestLoad_OverrideDoesNotClobberNonMapSection(t *testing.T) {
	_, problems, _ := checkFrontMatter(t, "tracker: {kind: file, path: x, active_states: [a]}\nagent: mock\n",
		map[string]string{"SORTIE_AGENT_KIND": "mock"})
	if !hasProblem(problems, SeverityError, `config: agent: must be a map (got "mock")`) {
		t.Errorf("want the section type error, got:\n%s", problemLines(problems))
	}
}

func TestLoad_MissingEnvFileIsAWarning(t *testing.T) {
	dir := t.TempDir()
	path := writeFile(t, dir, "WORKFLOW.md", "---\n"+minimal+"---\n")
	envFile := filepath.Join(dir, "absent.env")
	cfg, err := Load(path, Options{Env: fakeEnv(baseEnv()), EnvFile: envFile})
	if err != nil {
		t.Fatal(err)
	}
	want := "config: dotenv " + envFile + ": file not found; no overrides loaded from it"
	if !hasProblem(cfg.Warnings, SeverityWarning, want) {
		t.Errorf("want warning %q, got:\n%s", want, problemLines(cfg.Warnings))
	}
}

func TestLoad_MalformedEnvFileIsAnError(t *testing.T) {
	dir := t.TempDir()
	path := writeFile(t, dir, "WORKFLOW.md", "---\n"+minimal+"---\n")
	envFile := writeFile(t, dir, ".env", "# comment\nSORTIE_AGENT_MAX_TURNS=3\nnot an assignment\n")
	_, err := Load(path, Options{Env: fakeEnv(baseEnv()), EnvFile: envFile})
	want := "config: dotenv " + envFile + ":3: missing '=' in line"
	if err == nil || err.Error() != want {
		t.Errorf("error = %v, want %q", err, want)
	}
}
