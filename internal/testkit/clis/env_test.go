package clis

import (
	"slices"
	"testing"
)

func TestClaudeEnv_ReplacesTheMachinesSettings(t *testing.T) {
	base := []string{"PATH=/bin", "HOME=/root", "ANTHROPIC_API_KEY=real", "CLAUDE_CONFIG_DIR=/x", "XDG_CONFIG_HOME=/y", "TMPDIR=/t"}
	got := ClaudeEnv(base, "http://127.0.0.1:1", "/h")
	want := []string{"PATH=/bin", "TMPDIR=/t", "HOME=/h", "ANTHROPIC_BASE_URL=http://127.0.0.1:1",
		"ANTHROPIC_API_KEY=sk-ant-fake-key", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "CLAUDE_CODE_MAX_RETRIES=1", "IS_SANDBOX=1"}
	if !slices.Equal(got, want) {
		t.Errorf("ClaudeEnv =\n%q\nwant\n%q", got, want)
	}
	if base[1] != "HOME=/root" {
		t.Errorf("ClaudeEnv changed its base: %q", base)
	}
}

func TestCopilotEnv_ReplacesTheMachinesSettings(t *testing.T) {
	base := []string{"PATH=/bin", "HOME=/root", "GH_TOKEN=real", "GITHUB_TOKEN=real", "COPILOT_MODEL=gpt-5", "XDG_CACHE_HOME=/c", "LANG=C"}
	got := CopilotEnv(base, "http://127.0.0.1:1", "/h", "/cache")
	want := []string{"PATH=/bin", "LANG=C", "HOME=/h",
		"XDG_CONFIG_HOME=/h/.config", "XDG_STATE_HOME=/h/.local/state", "XDG_DATA_HOME=/h/.local/share", "XDG_CACHE_HOME=/cache",
		"COPILOT_OFFLINE=true", "COPILOT_AUTO_UPDATE=false", "COPILOT_PROVIDER_BASE_URL=http://127.0.0.1:1",
		"COPILOT_PROVIDER_TYPE=anthropic", "COPILOT_PROVIDER_API_KEY=" + CopilotProviderKey, "COPILOT_MODEL=" + CopilotModel}
	if !slices.Equal(got, want) {
		t.Errorf("CopilotEnv =\n%q\nwant\n%q", got, want)
	}
}
