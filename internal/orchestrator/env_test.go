package orchestrator

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"sortie/internal/agent"
	"sortie/internal/config"
	"sortie/internal/store"
)

func TestAgentEnv_AllowListDropsSideChannelsAndSecretsAddsExtras(t *testing.T) {
	environ := []string{
		"PATH=/usr/bin",
		"HOME=/home/op",
		"LC_ALL=C.UTF-8",
		"https_proxy=http://proxy:3128",
		"ANTHROPIC_API_KEY=model-key", // the adapter's: kept
		"GITHUB_TOKEN=tracker-secret", // named by WORKFLOW.md as a secret: dropped, even when allowed
		"SORTIE_TRACKER_API_KEY=k",    // every SORTIE_* of the daemon: dropped
		"SORTIE_REPO_URL=git@example.com:r.git",
		"SORTIE_ISSUE_ID=stale",
		"FOO=daemon",      // allowed by the operator, then overridden
		"UNLISTED=daemon", // nobody asked for it: dropped
		"TMUX=/tmp/tmux-0/default,1,0",
		"TMUX_PANE=%1",
		"STY=1.pts-0.host",
		"DBUS_SESSION_BUS_ADDRESS=unix:path=/run/user/0/bus",
		"XDG_RUNTIME_DIR=/run/user/0",
		"DISPLAY=:0",
		"WAYLAND_DISPLAY=wayland-0",
		"SSH_AUTH_SOCK=/tmp/ssh-x/agent.1",
		"PGPASSWORD=hunter2",
		"PGPASSFILE=/root/.pgpass",
		"PGSERVICEFILE=/root/.pg_service.conf",
		"MALFORMED",
	}
	extra := map[string]string{"SORTIE_ISSUE_ID": "42", "SORTIE_RUN_ID": "7", "FOO": "extra"}
	// The allow list asks for side channels too: they never pass.
	allow := []string{"ANTHROPIC_*", "GITHUB_TOKEN", "FOO", "TMUX", "PG*", "DBUS_*", "SSH_AUTH_SOCK"}
	got := AgentEnv(environ, []string{"GITHUB_TOKEN"}, allow, extra)
	want := []string{"PATH=/usr/bin", "HOME=/home/op", "LC_ALL=C.UTF-8", "https_proxy=http://proxy:3128",
		"ANTHROPIC_API_KEY=model-key", "FOO=extra", "SORTIE_ISSUE_ID=42", "SORTIE_RUN_ID=7"}
	if !slices.Equal(got, want) {
		t.Fatalf("AgentEnv =\n%q\nwant\n%q", got, want)
	}
}

func TestAgentAllow_AdapterAndOperatorVariables(t *testing.T) {
	// An adapter that declares its CLI's variables, as the claude adapter does.
	agent.Register("env-test", agent.Meta{Env: []string{"ANTHROPIC_*", "CLAUDE_*", "IS_SANDBOX"}}, nil)
	cfg := &config.Config{Agent: config.AgentConfig{Kind: "env-test", Env: []string{"AWS_CA_BUNDLE", "MY_*"}}}
	environ := []string{"ANTHROPIC_BASE_URL=http://m", "CLAUDE_CODE_MAX_RETRIES=1", "IS_SANDBOX=1", "MY_SETTING=1",
		"AWS_CA_BUNDLE=/ca", "OPENAI_API_KEY=not-claude's", "TMUX=/tmp/tmux-0/default,1,0"}
	got := CLIEnv(cfg, environ)
	want := []string{"ANTHROPIC_BASE_URL=http://m", "CLAUDE_CODE_MAX_RETRIES=1", "IS_SANDBOX=1", "MY_SETTING=1", "AWS_CA_BUNDLE=/ca"}
	if !slices.Equal(got, want) {
		t.Fatalf("CLIEnv =\n%q\nwant\n%q", got, want)
	}
	// Over SSH the local process is the ssh client, which may log in with the daemon's
	// SSH agent.
	cfg.Worker.SSHHosts = []string{"build1"}
	got = CLIEnv(cfg, append(environ, "SSH_AUTH_SOCK=/tmp/ssh-x/agent.1"))
	if !slices.Contains(got, "SSH_AUTH_SOCK=/tmp/ssh-x/agent.1") || slices.Contains(got, "TMUX=/tmp/tmux-0/default,1,0") {
		t.Errorf("CLIEnv over SSH = %q, want SSH_AUTH_SOCK and still no TMUX", got)
	}
}

func TestHookEnvLists_PassOperatorVariablesDropCredentials(t *testing.T) {
	cfg := &config.Config{SecretEnv: []string{"GITHUB_TOKEN", "JIRA_PASSWORD"}}
	environ := []string{
		"PATH=/usr/bin",
		"SORTIE_REPO_URL=git@example.com:r.git",
		"SORTIE_WORKSPACE_ROOT=/w",
		"SORTIE_POLLING_INTERVAL_MS=5000",
		"SORTIE_TRACKER_API_KEY=k",
		"SORTIE_TRACKER_ENDPOINT=https://t",
		"SORTIE_DB_PATH=/db",
		"SORTIE_ENV_FILE=/e",
		"SORTIE_SERVER_AUTH_TOKEN=operator",
		"GITHUB_TOKEN=s",
	}
	pass, drop := hookEnvLists(cfg, environ)
	if want := []string{"SORTIE_REPO_URL", "SORTIE_WORKSPACE_ROOT", "SORTIE_POLLING_INTERVAL_MS"}; !slices.Equal(pass, want) {
		t.Errorf("pass = %q, want %q", pass, want)
	}
	for _, name := range []string{"GITHUB_TOKEN", "JIRA_PASSWORD", "SORTIE_TRACKER_API_KEY", "SORTIE_TRACKER_ENDPOINT", "SORTIE_DB_PATH", "SORTIE_ENV_FILE", "SORTIE_SERVER_AUTH_TOKEN"} {
		if !slices.Contains(drop, name) {
			t.Errorf("drop = %q, want it to contain %s", drop, name)
		}
	}
	for _, name := range pass {
		if slices.Contains(drop, name) {
			t.Errorf("%s is both passed and dropped", name)
		}
	}
}

