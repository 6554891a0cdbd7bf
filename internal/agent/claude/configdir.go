package claude

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"sortie/internal/agent"
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
// <cache>/sortie/claude/<workflow key>/<issue key>, where cache is the agent user's
// cache directory (XDG_CACHE_HOME, else ~/.cache, in env; else below the temporary
// directory) and the keys are the start of the SHA-256 of the workflow's directory and
// of the issue (SORTIE_ISSUE_ID, which the daemon sets; the workspace, unique per issue,
// when it is unset). It is the same for every turn of the issue, after a restart too.
func issueConfigDir(env []string, workflowDir, workspace string) string {
	return agent.IssueStateDir(env, "claude", workflowDir, workspace)
}

// RemoveIssueState implements agent.IssueStateRemover: the issue's configuration
// directory goes, transcripts and all. An operator's own CLAUDE_CONFIG_DIR, shared by
// every issue, is left alone.
func (d *dialect) RemoveIssueState(env []string, workspace string, _ *runas.User) error {
	if agent.EnvValue(env, configEnv) != "" {
		return nil
	}
	return agent.RemoveStateDir(issueConfigDir(env, d.workflowDir, workspace))
}

// sessionDir matches the name of a session's directory beside its transcript
// (subagent transcripts, large tool results): a UUID.
var sessionDir = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
})

// resetConfigDir creates dir (0700, owner's) when missing and removes from it
// everything Sortie did not put there but the transcripts: projects/<project>/*.jsonl
// and the session directories beside them. .claude.json keeps only keptGlobalState.
// When login is not "", it is the user's credentials file, copied in when newer than
// the copy (the CLI refreshes its tokens in the copy); otherwise any copy is removed.
// Links are removed, never followed, and nothing outside dir is touched even if a link
// replaced part of it.
func resetConfigDir(dir string, owner *runas.User, login string) error {
	if err := owner.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	root, err := agent.OpenStateDir(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	entries, err := fs.ReadDir(root.FS(), ".")
	if err != nil {
		return err
	}
	// An empty directory (a new issue's, most of the time) has no state to keep and
	// nothing at the names about to be written.
	fresh := len(entries) == 0
	var state []byte
	if !fresh {
		state, _ = readBounded(root, globalStateFile, 64<<20)
	}
	for _, e := range entries {
		name := e.Name()
		switch {
		case name == "projects" && e.IsDir():
			if err := pruneProjects(root); err != nil {
				return err
			}
			continue
		case name == credentialsFile && login != "" && e.Type().IsRegular():
			continue
		}
		if err := root.RemoveAll(name); err != nil {
			return fmt.Errorf("resetting %s: %w", dir, err)
		}
	}
	if err := writeFile(root, globalStateFile, keptState(state), owner, fresh); err != nil {
		return fmt.Errorf("writing %s: %w", filepath.Join(dir, globalStateFile), err)
	}
	if login != "" {
		if err := copyLogin(root, login, owner); err != nil {
			return fmt.Errorf("copying %s into %s: %w", login, dir, err)
		}
	}
	return nil
}

// pruneProjects removes from projects/ everything but the project directories'
// transcripts and session directories (auto memory, memory/, is instructions).
func pruneProjects(root *os.Root) error {
	projects, err := fs.ReadDir(root.FS(), "projects")
	if err != nil {
		return err
	}
	for _, p := range projects {
		at := filepath.Join("projects", p.Name())
		if !p.IsDir() {
			if err := root.RemoveAll(at); err != nil {
				return err
			}
			continue
		}
		files, err := fs.ReadDir(root.FS(), at)
		if err != nil {
			return err
		}
		for _, f := range files {
			keep := f.Type().IsRegular() && strings.HasSuffix(f.Name(), ".jsonl") || f.IsDir() && sessionDir().MatchString(f.Name())
			if !keep {
				if err := root.RemoveAll(filepath.Join(at, f.Name())); err != nil {
					return err
				}
			}
		}
	}
	return nil
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

// maxLogin bounds the size of the credentials file copyLogin copies.
const maxLogin = 1 << 20

// copyLogin copies the user's credentials file at src into root when it is newer than
// the copy there. src is read by agent.ReadOwnedFile: never through a link, and only
// when it is a regular file of the agent's user (owner, or the daemon's user), for with
// agent.run_as the daemon is root and the agent's user could point it at any file.
func copyLogin(root *os.Root, src string, owner *runas.User) error {
	data, mtime, err := agent.ReadOwnedFile(src, owner, maxLogin)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // no login to copy; the CLI says it is not logged in
	}
	if err != nil {
		return err
	}
	if di, err := root.Lstat(credentialsFile); err == nil && di.Mode().IsRegular() && !mtime.After(di.ModTime()) {
		return nil
	}
	return writeFile(root, credentialsFile, data, owner, false)
}

// readBounded reads name in root, at most limit bytes.
func readBounded(root *os.Root, name string, limit int64) ([]byte, error) {
	f, err := root.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, limit))
}

// writeFile writes data to name in root (0600, owner's) through a temporary file and a
// rename, replacing whatever name was. With fresh (root was found empty) it is written
// in place, which O_EXCL keeps from writing through anything that appeared meanwhile:
// then it takes the usual way.
func writeFile(root *os.Root, name string, data []byte, owner *runas.User, fresh bool) error {
	if fresh {
		if err := writeNew(root, name, data, owner); !errors.Is(err, fs.ErrExist) {
			return err
		}
	}
	tmp := ".sortie-" + name
	_ = root.RemoveAll(tmp)
	if err := writeNew(root, tmp, data, owner); err != nil {
		return err
	}
	_ = root.RemoveAll(name) // a directory or link in its place
	if err := root.Rename(tmp, name); err != nil {
		_ = root.Remove(tmp)
		return err
	}
	return nil
}

// writeNew creates name in root (0600, owner's) with data; it fails with fs.ErrExist
// when anything is at name. A file it could not finish is removed.
func writeNew(root *os.Root, name string, data []byte, owner *runas.User) error {
	f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && owner != nil {
		err = root.Lchown(name, int(owner.UID), int(owner.GID))
	}
	if err != nil {
		_ = root.Remove(name)
	}
	return err
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
