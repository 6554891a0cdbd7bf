package config

import (
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

func TestLoad_VarReferences(t *testing.T) {
	env := map[string]string{
		"EP": "https://jira.example.com", "KEY": "tok", "USER_PART": "me@example.com",
		"PROJ": "PRJ", "FILTER": "labels = ready", "HANDOFF": "Review", "DOING": "Doing",
		"WS": "/srv/ws", "DB": "/srv/db/s.db", "TEAM": "blue",
	}
	tests := []struct {
		name string
		fm   string
		get  func(*Config) any
		want any
	}{
		{"endpoint $VAR", "endpoint: $EP", func(c *Config) any { return c.Tracker.Endpoint }, "https://jira.example.com"},
		{"endpoint ${VAR}", "endpoint: ${EP}", func(c *Config) any { return c.Tracker.Endpoint }, "https://jira.example.com"},
		{"endpoint with $ later is literal", "endpoint: https://x/$EP", func(c *Config) any { return c.Tracker.Endpoint }, "https://x/$EP"},
		{"endpoint with surrounding spaces", "endpoint: '  $EP '", func(c *Config) any { return c.Tracker.Endpoint }, "https://jira.example.com"},
		{"api_key expands anywhere", "api_key: ${USER_PART}:$KEY", func(c *Config) any { return c.Tracker.APIKey }, "me@example.com:tok"},
		{"api_key literal", "api_key: plain", func(c *Config) any { return c.Tracker.APIKey }, "plain"},
		{"project", "project: $PROJ", func(c *Config) any { return c.Tracker.Project }, "PRJ"},
		{"query_filter", "query_filter: $FILTER", func(c *Config) any { return c.Tracker.QueryFilter }, "labels = ready"},
		{"query_filter literal $ inside", "query_filter: cost > $5", func(c *Config) any { return c.Tracker.QueryFilter }, "cost > $5"},
		{"handoff_state", "handoff_state: $HANDOFF", func(c *Config) any { return c.Tracker.HandoffState }, "Review"},
		{"in_progress_state", "in_progress_state: $DOING", func(c *Config) any { return c.Tracker.InProgressState }, "Doing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fm := "tracker:\n  kind: file\n  path: x\n  active_states: [Todo, Doing]\n  " + tt.fm + "\nagent: {kind: mock}\n"
			cfg, _ := mustLoad(t, fm, env)
			if got := tt.get(cfg); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %#v, want %#v", got, tt.want)
			}
		})
	}
}

func TestLoad_Paths(t *testing.T) {
	env := map[string]string{"WS": "/srv/ws", "TEAM": "blue", "REL": "rel/dir"}
	tests := []struct {
		name     string
		fm       string
		wantRoot string // relative to the WORKFLOW.md dir when not absolute
		wantDB   string
	}{
		{"tilde", "workspace: {root: '~'}\ndb_path: ~/s.db\n", "/home/op", "/home/op/s.db"},
		{"tilde slash", "workspace: {root: ~/ws}\n", "/home/op/ws", ".sortie.db"},
		{"~user is not expanded", "workspace: {root: ~bob/ws}\n", "~bob/ws", ".sortie.db"},
		{"relative to WORKFLOW.md", "workspace: {root: ./work/../ws}\ndb_path: data/s.db\n", "ws", "data/s.db"},
		{"absolute", "workspace: {root: /abs/ws}\ndb_path: /abs/s.db\n", "/abs/ws", "/abs/s.db"},
		{"$VAR", "workspace: {root: $WS}\n", "/srv/ws", ".sortie.db"},
		{"$VAR inside a path", "workspace: {root: /srv/$TEAM/ws}\ndb_path: ${TEAM}.db\n", "/srv/blue/ws", "blue.db"},
		{"$VAR holding a relative path", "workspace: {root: $REL}\n", "rel/dir", ".sortie.db"},
		{"empty values take defaults", "workspace: {root: ''}\ndb_path: ''\n", "/scratch/sortie_workspaces", ".sortie.db"},
		{"null values take defaults", "workspace: {root: null}\ndb_path: null\n", "/scratch/sortie_workspaces", ".sortie.db"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, dir := mustLoad(t, minimal+tt.fm, env)
			abs := func(p string) string {
				if filepath.IsAbs(p) {
					return p
				}
				return filepath.Join(dir, p)
			}
			if cfg.Workspace.Root != abs(tt.wantRoot) {
				t.Errorf("Workspace.Root = %q, want %q", cfg.Workspace.Root, abs(tt.wantRoot))
			}
			if cfg.DBPath != abs(tt.wantDB) {
				t.Errorf("DBPath = %q, want %q", cfg.DBPath, abs(tt.wantDB))
			}
		})
	}
}

func TestLoad_DefaultWorkspaceUsesTMPDIR(t *testing.T) {
	cfg, _ := mustLoad(t, minimal, map[string]string{"TMPDIR": "/var/tmp/x"})
	if want := "/var/tmp/x/sortie_workspaces"; cfg.Workspace.Root != want {
		t.Errorf("Workspace.Root = %q, want %q", cfg.Workspace.Root, want)
	}
}

