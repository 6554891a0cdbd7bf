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
// SSH_AUTH_SOCK and TZ (a hook is the operator's script: an after_run that pushes may
// need the SSH agent; a confined hook loses it, docs/workspaces.md). Agents start from
// another list, agentenv.Base, which never holds SSH_AUTH_SOCK or another side channel.
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

// gitNeutralConfig is the git configuration every hook runs git with, given by name
// through the environment (GIT_CONFIG_COUNT, see GitEnv). Configuration given that way
// is git's command-line level: it overrides the repository's own `.git/config`, which
// the agent may write. Each entry turns off a setting by which a repository's
// configuration makes git run a program of its choosing: a hook under
// core.hooksPath (or .git/hooks), the fsmonitor daemon, the ssh program, the
// password prompter, a credential helper (the empty value empties the list), the
// ext:: transport, an external diff, commit and tag signing with a chosen gpg
// program, the editor and the pager. core.gitProxy, which may be given many times,
// is turned off by GitEnv's empty GIT_PROXY_COMMAND instead.
//
// Settings whose names the repository chooses (filter.<driver>.*, diff.<driver>.*,
// merge.<driver>.*, alias.*, remote.<name>.receivepack, credential.<url>.helper)
// cannot be overridden by name: what they run, runs inside the hook's confinement
// (docs/workspaces.md#hooks-and-the-agents-files).
var gitNeutralConfig = []struct{ key, value string }{
	{"core.hooksPath", "/dev/null"},
	{"core.fsmonitor", "false"},
	{"core.sshCommand", "ssh"},
	{"core.askPass", ""},
	{"credential.helper", ""},
	{"protocol.ext.allow", "never"},
	{"diff.external", ""},
	{"commit.gpgSign", "false"},
	{"tag.gpgSign", "false"},
	{"gpg.program", "gpg"},
	{"gpg.ssh.program", "ssh-keygen"},
	{"gpg.x509.program", "gpgsm"},
	{"core.editor", "false"},
	{"sequence.editor", "false"},
	{"core.pager", "cat"},
}

// GitEnv returns env with the repository's own git configuration neutralised for every
// git the process it starts runs: GIT_CONFIG_NOSYSTEM=1, an empty GIT_PROXY_COMMAND
// (no core.gitProxy), and the settings of gitNeutralConfig appended, as GIT_CONFIG_KEY_n/GIT_CONFIG_VALUE_n, after the entries
// GIT_CONFIG_COUNT in env already counts (a GIT_CONFIG_COUNT that is not a number is
// replaced). A script that wants one of these settings back says so on its command
// line (`git -c commit.gpgSign=true commit`), which git reads after the environment;
// GIT_SSH_COMMAND in the script's environment still overrides core.sshCommand. Hooks
// get it always; any git Sortie itself runs must too.
func GitEnv(env []string) []string {
	out := slices.Clone(env)
	set := func(name, value string) {
		out = slices.DeleteFunc(out, func(kv string) bool { return strings.HasPrefix(kv, name+"=") })
		out = append(out, name+"="+value)
	}
	n := 0
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "GIT_CONFIG_COUNT="); ok {
			if c, err := strconv.Atoi(v); err == nil && c >= 0 && c < 1<<16 {
				n = c
			} else {
				n = 0
			}
		}
	}
	for i, c := range gitNeutralConfig {
		set("GIT_CONFIG_KEY_"+strconv.Itoa(n+i), c.key)
		set("GIT_CONFIG_VALUE_"+strconv.Itoa(n+i), c.value)
	}
	set("GIT_CONFIG_COUNT", strconv.Itoa(n+len(gitNeutralConfig)))
	set("GIT_CONFIG_NOSYSTEM", "1")
	set("GIT_PROXY_COMMAND", "")
	return out
}
