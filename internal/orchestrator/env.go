package orchestrator

import (
	"slices"
	"sort"
	"strings"

	"sortie/internal/agent"
	"sortie/internal/agent/agentenv"
	"sortie/internal/config"
	"sortie/internal/workspace"
)

// AgentEnv builds an agent process's environment from the daemon's: an allow-list
// (agentenv.Filter), not the daemon's environment minus a deny-list. The agent inherits
// the basics every program and toolchain reads (agentenv.Base), what its adapter's CLI
// declares (allow: agent.Meta.Env) and what the operator names in agent.env (also in
// allow), never a side channel (TMUX, DBUS_*, SSH_AUTH_SOCK, PG*, ...), a SORTIE_*
// variable of the daemon (configuration overrides may hold credentials) or one of drop
// (WORKFLOW.md's secrets); plus extra, the session's own variables.
func AgentEnv(environ, drop, allow []string, extra map[string]string) []string {
	out := agentenv.Filter(environ, allow, nil, drop)
	out = slices.DeleteFunc(out, func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		_, overridden := extra[name]
		return overridden
	})
	keys := make([]string, 0, len(extra))
	for k := range extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		out = append(out, k+"="+extra[k])
	}
	return out
}

// agentEnvFor is AgentEnv for cfg's agent: its adapter's variables and agent.env pass,
// WORKFLOW.md's secrets do not. With worker.ssh_hosts the local process is the ssh
// client, the operator's own and unconfined, which may need the daemon's SSH agent to
// log in (SSH_AUTH_SOCK); the remote command gets only what ssh sends (SendEnv), never
// that socket, unless the operator's ssh_config forwards the agent.
func agentEnvFor(cfg *config.Config, environ []string, extra map[string]string) []string {
	env := AgentEnv(environ, cfg.SecretEnv, agentAllow(cfg), extra)
	if len(cfg.Worker.SSHHosts) > 0 {
		for _, kv := range environ {
			if strings.HasPrefix(kv, "SSH_AUTH_SOCK=") {
				env = append(env, kv)
			}
		}
	}
	return env
}

// agentAllow is what cfg's agent inherits besides agentenv.Base: its adapter's
// variables (agent.Meta.Env) and the operator's agent.env.
func agentAllow(cfg *config.Config) []string {
	names := agent.EnvNames(agent.Config{Kind: cfg.Agent.Kind, Command: cfg.Agent.Command, Options: cfg.Block(cfg.Agent.Kind)})
	return append(names, cfg.Agent.Env...)
}

// CLIEnv is the environment of an agent CLI run outside a session, such as its
// `--version` preflight (agent.Config.Env): the one every turn gets (AgentEnv), without
// a session's SORTIE_* variables.
func CLIEnv(cfg *config.Config, environ []string) []string {
	return agentEnvFor(cfg, environ, nil)
}

// privateOverride reports whether name is a SORTIE_* variable of the daemon that no
// hook may see: the tracker overrides (its key among them) and the variables that lead
// to the daemon's private state (workspace.DaemonPrivate: the database's and the env
// file's paths, the operator token). Agents get no SORTIE_* variable of the daemon at
// all (AgentEnv).
func privateOverride(name string) bool {
	return strings.HasPrefix(name, "SORTIE_TRACKER_") || workspace.DaemonPrivate(name)
}

// hookEnvLists returns the SORTIE_* variables of the daemon that hooks may see (an
// operator's own, like SORTIE_REPO_URL in a clone hook, and the non-secret overrides
// such as SORTIE_POLLING_INTERVAL_MS) and the names they must never see: WORKFLOW.md's
// secrets and the private overrides (privateOverride).
func hookEnvLists(cfg *config.Config, environ []string) (pass, drop []string) {
	drop = append([]string(nil), cfg.SecretEnv...)
	for _, kv := range environ {
		name, _, ok := strings.Cut(kv, "=")
		if !ok || !strings.HasPrefix(name, "SORTIE_") {
			continue
		}
		if privateOverride(name) {
			drop = append(drop, name)
			continue
		}
		pass = append(pass, name)
	}
	return pass, drop
}
