// Package sandbox confines an agent's process tree before it runs: with Landlock, the
// Linux kernel's unprivileged sandbox, the tree may write only beneath the paths a
// Policy grants and read only beneath the ones it lists, and never a path it hides
// (the daemon's database, keys, operator token and env file), whatever an injected
// prompt makes the agent try. It owns the policy and its enforcement; deciding which
// paths a run gets is the orchestrator's business.
//
// Landlock applies to the calling process and everything it starts afterwards, and
// cannot be lifted. The daemon therefore never confines itself: it starts the agent
// through `sortie confine` (Exec), which confines itself and then executes the agent.
package sandbox

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
)

// Modes of agent.sandbox.mode.
const (
	// ModeLandlock confines every agent with Landlock; the default where the kernel
	// supports it.
	ModeLandlock = "landlock"
	// ModeOff runs agents unconfined, as the daemon's user.
	ModeOff = "off"
)

// Policy says what a confined process tree may touch. Paths should be absolute; a
// relative one is taken from the working directory of the process that confines
// itself. A path that does not exist is skipped.
type Policy struct {
	// Write paths may be read, written, created in, removed from and executed
	// beneath: the workspace, the run's temporary directory, the agent CLI's own state.
	Write []string
	// Read paths may be read and executed beneath: the system, the CLI's install.
	Read []string
	// Hide paths are never granted, even beneath a Read or Write path: the daemon's
	// private state. Landlock can only allow, so a granted path that holds a hidden
	// one is granted piece by piece instead: every entry beside the hidden path,
	// recursively, except symbolic links.
	Hide []string
	// Private paths are read only through their own rules: a Read path that holds one
	// (/var/lib holding workspace.root, a read_path holding the home directory) is
	// granted around it, as around a hidden path, while a Read or Write path at or
	// beneath it (a run's workspace beneath workspace.root) is granted as usual. They
	// keep what one run may read apart from what every run may: the other runs'
	// workspaces, temporary directories and CLI state, the home directory's files. A
	// Write path is the operator's explicit grant and is granted whole: granted around
	// a private path, a directory could not be created in any more (write_paths: [/tmp]
	// holding the runs' temporary directories).
	Private []string
	// PrivateTmp gives the tree a mount namespace of its own, where the machine's /tmp,
	// /var/tmp, /run/user and the other CoveredDirs are empty but for the policy's own
	// paths beneath them, so that no socket there (tmux's, an SSH agent's, the session
	// bus) can be reached by name. Where the daemon may not make one (it is not root,
	// MountNamespaceAvailable), the tree runs without.
	PrivateTmp bool
}

// SystemRead are the system paths every confined tree may read and execute beneath:
// programs, libraries, configuration, and the kernel's views of processes and devices.
// A missing one is skipped.
var SystemRead = []string{"/bin", "/sbin", "/usr", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt",
	"/proc", "/sys", "/dev", "/run", "/var/lib", "/nix"}

// SystemWrite are the device files every confined tree may write: the bit bucket,
// the terminal and pseudo-terminals. Nothing else beneath /dev.
var SystemWrite = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/ptmx", "/dev/pts"}

// Flags of the confine command line (Args, ParseArgs).
const (
	flagWrite   = "--write"
	flagRead    = "--read"
	flagHide    = "--hide"
	flagPrivate = "--private"
	// flagPrivateTmp, a flag without a value, is Policy.PrivateTmp.
	flagPrivateTmp = "--private-tmp"
)

// Args encodes p for the `sortie confine` command line, ending with "--": the
// program and its arguments follow.
func (p Policy) Args() []string {
	var out []string
	if p.PrivateTmp {
		out = append(out, flagPrivateTmp)
	}
	for _, l := range []struct {
		flag  string
		paths []string
	}{{flagWrite, p.Write}, {flagRead, p.Read}, {flagHide, p.Hide}, {flagPrivate, p.Private}} {
		for _, path := range l.paths {
			out = append(out, l.flag, path)
		}
	}
	return append(out, "--")
}

