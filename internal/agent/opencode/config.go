package opencode

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"sortie/internal/agent"
	"sortie/internal/agent/statedir"
	"sortie/internal/runas"
)

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

// issueDir is the directory of the OpenCode state of the issue whose session has
// environment env and workspace workspace, in the workflow in workflowDir:
// statedir.Dir, <base>/<workflow>/<issue>, base being opencode.state_dir when set,
// else <cache>/sortie/opencode. Every turn of that issue, in this run or after a
// restart, gets the same directory, so its sessions resume; another issue gets
// another, which its agent cannot reach. A directory the issue had in the layout
// before (legacyDir) is moved there first when it has none yet (statedir.Adopt).
func issueDir(env []string, base, workflowDir, workspace string, owner *runas.User) (string, error) {
	dir := statedir.Dir(env, Kind, base, workflowDir, workspace)
	return dir, statedir.Adopt(dir, legacyDir(env, base, workflowDir, workspace), owner)
}

// legacyDir is where Sortie kept the issue's OpenCode state before statedir's one
// layout: <base>/issues/<issue key>, base being opencode.state_dir, else
// <cache>/sortie/opencode/<workflow key>; "" without a cache directory.
func legacyDir(env []string, base, workflowDir, workspace string) string {
	if base == "" {
		cache := agent.CacheHome(env)
		if cache == "" {
			cache, _ = os.UserCacheDir()
		}
		if cache == "" {
			return ""
		}
		wf, _ := filepath.Abs(workflowDir)
		base = filepath.Join(cache, "sortie", "opencode", statedir.Key(wf, 8))
	}
	key := "workspace:" + workspace
	if id := agent.EnvValue(env, "SORTIE_ISSUE_ID"); id != "" {
		key = "issue:" + id
	}
	return filepath.Join(base, "issues", statedir.Key(key, 8))
}

// RemoveIssueState implements agent.IssueStateRemover: the issue's OpenCode directory
// goes (its configuration, sessions and downloads), and one left in the layout before.
func (d *dialect) RemoveIssueState(env []string, workspace string, owner *runas.User) error {
	return errors.Join(
		statedir.Remove(statedir.Dir(env, Kind, d.opts.StateDir, d.workflowDir, workspace), owner),
		statedir.Remove(legacyDir(env, d.opts.StateDir, d.workflowDir, workspace), owner))
}

// isolatedDirs are the XDG base directories a local CLI runs with, by the name of
// their directory in the issue's. OpenCode keeps its global configuration under
// XDG_CONFIG_HOME/opencode, its sessions under XDG_DATA_HOME/opencode, its state under
// XDG_STATE_HOME/opencode and the tools and packages it downloads (and runs) under
// XDG_CACHE_HOME/opencode.
var isolatedDirs = map[string]string{
	"XDG_CONFIG_HOME": "config",
	"XDG_DATA_HOME":   "data",
	"XDG_STATE_HOME":  "state",
	"XDG_CACHE_HOME":  "cache",
}

// writableDirs are the keys of isolatedDirs a confined CLI may write, which a reset
// keeps: not the configuration, which OpenCode loads code (plugins, tools) and
// instructions from.
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
// before every turn (statedir.Prepare). The configuration directory is Sortie's alone:
// whatever is in it (an opencode.json, a plugin, a tool, an AGENTS.md an earlier turn's
// agent could have written when it ran unconfined) is removed, and only a link to
// git's own configuration (XDG_CONFIG_HOME/git, read-only to a confined CLI) is put
// back. With login (opencode.use_login), OpenCode's credentials (`opencode auth login`,
// auth.json) are copied into the data directory (0600) when the operator's file is
// newer than the copy, so a token the CLI refreshes in its copy is kept until the
// operator logs in again; without it, a copy left there goes.
func prepareState(dir string, env []string, owner *runas.User, login bool) (stateDirs, error) {
	var out stateDirs
	var spec statedir.Spec
	for _, k := range slices.Sorted(maps.Keys(isolatedDirs)) {
		d := filepath.Join(dir, isolatedDirs[k])
		spec.Dirs = append(spec.Dirs, isolatedDirs[k]+"/opencode")
		out.vars = append(out.vars, k+"="+d)
		if slices.Contains(writableDirs, k) {
			spec.Keep = append(spec.Keep, isolatedDirs[k]+"/")
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
	var git string
	if base := orig("XDG_CONFIG_HOME", ".config"); base != "" {
		if g := filepath.Join(base, "git"); !within(g, dir) {
			if _, err := os.Stat(g); err == nil {
				git = g
				spec.Links = map[string]string{isolatedDirs["XDG_CONFIG_HOME"] + "/git": git}
			}
		}
	}
	spec.Login = &statedir.Login{To: isolatedDirs["XDG_DATA_HOME"] + "/opencode/auth.json"}
	if auth := loginFile(env); login && auth != "" && !within(auth, dir) {
		spec.Login.From = auth
	}
	if err := statedir.Prepare(dir, owner, spec); err != nil {
		return out, fmt.Errorf("preparing OpenCode's isolated directory: %w", err)
	}
	if git != "" {
		// git's own files, never the directory: git/credentials beside them is where
		// `git credential-store` keeps passwords.
		for _, d := range []string{git, resolvedDir(git)} {
			for _, f := range []string{"config", "ignore", "attributes"} {
				if d != "" {
					out.read = append(out.read, filepath.Join(d, f))
				}
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

// loginFile is where `opencode auth login` keeps the credentials of the user whose
// environment is env: $XDG_DATA_HOME/opencode/auth.json, else
// ~/.local/share/opencode/auth.json; "" without either.
func loginFile(env []string) string {
	base := agent.EnvValue(env, "XDG_DATA_HOME")
	if !filepath.IsAbs(base) {
		home := agent.EnvValue(env, "HOME")
		if !filepath.IsAbs(home) {
			return ""
		}
		base = filepath.Join(home, ".local", "share")
	}
	return filepath.Join(base, "opencode", "auth.json")
}

// loginNote is said when the agent's user has an `opencode auth login` that Sortie
// does not copy (opencode.use_login is off); "" when there is none.
func loginNote(env []string) string {
	auth := loginFile(env)
	if auth == "" {
		return ""
	}
	if _, err := os.Lstat(auth); err != nil {
		return ""
	}
	return fmt.Sprintf("%s: %s is not copied to agents (the agent could read it): give the provider's API key in the daemon's "+
		"environment (agent.env), or set %s.use_login: true to copy the login into each issue's data directory", Kind, auth, Kind)
}
