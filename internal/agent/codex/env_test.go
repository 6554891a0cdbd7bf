package codex

import (
	"slices"
	"testing"

	"sortie/internal/agent"
)

func TestEnvFrom_ModelProvidersKeys(t *testing.T) {
	cfg := agent.Config{Kind: Kind,
		Command: `codex --config 'model_providers.x={name="x", env_key="X_KEY"}' app-server`,
		Options: map[string]any{"model_providers": map[string]any{"y": map[string]any{"env_key": "Y_KEY"}},
			"command": `codex --config 'model_providers.z={env_key = "Z_KEY"}' app-server`}}
	got := agent.EnvNames(cfg)
	for _, want := range []string{"OPENAI_*", "X_KEY", "Y_KEY", "Z_KEY"} {
		if !slices.Contains(got, want) {
			t.Errorf("EnvNames = %q, want %s in it", got, want)
		}
	}
}
