package sandbox

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// minABI is the oldest Landlock ABI Sortie confines with. ABI 1 (Linux 5.13) already
// restricts every file access a Policy controls; later ABIs add renames across
// directories (2), truncation (3), device ioctls (5) and signal and abstract-socket
// scoping (6), which are used when the kernel has them.
const minABI = 1

// config is what Sortie restricts: every file-system right and the IPC scopes of
// Landlock ABI 8, downgraded to what the kernel supports. Network access is not
// restricted: the agent must reach its model API.
var config = landlock.MustConfig(landlock.V8.HandledAccessFS, landlock.V8.Scoped).BestEffort()

// Available reports the kernel's Landlock ABI version, or why Landlock cannot be used.
// The kernel's answer cannot change while it runs, so it is asked once.
func Available() (int, error) { return available() }

var available = sync.OnceValues(func() (int, error) {
	v, err := llsys.LandlockGetABIVersion()
	if err != nil {
		if errors.Is(err, syscall.ENOSYS) || errors.Is(err, syscall.EOPNOTSUPP) {
			return 0, errors.New("the kernel has no Landlock, or it is disabled (boot with lsm=...,landlock)")
		}
		return 0, fmt.Errorf("asking the kernel for its Landlock ABI: %w", err)
	}
	if v < minABI {
		return v, fmt.Errorf("the kernel's Landlock ABI %d is older than %d", v, minABI)
	}
	return v, nil
})

// Restrict confines the calling process, all its threads and everything it starts
// afterwards to p. It fails, confining nothing, when the kernel has no Landlock or a
// path cannot be granted; callers must then not run the agent.
func Restrict(p Policy) error {
	if _, err := Available(); err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	write, read, err := expand(p)
	if err != nil {
		return err
	}
	return restrictGrants(write, read)
}

// restrictGrants confines this process to the expanded grants.
func restrictGrants(write, read []grant) error {
	// A grant whose path is gone by the time the rule is made is skipped, as expand
	// skips one already gone: a directory expanded around a hidden file lists every
	// entry beside it, temporary files included (the issues file's next version, say),
	// and one renamed away meanwhile must not stop the agent from starting.
	rules := make([]landlock.Rule, 0, len(write)+len(read))
	for _, g := range write {
		switch {
		case g.dir:
			rules = append(rules, landlock.RWDirs(g.path).WithRefer().WithIoctlDev().IgnoreIfMissing())
		default:
			rules = append(rules, landlock.RWFiles(g.path).WithIoctlDev().IgnoreIfMissing())
		}
	}
	for _, g := range read {
		if g.dir {
			rules = append(rules, landlock.RODirs(g.path).IgnoreIfMissing())
		} else {
			rules = append(rules, landlock.ROFiles(g.path).IgnoreIfMissing())
		}
	}
	if err := config.Restrict(rules...); err != nil {
		return fmt.Errorf("sandbox: landlock: %w", err)
	}
	return nil
}

// Exec confines this process to p and replaces it with argv[0] (looked up on PATH
// when it has no slash), with env. It returns only on failure, having run nothing.
func Exec(p Policy, argv, env []string) error {
	if len(argv) == 0 {
		return errors.New("sandbox: no program to run")
	}
	prog, err := lookPath(argv[0], env)
	if err != nil {
		return err
	}
	if p.Hidden(prog) {
		return fmt.Errorf("sandbox: %s is hidden from agents and cannot be run confined", prog)
	}
	if err := ConfineThread(p); err != nil {
		return err
	}
	if err := syscall.Exec(prog, argv, env); err != nil {
		return fmt.Errorf("sandbox: running %s: %w", prog, err)
	}
	return nil
}

// ConfineThread confines this process to p, as Exec does before it executes the
// program, for a caller that goes on running in this process and starts the program
// itself. Capability sets are per thread, and a child inherits those of the thread
// that forks it: ConfineThread locks the calling goroutine to its thread for good and
// drops them there, so the caller must start every process from this goroutine.
func ConfineThread(p Policy) error {
	runtime.LockOSThread() // never unlocked: the thread keeps its reduced capabilities
	if err := enterPrivateMounts(p); err != nil {
		return err
	}
	if err := dropCapabilities(); err != nil {
		return err
	}
	return Restrict(p)
}

// droppedCaps are capabilities a confined tree never gets back, even as root. Landlock
// governs paths; these would reach around it: CAP_SYS_PTRACE reads the non-dumpable
// daemon's /proc/<pid>/environ and memory, CAP_DAC_READ_SEARCH opens files by handle,
// CAP_MKNOD makes a disk's block device in the workspace, CAP_SYS_ADMIN, CAP_SYS_MODULE,
// CAP_SYS_RAWIO and CAP_SYS_BOOT reach the kernel and hardware.
var droppedCaps = []uintptr{unix.CAP_SYS_PTRACE, unix.CAP_DAC_READ_SEARCH, unix.CAP_MKNOD, unix.CAP_SYS_ADMIN,
	unix.CAP_SYS_MODULE, unix.CAP_SYS_RAWIO, unix.CAP_SYS_BOOT}

// dropCapabilities clears the ambient set and removes droppedCaps from the bounding
// set, so that the program executed next (and everything it starts) cannot hold them.
// Ambient capabilities survive exec even under no_new_privs, so they go first; clearing
// them needs no privilege (kernels before 4.3 have none). Without CAP_SETPCAP (not
// root) the bounding set cannot change, but such a process then gains no capabilities
// at exec: no_new_privs, which Landlock sets, ignores file capabilities.
func dropCapabilities() error {
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("sandbox: clearing the ambient capabilities: %w", err)
	}
	for _, c := range droppedCaps {
		if in, err := unix.PrctlRetInt(unix.PR_CAPBSET_READ, c, 0, 0, 0); err != nil || in == 0 {
			continue
		}
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, c, 0, 0, 0); err != nil {
			if errors.Is(err, unix.EPERM) {
				return nil
			}
			return fmt.Errorf("sandbox: dropping capability %d: %w", c, err)
		}
	}
	return nil
}

// lookPath finds name on the PATH of env (not this process's), as the agent would.
func lookPath(name string, env []string) (string, error) {
	if containsSlash(name) {
		return name, nil
	}
	path := ""
	for _, kv := range env {
		if len(kv) > 5 && kv[:5] == "PATH=" {
			path = kv[5:]
		}
	}
	for _, dir := range splitList(path) {
		if dir == "" {
			dir = "."
		}
		cand := dir + "/" + name
		if fi, err := os.Stat(cand); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return cand, nil
		}
	}
	return "", fmt.Errorf("sandbox: %s not found on the agent's PATH", name)
}