// TestEnv_HooksAndAgentsSeeOnlyWhatTheyMay records the environment a real hook and a
// real agent process get from a daemon whose environment holds secrets.
func TestEnv_HooksAndAgentsSeeOnlyWhatTheyMay(t *testing.T) {
	out := t.TempDir()
	agentScript := filepath.Join(out, "agent.sh")
	if err := os.WriteFile(agentScript, []byte(`env > '`+filepath.Join(out, "agent.env")+`'
echo '{"type":"session_started"}'
echo '{"type":"result","outcome":"success"}'
`), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(t, func(c *config.Config) {
		c.Tracker.HandoffState = "Human Review"
		c.SecretEnv = []string{"GITHUB_TOKEN"}
		c.Agent.Env = []string{"ANTHROPIC_API_KEY"} // the mock's CLI declares none
		c.Agent.Command = "sh " + agentScript
		c.Hooks.BeforeRun = `env > '` + filepath.Join(out, "hook.env") + `'`
	})
	environ := append(os.Environ(),
		"TMUX=/tmp/tmux-0/default,1,0",
		"PGPASSWORD=hunter2",
		"DBUS_SESSION_BUS_ADDRESS=unix:path=/run/user/0/bus",
		"SSH_AUTH_SOCK=/tmp/ssh-x/agent.1",
		"GITHUB_TOKEN=tracker-secret",
		"ANTHROPIC_API_KEY=model-key",
		"SORTIE_TRACKER_API_KEY=sortie-secret",
		"SORTIE_REPO_URL=git@example.com:r.git",
		// The daemon's private state and a plain operator override.
		"SORTIE_DB_PATH=/srv/sortie/state.db",
		"SORTIE_ENV_FILE=/srv/sortie/.env",
		"SORTIE_SERVER_AUTH_TOKEN=operator-secret",
		"SORTIE_POLLING_INTERVAL_MS=5000",
	)
	h := newHarness(t, cfg, harnessOptions{pollOnly: true, exitWhenIdle: true, environ: environ})
	h.trk.Put(issue("ENV-1", "Todo"))
	h.start()
	if err := h.wait(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if got := h.statuses("ENV-1"); !slices.Equal(got, []store.RunStatus{store.StatusHandedOff}) {
		t.Fatalf("runs = %v, want [handed_off]", got)
	}
	runID := h.runs("ENV-1")[0].ID
	read := func(name string) map[string]string {
		data, err := os.ReadFile(filepath.Join(out, name))
		if err != nil {
			t.Fatalf("reading %s: %v", name, err)
		}
		env := map[string]string{}
		for _, line := range strings.Split(string(data), "\n") {
			if k, v, ok := strings.Cut(line, "="); ok {
				env[k] = v
			}
		}
		return env
	}
	check := func(who string, env map[string]string, want map[string]string, absent []string) {
		t.Helper()
		for k, v := range want {
			if env[k] != v {
				t.Errorf("%s: %s = %q, want %q", who, k, env[k], v)
			}
		}
		for _, k := range absent {
			if v, ok := env[k]; ok {
				t.Errorf("%s: %s = %q, want it absent", who, k, v)
			}
		}
	}
	private := []string{"SORTIE_DB_PATH", "SORTIE_ENV_FILE", "SORTIE_SERVER_AUTH_TOKEN"}
	check("hook", read("hook.env"),
		map[string]string{"SORTIE_REPO_URL": "git@example.com:r.git", "SORTIE_POLLING_INTERVAL_MS": "5000",
			"SORTIE_ISSUE_IDENTIFIER": "ENV-1", "SORTIE_ATTEMPT": "0"},
		append([]string{"GITHUB_TOKEN", "SORTIE_TRACKER_API_KEY", "ANTHROPIC_API_KEY"}, private...))
	check("agent", read("agent.env"),
		map[string]string{"ANTHROPIC_API_KEY": "model-key", "SORTIE_ISSUE_IDENTIFIER": "ENV-1", "SORTIE_ISSUE_ID": "ENV-1",
			"SORTIE_RUN_ID": strconv.FormatInt(runID, 10), "SORTIE_WORKSPACE": workspacePath(t, cfg, "ENV-1")},
		append([]string{"GITHUB_TOKEN", "SORTIE_TRACKER_API_KEY", "SORTIE_REPO_URL", "SORTIE_POLLING_INTERVAL_MS",
			"TMUX", "PGPASSWORD", "DBUS_SESSION_BUS_ADDRESS", "SSH_AUTH_SOCK"}, private...))
}
