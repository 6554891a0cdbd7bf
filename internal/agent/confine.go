package agent

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"sortie/internal/agent/sandbox"
	"sortie/internal/agent/supervise"
	"sortie/internal/runas"
	"sortie/internal/ttlmap"
)

// Confinement runs a local agent CLI confined by Landlock (internal/agent/sandbox):
// the CLI is started as `Self confine <policy> -- CLI ARGS`.
type Confinement struct {
	// Self is the sortie executable.
	Self string
	// Policy holds the run's paths (workspace, run temporary directory, the system,
	// the operator's extra paths, the daemon's hidden state). The adapter adds its
	// CLI's own state and installation when it wraps a command.
	Policy sandbox.Policy
	// Owner is the user the CLI runs as (agent.run_as), who must own the state
	// directories Wrap creates; nil for the daemon's user.
	Owner *runas.User
}

// Wrap returns the proc.Command.Wrap that runs exe confined: the run's policy plus
// write (the CLI's own state) and the directories exe is installed in. The dirs among
// write are created (0700) when missing, since Landlock grants only what exists and a
// confined CLI could not create them beside the operator's other files. nil when c is
// nil.
func (c *Confinement) Wrap(exe string, write, dirs []string) []string {
	if c == nil {
		return nil
	}
	return append([]string{c.Self, "confine"}, c.policy(exe, write, dirs).Args()...)
}

// Thread returns the proc.Command.Confine that confines exe's start to the same
// policy as Wrap, on the thread that starts it (sandbox.RestrictThread): no `sortie
// confine` process. nil when c is nil.
func (c *Confinement) Thread(exe string, write, dirs []string) func() error {
	if c == nil {
		return nil
	}
	p := c.policy(exe, write, dirs)
	return func() error { return sandbox.RestrictThread(p) }
}

// policy is the run's policy plus write and exe's installation, with dirs created.
func (c *Confinement) policy(exe string, write, dirs []string) sandbox.Policy {
	for _, d := range dirs {
		_ = c.Owner.MkdirAll(d, 0o700) // a failure shows as the CLI's own error
	}
	p := c.Policy
	p.Write = append(append([]string(nil), p.Write...), write...)
	p.Read = append(append([]string(nil), p.Read...), InstallRoots(exe)...)
	// No socket of the machine's /tmp or /run/user (tmux, an SSH agent, the session
	// bus) is within the agent's reach by name (sandbox.CoveredDirs).
	p.PrivateTmp = true
	return p
}

// Supervision runs a local agent CLI under `Self supervise` (internal/agent/supervise):
// a child subreaper that stops whatever the CLI leaves behind when it exits, setsid'd
// descendants included, unless KeepProcesses (agent.keep_processes).
type Supervision struct {
	Self          string
	Grace         time.Duration // SIGTERM to SIGKILL for leftovers; 0: supervise.DefaultGrace
	KeepProcesses bool
	// CgroupFD, when positive, is the run's cgroup v2 directory, which the supervisor
	// (and so every process of the run) starts in: proc.Command.CgroupFD.
	CgroupFD int
}

// Cgroup is s's CgroupFD, 0 for a nil s.
func (s *Supervision) Cgroup() int {
	if s == nil {
		return 0
	}
	return s.CgroupFD
}

// Launch is how a local CLI is started: the proc.Command fields of the same names.
type Launch struct {
	Wrap        []string     // `sortie confine`, then `sortie supervise`, when needed
	Confine     func() error // confines the start itself (sandbox.RestrictThread)
	SweepCgroup bool         // the CLI's leftovers are stopped through its cgroup
}

