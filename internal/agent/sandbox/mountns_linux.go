package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// CoveredDirs are the directories a tree confined with Policy.PrivateTmp sees empty,
// but for the policy's own paths beneath them: where terminal multiplexers, desktop
// sessions and agents keep the sockets that act on their user's behalf (tmux's
// /tmp/tmux-<uid>/default, screen's /run/screen, an SSH agent's /tmp/ssh-*/agent.*,
// the session bus at /run/user/<uid>/bus, X11's /tmp/.X11-unix, the system bus at
// /run/dbus). Landlock (before ABI 9) does not govern connect() to a pathname socket,
// so a confined process could otherwise reach any of them by name.
var CoveredDirs = []string{"/tmp", "/var/tmp", "/run/user", "/run/screen", "/run/dbus"}

// MaskedSockets are single sockets of services that run commands as root on request,
// which a tree with PrivateTmp sees as /dev/null (connect() is refused): systemd's
// private bus and the container engines. A policy that grants one keeps it.
var MaskedSockets = []string{"/run/systemd/private", "/run/docker.sock", "/run/containerd/containerd.sock",
	"/run/podman/podman.sock"}

// errNoNamespace is privateMounts' report that this process may not make a mount
// namespace (it lacks CAP_SYS_ADMIN: not root).
var errNoNamespace = errors.New("sandbox: no mount namespace: the daemon is not root")

// MountNamespaceAvailable reports whether confined trees with PrivateTmp get their
// private mount namespace here: the daemon has CAP_SYS_ADMIN (runs as root). A
// daemon that is not root would need a user namespace, which a multi-threaded process
// cannot enter; its agents keep the machine's /tmp and /run/user, and only Landlock's
// file rules and the environment's allow-list stand between them and the sockets
// there.
func MountNamespaceAvailable() bool {
	var hdr = unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return false
	}
	return data[unix.CAP_SYS_ADMIN/32].Effective&(1<<(unix.CAP_SYS_ADMIN%32)) != 0
}

// UserNamespaceAvailable reports whether the kernel lets this user make a user
// namespace: user.max_user_namespaces is not 0, nor Debian's
// kernel.unprivileged_userns_clone, Ubuntu's AppArmor does not restrict them, and a
// child started in a user and mount namespace of its own really starts (a container's
// seccomp profile may refuse it whatever the settings say). A `sortie confine` that is
// not root then gives its tree the private mounts of Policy.PrivateTmp from within one
// (ConfineInUserNS). The answer cannot change while the kernel runs: it is found once.
func UserNamespaceAvailable() bool { return userNamespaceAvailable() }

var userNamespaceAvailable = sync.OnceValue(func() bool {
	for file, off := range map[string]string{"/proc/sys/user/max_user_namespaces": "0",
		"/proc/sys/kernel/unprivileged_userns_clone": "0", "/proc/sys/kernel/apparmor_restrict_unprivileged_userns": "1"} {
		if b, err := os.ReadFile(file); err == nil && strings.TrimSpace(string(b)) == off {
			return false
		}
	}
	// No id maps: this process may be non-dumpable (the daemon), which may not write
	// them; the probe runs as the overflow user, which is enough to see the clone allowed.
	probe, err := exec.LookPath("true")
	if err != nil {
		return true // nothing to probe with; the settings allow it
	}
	cmd := exec.Command(probe)
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS}
	return cmd.Run() == nil
})

// userNSEnv marks the `sortie confine` that ConfineInUserNS starts; it never reaches
// the program.
const userNSEnv = "SORTIE_CONFINE_IN_USERNS"

