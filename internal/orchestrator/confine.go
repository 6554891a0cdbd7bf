package orchestrator

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"sortie/internal/agent"
	"sortie/internal/agent/sandbox"
	"sortie/internal/agent/supervise"
	"sortie/internal/config"
	"sortie/internal/runas"
)

// Sandbox is how the daemon confines its local agents (Options.Sandbox,
// docs/security.md#confinement).
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

// confined reports whether cfg confines local agents here, and when not, why.
func (s Sandbox) confined(cfg *config.Config) (bool, string) {
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

// runPolicy is what one run's local agent may touch: write its workspace, its run's
// temporary directory, the device files and the operator's write_paths; read the
// system, the toolchains on its PATH, git's configuration and the operator's
// read_paths; never the daemon's private files. What every run has a piece of is
// private (sandbox.Policy.Private), so a broader grant (/var/lib, a PATH prefix, a
// read_path) never reaches another run's piece: workspace.root, the runs' temporary
// directories, the agent CLIs' per-issue state, and the home directories, of which
// only what is named is granted. The adapter adds its CLI's own state and
// installation.
func (s Sandbox) runPolicy(cfg *config.Config, workspace, runTmp string, env []string) sandbox.Policy {
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
	private := []string{runTmpRoot(cfg), filepath.Join(os.TempDir(), fmt.Sprintf("sortie-%d", os.Getuid()))}
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

// confinement is the run's confinement, or nil when its agent runs unconfined (an SSH
// host, agent.sandbox.mode off, no Landlock here). A confined run gets a private
// temporary directory (its TMPDIR, Policy.Write[1]), which cleanup removes.
func (w *worker) confinement(cfg *config.Config, env []string) (*agent.Confinement, func(), error) {
	s := w.o.opts.Sandbox
	if ok, _ := s.confined(cfg); !ok || w.e.host != "" {
		return nil, func() {}, nil
	}
	parent := runTmpRoot(cfg)
	if err := os.MkdirAll(parent, 0o711); err != nil { // run_as users search it, never list it
		return nil, nil, fmt.Errorf("the runs' temporary directory: %w", err)
	}
	tmp, err := w.o.runTmp.get(parent, w.runID, w.runAs())
	if err != nil {
		return nil, nil, fmt.Errorf("the run's temporary directory: %w", err)
	}
	// Kept for another run only when nothing of this one's can still be running: the
	// cgroup it ran in was emptied and removed (closeCgroup, which runs first).
	cleanup := func() { w.o.runTmp.put(tmp, w.cgroupEmptied) }
	w.confined = true
	return &agent.Confinement{Self: s.Self, Policy: s.runPolicy(cfg, w.ws.Path, tmp, env), Owner: w.runAs()}, cleanup, nil
}

// supervision runs a local agent under `sortie supervise`, which stops whatever the
// agent leaves behind when its CLI exits (agent.keep_processes opts out); nil over SSH
// and for a daemon that has no sortie executable to run it with (tests).
func (w *worker) supervision() *agent.Supervision {
	if w.e.host != "" || w.o.opts.Sandbox.Self == "" {
		return nil
	}
	s := &agent.Supervision{Self: w.o.opts.Sandbox.Self, KeepProcesses: w.cfg.Agent.KeepProcesses}
	if w.cgroup != nil {
		s.CgroupFD = w.cgroup.FD()
	}
	return s
}

// closeCgroup kills what is left in the run's cgroup (unless agent.keep_processes)
// and removes it, once the run's agent has stopped.
func (w *worker) closeCgroup() {
	g := w.cgroup
	if g == nil {
		return
	}
	w.cgroup = nil
	if w.cfg.Agent.KeepProcesses {
		g.Release()
		return
	}
	n, err := g.Kill(supervise.DefaultGrace)
	w.cgroupEmptied = err == nil
	if err != nil || n > 0 {
		w.o.log.Warn("killed what the agent left running in its run's cgroup", "issue_identifier", w.issue.Identifier,
			"run_id", w.runID, "count", n, "error", err)
	}
}

// openCgroup gives a local supervised run its own cgroup when the daemon has a tree of
// them (Options.Cgroups). Without one the run goes on: the supervisor still owns its
// process tree.
func (w *worker) openCgroup() {
	if w.o.opts.Cgroups == nil || w.supervision() == nil {
		return
	}
	g, err := w.o.opts.Cgroups.Run(w.runID)
	if err != nil {
		w.o.log.Warn("the run gets no cgroup of its own", "issue_identifier", w.issue.Identifier, "error", err)
		return
	}
	w.cgroup = g
}

// stopLeftovers stops what the run's local agent left running that its supervisor
// could not (a supervisor killed before it swept): every process whose environment
// still carries SORTIE_RUN_ID=<this run> and SORTIE_WORKSPACE=<its workspace> (run ids
// alone repeat across daemons). Not with agent.keep_processes, nor for a run
// without a supervisor.
func (w *worker) stopLeftovers() {
	s := w.supervision()
	if s == nil || s.KeepProcesses {
		return
	}
	if w.cgroup != nil && w.confined {
		// Every process of a confined run is in its cgroup, which it cannot leave, and
		// closeCgroup kills that whole: no need to read every process's environment.
		return
	}
	if n := supervise.StopMarked(supervise.DefaultGrace, "SORTIE_RUN_ID="+strconv.FormatInt(w.runID, 10),
		"SORTIE_WORKSPACE="+w.ws.Path); n > 0 {
		w.o.log.Warn("stopped processes the agent left running after its run", "issue_identifier", w.issue.Identifier,
			"run_id", w.runID, "count", n)
	}
}

// runAs is the OS user the run's agent runs as: agent.run_as's for a local agent, nil
// (the daemon's) otherwise, and always nil over SSH, where the remote login decides.
func (w *worker) runAs() *runas.User {
	if w.e.host != "" {
		return nil
	}
	return w.o.opts.RunAs
}

// runTmpRoot holds the temporary directories of this daemon's confined runs: one per
// database, so that a daemon restarted after a crash removes what its predecessor's
// runs left there (removeRunTmp) without touching another daemon's.
func runTmpRoot(cfg *config.Config) string {
	return filepath.Join(os.TempDir(), "sortie-runs-"+cfg.DBKey())
}

// removeRunTmp removes the temporary directories of runs a previous daemon on this
// database left behind when it died (its runs' own cleanup never ran). The database's
// lock says no other daemon uses them. Recovery only.
func removeRunTmp(cfg *config.Config) error {
	return os.RemoveAll(runTmpRoot(cfg))
}

// confinedEnv points a confined agent's temporary files and the build caches it would
// otherwise write in the home directory (denied to it) at its run's temporary
// directory: TMPDIR always; GOCACHE and npm's cache unless the operator set them (and,
// presumably, granted them in write_paths).
func confinedEnv(env []string, runTmp string) []string {
	out := append(slices.Clone(env), "TMPDIR="+runTmp)
	for key, dir := range map[string]string{"GOCACHE": "go-build", "npm_config_cache": "npm"} {
		if agent.EnvValue(env, key) == "" {
			out = append(out, key+"="+filepath.Join(runTmp, dir))
		}
	}
	return out
}