// LocalLaunch is how a local CLI at exe started with p runs, with as few processes
// between the daemon and the CLI as confinement and supervision allow:
//
//   - confined (p.Confine) from the thread that starts it where the kernel allows
//     that (sandbox.ThreadConfinable), else through `sortie confine` (see
//     Confinement.Wrap for write and dirs);
//   - supervised (p.Supervise) by its cgroup when the run has one and its processes
//     are not kept (agent.keep_processes): what the CLI leaves there is stopped when
//     it exits (proc.Command.SweepCgroup); else through `sortie supervise`, confined
//     with it.
//
// Each program start saved is a start of the whole sortie binary per turn.
func LocalLaunch(p StartParams, exe string, write, dirs []string) Launch {
	var l Launch
	// Not root, the private /tmp (Policy.PrivateTmp) needs a user namespace, which only
	// a new process can enter: `sortie confine` starts one (sandbox.Main).
	if p.Confine != nil && sandbox.ConfineOnThread() {
		l.Confine = p.Confine.Thread(exe, write, dirs)
	} else {
		l.Wrap = p.Confine.Wrap(exe, write, dirs)
	}
	if s := p.Supervise; s != nil {
		if s.CgroupFD > 0 && !s.KeepProcesses {
			l.SweepCgroup = true
		} else {
			grace := s.Grace
			if grace <= 0 {
				grace = supervise.DefaultGrace
			}
			l.Wrap = append(l.Wrap, supervise.Args(s.Self, grace, s.KeepProcesses)...)
		}
	}
	return l
}

// InstallRoots are the directories a CLI at exe needs to read to run: the directory
// of exe and of the file it resolves to and, for an npm package, the node_modules tree
// that holds it and its dependencies. Never a prefix: the parent of a bin directory may
// hold far more than the program (~/.local holds ~/.local/share, with other programs'
// credentials; a prefix may hold workspace.root), and a CLI that needs its prefix's
// libraries is granted them through the PATH (PathRoots) or agent.sandbox.read_paths.
// An answer is reused for installRootsTTL (see installRootsMemo).
func InstallRoots(exe string) []string {
	return installRoots.get(exe)
}

// installRootsTTL is how long InstallRoots reuses its answer for an executable. Every
// confined start asks for two (the CLI and sortie itself, the agent's MCP sidecar),
// and resolving one costs a stat per element of its path. It is the sandbox's
// expansion TTL: an installation moved meanwhile (an upgrade that retargets the CLI's
// link) is granted from the first start after the entry expires. Until then the agent
// is granted the old one: never more than it had, but a run started in those seconds
// may find its CLI unreadable, fail, and be retried.
const installRootsTTL = 5 * time.Second

// maxInstallRoots bounds the memo; a daemon asks about a handful of executables.
const maxInstallRoots = 64

// installRootsMemo remembers installRootsOf for a while, by executable.
type installRootsMemo struct {
	now   func() time.Time
	roots *ttlmap.Map[string, []string]
}

var installRoots = &installRootsMemo{now: time.Now, roots: ttlmap.New[string, []string](installRootsTTL, maxInstallRoots)}

// get is installRootsOf(exe), from the memo while fresh; the caller owns the slice.
func (c *installRootsMemo) get(exe string) []string {
	now := c.now()
	roots, ok := c.roots.Get(exe, now)
	if !ok {
		roots = installRootsOf(exe)
		c.roots.Put(exe, roots, now)
	}
	return slices.Clone(roots)
}

// installRootsOf is InstallRoots, resolved now.
func installRootsOf(exe string) []string {
	homes := homeDirs(nil)
	var roots []string
	for _, p := range []string{exe, resolved(exe)} {
		if p == "" {
			continue
		}
		if dir := filepath.Dir(p); broad(dir, homes) {
			roots = append(roots, p) // a program alone in /tmp or a home: just itself
		} else {
			roots = append(roots, dir)
			roots = append(roots, nodeModules(dir)...)
		}
	}
	return roots
}

// nodeModules is the node_modules tree above dir, when dir lies in one: an npm
// package's dependencies are its siblings there.
func nodeModules(dir string) []string {
	if i := strings.Index(dir, string(filepath.Separator)+"node_modules"); i >= 0 {
		return []string{dir[:i+len("/node_modules")]}
	}
	return nil
}

// PathRoots are what the agent needs to read to run the toolchains on the PATH of env
// (git, go, npm, cargo): each directory on it, the node_modules tree above one that
// lies in one, and for a bin directory its installation (dirRoots). A PATH entry that
// is relative, the root, a temporary directory or a home directory is skipped.
func PathRoots(env []string) []string {
	homes := homeDirs(env)
	var roots []string
	for _, kv := range env {
		path, ok := strings.CutPrefix(kv, "PATH=")
		if !ok {
			continue
		}
		for _, dir := range filepath.SplitList(path) {
			// The directory itself, not a program in it: resolving links is the
			// sandbox's business, and costs a stat per path element at every start.
			if dir = filepath.Clean(dir); !filepath.IsAbs(dir) || broad(dir, homes) {
				continue
			}
			roots = append(roots, dirRoots(dir, homes)...)
		}
	}
	return roots
}

