package opencode

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"sortie/internal/agent"
	"sortie/internal/runas"
)

// ToolsServer is the name of Sortie's own MCP server, which no configuration of the
// operator's may use.
const ToolsServer = agent.ToolsServer

// mcpEntries are servers as entries of OpenCode's `mcp` configuration: a stdio server
// ({command, args, env}) becomes {"type": "local", "command": [command, args...],
// "environment": env}; an http or sse one ({url, headers}) becomes {"type": "remote"}.
func mcpEntries(servers []agent.MCPServer) (map[string]any, error) {
	out := make(map[string]any, len(servers))
	for _, s := range servers {
		if err := s.NeedsCommandOrURL(); err != nil {
			return nil, err
		}
		if s.Command != "" {
			entry := map[string]any{"type": "local", "command": append([]string{s.Command}, s.Args...), "enabled": true}
			if len(s.Env) > 0 {
				entry["environment"] = s.Env
			}
			out[s.Name] = entry
			continue
		}
		entry := map[string]any{"type": "remote", "url": s.URL, "enabled": true}
		if len(s.Headers) > 0 {
			entry["headers"] = s.Headers
		}
		out[s.Name] = entry
	}
	return out, nil
}

// inlineConfig is the configuration a turn passes in OPENCODE_CONFIG_CONTENT, which
// OpenCode merges over its other configuration files: the operator's inline `config`,
// then `permission`, then the MCP servers, Sortie's own last so that nothing replaces
// them.
//
// Unless opencode.subagents is set, it denies the task tool (subagents): OpenCode
// 1.18.33's `run` prints only the main session's steps, so a subagent's model requests
// would reach no budget. The denial goes into the global permission and into the
// primary agent's own, which a project configuration in the workspace (the agent's to
// write) could otherwise set back to allow.
func (o options) inlineConfig(servers map[string]any) ([]byte, error) {
	cfg := map[string]any{}
	maps.Copy(cfg, o.Config)
	if o.Permission != nil {
		cfg["permission"] = o.Permission
	}
	if !o.Subagents {
		perm := cfg["permission"]
		if perm == nil && o.fileLevel != "" {
			perm = o.fileLevel // the config_file's, which an object here would replace
		}
		cfg["permission"] = denyTask(perm)
		primary := o.Agent
		if primary == "" {
			primary, _ = cfg["default_agent"].(string)
		}
		if primary == "" {
			primary = "build"
			cfg["default_agent"] = primary // not one the workspace's configuration names
		}
		agents := map[string]any{}
		if a, ok := cfg["agent"].(map[string]any); ok {
			maps.Copy(agents, a)
		}
		def := map[string]any{}
		if d, ok := agents[primary].(map[string]any); ok {
			maps.Copy(def, d)
		}
		def["permission"] = denyTask(def["permission"])
		agents[primary] = def
		cfg["agent"] = agents
	}
	if len(servers) > 0 {
		mcp := map[string]any{}
		maps.Copy(mcp, mcpOf(o.Config))
		maps.Copy(mcp, servers)
		cfg["mcp"] = mcp
	}
	if len(cfg) == 0 {
		return nil, nil
	}
	return json.Marshal(cfg)
}

// denyTask is permission p with the task tool denied: one action for everything
// becomes {"*": action, "task": "deny"} (OpenCode applies the last matching rule).
func denyTask(p any) any {
	out := map[string]any{}
	switch v := p.(type) {
	case string:
		out["*"] = v
	case map[string]any:
		maps.Copy(out, v)
	}
	out["task"] = "deny"
	return out
}

// stateRoot is where the isolated OpenCode directories of this daemon live when
// opencode.state_dir is not set: <cache>/sortie/opencode/<key>, where cache is the
// agent user's cache directory (XDG_CACHE_HOME, else ~/.cache, in the agent's env) and
// key is derived from the workflow's directory. It is the same on every start of the
// daemon, so sessions resume across restarts, and different for two workflows.
func stateRoot(env []string, workflowDir string) (string, error) {
	cache := agent.EnvValue(env, "XDG_CACHE_HOME")
	if cache == "" || !filepath.IsAbs(cache) {
		home := agent.EnvValue(env, "HOME")
		if home == "" {
			var err error
			if cache, err = os.UserCacheDir(); err != nil {
				return "", fmt.Errorf("no cache directory for OpenCode's state (set HOME or %s.state_dir): %w", Kind, err)
			}
		} else {
			cache = filepath.Join(home, ".cache")
		}
	}
	dir := workflowDir
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	sum := sha256.Sum256([]byte(dir))
	return filepath.Join(cache, "sortie", "opencode", hex.EncodeToString(sum[:8])), nil
}

// RemoveIssueState implements agent.IssueStateRemover: the issue's OpenCode directory
// goes (its configuration, sessions and downloads).
func (d *dialect) RemoveIssueState(env []string, workspace string, _ *runas.User) error {
	root := d.opts.StateDir
	if root == "" {
		var err error
		if root, err = stateRoot(env, d.workflowDir); err != nil {
			return err
		}
	}
	return agent.RemoveStateDir(issueDir(root, env, workspace))
}

