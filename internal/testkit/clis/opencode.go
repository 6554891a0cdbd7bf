package clis

import "strings"

// OpenCodeModel is the model OpenCodeConfig's runs ask for, provider/model as the
// opencode CLI takes it, so that the model named in requests is the same on every run.
const OpenCodeModel = "anthropic/claude-sonnet-4-5"

// OpenCodeProviderKey is the API key OpenCodeConfig gives the anthropic provider.
const OpenCodeProviderKey = "sk-ant-opencode-contract"

// OpenCodeEnv is base without the machine's OpenCode, Anthropic and npm settings, HOME
// and XDG directories, with home as HOME and cache as XDG_CACHE_HOME (where the CLI
// keeps its models list and the tools it fetches; runs that share one fetch once).
// It keeps the CLI offline: no models.dev fetch (the CLI's bundled list is used), and
// npm offline, since the CLI installs its plugin package into its configuration
// directory in the background on every new one.
func OpenCodeEnv(base []string, home, cache string) []string {
	env := without(base, func(k string) bool {
		return strings.HasPrefix(k, "OPENCODE_") || strings.HasPrefix(k, "ANTHROPIC_") || strings.HasPrefix(strings.ToLower(k), "npm_config_") ||
			strings.HasPrefix(k, "XDG_") || k == "HOME"
	})
	return append(env,
		"HOME="+home,
		"XDG_CACHE_HOME="+cache,
		"OPENCODE_DISABLE_MODELS_FETCH=true",
		"OPENCODE_DISABLE_LSP_DOWNLOAD=true",
		"npm_config_offline=true",
	)
}

// OpenCodeConfig is the OpenCode configuration (the opencode adapter's `config`
// option, or a file's content) that points the anthropic provider at the fake model API
// at baseURL and selects OpenCodeModel.
func OpenCodeConfig(baseURL string) map[string]any {
	return map[string]any{
		"model": OpenCodeModel,
		"provider": map[string]any{"anthropic": map[string]any{"options": map[string]any{
			"baseURL": strings.TrimSuffix(baseURL, "/") + "/v1",
			"apiKey":  OpenCodeProviderKey,
		}}},
	}
}
