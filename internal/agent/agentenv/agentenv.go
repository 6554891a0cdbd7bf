// Package agentenv says which of the daemon's environment variables an agent CLI may
// inherit. The agent is untrusted, and a variable names a door as often as a setting:
// TMUX and STY reach a terminal multiplexer that runs commands outside the sandbox,
// DBUS_SESSION_BUS_ADDRESS a desktop session bus, SSH_AUTH_SOCK an SSH agent,
// PGPASSWORD a database. So the agent's environment is an allow-list: the basics every
// program and toolchain reads (Base), what its adapter's CLI needs (agent.Meta.Env) and
// what the operator names in agent.env; a named side channel (SideChannel) never
// passes, whoever asks for it.
package agentenv

import (
	"fmt"
	"slices"
	"strings"
)

// Base are the variables every agent inherits from the daemon: what a shell, a CLI
// and a toolchain need to run (the search path, the user, the locale, the terminal,
// the time zone), the proxies and CA bundles without which nothing reaches the model
// API behind a corporate proxy, the XDG base directories (CLIs keep their own
// configuration there; XDG_RUNTIME_DIR, where the session's sockets live, is not one of
// them), and toolchain locations and settings that carry no credential (Go's, Rust's,
// Node's, npm's cache and prefix, but not npm_config_* as a whole: npm reads its
// registry tokens from npm_config__authToken and the like). A name ending in "*" is a
// prefix.
var Base = []string{
	"PATH", "HOME", "USER", "LOGNAME", "SHELL", "TMPDIR",
	"LANG", "LANGUAGE", "LC_*", "TERM", "COLORTERM", "NO_COLOR", "TZ",
	"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "no_proxy", "all_proxy",
	"SSL_CERT_FILE", "SSL_CERT_DIR", "NODE_EXTRA_CA_CERTS", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE",
	"XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CONFIG_DIRS", "XDG_DATA_DIRS",
	"GOPATH", "GOROOT", "GOFLAGS", "GOPROXY", "GOMODCACHE", "GOCACHE", "GOTOOLCHAIN", "GOPRIVATE", "GONOPROXY",
	"GONOSUMDB", "GOSUMDB", "GOINSECURE", "CGO_ENABLED",
	"CARGO_HOME", "RUSTUP_HOME", "RUSTUP_TOOLCHAIN",
	"npm_config_cache", "npm_config_prefix", "NPM_CONFIG_CACHE", "NPM_CONFIG_PREFIX",
	"JAVA_HOME",
}

// sideChannels are variables that point at something outside the sandbox that acts on
// the agent's behalf: a terminal multiplexer (tmux, screen), a desktop session (D-Bus,
// X11, Wayland, and the runtime directory that holds their sockets), an SSH or GPG
// agent, a Kerberos ticket cache, a container engine, and PostgreSQL's credentials and
// connection settings (a cluster daemon's database). None reaches an agent, even
// through agent.env. A name ending in "*" is a prefix.
var sideChannels = []string{
	"TMUX", "TMUX_PANE", "TMUX_TMPDIR", "STY", "WINDOW",
	"DBUS_*", "XDG_RUNTIME_DIR", "DISPLAY", "WAYLAND_DISPLAY", "XAUTHORITY", "XDG_SESSION_*",
	"SSH_AUTH_SOCK", "SSH_AGENT_PID", "GPG_AGENT_INFO", "KRB5CCNAME",
	"DOCKER_HOST", "CONTAINER_HOST",
	"PG*",
}

// SideChannel reports whether name is a variable no agent may inherit (sideChannels).
func SideChannel(name string) bool { return Match(sideChannels, name) }

// Match reports whether name is one of names, or starts with one of them that ends in
// "*".
func Match(names []string, name string) bool {
	return slices.ContainsFunc(names, func(n string) bool {
		if prefix, ok := strings.CutSuffix(n, "*"); ok {
			return strings.HasPrefix(name, prefix)
		}
		return n == name
	})
}

// Private reports whether name is a variable of Sortie's own that no agent inherits
// from the daemon: every SORTIE_* (configuration overrides hold the tracker's key, the
// database's path, the operator token). The orchestrator sets the session's own
// SORTIE_* variables itself.
func Private(name string) bool { return strings.HasPrefix(name, "SORTIE_") }

// CheckOperatorName says why name cannot be in agent.env, or "" when it can: a
// variable name (letters, digits, underscores, not starting with a digit) or a prefix
// of one followed by "*", that is not Sortie's own (Private) and is no side channel.
func CheckOperatorName(name string) string {
	base := strings.TrimSuffix(name, "*")
	if base == "" || !validName(base) {
		return fmt.Sprintf("%q is not an environment variable name (letters, digits and _, optionally ending in * for a prefix)", name)
	}
	if Private(base) || strings.HasPrefix("SORTIE_", base) && strings.HasSuffix(name, "*") {
		return fmt.Sprintf("%s: Sortie's own SORTIE_* variables never reach agents (the session's are set by Sortie)", name)
	}
	if SideChannel(base) || strings.HasSuffix(name, "*") && slices.ContainsFunc(sideChannels, func(s string) bool {
		return strings.HasPrefix(strings.TrimSuffix(s, "*"), base)
	}) {
		return fmt.Sprintf("%s: it names a side channel out of the sandbox (a terminal multiplexer, a desktop or SSH agent socket, the database); it never reaches agents", name)
	}
	return ""
}

func validName(s string) bool {
	for i, c := range s {
		switch {
		case c == '_', 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z':
		case '0' <= c && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// Filter returns environ's variables that an agent may inherit: those Base, adapter or
// operator allow (names, or prefixes ending in "*"), except side channels, Sortie's own
// and drop (WORKFLOW.md's secrets), in environ's order. Malformed entries are dropped.
func Filter(environ, adapter, operator, drop []string) []string {
	out := make([]string, 0, len(environ))
	for _, kv := range environ {
		name, _, ok := strings.Cut(kv, "=")
		if !ok || name == "" || Private(name) || SideChannel(name) || slices.Contains(drop, name) {
			continue
		}
		if Match(Base, name) || Match(adapter, name) || Match(operator, name) {
			out = append(out, kv)
		}
	}
	return out
}
