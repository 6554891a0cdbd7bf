package clis

import (
	"strings"
	"testing"
)

// Gemini returns the path of the pinned gemini CLI, or skips t (fails it under CI)
// when it is not installed.
func Gemini(t testing.TB) string { return Path(t, "gemini") }

// GeminiModel is the model the gemini tests ask for (--model): without one the CLI
// routes every prompt through a classifier request first.
const GeminiModel = "gemini-2.5-flash"

// GeminiAPIKey is the API key GeminiEnv gives the CLI: the fake model takes any, and
// a test looks for this one where the agent must not see it.
const GeminiAPIKey = "gemini-contract-key-1f0c"

// GeminiEnv is base without the machine's Gemini and Google settings, HOME and XDG
// directories, with home as HOME (the adapter's per-issue GEMINI_CLI_HOME goes below
// its cache), the fake model API at baseURL and GeminiAPIKey.
func GeminiEnv(base []string, baseURL, home string) []string {
	env := without(base, func(k string) bool {
		return strings.HasPrefix(k, "GEMINI_") || strings.HasPrefix(k, "GOOGLE_") || strings.HasPrefix(k, "XDG_") || k == "HOME"
	})
	return append(env,
		"HOME="+home,
		"GOOGLE_GEMINI_BASE_URL="+strings.TrimSuffix(baseURL, "/"),
		"GEMINI_API_KEY="+GeminiAPIKey,
	)
}
