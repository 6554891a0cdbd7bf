package opencode

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"sortie/internal/agent"
	"sortie/internal/runas"
)

// ToolsServer is the name of Sortie's own MCP server (spec/agent-extensions.md), which
// no configuration of the operator's may use.
const ToolsServer = "sortie-tools"

// maxMCPConfig bounds the .sortie/mcp.json (or mcp_config) file the adapter reads.
const maxMCPConfig = 1 << 20

// mcpServers reads a claude-style MCP configuration, {"mcpServers": {name: def}}, and
// returns its servers as entries of OpenCode's `mcp` configuration: a stdio server
// ({command, args, env}) becomes {"type": "local", "command": [command, args...],
// "environment": env}; an http or sse one ({url, headers}) becomes {"type": "remote"}.
func mcpServers(path string) (map[string]any, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxMCPConfig+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxMCPConfig {
		return nil, fmt.Errorf("%s: larger than 1 MiB", path)
	}
	var doc struct {
		MCPServers map[string]struct {
			Type    string            `json:"type"`
			Command string            `json:"command"`
			Args    []string          `json:"args"`
			Env     map[string]string `json:"env"`
			URL     string            `json:"url"`
			Headers map[string]string `json:"headers"`
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("%s: not a JSON MCP configuration: %w", path, err)
	}
	out := make(map[string]any, len(doc.MCPServers))
	for name, s := range doc.MCPServers {
		switch {
		case s.Command != "":
			entry := map[string]any{"type": "local", "command": append([]string{s.Command}, s.Args...), "enabled": true}
			if len(s.Env) > 0 {
				entry["environment"] = s.Env
			}
			out[name] = entry
		case s.URL != "":
			entry := map[string]any{"type": "remote", "url": s.URL, "enabled": true}
			if len(s.Headers) > 0 {
				entry["headers"] = s.Headers
			}
			out[name] = entry
		default:
			return nil, fmt.Errorf("%s: mcpServers.%s has neither a command nor a url", path, name)
		}
	}
	return out, nil
}

// inlineConfig is the configuration a turn passes in OPENCODE_CONFIG_CONTENT, which
// OpenCode merges over its other configuration files: the operator's inline `config`,
// then `permission`, then the MCP servers, Sortie's own last so that nothing replaces
// them.
func (o options) inlineConfig(servers map[string]any) ([]byte, error) {
	cfg := map[string]any{}
	maps.Copy(cfg, o.Config)
	if o.Permission != nil {
		cfg["permission"] = o.Permission
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

// isolatedDirs are the XDG base directories a local CLI runs with, below root.
// OpenCode keeps its global configuration under XDG_CONFIG_HOME/opencode, its sessions
// (and credentials) under XDG_DATA_HOME/opencode and its state under
// XDG_STATE_HOME/opencode. XDG_CACHE_HOME is left alone: it holds caches only, shared
// with the other tools the agent runs.
func isolatedDirs(root string) map[string]string {
	return map[string]string{
		"XDG_CONFIG_HOME": filepath.Join(root, "config"),
		"XDG_DATA_HOME":   filepath.Join(root, "data"),
		"XDG_STATE_HOME":  filepath.Join(root, "state"),
	}
}

// managedEnv are variables every turn runs with: no self-update in the middle of a
// run, and no session ever shared to a public URL, whatever a configuration says.
var managedEnv = []string{"OPENCODE_DISABLE_AUTOUPDATE=true", "OPENCODE_DISABLE_SHARE=true"}

// replacedEnv are the variables of the daemon's environment a turn does not inherit:
// the ones that would load another configuration than the adapter's.
var replacedEnv = []string{"OPENCODE_CONFIG", "OPENCODE_CONFIG_CONTENT", "OPENCODE_CONFIG_DIR"}

// prepareState creates the isolated directories below root for the agent's user and
// links into them what must still be the operator's: OpenCode's credentials
// (`opencode auth login`, auth.json) and git's XDG configuration, both taken from where
// env would have had them. It returns the environment entries that point the CLI there
// and the paths a confined CLI must be able to write.
func prepareState(root string, env []string, owner *runas.User) (vars, write []string, err error) {
	dirs := isolatedDirs(root)
	for _, k := range slices.Sorted(maps.Keys(dirs)) {
		d := dirs[k]
		if err := owner.MkdirAll(filepath.Join(d, "opencode"), 0o700); err != nil {
			return nil, nil, fmt.Errorf("creating OpenCode's isolated directory %s: %w", d, err)
		}
		vars = append(vars, k+"="+d)
		write = append(write, d)
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
	// The cache stays the agent user's own (models list, downloaded tools); a confined
	// CLI that cannot create it there exits at once (1.18.33: EACCES, mkdir).
	if cache := orig("XDG_CACHE_HOME", ".cache"); cache != "" {
		d := filepath.Join(cache, "opencode")
		if err := owner.MkdirAll(d, 0o700); err == nil {
			write = append(write, d)
		}
	}
	links := []struct{ from, to string }{
		{filepath.Join(orig("XDG_DATA_HOME", ".local/share"), "opencode", "auth.json"), filepath.Join(dirs["XDG_DATA_HOME"], "opencode", "auth.json")},
		{filepath.Join(orig("XDG_CONFIG_HOME", ".config"), "git"), filepath.Join(dirs["XDG_CONFIG_HOME"], "git")},
	}
	for _, l := range links {
		if l.from == l.to || strings.HasPrefix(l.from, root+string(filepath.Separator)) {
			continue
		}
		if _, err := os.Stat(l.from); err != nil {
			continue
		}
		if _, err := os.Lstat(l.to); err == nil {
			continue // already there: a link made earlier, or a file the operator put
		}
		if err := os.Symlink(l.from, l.to); err == nil {
			_ = owner.Chown(l.to)
			write = append(write, l.from) // OpenCode refreshes OAuth tokens in auth.json
		}
	}
	return vars, write, nil
}

// turnEnv is base with the isolated directories, the adapter's configuration and the
// managed variables in place of the daemon's own.
func turnEnv(base, state []string, content []byte, configFile string) []string {
	drop := append(append([]string(nil), replacedEnv...), "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "PWD")
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
// host, where the remote user's own directories are used.
func remoteEnv(content []byte, configFile string) []string {
	words := append([]string{"env"}, managedEnv...)
	if len(content) > 0 {
		words = append(words, "OPENCODE_CONFIG_CONTENT="+string(content))
	}
	if configFile != "" {
		words = append(words, "OPENCODE_CONFIG="+configFile)
	}
	return words
}