// ConfineInUserNS is how a `sortie confine` that is not root (no CAP_SYS_ADMIN) gives
// its tree the private mounts p asks for: it runs argv (its own command line) again in
// a user and mount namespace of its own, as this user (its uid and gid mapped to
// themselves) with CAP_SYS_ADMIN there, where the second `sortie confine` makes the
// mounts, drops the capability and executes the program, and it waits for it and exits
// as it did. One process more per start: a multi-threaded process (the daemon, or this
// one) cannot enter a user namespace itself, and the daemon, which is not dumpable,
// could not write the new namespace's uid_map. ran is false when there is nothing to do
// (root, no PrivateTmp, the second one) or the namespace could not be made: the caller
// then confines as usual, with the machine's /tmp.
func ConfineInUserNS(p Policy, argv []string) (code int, ran bool) {
	if os.Getenv(userNSEnv) != "" {
		os.Unsetenv(userNSEnv) // the second one: what it runs never sees the mark
		return 0, false
	}
	if !p.PrivateTmp || !privateTmpNeedsUserNS() {
		return 0, false
	}
	self, err := os.Executable()
	if err != nil {
		return 0, false
	}
	cmd := exec.Command(self, argv[1:]...)
	cmd.Args[0] = argv[0]
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), userNSEnv+"=1")
	uid, gid := os.Getuid(), os.Getgid()
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}},
		AmbientCaps: []uintptr{unix.CAP_SYS_ADMIN}}
	// The daemon stops a turn by signalling the process group, which the second one is
	// in too: this one only outlives it, and exits as it did.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT)
	go func() {
		for range sigs {
		}
	}()
	stop := func() { signal.Stop(sigs); signal.Reset(); close(sigs) }
	if err := cmd.Start(); err != nil {
		stop()
		fmt.Fprintf(os.Stderr, "sortie confine: no private /tmp for this agent: its user namespace could not be made (%v); it runs with the machine's /tmp and /run/user\n", err)
		return 0, false
	}
	err = cmd.Wait()
	stop()
	ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
	switch {
	case err != nil && !ok:
		return 126, true
	case ws.Signaled():
		_ = syscall.Kill(os.Getpid(), ws.Signal())
		return 128 + int(ws.Signal()), true
	}
	return ws.ExitStatus(), true
}

// withoutUserNSEnv is env without userNSEnv.
func withoutUserNSEnv(env []string) []string {
	return slices.DeleteFunc(slices.Clone(env), func(kv string) bool { return strings.HasPrefix(kv, userNSEnv+"=") })
}

// keptPath is a path of the policy beneath a covered directory, bound back in place
// once the directory is covered, with the directories between them as they were.
type keptPath struct {
	path    string
	parents []parentDir // from the covered directory's child down to path's parent
	tree    int         // the detached copy of path (open_tree), once cloned
}

type parentDir struct {
	path     string
	mode     os.FileMode
	uid, gid int
}

