package config

import (
	"slices"
	"strings"
)

// secretKeyWords mark a key of an extension block whose value is a credential. Webhook
// URLs and auth headers carry credentials as well, so they are included.
var secretKeyWords = []string{"key", "token", "secret", "password", "passwd", "credential", "webhook", "authorization"}

func isSecretKey(k string) bool {
	k = strings.ToLower(k)
	return slices.ContainsFunc(secretKeyWords, func(w string) bool { return strings.Contains(k, w) })
}

// secretEnv returns the names of environment variables that the front matter uses for
// credentials: references in tracker.api_key and tracker.endpoint, in github.api_key and
// github.endpoint, in any value held by a secret-looking key anywhere in an extension
// block, and anywhere in notifications. raw must be the front matter as written, before
// overrides.
func secretEnv(raw map[string]any) []string {
	var names []string
	addRefs := func(s string) {
		for _, n := range EnvRefs(s) {
			if !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	if tracker, ok := raw["tracker"].(map[string]any); ok {
		for _, k := range []string{"api_key", "endpoint", "webhook_secret"} {
			if s, ok := tracker[k].(string); ok {
				addRefs(s)
			}
		}
		// tracker.provider is the adapter's own object: its secret-looking keys are
		// credentials as in an extension block.
		walkSecrets("provider", tracker["provider"], false, addRefs, 0)
		if provider, ok := tracker["provider"].(map[string]any); ok {
			if s, ok := provider["endpoint"].(string); ok {
				addRefs(s) // as tracker.endpoint's
			}
		}
	}
	if server, ok := raw["server"].(map[string]any); ok {
		if s, ok := server["auth_token"].(string); ok {
			addRefs(s)
		}
	}
	// The github: block holds the token reactions use when the tracker is not GitHub.
	// Collected whether or not a reaction is on: the variable is a credential anyway.
	if github, ok := raw["github"].(map[string]any); ok {
		for _, k := range []string{"api_key", "endpoint"} {
			if s, ok := github[k].(string); ok {
				addRefs(s)
			}
		}
	}
	// A database URL carries the database's password.
	if s, ok := raw["database_url"].(string); ok {
		addRefs(s)
	}
	for k, v := range raw {
		if !slices.Contains(typedKeys, k) {
			// Every reference in the notifications block is a credential: a webhook URL
			// is one, whatever its key is called.
			walkSecrets(k, v, isSecretKey(k) || k == "notifications", addRefs, 0)
		}
	}
	slices.Sort(names)
	return names
}

// maxSecretDepth bounds the walk over operator-supplied nesting.
const maxSecretDepth = 64

// walkSecrets calls add for every string under v that sits below a secret-looking key.
func walkSecrets(key string, v any, secret bool, add func(string), depth int) {
	if depth > maxSecretDepth {
		return
	}
	switch t := v.(type) {
	case string:
		if secret {
			add(t)
		}
	case map[string]any:
		for k, e := range t {
			walkSecrets(k, e, secret || isSecretKey(k), add, depth+1)
		}
	case []any:
		for _, e := range t {
			walkSecrets(key, e, secret, add, depth+1)
		}
	}
}