func TestTrackerPath(t *testing.T) {
	tests := []struct {
		name string
		fm   string
		want string // relative to the WORKFLOW.md dir when not absolute
	}{
		{"tracker.path", "tracker: {kind: file, path: issues.json, active_states: [a]}\n", "issues.json"},
		{"file.path", "tracker: {kind: file, active_states: [a]}\nfile: {path: data/issues.json}\n", "data/issues.json"},
		{"tracker.path wins over file.path", "tracker: {kind: file, path: a.json, active_states: [a]}\nfile: {path: b.json}\n", "a.json"},
		{"tracker.path with ~", "tracker: {kind: file, path: ~/i.json, active_states: [a]}\n", "/home/op/i.json"},
		{"file.path with ~", "tracker: {kind: file, active_states: [a]}\nfile: {path: ~/i.json}\n", "/home/op/i.json"},
		{"tracker.path with $VAR", "tracker: {kind: file, path: $ISSUES, active_states: [a]}\n", "/data/i.json"},
		{"none for other trackers", "tracker: {kind: jira, project: P, api_key: k, active_states: [a]}\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, dir := mustLoad(t, tt.fm+"agent: {kind: mock}\n", map[string]string{"ISSUES": "/data/i.json"})
			want := tt.want
			if want != "" && !filepath.IsAbs(want) {
				want = filepath.Join(dir, want)
			}
			if got := cfg.TrackerPath(); got != want {
				t.Errorf("TrackerPath() = %q, want %q", got, want)
			}
		})
	}
}

func TestTrackerPath_HandBuiltConfig(t *testing.T) {
	c := &Config{Dir: "/w", Extensions: map[string]any{"file": map[string]any{"path": "i.json"}}}
	if got := c.TrackerPath(); got != "/w/i.json" {
		t.Errorf("TrackerPath() = %q, want /w/i.json", got)
	}
	if got := (&Config{Dir: "/w"}).TrackerPath(); got != "" {
		t.Errorf("TrackerPath() = %q, want empty", got)
	}
}

func TestLoad_SecretEnv(t *testing.T) {
	fm := `tracker:
  kind: jira
  endpoint: https://${JIRA_HOST}
  api_key: $JIRA_USER:${JIRA_TOKEN}
  project: $PROJ
  active_states: [a]
agent: {kind: mock}
hooks:
  after_create: git clone $REPO_TOKEN_URL .
notifications:
  - kind: slack
    webhook_url: $SLACK_HOOK
    channel: $CHANNEL
  - kind: email
    smtp: {password: "${SMTP_PASS}", user: $SMTP_USER}
claude-code:
  model: $MODEL
  api_key: $ANTHROPIC_API_KEY
custom:
  tokens: [$T1, $T2]
`
	env := map[string]string{"JIRA_HOST": "h", "JIRA_USER": "u", "JIRA_TOKEN": "t", "PROJ": "P"}
	cfg, _ := mustLoad(t, fm, env)
	// Every reference under notifications counts (CHANNEL, SMTP_USER): a webhook URL
	// is a credential whatever its key is called.
	want := []string{"ANTHROPIC_API_KEY", "CHANNEL", "JIRA_HOST", "JIRA_TOKEN", "JIRA_USER", "SLACK_HOOK", "SMTP_PASS", "SMTP_USER", "T1", "T2"}
	if !reflect.DeepEqual(cfg.SecretEnv, want) {
		t.Errorf("SecretEnv = %v, want %v", cfg.SecretEnv, want)
	}
}

func TestLoad_SecretEnvIncludesAPIKeyOverride(t *testing.T) {
	cfg, _ := mustLoad(t, "tracker: {kind: jira, project: P, active_states: [a]}\nagent: {kind: mock}\n",
		map[string]string{"SORTIE_TRACKER_API_KEY": "secret"})
	if want := []string{"SORTIE_TRACKER_API_KEY"}; !reflect.DeepEqual(cfg.SecretEnv, want) {
		t.Errorf("SecretEnv = %v, want %v", cfg.SecretEnv, want)
	}
	if cfg.Tracker.APIKey != "secret" {
		t.Errorf("APIKey not taken from the override")
	}
}

func TestExpandEnv(t *testing.T) {
	env := fakeEnv(map[string]string{"A": "1", "E": ""})
	tests := []struct {
		in, want string
		missing  []envRef
	}{
		{"$A", "1", nil},
		{"${A}x", "1x", nil},
		{"$A-$B-$E", "1--", []envRef{{Name: "B"}, {Name: "E", Empty: true}}},
		{"no refs", "no refs", nil},
		{"trailing $", "trailing $", nil},
		{"$B$B", "", []envRef{{Name: "B"}}},
	}
	for _, tt := range tests {
		got, missing := expandEnv(tt.in, env)
		if got != tt.want || !reflect.DeepEqual(missing, tt.missing) {
			t.Errorf("expandEnv(%q) = %q, %v; want %q, %v", tt.in, got, missing, tt.want, tt.missing)
		}
	}
}

func TestLoad_DurationsAreMilliseconds(t *testing.T) {
	cfg, _ := mustLoad(t, minimal+"polling: {interval_ms: 1}\n", nil)
	if cfg.Polling.Interval != time.Millisecond {
		t.Errorf("Polling.Interval = %v, want 1ms", cfg.Polling.Interval)
	}
}

func TestLoad_ZeroMeansDefaultOrDisabled(t *testing.T) {
	cfg, _ := mustLoad(t, minimalWith("agent: {kind: mock, max_concurrent_agents: 0, turn_timeout_ms: 0, stall_timeout_ms: -1}\n")+
		"polling: {interval_ms: 0}\n", nil)
	if cfg.Agent.MaxConcurrentAgents != DefaultMaxConcurrentAgents {
		t.Errorf("MaxConcurrentAgents = %d, want the default", cfg.Agent.MaxConcurrentAgents)
	}
	if cfg.Agent.TurnTimeout != DefaultTurnTimeout {
		t.Errorf("TurnTimeout = %v, want the default", cfg.Agent.TurnTimeout)
	}
	if cfg.Polling.Interval != DefaultPollingInterval {
		t.Errorf("Polling.Interval = %v, want the default", cfg.Polling.Interval)
	}
	if cfg.Agent.StallTimeout != 0 {
		t.Errorf("StallTimeout = %v, want 0 (disabled)", cfg.Agent.StallTimeout)
	}
}
