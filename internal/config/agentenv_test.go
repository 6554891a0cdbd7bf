package config

import (
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestLoad_AgentEnv(t *testing.T) {
	cfg, _ := mustLoad(t, minimalWith("agent:\n  kind: mock\n  env: [AWS_PROFILE, ' MY_* ', AWS_PROFILE]\n"), nil)
	if want := []string{"AWS_PROFILE", "MY_*"}; !slices.Equal(cfg.Agent.Env, want) {
		t.Errorf("agent.env = %q, want %q", cfg.Agent.Env, want)
	}
}

// TestLoad_AgentEnvRefusesDoors: agent.env cannot pass Sortie's own variables, a side
// channel out of the sandbox or a credential WORKFLOW.md uses.
func TestLoad_AgentEnvRefusesDoors(t *testing.T) {
	fm := "tracker:\n  kind: file\n  path: issues.json\n  api_key: $TRACKER_TOKEN\n  active_states: [Todo]\n" +
		"agent:\n  kind: mock\n  env: [SORTIE_DB_PATH, SORT*, TMUX, DBUS_SESSION_BUS_ADDRESS, SSH_AUTH_SOCK, PGPASSWORD, PG*, XDG_RUNTIME_DIR, 'BAD-NAME', TRACKER_TOKEN]\n"
	_, problems, _ := checkFrontMatter(t, fm, map[string]string{"TRACKER_TOKEN": "t"})
	for i, want := range []string{
		"SORTIE_DB_PATH: Sortie's own", "SORT*: Sortie's own",
		"TMUX: it names a side channel", "DBUS_SESSION_BUS_ADDRESS: it names a side channel", "SSH_AUTH_SOCK: it names",
		"PGPASSWORD: it names", "PG*: it names", "XDG_RUNTIME_DIR: it names", `"BAD-NAME" is not an environment variable name`,
		"TRACKER_TOKEN is a credential this WORKFLOW.md uses",
	} {
		found := slices.ContainsFunc(problems, func(p Problem) bool {
			return p.IsError() && strings.HasPrefix(p.Field, "agent.env[") && strings.Contains(p.Message, want) &&
				strings.HasSuffix(p.Field, "["+strconv.Itoa(i)+"]")
		})
		if !found {
			t.Errorf("no error for agent.env[%d] saying %q; got:\n%s", i, want, problemLines(problems))
		}
	}
}