// issueDir is the directory of one issue's OpenCode state below root:
// <root>/issues/<key>, where key is derived from the issue's id (SORTIE_ISSUE_ID in
// env) or, without one, from the workspace, which is unique per issue. Every turn of
// that issue, in this run or after a restart, gets the same directory, so its sessions
// resume; another issue gets another, which its agent cannot reach.
func issueDir(root string, env []string, workspace string) string {
	key := "workspace:" + workspace
	if id := agent.EnvValue(env, "SORTIE_ISSUE_ID"); id != "" {
		key = "issue:" + id
	}
	sum := sha256.Sum256([]byte(key))
	return filepath.Join(root, "issues", hex.EncodeToString(sum[:8]))
}

// isolatedDirs are the XDG base directories a local CLI runs with, below an issue's
// directory. OpenCode keeps its global configuration under XDG_CONFIG_HOME/opencode,
// its sessions under XDG_DATA_HOME/opencode, its state under XDG_STATE_HOME/opencode
// and the tools and packages it downloads (and runs) under XDG_CACHE_HOME/opencode.
func isolatedDirs(dir string) map[string]string {
	return map[string]string{
		"XDG_CONFIG_HOME": filepath.Join(dir, "config"),
		"XDG_DATA_HOME":   filepath.Join(dir, "data"),
		"XDG_STATE_HOME":  filepath.Join(dir, "state"),
		"XDG_CACHE_HOME":  filepath.Join(dir, "cache"),
	}
}

// writableDirs are the keys of isolatedDirs a confined CLI may write: not the
// configuration, which OpenCode loads code (plugins, tools) and instructions from.
var writableDirs = []string{"XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"}

// managedEnv are variables every turn runs with: no self-update in the middle of a
// run, and no session ever shared to a public URL, whatever a configuration says.
var managedEnv = []string{"OPENCODE_DISABLE_AUTOUPDATE=true", "OPENCODE_DISABLE_SHARE=true"}

// replacedEnv are the variables of the daemon's environment a turn does not inherit:
// the ones that would load another configuration than the adapter's.
var replacedEnv = []string{"OPENCODE_CONFIG", "OPENCODE_CONFIG_CONTENT", "OPENCODE_CONFIG_DIR"}

// stateDirs are what prepareState made for one turn.
type stateDirs struct {
	vars  []string // XDG_*_HOME=… for the CLI's environment
	write []string // what a confined CLI may write: the issue's data, state and cache
	read  []string // what it may only read: the issue's configuration, git's configuration
}

// prepareState makes the issue's isolated directories below dir for the agent's user,
// before every turn. The configuration directory is Sortie's alone: whatever is in it
// (an opencode.json, a plugin, a tool, an AGENTS.md an earlier turn's agent could have
// written when it ran unconfined) is removed, and only a link to git's own
// configuration (XDG_CONFIG_HOME/git, read-only to a confined CLI) is put back.
// OpenCode's credentials (`opencode auth login`, auth.json) are copied into the data
// directory (0600) when the operator's file is newer than the copy, so a token the CLI
// refreshes in its copy is kept until the operator logs in again.
func prepareState(dir string, env []string, owner *runas.User) (stateDirs, error) {
	var out stateDirs
	dirs := isolatedDirs(dir)
	if err := owner.MkdirAll(dir, 0o700); err != nil {
		return out, fmt.Errorf("creating OpenCode's isolated directory %s: %w", dir, err)
	}
	for _, k := range slices.Sorted(maps.Keys(dirs)) {
		d := dirs[k]
		if err := realDir(d, owner); err != nil {
			return out, err
		}
		if k == "XDG_CONFIG_HOME" {
			if err := emptyDir(d); err != nil {
				return out, fmt.Errorf("clearing OpenCode's configuration directory %s: %w", d, err)
			}
		}
		if err := realDir(filepath.Join(d, "opencode"), owner); err != nil {
			return out, err
		}
		out.vars = append(out.vars, k+"="+d)
		if slices.Contains(writableDirs, k) {
			out.write = append(out.write, d)
		} else {
			out.read = append(out.read, d)
		}
	}
	home := agent.EnvValue(env, "HOME")
	orig := func(key, fallback string) string {
		if v := agent.EnvValue(env, key); filepath.IsAbs(v) {
			return v
		}
		if home == "" {
			return ""
		}
		return filepath.Join(home, fallback)
	}
	if base := orig("XDG_CONFIG_HOME", ".config"); base != "" {
		git := filepath.Join(base, "git")
		if _, err := os.Stat(git); err == nil && !within(git, dir) {
			to := filepath.Join(dirs["XDG_CONFIG_HOME"], "git")
			if err := os.Symlink(git, to); err == nil {
				_ = owner.Chown(to)
				// git's own files, never the directory: git/credentials beside them
				// is where `git credential-store` keeps passwords.
				for _, d := range []string{git, resolvedDir(git)} {
					for _, f := range []string{"config", "ignore", "attributes"} {
						if d != "" {
							out.read = append(out.read, filepath.Join(d, f))
						}
					}
				}
			}
		}
	}
	if base := orig("XDG_DATA_HOME", ".local/share"); base != "" {
		auth := filepath.Join(base, "opencode", "auth.json")
		if !within(auth, dir) {
			if err := copyCredentials(auth, filepath.Join(dirs["XDG_DATA_HOME"], "opencode", "auth.json"), owner); err != nil {
				return out, err
			}
		}
	}
	return out, nil
}

