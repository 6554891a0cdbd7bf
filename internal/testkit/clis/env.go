package clis

import (
	"path/filepath"
	"strings"
)

// CopilotModel is the model CopilotEnv selects (COPILOT_MODEL), so that the model named
// in requests and usage is the same on every run.
const CopilotModel = "claude-sonnet-4-5"

// CopilotProviderKey is the BYOK API key CopilotEnv sets. The CLI masks the value of its
// secret variables wherever it appears in its output, JSON keys included, so it must be
// a string that occurs nowhere else (a key of "x" turns "exitCode" into "e******itCode").
const CopilotProviderKey = "sortie-contract-provider-key"

// ClaudeEnv is base without the machine's Anthropic and Claude Code settings, HOME and
// XDG directories, plus what points the claude CLI at the fake model API at baseURL,
// offline, with home as its HOME. IS_SANDBOX lets bypassPermissions run as root; one
// retry keeps error tests short.
func ClaudeEnv(base []string, baseURL, home string) []string {
	env := without(base, func(k string) bool {
		return strings.HasPrefix(k, "ANTHROPIC_") || strings.HasPrefix(k, "CLAUDE_") || k == "HOME" || strings.HasPrefix(k, "XDG_")
	})
	return append(env,
		"HOME="+home,
		"ANTHROPIC_BASE_URL="+baseURL,
		"ANTHROPIC_API_KEY=sk-ant-fake-key",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"CLAUDE_CODE_MAX_RETRIES=1",
		"IS_SANDBOX=1",
	)
}

// CopilotEnv is base without the machine's Copilot and GitHub settings, HOME and XDG
// directories, plus what points the copilot CLI at the fake model API at baseURL,
// offline in BYOK mode, with home as its HOME and its configuration and state below it.
// cache is XDG_CACHE_HOME, where the npm package unpacks its native runtime (about
// 235 MB) on its first run, which takes seconds: runs that share one do that once.
func CopilotEnv(base []string, baseURL, home, cache string) []string {
	env := without(base, func(k string) bool {
		return strings.HasPrefix(k, "COPILOT_") || strings.HasPrefix(k, "GH_") || strings.HasPrefix(k, "GITHUB_") ||
			strings.HasPrefix(k, "XDG_") || k == "HOME"
	})
	return append(env,
		"HOME="+home,
		"XDG_CONFIG_HOME="+filepath.Join(home, ".config"),
		"XDG_STATE_HOME="+filepath.Join(home, ".local", "state"),
		"XDG_DATA_HOME="+filepath.Join(home, ".local", "share"),
		"XDG_CACHE_HOME="+cache,
		"COPILOT_OFFLINE=true",
		"COPILOT_AUTO_UPDATE=false",
		"COPILOT_PROVIDER_BASE_URL="+baseURL,
		"COPILOT_PROVIDER_TYPE=anthropic",
		"COPILOT_PROVIDER_API_KEY="+CopilotProviderKey,
		"COPILOT_MODEL="+CopilotModel,
	)
}

// without is env (KEY=VALUE) without the variables whose key drop matches, in a new
// slice.
func without(env []string, drop func(key string) bool) []string {
	var out []string
	for _, kv := range env {
		if k, _, _ := strings.Cut(kv, "="); !drop(k) {
			out = append(out, kv)
		}
	}
	return out
}
