package clis

import (
	"strings"
)

// CodexModel is the model the codex contract tests ask for, so that names are the same
// on every run.
const CodexModel = "gpt-5-codex"

// CodexProviderKeyEnv is the variable CodexProvider's provider reads its API key from;
// CodexEnv sets it.
const CodexProviderKeyEnv = "FAKEMODEL_OPENAI_KEY"

// CodexEnv is base without the machine's Codex and OpenAI settings, HOME and XDG
// directories, with home as HOME (so that the adapter's CODEX_HOME lands below it, in
// home/.cache) and the fake provider's key set.
func CodexEnv(base []string, home string) []string {
	env := without(base, func(k string) bool {
		return strings.HasPrefix(k, "CODEX_") || strings.HasPrefix(k, "OPENAI_") || k == "HOME" ||
			strings.HasPrefix(k, "XDG_") || k == CodexProviderKeyEnv
	})
	return append(env, "HOME="+home, CodexProviderKeyEnv+"=sk-fake-codex-key")
}

// CodexProvider is the `model_providers` entry of the adapter's options that points
// codex at the fake Responses API at baseURL (fakemodel.ResponsesServer.URL, ending in
// /v1), offline, without retries so that error tests are short.
func CodexProvider(baseURL string) map[string]any {
	return map[string]any{
		"name":                "fakemodel",
		"base_url":            baseURL,
		"wire_api":            "responses",
		"env_key":             CodexProviderKeyEnv,
		"request_max_retries": 0,
		"stream_max_retries":  0,
	}
}
