package config

import (
	"fmt"
	"slices"

	"sortie/internal/agent/agentenv"
)

// buildAgentEnv reads agent.env: the names of the daemon's environment variables that
// agents inherit besides the basics and their CLI's own (agentenv.Base, agent.Meta.Env).
// A name ending in "*" is a prefix. Sortie's own SORTIE_* variables, side channels
// (TMUX, DBUS_*, SSH_AUTH_SOCK, PG*, ...) and the secrets WORKFLOW.md uses are errors:
// none of them ever reaches an agent.
func (b *builder) buildAgentEnv(a *AgentConfig, sec, raw map[string]any) {
	const field = "agent.env"
	secrets := secretEnv(raw)
	for i, name := range b.stringList(sec, field) {
		item := fmt.Sprintf("%s[%d]", field, i)
		if why := agentenv.CheckOperatorName(name); why != "" {
			b.errorf(item, "%s", why)
			continue
		}
		if slices.Contains(secrets, name) {
			b.errorf(item, "%s is a credential this WORKFLOW.md uses (a $%s reference of the tracker, server, database or notifications); it never reaches agents", name, name)
			continue
		}
		if !slices.Contains(a.Env, name) {
			a.Env = append(a.Env, name)
		}
	}
}
