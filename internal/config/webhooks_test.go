package config

import (
	"slices"
	"strings"
	"testing"
)

const githubMinimal = "tracker: {kind: github, api_key: k, project: octo/app, active_states: [todo]}\nagent: {kind: mock}\n"

func TestWebhooks_DefaultsWhenAbsent(t *testing.T) {
	cfg, _ := mustLoad(t, githubMinimal, nil)
	if cfg.Tracker.WebhookSecret != "" || cfg.Server.PublicURL != "" {
		t.Errorf("webhook secret %q, public URL %q; want both empty", cfg.Tracker.WebhookSecret, cfg.Server.PublicURL)
	}
	if cfg.Polling.WebhookInterval != DefaultWebhookInterval {
		t.Errorf("Polling.WebhookInterval = %v, want %v", cfg.Polling.WebhookInterval, DefaultWebhookInterval)
	}
}

// The webhook secret is a credential: expanded from its variable, which agents and
// hooks never get, and never shown in a problem.
func TestWebhooks_SecretFromVariableIsStrippedFromAgents(t *testing.T) {
	fm := strings.Replace(githubMinimal, "active_states", "webhook_secret: $GH_HOOK_SECRET, active_states", 1) +
		"polling: {interval_ms: 600000, webhook_interval_ms: 900000}\nserver: {public_url: 'https://sortie.example.com/'}\n"
	cfg, _ := mustLoad(t, fm, map[string]string{"GH_HOOK_SECRET": "s3cret"})
	if cfg.Tracker.WebhookSecret != "s3cret" || cfg.Tracker.WebhookSecretRef != "$GH_HOOK_SECRET" {
		t.Errorf("WebhookSecret %q, ref %q", cfg.Tracker.WebhookSecret, cfg.Tracker.WebhookSecretRef)
	}
	if !slices.Contains(cfg.SecretEnv, "GH_HOOK_SECRET") {
		t.Errorf("SecretEnv = %v, want GH_HOOK_SECRET", cfg.SecretEnv)
	}
	if cfg.Polling.WebhookInterval.Milliseconds() != 900000 {
		t.Errorf("WebhookInterval = %v", cfg.Polling.WebhookInterval)
	}
	if cfg.Server.PublicURL != "https://sortie.example.com" {
		t.Errorf("PublicURL = %q, want the trailing slash dropped", cfg.Server.PublicURL)
	}
}

func TestWebhooks_BadValuesAreErrors(t *testing.T) {
	tests := []struct{ name, fm, want string }{
		{"secret not a string", strings.Replace(githubMinimal, "active_states", "webhook_secret: 123456, active_states", 1),
			"tracker.webhook_secret: must be a string (got an integer)"},
		{"unset secret variable", strings.Replace(githubMinimal, "active_states", "webhook_secret: $NO_SUCH_SECRET_VAR, active_states", 1),
			"tracker.webhook_secret: environment variable NO_SUCH_SECRET_VAR is not set"},
		{"public url without scheme", githubMinimal + "server: {public_url: sortie.example.com}\n", "server.public_url: must be an absolute http or https URL"},
		{"public url with query", githubMinimal + "server: {public_url: 'https://h/x?token=123456'}\n", "server.public_url: must be an absolute http or https URL"},
		{"public url not a string", githubMinimal + "server: {public_url: 5}\n", "server.public_url: must be a URL"},
		{"negative webhook interval", githubMinimal + "polling: {webhook_interval_ms: -1}\n", "polling.webhook_interval_ms"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, problems, _ := checkFrontMatter(t, tt.fm, nil)
			text := problemLines(problems)
			if cfg != nil || !strings.Contains(text, tt.want) {
				t.Errorf("problems:\n%s\nwant an error containing %q", text, tt.want)
			}
			if strings.Contains(text, "123456") && tt.name == "secret not a string" {
				t.Errorf("a problem shows the secret:\n%s", text)
			}
			if n := strings.Count(text, tt.want); n != 1 {
				t.Errorf("%q reported %d times, want once:\n%s", tt.want, n, text)
			}
		})
	}
}
