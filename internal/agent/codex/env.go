package codex

import (
	"regexp"

	"sortie/internal/agent"
)

// EnvNames are the daemon's variables codex inherits besides every agent's
// (agentenv.Base): its OpenAI and Azure OpenAI keys and settings, and its own (CODEX_*;
// CODEX_HOME is Sortie's, home.go). The env_key of a model provider it is configured
// with passes too (EnvFrom).
var EnvNames = []string{"OPENAI_*", "CODEX_*", "AZURE_OPENAI_*", "RUST_LOG"}

// envKeyOverride is an env_key in a `--config model_providers...` override of the
// command line (codex.command, as Symphony's users pass providers, or agent.command).
var envKeyOverride = regexp.MustCompile(`env_key\s*=\s*"([A-Za-z_][A-Za-z0-9_]*)"`)

// EnvFrom names the variables the model providers of cfg read their keys from: the
// env_key of each entry of codex.model_providers and of a provider given in the --config
// overrides of codex.command or agent.command.
func EnvFrom(cfg agent.Config) []string {
	var names []string
	if providers, ok := cfg.Options["model_providers"].(map[string]any); ok {
		for _, p := range providers {
			if m, ok := p.(map[string]any); ok {
				if k, ok := m["env_key"].(string); ok && k != "" {
					names = append(names, k)
				}
			}
		}
	}
	command, _ := cfg.Options["command"].(string)
	for _, m := range envKeyOverride.FindAllStringSubmatch(cfg.Command+"\n"+command, -1) {
		names = append(names, m[1])
	}
	return names
}