// ParseArgs decodes what Args encoded, and returns the command after "--".
func ParseArgs(args []string) (Policy, []string, error) {
	var p Policy
	for i := 0; i < len(args); i++ {
		switch a := args[i]; a {
		case "--":
			if i+1 == len(args) {
				return p, nil, errors.New("confine: no program after --")
			}
			return p, args[i+1:], nil
		case flagPrivateTmp:
			p.PrivateTmp = true
		case flagWrite, flagRead, flagHide, flagPrivate:
			if i+1 == len(args) || args[i+1] == "" {
				return p, nil, fmt.Errorf("confine: %s needs a path", a)
			}
			i++
			switch a {
			case flagWrite:
				p.Write = append(p.Write, args[i])
			case flagRead:
				p.Read = append(p.Read, args[i])
			case flagPrivate:
				p.Private = append(p.Private, args[i])
			default:
				p.Hide = append(p.Hide, args[i])
			}
		default:
			return p, nil, fmt.Errorf("confine: unknown argument %q (want --private-tmp, --write, --read, --hide, --private PATH ... -- PROGRAM ARGS)", a)
		}
	}
	return p, nil, errors.New("confine: missing -- before the program")
}

// Command returns the argv that runs program with args confined by p, through self
// (the sortie executable): self confine <policy> -- program args.
func Command(self string, p Policy, program string, args []string) []string {
	argv := append([]string{self, "confine"}, p.Args()...)
	return append(append(argv, program), args...)
}

// grant is one Landlock rule: a path and whether it is a directory (its whole
// hierarchy) or a single file.
type grant struct {
	path string
	dir  bool
}

// expand turns p's Write and Read roots into grants that cover everything beneath
// them except the hidden paths, and, for a Read root, except the private paths it
// holds. Roots, hidden and private paths are resolved (symbolic links, "..") first, so
// a link cannot smuggle a hidden path in or a root around.
func expand(p Policy) (write, read []grant, err error) {
	ex := resolveExclusions(p)
	if write, err = expandResolved(p.Write, ex.forWrite()); err != nil {
		return nil, nil, err
	}
	if read, err = expandResolved(p.Read, ex); err != nil {
		return nil, nil, err
	}
	return write, read, nil
}

// exclusions are a policy's hidden and private paths, resolved (resolveHidden), for
// expanding its roots; key names them in the expansion cache, hiddenKey the hidden
// ones alone.
type exclusions struct {
	hidden, private []string
	key, hiddenKey  string
}

// forWrite is e for expanding Write roots, which private paths do not narrow.
func (e exclusions) forWrite() exclusions {
	return exclusions{hidden: e.hidden, key: e.hiddenKey}
}

// resolveExclusions resolves p's hidden and private paths.
func resolveExclusions(p Policy) exclusions {
	return exclusions{hidden: resolveAllHidden(p.Hide), private: resolveAllHidden(p.Private)}
}

// of is what the expansion of root (resolved) leaves out: the hidden paths, and the
// private paths strictly beneath root. A root at or beneath a private path is that
// path's own rule, and is granted.
func (e exclusions) of(root string) []string {
	out := e.hidden
	for _, p := range e.private {
		if p != root && within(p, root) {
			out = append(slices.Clip(out), p)
		}
	}
	return out
}

// resolveAllHidden resolves hidden (or private) paths for expandResolved.
func resolveAllHidden(hide []string) []string {
	hidden := make([]string, 0, len(hide))
	for _, h := range hide {
		if r, err := resolveHidden(h); err == nil {
			hidden = append(hidden, r)
		}
	}
	return hidden
}

// expandResolved is expand of roots with the exclusions already resolved. A root named
// twice is granted once.
func expandResolved(roots []string, ex exclusions) ([]grant, error) {
	var out []grant
	seen := make(map[string]bool, len(roots))
	for _, root := range roots {
		if seen[root] {
			continue
		}
		seen[root] = true
		r, err := resolve(root)
		if err != nil {
			continue // a missing root grants nothing
		}
		g, err := expandOne(r, ex.of(r))
		if err != nil {
			return nil, err
		}
		out = append(out, g...)
	}
	return out, nil
}

// resolve makes path absolute and resolves its symbolic links.
func resolve(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(abs)
}

// resolveHidden resolves a hidden (or private) path. One that does not exist yet (a database's
// journal, a token written later) is resolved through its directory, so that directory
// is still granted only piecewise and the file stays out of reach once it appears.
func resolveHidden(path string) (string, error) {
	r, err := resolve(path)
	if err == nil {
		return r, nil
	}
	abs, aerr := filepath.Abs(path)
	if aerr != nil {
		return "", aerr
	}
	dir, derr := filepath.EvalSymlinks(filepath.Dir(abs))
	if derr != nil {
		return "", err
	}
	return filepath.Join(dir, filepath.Base(abs)), nil
}