// dirRoots are what a program on the PATH in dir (not a broad one) needs to read: dir,
// the node_modules tree above it and, for a bin directory, its installation:
//
//   - the prefix (the bin directory's parent) of an installation outside the home
//     directories, or deeper in one (/usr/local/go is GOROOT; node's prefix holds
//     npm; ~/.nvm/versions/node/v22, ~/.rustup/toolchains/stable-…, ~/sdk/go1.26);
//   - only the library directories (toolLibraries) of a tool's home directly in a
//     home directory (~/.cargo, ~/.local, ~/go), which also holds its credentials
//     (~/.cargo/credentials.toml) and other programs' data (~/.local/share);
//   - nothing for a prefix that is itself broad (~/bin).
func dirRoots(dir string, homes []string) []string {
	roots := append([]string{dir}, nodeModules(dir)...)
	if filepath.Base(dir) != "bin" {
		return roots
	}
	switch prefix := filepath.Dir(dir); {
	case broad(prefix, homes):
	case isHome(filepath.Dir(prefix), homes):
		libs, ok := toolLibraries[filepath.Base(prefix)]
		if !ok {
			libs = []string{"lib"}
		}
		for _, l := range libs {
			roots = append(roots, filepath.Join(prefix, l))
		}
	default:
		roots = append(roots, prefix)
	}
	return roots
}

// toolLibraries are the directories, relative to a tool's home in a home directory,
// that the programs in its bin directory read; "lib" for a tool not named here
// (~/.npm-global/lib holds its packages). None holds a credential: cargo keeps its
// registry tokens in ~/.cargo/credentials.toml (and config.toml), pip and pipx their
// data in ~/.local/share, which are never granted.
var toolLibraries = map[string][]string{
	// Crate sources cargo builds with, and the toolchains and default the rustup
	// proxies in ~/.cargo/bin run (RUSTUP_HOME's default, ~/.rustup).
	".cargo": {"registry", "git", "../.rustup/toolchains", "../.rustup/settings.toml"},
	".local": {"lib"},                                       // Python's user site-packages
	"go":     {"pkg/mod"},                                   // GOPATH's module cache, which go build reads
	".pyenv": {"libexec", "plugins", "versions", "version"}, // pyenv's own code and its Pythons
}

// homeDirs are the home directories no PATH rule grants whole: the daemon user's and
// HOME in env (agent.run_as's home), besides /root and /home/* (isHome).
func homeDirs(env []string) []string {
	var homes []string
	if home, err := os.UserHomeDir(); err == nil && filepath.IsAbs(home) {
		homes = append(homes, filepath.Clean(home))
	}
	if home := EnvValue(env, "HOME"); filepath.IsAbs(home) {
		homes = append(homes, filepath.Clean(home))
	}
	return homes
}

// isHome reports whether dir is a home directory: one of homes, /root or /home/*.
func isHome(dir string, homes []string) bool {
	return dir == "/root" || filepath.Dir(dir) == "/home" || slices.Contains(homes, dir)
}

// broad reports whether granting dir whole would grant far more than a program's
// installation: the root, a home directory or a temporary directory.
func broad(dir string, homes []string) bool {
	if dir == "/" || dir == "." || dir == "/tmp" || dir == "/var/tmp" || dir == filepath.Clean(os.TempDir()) {
		return true
	}
	return isHome(dir, homes)
}

func resolved(p string) string {
	r, err := filepath.EvalSymlinks(p)
	if err != nil || r == p {
		return ""
	}
	return r
}

// CacheHome is the agent user's cache directory in env: XDG_CACHE_HOME, else
// ~/.cache; "" without either (or with relative ones).
func CacheHome(env []string) string {
	if v := EnvValue(env, "XDG_CACHE_HOME"); filepath.IsAbs(v) {
		return v
	}
	if home := EnvValue(env, "HOME"); filepath.IsAbs(home) {
		return filepath.Join(home, ".cache")
	}
	return ""
}

// EnvValue is the value of key in env (KEY=VALUE; the last one wins), "" when unset.
func EnvValue(env []string, key string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == key {
			v = val
		}
	}
	return v
}