// privateMounts moves the calling thread into a mount namespace of its own where each
// of CoveredDirs is an empty tmpfs holding only the policy's own paths beneath it
// (Write, Read and Hide paths: the workspace, the run's TMPDIR, the CLI's state, the
// agent socket's directory, all bound back at the same path) and MaskedSockets are
// /dev/null. A covered directory that a write grant holds (write_paths: [/tmp]) stays
// as it is. The namespace's mounts do not propagate back. The caller's thread must be
// locked and discarded, as for RestrictThread; the confined program inherits the
// namespace, and without CAP_SYS_ADMIN (dropped from the bounding set) and under
// Landlock (which denies mount and umount) it cannot undo it. errNoNamespace when this
// process may not make one.
func privateMounts(p Policy) error {
	// keep are the policy's paths, bound back where they lie beneath a covered
	// directory; write are the write grants alone. Only a write grant at or above a
	// covered directory (write_paths: [/tmp]) leaves it as it is: a read grant above one
	// (SystemRead's /run, above /run/user) must not, or the sockets it holds stay in
	// reach by name.
	var keep, write []string
	for i, l := range [][]string{p.Write, p.Read, p.Hide} {
		for _, path := range l {
			if r, err := resolve(path); err == nil {
				keep = append(keep, r)
				if i == 0 {
					write = append(write, r)
				}
			}
		}
	}
	type cover struct {
		dir   string
		kept  []*keptPath
		links []keptLink
	}
	var covers []cover
	for _, d := range CoveredDirs {
		dir, err := resolve(d)
		if err != nil {
			continue // absent here
		}
		if slices.ContainsFunc(write, func(w string) bool { return within(dir, w) }) {
			continue // granted whole, for writing
		}
		if slices.ContainsFunc(covers, func(c cover) bool { return within(dir, c.dir) }) {
			continue // beneath one already covered (a link to it)
		}
		c := cover{dir: dir}
		for _, k := range outermost(keep, dir) {
			parents, err := parentsOf(dir, k)
			if err != nil {
				return err
			}
			c.kept = append(c.kept, &keptPath{path: k, tree: -1, parents: parents})
		}
		for _, l := range [][]string{p.Write, p.Read, p.Hide} {
			for _, path := range l {
				link, ok, err := linkOn(dir, path)
				if err != nil {
					return err
				}
				if ok {
					c.links = append(c.links, link)
				}
			}
		}
		covers = append(covers, c)
	}
	var masks []string
	for _, s := range MaskedSockets {
		r, err := resolve(s)
		// Kept only when the policy names the socket itself, or grants writing where it
		// lies; not for a read grant of a directory that holds it (/run).
		if err != nil || slices.Contains(keep, r) || slices.ContainsFunc(write, func(w string) bool { return within(r, w) }) {
			continue
		}
		masks = append(masks, r)
	}
	cwd, _ := unix.Getwd()

	if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
		if errors.Is(err, unix.EPERM) {
			return errNoNamespace
		}
		return fmt.Errorf("sandbox: unshare(CLONE_NEWNS): %w", err)
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_SLAVE, ""); err != nil {
		return fmt.Errorf("sandbox: making the agent's mounts private: %w", err)
	}
	for _, c := range covers {
		if err := coverKept(c.dir, c.kept, c.links); err != nil {
			return err
		}
	}
	for _, m := range masks {
		if err := unix.Mount("/dev/null", m, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("sandbox: masking %s: %w", m, err)
		}
	}
	if cwd != "" && slices.ContainsFunc(covers, func(c cover) bool { return within(cwd, c.dir) }) {
		// The thread's working directory is still the covered one's; the agent starts in
		// its workspace, but nothing relative may reach what lies beneath.
		if err := unix.Chdir(cwd); err != nil {
			if err := unix.Chdir("/"); err != nil {
				return fmt.Errorf("sandbox: private mounts: %w", err)
			}
		}
	}
	return nil
}

// coverKept covers dir (coverDir) with the kept paths beneath it cloned first, so that
// they can be bound back; every clone is closed whatever happens.
func coverKept(dir string, kept []*keptPath, links []keptLink) error {
	defer func() {
		for _, k := range kept {
			if k.tree >= 0 {
				unix.Close(k.tree)
				k.tree = -1
			}
		}
	}()
	for _, k := range kept {
		fd, err := unix.OpenTree(unix.AT_FDCWD, k.path, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE)
		if errors.Is(err, unix.ENOENT) {
			continue // gone meanwhile: nothing to keep
		}
		if err != nil {
			return fmt.Errorf("sandbox: keeping %s reachable beneath the agent's own %s: %w", k.path, dir, err)
		}
		k.tree = fd
	}
	return coverDir(dir, kept, links)
}

// keptLink is a symbolic link beneath a covered directory on the way to a policy path
// as the policy names it (a CLI's install reached through a link in /tmp): made again
// in the covered directory, so that the path still leads where it did (its target is
// kept on its own when it lies beneath a covered directory too).
type keptLink struct {
	path, target string
	parents      []parentDir
}

// linkOn finds the first symbolic link on the way from dir down to path, when path
// lies beneath dir as it is written.
func linkOn(dir, path string) (keptLink, bool, error) {
	abs, err := filepath.Abs(path)
	if err != nil || abs == dir || !within(abs, dir) {
		return keptLink{}, false, nil
	}
	cur := dir
	for _, name := range strings.Split(strings.TrimPrefix(abs, dir+"/"), "/") {
		cur = filepath.Join(cur, name)
		fi, err := os.Lstat(cur)
		if err != nil || fi.Mode().IsRegular() {
			return keptLink{}, false, nil
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			target, err := os.Readlink(cur)
			if err != nil {
				return keptLink{}, false, nil
			}
			parents, err := parentsOf(dir, cur)
			return keptLink{path: cur, target: target, parents: parents}, err == nil, err
		}
	}
	return keptLink{}, false, nil
}