// resolvedDir is dir with its links resolved when that differs from dir, else "".
func resolvedDir(dir string) string {
	if r, err := filepath.EvalSymlinks(dir); err == nil && r != dir {
		return r
	}
	return ""
}

// within reports whether path is dir or below it.
func within(path, dir string) bool {
	return path == dir || strings.HasPrefix(path, dir+string(filepath.Separator))
}

// realDir makes d a directory of owner's (0700), replacing whatever else is there:
// the agent may have put a link where a directory was, to make Sortie write through
// it.
func realDir(d string, owner *runas.User) error {
	if fi, err := os.Lstat(d); err == nil && !fi.IsDir() {
		if err := os.Remove(d); err != nil {
			return fmt.Errorf("replacing %s with a directory: %w", d, err)
		}
	}
	if err := owner.MkdirAll(d, 0o700); err != nil {
		return fmt.Errorf("creating OpenCode's isolated directory %s: %w", d, err)
	}
	return nil
}

// emptyDir removes everything in d, following no link.
func emptyDir(d string) error {
	entries, err := os.ReadDir(d)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(d, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// maxCredentials bounds the size of the auth.json copyCredentials copies.
const maxCredentials = 1 << 20

// copyCredentials copies the operator's auth.json at from to to (0600, owner's), when
// from exists and is newer than to. from is read by agent.ReadOwnedFile: never through
// a link, and only when it is a regular file of the agent's user (owner, or the
// daemon's user), for with agent.run_as the daemon is root and the agent's user could
// point it at any file. The copy is written beside to and renamed over it, so a link
// the agent put at to is replaced, never written through.
func copyCredentials(from, to string, owner *runas.User) error {
	b, mtime, err := agent.ReadOwnedFile(from, owner, maxCredentials)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // no login to carry over
	}
	if err != nil {
		return fmt.Errorf("not copying OpenCode's credentials: %w", err)
	}
	if dst, err := os.Lstat(to); err == nil && dst.Mode().IsRegular() && !mtime.After(dst.ModTime()) {
		return nil // the copy is current, or the CLI refreshed it since
	}
	f, err := os.CreateTemp(filepath.Dir(to), ".auth-*.json")
	if err != nil {
		return fmt.Errorf("copying OpenCode's credentials: %w", err)
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = owner.Chown(f.Name())
	}
	if err == nil {
		err = os.Rename(f.Name(), to)
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("copying OpenCode's credentials to %s: %w", to, err)
	}
	return nil
}

// turnEnv is base with the isolated directories, the adapter's configuration and the
// managed variables in place of the daemon's own.
func turnEnv(base, state []string, content []byte, configFile string) []string {
	drop := append(append([]string(nil), replacedEnv...), "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME", "PWD")
	for _, kv := range managedEnv {
		k, _, _ := strings.Cut(kv, "=")
		drop = append(drop, k)
	}
	var out []string
	for _, kv := range base {
		if k, _, _ := strings.Cut(kv, "="); !slices.Contains(drop, k) {
			out = append(out, kv)
		}
	}
	out = append(out, state...)
	out = append(out, managedEnv...)
	if len(content) > 0 {
		out = append(out, "OPENCODE_CONFIG_CONTENT="+string(content))
	}
	if configFile != "" {
		out = append(out, "OPENCODE_CONFIG="+configFile)
	}
	return out
}

// remoteEnv are the `env` words that set the adapter's variables for the CLI on an SSH
// host, where the remote user's own directories are used. The inline configuration is
// not among them: it may hold MCP servers' tokens, and a command line is readable by
// every user of both hosts (/proc/*/cmdline); remoteProgram sends it on stdin.
func remoteEnv(configFile string) []string {
	words := append([]string{"env"}, managedEnv...)
	if configFile != "" {
		words = append(words, "OPENCODE_CONFIG="+configFile)
	}
	return words
}

// readContent is the remote shell script that reads the inline configuration from the
// first line of standard input into OPENCODE_CONFIG_CONTENT (exported: the CLI's
// environment, readable only by its user) and then runs its arguments, which read the
// rest, the prompt. The shell's `read` takes one byte at a time from a pipe, so it
// consumes that line and nothing more.
const readContent = `IFS= read -r OPENCODE_CONFIG_CONTENT && export OPENCODE_CONFIG_CONTENT && exec "$@"`

// remoteProgram is what the remote shell runs for a turn, program being the CLI's
// words, and the line to send before the prompt on standard input ("" for none).
// json.Marshal escapes every newline in content, so it is one line.
func remoteProgram(content []byte, configFile string, program []string) (words []string, stdin string) {
	words = append(remoteEnv(configFile), program...)
	if len(content) == 0 {
		return words, ""
	}
	return append([]string{"sh", "-c", readContent, "sh"}, words...), string(content) + "\n"
}
