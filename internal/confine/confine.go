// Package confine is the policy local agents, and the hooks that run after them, are
// confined by (docs/security.md#confinement): what a run may read and write, what
// every run has a private piece of, the run's own temporary directory (kept in a pool
// for the next runs) and its environment, and a hook's confinement. The sandbox
// itself (Landlock, mount namespaces) is internal/agent/sandbox; the orchestrator asks
// this package for each run's policy.
package confine

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"sortie/internal/agent"
	"sortie/internal/agent/sandbox"
	"sortie/internal/config"
)

// Sandbox is how the daemon confines its local agents and the hooks that run after
// them (docs/security.md#confinement).
type Sandbox struct {
	// Self is the sortie executable, which runs `confine`.
	Self string
	// Read are files every confined agent may read besides the system: WORKFLOW.md,
	// which its MCP sidecar loads.
	Read []string
	// Hide are the daemon's private files no agent may read or write, even when they
	// lie inside a path it is granted: the database and its journal, the workflow key,
	// the operator token, the agent socket directory, the env file.
	Hide []string
	// Unavailable says why Landlock cannot confine agents on this machine; "" when it
	// can.
	Unavailable string
}

// Confined reports whether cfg confines local agents here, and when not, why.
func (s Sandbox) Confined(cfg *config.Config) (bool, string) {
	switch {
	case cfg.Agent.Sandbox.Mode == config.SandboxOff:
		return false, "agent.sandbox.mode is off"
	case s.Self == "":
		return false, "the daemon was started without confinement"
	case s.Unavailable != "":
		return false, "Landlock is unavailable: " + s.Unavailable
	}
	return true, ""
}

// RunPolicy is what one run's local agent may touch: write its workspace, its run's
// temporary directory, the device files and the operator's write_paths; read the
// system, the toolchains on its PATH, git's configuration and the operator's
// read_paths; never the daemon's private files. What every run has a piece of is
// private (sandbox.Policy.Private), so a broader grant (/var/lib, a PATH prefix, a
// read_path) never reaches another run's piece: workspace.root, the runs' temporary
// directories, the agent CLIs' per-issue state, and the home directories, of which
// only what is named is granted. The adapter adds its CLI's own state and
// installation.
func (s Sandbox) RunPolicy(cfg *config.Config, workspace, runTmp string, env []string) sandbox.Policy {
	write := append([]string{workspace, runTmp}, sandbox.SystemWrite...)
	write = append(write, cfg.Agent.Sandbox.WritePaths...)
	read := slices.Clone(sandbox.SystemRead)
	// The agent's MCP sidecar is this executable (`sortie mcp-server`).
	read = append(read, agent.InstallRoots(s.Self)...)
	read = append(read, s.Read...)
	read = append(read, agent.PathRoots(env)...)
	read = append(read, gitConfigFiles(env)...)
	read = append(read, cfg.Agent.Sandbox.ReadPaths...)
	return sandbox.Policy{Write: write, Read: read, Hide: slices.Clone(s.Hide), Private: privatePaths(cfg, env)}
}

// gitConfigFiles are the files of the user's git configuration: ~/.gitconfig and, in
// XDG_CONFIG_HOME (~/.config), git/config with the ignore and attributes files git
// reads by default. git refuses to run when it may not read the configuration, which
// holds the identity commits are made with, and warns about the other two. Never the
// directory: git/credentials beside them is where `git credential-store` keeps
// passwords.
func gitConfigFiles(env []string) []string {
	home := agent.EnvValue(env, "HOME")
	xdg := agent.EnvValue(env, "XDG_CONFIG_HOME")
	if !filepath.IsAbs(xdg) {
		xdg = ""
		if filepath.IsAbs(home) {
			xdg = filepath.Join(home, ".config")
		}
	}
	var files []string
	if filepath.IsAbs(home) {
		files = append(files, filepath.Join(home, ".gitconfig"))
	}
	if xdg != "" {
		for _, f := range []string{"config", "ignore", "attributes"} {
			files = append(files, filepath.Join(xdg, "git", f))
		}
	}
	return files
}

// privatePaths are what each run has a piece of, granted to a run only by its own
// rules (its workspace, its temporary directory, its CLI's state, the files named in
// its home): workspace.root, the parent of the runs' temporary directories, the agent
// CLIs' per-issue state (<cache>/sortie, and sortie-<uid> in the temporary directory
// without a cache directory: statedir.Dir), the agent's home (HOME, agent.run_as's)
// and the daemon user's home.
func privatePaths(cfg *config.Config, env []string) []string {
	private := []string{RunTmpRoot(cfg), filepath.Join(os.TempDir(), fmt.Sprintf("sortie-%d", os.Getuid()))}
	if cfg.Workspace.Root != "" {
		private = append(private, cfg.Workspace.Root)
	}
	if cache := agent.CacheHome(env); cache != "" {
		private = append(private, filepath.Join(cache, "sortie"))
	}
	if home := agent.EnvValue(env, "HOME"); filepath.IsAbs(home) {
		private = append(private, home)
	}
	if home, err := os.UserHomeDir(); err == nil && filepath.IsAbs(home) {
		private = append(private, home)
	}
	return private
}

// RunTmpRoot holds the temporary directories of this daemon's confined runs: one per
// database, so that a daemon restarted after a crash removes what its predecessor's
// runs left there (RemoveRunTmp) without touching another daemon's.
func RunTmpRoot(cfg *config.Config) string {
	return filepath.Join(os.TempDir(), "sortie-runs-"+cfg.DBKey())
}

// RemoveRunTmp removes the temporary directories of runs a previous daemon on this
// database left behind when it died (its runs' own cleanup never ran). The database's
// lock says no other daemon uses them. Recovery only.
func RemoveRunTmp(cfg *config.Config) error {
	return os.RemoveAll(RunTmpRoot(cfg))
}

// Env points a confined agent's temporary files and the build caches it would
// otherwise write in the home directory (denied to it) at its run's temporary
// directory: TMPDIR always; GOCACHE and npm's cache unless the operator set them (and,
// presumably, granted them in write_paths).
func Env(env []string, runTmp string) []string {
	out := append(slices.Clone(env), "TMPDIR="+runTmp)
	for key, dir := range map[string]string{"GOCACHE": "go-build", "npm_config_cache": "npm"} {
		if agent.EnvValue(env, key) == "" {
			out = append(out, key+"="+filepath.Join(runTmp, dir))
		}
	}
	return out
}

// RemoveRunTmpOf removes the temporary directories of the given runs (recovery in a
// cluster, where other daemons' runs share the directory).
func RemoveRunTmpOf(cfg *config.Config, runIDs []int64) {
	for _, id := range runIDs {
		dirs, _ := filepath.Glob(filepath.Join(RunTmpRoot(cfg), "run-"+strconv.FormatInt(id, 10)+"-*"))
		for _, d := range dirs {
			_ = os.RemoveAll(d)
		}
	}
}