// parentsOf records the directories between dir and path's parent, outermost first.
func parentsOf(dir, path string) ([]parentDir, error) {
	var parents []parentDir
	for parent := filepath.Dir(path); parent != dir && within(parent, dir); parent = filepath.Dir(parent) {
		fi, err := os.Stat(parent)
		if err != nil {
			return nil, fmt.Errorf("sandbox: private mounts: %w", err)
		}
		st := fi.Sys().(*syscall.Stat_t)
		parents = append(parents, parentDir{path: parent, mode: fi.Mode().Perm() | fi.Mode()&os.ModeSticky, uid: int(st.Uid), gid: int(st.Gid)})
	}
	slices.Reverse(parents)
	return parents, nil
}

// makeParents makes the directories parents records, as they were.
func makeParents(dir string, parents []parentDir) error {
	for _, d := range parents {
		if err := unix.Mkdir(d.path, 0o700); err != nil && !errors.Is(err, unix.EEXIST) {
			return fmt.Errorf("sandbox: beneath the agent's own %s: %w", dir, err)
		}
		// In a user namespace (a daemon that is not root) only its own ids are
		// mapped: a directory of another owner stays root's of the tmpfs, which is
		// as far as this user could go on the machine's too.
		if err := unix.Chown(d.path, d.uid, d.gid); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.EPERM) {
			return fmt.Errorf("sandbox: beneath the agent's own %s: %w", dir, err)
		}
		if err := unix.Chmod(d.path, uint32(d.mode.Perm())|sticky(d.mode)); err != nil {
			return fmt.Errorf("sandbox: beneath the agent's own %s: %w", dir, err)
		}
	}
	return nil
}

// coverDir mounts an empty tmpfs on dir, binds each kept path's detached tree back at
// its own path and makes each kept link again, beneath directories made as the
// originals were.
func coverDir(dir string, kept []*keptPath, links []keptLink) error {
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755,size=1m"); err != nil {
		return fmt.Errorf("sandbox: covering %s: %w", dir, err)
	}
	for _, k := range kept {
		if k.tree < 0 {
			continue
		}
		if err := makeParents(dir, k.parents); err != nil {
			return err
		}
		var st unix.Stat_t
		if err := unix.Fstat(k.tree, &st); err != nil {
			return fmt.Errorf("sandbox: keeping %s: %w", k.path, err)
		}
		if st.Mode&unix.S_IFMT == unix.S_IFDIR {
			err := unix.Mkdir(k.path, 0o700)
			if err != nil && !errors.Is(err, unix.EEXIST) {
				return fmt.Errorf("sandbox: keeping %s: %w", k.path, err)
			}
		} else {
			fd, err := unix.Open(k.path, unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, 0o600)
			if err != nil {
				return fmt.Errorf("sandbox: keeping %s: %w", k.path, err)
			}
			unix.Close(fd)
		}
		if err := unix.MoveMount(k.tree, "", unix.AT_FDCWD, k.path, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
			return fmt.Errorf("sandbox: keeping %s: %w", k.path, err)
		}
	}
	for _, l := range links {
		if err := makeParents(dir, l.parents); err != nil {
			return err
		}
		if err := unix.Symlink(l.target, l.path); err != nil && !errors.Is(err, unix.EEXIST) {
			return fmt.Errorf("sandbox: keeping the link %s: %w", l.path, err)
		}
	}
	return nil
}

func sticky(m os.FileMode) uint32 {
	if m&os.ModeSticky != 0 {
		return unix.S_ISVTX
	}
	return 0
}

// outermost are the paths strictly beneath dir, without those beneath another of them
// (binding the outer one keeps them), sorted.
func outermost(paths []string, dir string) []string {
	var in []string
	for _, p := range paths {
		if p != dir && within(p, dir) {
			in = append(in, p)
		}
	}
	sort.Strings(in)
	in = slices.Compact(in)
	var out []string
	for _, p := range in {
		if !slices.ContainsFunc(out, func(o string) bool { return within(p, o) }) {
			out = append(out, p)
		}
	}
	return out
}

// enterPrivateMounts is privateMounts when p asks for it (PrivateTmp) and this process
// may make a mount namespace; without CAP_SYS_ADMIN the tree runs without one.
func enterPrivateMounts(p Policy) error {
	if !p.PrivateTmp {
		return nil
	}
	if err := privateMounts(p); err != nil && err != errNoNamespace {
		return err
	}
	return nil
}
