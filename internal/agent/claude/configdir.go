package claude

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"

	"sortie/internal/agent"
	"sortie/internal/agent/statedir"
	"sortie/internal/runas"
)

// The per-issue configuration directory. Claude Code loads instructions (CLAUDE.md,
// rules/), code (settings.json hooks, apiKeyHelper and env, agents/, commands/,
// skills/, plugins/, the shell snapshots and session-env scripts it sources) and MCP
// servers (.claude.json) from its configuration directory, ~/.claude by default, and
// a confined CLI must be able to write that directory. Shared by every issue and by the
// operator's own `claude`, it would let one issue's agent plant instructions or hooks
// for every later session, and for the operator's unconfined one. So a local CLI runs
// with CLAUDE_CONFIG_DIR set to a directory of its issue's own, and before every turn
// everything in it but the issue's transcripts is removed: not even the issue's own
// earlier turns can plant what the CLI loads. The transcripts (projects/) stay, so
// that --resume finds the session across turns and daemon restarts. With
// CLAUDE_CONFIG_DIR set, the CLI keeps its global state file (.claude.json, ~/.claude.json
// otherwise) in that directory too (2.1.330).

// configEnv is the variable that names Claude Code's configuration directory.
const configEnv = "CLAUDE_CONFIG_DIR"

// credentialsFile is where the CLI keeps a `claude` login (`/login`) in its
// configuration directory, on Linux.
const credentialsFile = ".credentials.json"

// globalStateFile is the CLI's global state in its configuration directory: user-scope
// MCP servers, per-project settings, caches.
const globalStateFile = ".claude.json"

// keptGlobalState are the keys of .claude.json that survive a reset: an anonymous id
// the CLI would otherwise make up anew every turn, and when it first ran.
var keptGlobalState = []string{"userID", "firstStartTime"}

// issueConfigDir is the configuration directory of the issue whose session has
// environment env and workspace workspace, in the workflow in workflowDir:
// statedir.Dir, <cache>/sortie/claude/<workflow>/<issue>.
func issueConfigDir(env []string, workflowDir, workspace string) string {
	return statedir.Dir(env, "claude", "", workflowDir, workspace)
}

// RemoveIssueState implements agent.IssueStateRemover: the issue's configuration
// directory goes, transcripts and all. An operator's own CLAUDE_CONFIG_DIR, shared by
// every issue, is left alone.
func (d *dialect) RemoveIssueState(env []string, workspace string, owner *runas.User) error {
	if agent.EnvValue(env, configEnv) != "" {
		return nil
	}
	return statedir.Remove(issueConfigDir(env, d.workflowDir, workspace), owner)
}

// keptInConfigDir are what a reset leaves of the configuration directory: the
// transcripts, projects/<project>/*.jsonl, and the session directories beside them
// (subagent transcripts, large tool results), named by the session's UUID. Not auto
// memory (memory/), which is instructions.
var keptInConfigDir = []string{"projects/*/*.jsonl", "projects/*/" + uuidPattern + "/"}

// uuidPattern is a path.Match pattern of a lower-case UUID.
var uuidPattern = hexDigits(8) + "-" + hexDigits(4) + "-" + hexDigits(4) + "-" + hexDigits(4) + "-" + hexDigits(12)

func hexDigits(n int) string { return strings.Repeat("[0-9a-f]", n) }

// resetConfigDir prepares dir for a turn (statedir.Prepare): made when missing (0700,
// owner's), emptied of everything but keptInConfigDir, with a .claude.json that holds
// only keptGlobalState. When login is not "", it is the user's credentials file,
// copied in when newer than the copy (the CLI refreshes its tokens in the copy);
// otherwise any copy is removed.
func resetConfigDir(dir string, owner *runas.User, login string) error {
	return statedir.Prepare(dir, owner, statedir.Spec{
		Keep:  keptInConfigDir,
		Files: []statedir.File{{Name: globalStateFile, Content: keptState}},
		Login: &statedir.Login{From: login, To: credentialsFile},
	})
}

// keptState is the .claude.json Sortie writes: the keptGlobalState keys of state, when
// they hold strings or numbers.
func keptState(state []byte) []byte {
	var old map[string]json.RawMessage
	_ = json.Unmarshal(state, &old)
	kept := map[string]any{}
	for _, k := range keptGlobalState {
		var v any
		if json.Unmarshal(old[k], &v) == nil {
			switch v.(type) {
			case string, float64:
				kept[k] = v
			}
		}
	}
	b, _ := json.Marshal(kept)
	return b
}

// loginFile is the user's own credentials file that use_login copies: in
// ~/.claude of the agent's user.
func loginFile(env []string) string {
	home := agent.EnvValue(env, "HOME")
	if !filepath.IsAbs(home) {
		return ""
	}
	return filepath.Join(home, ".claude", credentialsFile)
}

// credentialVars are the variables with which the CLI needs no login of its own.
var credentialVars = []string{
	"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN",
	"CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX", "CLAUDE_CODE_USE_FOUNDRY",
}

// hasCredentialVar reports whether env holds one of credentialVars.
func hasCredentialVar(env []string) bool {
	for _, k := range credentialVars {
		if strings.TrimSpace(agent.EnvValue(env, k)) != "" {
			return true
		}
	}
	return false
}

// authHint says how to authenticate agents without the user's `claude` login.
const authHint = "agents do not use your `claude` login (each issue has its own Claude Code configuration directory): " +
	"set ANTHROPIC_API_KEY, or CLAUDE_CODE_OAUTH_TOKEN from `claude setup-token`, in the daemon's environment, " +
	"or set claude-code.use_login: true to copy the login to each issue (the agent can then read it)"

// authNotes are the notifications of a session whose CLI has no credential Sortie can
// see: neither a credentialVars variable nor a copied login (login, "" for none).
func authNotes(env []string, login string) []string {
	if hasCredentialVar(env) {
		return nil
	}
	if login != "" {
		if _, err := os.Stat(login); err != nil {
			return []string{"claude-code.use_login: no login at " + login + " to copy (run `claude` and /login as the agent's user)"}
		}
		return []string{"claude-code.use_login: the agent runs with a copy of " + login + ", which it can read"}
	}
	if own := loginFile(env); own != "" {
		if _, err := os.Stat(own); err == nil {
			return []string{"claude-code: no ANTHROPIC_API_KEY or other credential in the environment, and " + authHint}
		}
	}
	return nil
}

// notLoggedIn reports whether a failed turn's message says the CLI had no credential.
func notLoggedIn(msg string) bool {
	m := strings.ToLower(msg)
	return strings.Contains(m, "not logged in") || strings.Contains(m, "run /login") || strings.Contains(m, "invalid api key")
}