// within reports whether path is dir or beneath it.
func within(path, dir string) bool {
	if dir == "/" {
		return true
	}
	return strings.HasPrefix(path, dir) && (len(path) == len(dir) || path[len(dir)] == filepath.Separator)
}

// maxExpand bounds the grants one root may expand into, so that a hidden path deep in
// a huge tree fails clearly instead of opening a file descriptor per entry.
const maxExpand = 4096

func expandOne(root string, hidden []string) ([]grant, error) {
	fi, err := os.Lstat(root)
	if err != nil {
		return nil, nil
	}
	var inside []string
	for _, h := range hidden {
		if within(root, h) {
			return nil, nil // the root itself is hidden, or beneath a hidden path
		}
		if within(h, root) {
			inside = append(inside, h)
		}
	}
	if len(inside) == 0 || !fi.IsDir() {
		return []grant{{path: root, dir: fi.IsDir()}}, nil
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, fmt.Errorf("sandbox: listing %s to grant what lies beside %s: %w", root, strings.Join(inside, ", "), err)
	}
	var out []grant
	for _, e := range entries {
		if e.Type()&os.ModeSymlink != 0 {
			continue // its target is granted, or not, where it lives
		}
		g, err := expandOne(filepath.Join(root, e.Name()), inside)
		if err != nil {
			return nil, err
		}
		out = append(out, g...)
		if len(out) > maxExpand {
			return nil, fmt.Errorf("sandbox: granting %s around %s takes more than %d rules; move the daemon's state (or workspace.root) out of it",
				root, strings.Join(inside, ", "), maxExpand)
		}
	}
	return out, nil
}

// Hidden reports whether path is one of p's hidden paths or beneath one.
func (p Policy) Hidden(path string) bool {
	r, err := resolve(path)
	if err != nil {
		r = filepath.Clean(path)
	}
	return slices.ContainsFunc(p.Hide, func(h string) bool {
		hr, err := resolve(h)
		if err != nil {
			hr = filepath.Clean(h)
		}
		return within(r, hr)
	})
}

// Main is `sortie confine ARGS`: it confines this process to the policy in args and
// executes the program after "--" in its place, with this process's environment. It
// returns only on failure, having run nothing, with the exit status 126 (a command
// that cannot run), after writing why to stderr; or, when it is not root and the policy
// asks for private mounts, with the program's exit status, having run it confined in a
// user namespace (ConfineInUserNS).
func Main(args []string, stderr io.Writer) int {
	p, argv, err := ParseArgs(args)
	if err == nil {
		if code, ran := ConfineInUserNS(p, os.Args); ran {
			return code
		}
		err = Exec(p, argv, withoutUserNSEnv(os.Environ()))
	}
	fmt.Fprintf(stderr, "sortie confine: %v\n", err)
	return 126
}

// StartOnThread calls start (a process start: exec.Cmd.Start) on an OS thread of its
// own that confine confines first, when confine is not nil: a child inherits the
// confinement of the thread that forks it (RestrictThread). The thread is never
// unlocked, so it ends with its goroutine rather than go back to run others (the
// runtime ends a thread whose locked goroutine exits). When confine fails, start is
// not called and confine's error is returned.
func StartOnThread(confine, start func() error) error {
	if confine == nil {
		return start()
	}
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if err := confine(); err != nil {
			errc <- err
			return
		}
		errc <- start()
	}()
	return <-errc
}

// ConfineOnThread reports whether a confined start (PrivateTmp set, as for every agent
// and hook) is confined by the thread that starts it (RestrictThread) rather than
// through `sortie confine`: where the kernel allows that, and unless the private /tmp
// needs a user namespace (the daemon is not root), which only a new process can enter
// (ConfineInUserNS).
func ConfineOnThread() bool {
	return ThreadConfinable() && !privateTmpNeedsUserNS()
}

// privateTmpNeedsUserNS reports whether a private /tmp can only be made in a user
// namespace of a new process: no mount namespace for this process, a user namespace for
// a new one.
func privateTmpNeedsUserNS() bool {
	return !MountNamespaceAvailable() && UserNamespaceAvailable()
}
