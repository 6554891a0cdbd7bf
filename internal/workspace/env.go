package workspace

import (
	"maps"
	"slices"
	"strconv"
	"strings"
)

// baseEnvAllowList is what a hook may inherit from the daemon's environment: enough for
// a shell, git and ssh to work, and nothing that could carry a credential.
var baseEnvAllowList = []string{
	"PATH", "HOME", "SHELL", "TMPDIR", "USER", "LOGNAME", "TERM",
	"LANG", "LC_ALL", "LC_CTYPE", "SSH_AUTH_SOCK", "TZ",
}

// BaseEnvAllowed reports whether name is one of the variables hooks inherit from the
// daemon: PATH, HOME, SHELL, TMPDIR, USER, LOGNAME, TERM, LANG, LC_ALL, LC_CTYPE,
// SSH_AUTH_SOCK and TZ. Agent processes start from the same list and add their own
// provider variables.
func BaseEnvAllowed(name string) bool {
	return slices.Contains(baseEnvAllowList, name)
}

// daemonPrivateEnv are the daemon's variables that lead to its private state: the
// database's path, the .env file's (which may hold every Sortie secret) and the
// operator token.
var daemonPrivateEnv = []string{"SORTIE_DB_PATH", "SORTIE_DATABASE_URL", "SORTIE_ENV_FILE", "SORTIE_SERVER_AUTH_TOKEN"}

// DaemonPrivate reports whether name is one of the daemon's variables that lead to its
// private state: SORTIE_DB_PATH, SORTIE_ENV_FILE and SORTIE_SERVER_AUTH_TOKEN. No hook
// ever gets them, whatever Config.PassEnv or a hook's extra variables say, and the
// orchestrator gives them to no agent either.
func DaemonPrivate(name string) bool {
	return slices.Contains(daemonPrivateEnv, name)
}

// FilterEnv returns the KEY=VALUE entries of base whose name allow accepts and that are
// not named in drop, in their original order. Malformed entries are skipped; a nil
// allow accepts nothing.
func FilterEnv(base []string, allow func(name string) bool, drop []string) []string {
	out := make([]string, 0, len(base))
	if allow == nil {
		return out
	}
	for _, kv := range base {
		name, _, ok := strings.Cut(kv, "=")
		if !ok || name == "" || slices.Contains(drop, name) || !allow(name) {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// HookEnv returns the complete environment of a hook run in ws: the allow-listed and
// Config.PassEnv variables of Config.BaseEnv, then extra (in name order), then
// SORTIE_ISSUE_ID, SORTIE_ISSUE_IDENTIFIER, SORTIE_WORKSPACE (ws.Path) and
// SORTIE_ATTEMPT (ws.Attempt). Later entries replace earlier ones of the same name, so
// extra cannot override the SORTIE_ session variables. No variable named in
// Config.DropEnv is ever included, nor any DaemonPrivate variable, and extra entries
// with invalid names are skipped. The orchestrator may use it as the base of an agent
// process's environment.
func (m *Manager) HookEnv(ws Workspace, issue Issue, extra map[string]string) []string {
	return m.hookEnv(ws.Path, issue, ws.Attempt, extra)
}

// hookEnv is HookEnv for a path; attempt < 0 leaves SORTIE_ATTEMPT out.
func (m *Manager) hookEnv(wsPath string, issue Issue, attempt int, extra map[string]string) []string {
	env := FilterEnv(m.baseEnv, func(name string) bool {
		return (BaseEnvAllowed(name) || slices.Contains(m.passEnv, name)) && !DaemonPrivate(name)
	}, m.dropEnv)

	set := func(name, value string) {
		if !validEnvName(name) || slices.Contains(m.dropEnv, name) || DaemonPrivate(name) {
			return
		}
		env = slices.DeleteFunc(env, func(kv string) bool {
			return strings.HasPrefix(kv, name+"=")
		})
		env = append(env, name+"="+value)
	}
	for _, name := range slices.Sorted(maps.Keys(extra)) {
		set(name, extra[name])
	}
	set("SORTIE_ISSUE_ID", issue.ID)
	set("SORTIE_ISSUE_IDENTIFIER", issue.Identifier)
	set("SORTIE_WORKSPACE", wsPath)
	if attempt >= 0 {
		set("SORTIE_ATTEMPT", strconv.Itoa(attempt))
	}
	return m.runAs.Env(env)
}

// validEnvName accepts the portable shell variable names: [A-Za-z_][A-Za-z0-9_]*.
func validEnvName(name string) bool {
	if name == "" {
		return false
	}
	for i, r := range name {
		switch {
		case r == '_', 'A' <= r && r <= 'Z', 'a' <= r && r <= 'z':
		case i > 0 && '0' <= r && r <= '9':
		default:
			return false
		}
	}
	return true
}
