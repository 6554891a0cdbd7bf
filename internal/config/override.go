package config

import (
	"fmt"
	"strings"
)

// overrideKind says how an environment value is coerced before it replaces a YAML value.
type overrideKind int

const (
	overrideString overrideKind = iota
	overrideInt                 // left as a string; the builder parses it like a YAML int-string
	overrideBool                // true, false, 1 or 0, case-insensitive
	overrideList                // comma-separated; items trimmed, empty items dropped
)

// envOverride maps one SORTIE_* variable onto a front-matter key.
type envOverride struct {
	Env     string
	Section string // "" for a top-level key
	Key     string // may be a dotted sub-path (comments.on_dispatch)
	Kind    overrideKind
}

// Field is the dotted field path the override replaces.
func (o envOverride) Field() string {
	if o.Section == "" {
		return o.Key
	}
	return o.Section + "." + o.Key
}

// envOverrides lists every SORTIE_* variable that replaces a WORKFLOW.md value. Hooks,
// agent.max_concurrent_agents_by_state, reactions, ci_feedback, github, self_review and
// extension blocks are deliberately not overridable: they are structured values with no
// sensible one-line form (and the reference daemon does not override self_review
// either). github.api_key takes a $VAR reference instead.
var envOverrides = []envOverride{
	{"SORTIE_TRACKER_KIND", "tracker", "kind", overrideString},
	{"SORTIE_TRACKER_ENDPOINT", "tracker", "endpoint", overrideString},
	{"SORTIE_TRACKER_API_KEY", "tracker", "api_key", overrideString},
	{"SORTIE_TRACKER_PROJECT", "tracker", "project", overrideString},
	{"SORTIE_TRACKER_QUERY_FILTER", "tracker", "query_filter", overrideString},
	{"SORTIE_TRACKER_HANDOFF_STATE", "tracker", "handoff_state", overrideString},
	{"SORTIE_TRACKER_IN_PROGRESS_STATE", "tracker", "in_progress_state", overrideString},
	{"SORTIE_TRACKER_ACTIVE_STATES", "tracker", "active_states", overrideList},
	{"SORTIE_TRACKER_TERMINAL_STATES", "tracker", "terminal_states", overrideList},
	{"SORTIE_TRACKER_COMMENTS_ON_DISPATCH", "tracker", "comments.on_dispatch", overrideBool},
	{"SORTIE_TRACKER_COMMENTS_ON_COMPLETION", "tracker", "comments.on_completion", overrideBool},
	{"SORTIE_TRACKER_COMMENTS_ON_FAILURE", "tracker", "comments.on_failure", overrideBool},
	{"SORTIE_POLLING_INTERVAL_MS", "polling", "interval_ms", overrideInt},
	{"SORTIE_WORKSPACE_ROOT", "workspace", "root", overrideString},
	{"SORTIE_AGENT_KIND", "agent", "kind", overrideString},
	{"SORTIE_AGENT_COMMAND", "agent", "command", overrideString},
	{"SORTIE_AGENT_TURN_TIMEOUT_MS", "agent", "turn_timeout_ms", overrideInt},
	{"SORTIE_AGENT_READ_TIMEOUT_MS", "agent", "read_timeout_ms", overrideInt},
	{"SORTIE_AGENT_STALL_TIMEOUT_MS", "agent", "stall_timeout_ms", overrideInt},
	{"SORTIE_AGENT_MAX_CONCURRENT_AGENTS", "agent", "max_concurrent_agents", overrideInt},
	{"SORTIE_AGENT_MAX_TURNS", "agent", "max_turns", overrideInt},
	{"SORTIE_AGENT_MAX_RETRY_BACKOFF_MS", "agent", "max_retry_backoff_ms", overrideInt},
	{"SORTIE_AGENT_MAX_SESSIONS", "agent", "max_sessions", overrideInt},
	{"SORTIE_AGENT_MAX_RETRIES", "agent", "max_retries", overrideInt},
	{"SORTIE_AGENT_MAX_TOKENS", "agent", "max_tokens", overrideInt},
	{"SORTIE_AGENT_MAX_COST_USD", "agent", "max_cost_usd", overrideInt},
	{"SORTIE_DB_PATH", "", "db_path", overrideString},
	{"SORTIE_DATABASE_URL", "", "database_url", overrideString},
	{"SORTIE_SERVER_AUTH_TOKEN", "server", "auth_token", overrideString},
}

// overrideLookup returns the value for a SORTIE_* variable: the real environment when
// non-empty, else the .env file when non-empty.
func overrideLookup(env func(string) (string, bool), dotenv map[string]string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		if v, _ := env(name); v != "" {
			return v, true
		}
		if v := dotenv[name]; v != "" {
			return v, true
		}
		return "", false
	}
}

// applyOverrides writes SORTIE_* values into raw before the builders run, and returns the
// fields they replaced with the variable that supplied each one. Values are not
// $-expanded later. A section that exists but is not a map is left for the builder to
// report.
func applyOverrides(raw map[string]any, lookup func(string) (string, bool)) (map[string]string, []Problem) {
	sources := map[string]string{}
	var problems []Problem
	for _, o := range envOverrides {
		v, ok := lookup(o.Env)
		if !ok {
			continue
		}
		var value any
		switch o.Kind {
		case overrideString:
			value = v
		case overrideInt:
			value = strings.TrimSpace(v)
		case overrideBool:
			switch strings.ToLower(strings.TrimSpace(v)) {
			case "true", "1":
				value = true
			case "false", "0":
				value = false
			default:
				problems = append(problems, Problem{
					Severity: SeverityError, Check: o.Field(), Field: o.Field(),
					Message: fmt.Sprintf("must be true, false, 1 or 0 (got %q) (from %s)", v, o.Env),
				})
				continue
			}
		case overrideList:
			items := []any{}
			for item := range strings.SplitSeq(v, ",") {
				if item = strings.TrimSpace(item); item != "" {
					items = append(items, item)
				}
			}
			value = items
		}
		if setPath(raw, o.Section, o.Key, value) {
			sources[o.Field()] = o.Env
		}
	}
	return sources, problems
}

// setPath sets raw[section][k1][k2]... = value, creating missing maps. It reports false,
// changing nothing, when something on the way exists but is not a map.
func setPath(raw map[string]any, section, key string, value any) bool {
	keys := strings.Split(key, ".")
	if section != "" {
		keys = append([]string{section}, keys...)
	}
	m := raw
	for _, k := range keys[:len(keys)-1] {
		next, exists := m[k]
		if !exists || next == nil {
			child := map[string]any{}
			m[k] = child
			m = child
			continue
		}
		child, ok := next.(map[string]any)
		if !ok {
			return false
		}
		m = child
	}
	m[keys[len(keys)-1]] = value
	return true
}

// OverrideEnv returns the names of the SORTIE_* variables that replace WORKFLOW.md
// values, in the order they are applied. SORTIE_ENV_FILE, which names a .env file, is
// not among them.
func OverrideEnv() []string {
	names := make([]string, len(envOverrides))
	for i, o := range envOverrides {
		names[i] = o.Env
	}
	return names
}
