package mcp

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	// config checks agent.kind against the agent registry, which the sidecar's binary
	// (cmd/sortie) fills by linking every adapter.
	_ "sortie/internal/agent/all"
	"sortie/internal/config"
	"sortie/internal/mcp/tools"
)

func TestParseEnv(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		want    Env
		wantErr string
	}{
		{name: "nothing set", env: nil, want: Env{ToolTimeout: tools.DefaultCallTimeout}},
		{
			name: "everything set",
			env: map[string]string{
				"SORTIE_WORKSPACE": "/ws/PROJ-1", "SORTIE_ISSUE_ID": "1",
				"SORTIE_ISSUE_IDENTIFIER": "PROJ-1", "SORTIE_RUN_ID": "12", "SORTIE_SESSION_ID": "",
				"SORTIE_ATTEMPT": "2", "SORTIE_AGENT_SOCKET": "/srv/.sortie/agent.sock", "SORTIE_AGENT_TOKEN": "tok",
				"SORTIE_TOOL_TIMEOUT_MS": "1500",
			},
			want: Env{Workspace: "/ws/PROJ-1", IssueID: "1", IssueIdentifier: "PROJ-1", RunID: 12,
				Attempt: "2", AgentSocket: "/srv/.sortie/agent.sock", AgentToken: "tok", ToolTimeout: 1500 * time.Millisecond},
		},
		{name: "relative workspace", env: map[string]string{"SORTIE_WORKSPACE": "ws"}, wantErr: `SORTIE_WORKSPACE must be an absolute path (got "ws")`},
		// The spec's database path is not the sidecar's business: the run history
		// comes through the agent socket.
		{name: "a database path is not read", env: map[string]string{"SORTIE_DB_PATH": ".sortie.db", "SORTIE_ISSUE_ID": "1"},
			want: Env{IssueID: "1", ToolTimeout: tools.DefaultCallTimeout}},
		{name: "bad run id", env: map[string]string{"SORTIE_RUN_ID": "twelve"}, wantErr: `SORTIE_RUN_ID must be a positive integer (got "twelve")`},
		{name: "zero run id", env: map[string]string{"SORTIE_RUN_ID": "0"}, wantErr: "SORTIE_RUN_ID must be a positive integer"},
		{name: "bad timeout", env: map[string]string{"SORTIE_TOOL_TIMEOUT_MS": "30s"}, wantErr: `SORTIE_TOOL_TIMEOUT_MS must be a positive number of milliseconds, at most a day (got "30s")`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseEnv(func(k string) string { return tt.env[k] })
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseEnv error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ParseEnv = %+v, %v\nwant %+v", got, err, tt.want)
			}
		})
	}
}

// The sidecar loads the same WORKFLOW.md as the daemon, but without the secrets the
// daemon strips from the agent's environment. Every workflow the daemon accepts must
// still load, with the settings the sidecar uses intact.
func TestConfigEnv_LoadsWorkflowsWithoutTheirSecrets(t *testing.T) {
	tests := []struct {
		name     string
		front    string
		env      map[string]string // the sidecar's environment
		maxToken int64
	}{
		{
			name: "github token in a plain variable",
			front: "tracker:\n  kind: github\n  api_key: $GITHUB_TOKEN\n  project: acme/app\n  active_states: [open]\n" +
				"agent:\n  kind: claude-code\n  command: claude\n  max_tokens: 1000\n",
			maxToken: 1000,
		},
		{
			name: "jira as in docs/configuration.md, every value from SORTIE_ variables",
			front: "tracker:\n  kind: jira\n  endpoint: $SORTIE_JIRA_ENDPOINT\n  api_key: $SORTIE_JIRA_API_KEY\n  project: $SORTIE_JIRA_PROJECT\n" +
				"  active_states: [To Do]\n  terminal_states: [Done]\nagent:\n  kind: claude-code\n  command: claude\n",
		},
		{
			name: "api key only from the SORTIE_TRACKER_API_KEY override",
			front: "tracker:\n  kind: github\n  project: acme/app\n  active_states: [open]\n" +
				"agent:\n  kind: copilot-cli\n  command: copilot\n",
		},
		{
			name: "overrides the daemon passes on still apply",
			front: "tracker:\n  kind: github\n  api_key: ${GH_TOKEN}\n  project: acme/app\n  active_states: [open]\n" +
				"agent:\n  kind: claude-code\n  command: claude\n  max_tokens: 1000\n",
			env:      map[string]string{"SORTIE_AGENT_MAX_TOKENS": "5000"},
			maxToken: 5000,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "WORKFLOW.md")
			if err := os.WriteFile(path, []byte("---\n"+tt.front+"---\nWork on {{ .issue.identifier }}.\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			env := map[string]string{"HOME": "/home/agent"}
			for k, v := range tt.env {
				env[k] = v
			}
			lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
			cfg, err := config.Load(path, config.Options{Env: ConfigEnv(lookup)})
			if err != nil {
				t.Fatalf("Load with ConfigEnv: %v", err)
			}
			if cfg.Agent.MaxTokens != tt.maxToken {
				t.Errorf("agent.max_tokens = %d, want %d", cfg.Agent.MaxTokens, tt.maxToken)
			}
		})
	}
}

func TestConfigEnv_Answers(t *testing.T) {
	env := map[string]string{"PATH": "/bin", "SORTIE_AGENT_MAX_TURNS": "4", "EMPTY": ""}
	lookup := ConfigEnv(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	tests := []struct {
		name, want string
		ok         bool
	}{
		{"PATH", "/bin", true},                // set: the real value
		{"SORTIE_AGENT_MAX_TURNS", "4", true}, // a set override
		{"GITHUB_TOKEN", Placeholder, true},   // a stripped secret
		{"EMPTY", Placeholder, true},          // set but empty resolves like unset
		{"SORTIE_JIRA_API_KEY", Placeholder, true},
		{"SORTIE_TRACKER_API_KEY", Placeholder, true}, // the one secret override
		{"SORTIE_AGENT_MAX_TOKENS", "", false},        // other overrides: unset stays unset
		{"SORTIE_DB_PATH", "", false},
		{"SORTIE_ENV_FILE", "", false},
		{"HOME", "", false},
		{"TMPDIR", "", false},
	}
	for _, tt := range tests {
		if v, ok := lookup(tt.name); v != tt.want || ok != tt.ok {
			t.Errorf("lookup(%s) = %q, %v; want %q, %v", tt.name, v, ok, tt.want, tt.ok)
		}
	}
}
