package orchestrator

import (
	"sort"
	"strings"

	"sortie/internal/config"
	"sortie/internal/workspace"
)

// AgentEnv builds an agent process's environment from the daemon's: everything except
// the variables in drop and every SORTIE_* variable of the daemon (configuration
// overrides may hold credentials), plus extra. Agent CLIs need their own provider
// settings (API keys for the model, proxies), so unlike hooks they are not limited to an
// allow-list; tracker and notification secrets never reach them.
func AgentEnv(environ, drop []string, extra map[string]string) []string {
	dropSet := make(map[string]bool, len(drop))
	for _, d := range drop {
		dropSet[d] = true
	}
	out := make([]string, 0, len(environ)+len(extra))
	for _, kv := range environ {
		name, _, ok := strings.Cut(kv, "=")
		if !ok || dropSet[name] || strings.HasPrefix(name, "SORTIE_") {
			continue
		}
		if _, overridden := extra[name]; overridden {
			continue
		}
		out = append(out, kv)
	}
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

// CLIEnv is the environment of an agent CLI run outside a session, such as its
// `--version` preflight (agent.Config.Env): the one every turn gets (AgentEnv), without
// a session's SORTIE_* variables. The CLI's own provider settings stay; tracker and
// notification secrets do not.
func CLIEnv(cfg *config.Config, environ []string) []string {
	return AgentEnv(environ, secretNames(cfg, environ), nil)
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

// secretNames lists the environment variables that must not reach agents or hooks: the
// ones WORKFLOW.md uses for credentials, and every SORTIE_* variable of the daemon.
func secretNames(cfg *config.Config, environ []string) []string {
	names := append([]string(nil), cfg.SecretEnv...)
	for _, kv := range environ {
		if name, _, ok := strings.Cut(kv, "="); ok && strings.HasPrefix(name, "SORTIE_") {
			names = append(names, name)
		}
	}
	return names
}
