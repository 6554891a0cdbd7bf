package sandbox

import (
	"errors"
	"fmt"

	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// threadMinABI is the oldest Landlock ABI RestrictThread confines with: ABI 2 has the
// refer right that write grants carry. On ABI 1 the daemon confines through `sortie
// confine` instead, where go-landlock decides.
const threadMinABI = 2

// Access rights of the rules Restrict makes (go-landlock's RWDirs with refer and
// ioctl, RWFiles with ioctl, RODirs and ROFiles), for RestrictThread, which makes the
// same rules itself.
const (
	accessRead     = llsys.AccessFSExecute | llsys.AccessFSReadFile | llsys.AccessFSReadDir
	accessWrite    = llsys.AccessFSWriteFile | llsys.AccessFSRemoveDir | llsys.AccessFSRemoveFile | llsys.AccessFSMakeChar | llsys.AccessFSMakeDir | llsys.AccessFSMakeReg | llsys.AccessFSMakeSock | llsys.AccessFSMakeFifo | llsys.AccessFSMakeBlock | llsys.AccessFSMakeSym | llsys.AccessFSTruncate
	accessFile     = llsys.AccessFSExecute | llsys.AccessFSWriteFile | llsys.AccessFSTruncate | llsys.AccessFSReadFile
	accessRWDir    = accessRead | accessWrite | llsys.AccessFSRefer | llsys.AccessFSIoctlDev
	accessRWFile   = (accessRead|accessWrite)&accessFile | llsys.AccessFSIoctlDev
	accessRODir    = accessRead
	accessROFile   = accessRead & accessFile
	accessHandled  = 1<<16 - 1 // every file-system right of ABI 5 to 8, which config handles
	scopesHandled  = llsys.ScopeAbstractUnixSocket | llsys.ScopeSignal
	scopeMinABI    = 6
	ioctlDevMinABI = 5
	truncateMinABI = 3
)

// ThreadConfinable reports whether RestrictThread can confine here.
func ThreadConfinable() bool {
	v, err := Available()
	return err == nil && v >= threadMinABI
}

// RestrictThread confines the calling OS thread, and only it, to p: what
// `sortie confine` does to its whole process, without a process of its own. The
// caller must have locked its goroutine to the thread (runtime.LockOSThread), start
// the confined program from it, and let the thread end with the goroutine, never
// unlocking it: a child inherits the confinement of the thread that forks it, and the
// thread must run nothing else. It drops the same capabilities (per thread, as they
// are), sets no_new_privs on the thread and enforces a Landlock ruleset with the
// rules Restrict makes, without the all-threads synchronisation Restrict uses.
func RestrictThread(p Policy) error {
	abi, err := Available()
	if err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	if abi < threadMinABI {
		return fmt.Errorf("sandbox: the kernel's Landlock ABI %d is older than %d, which confining a thread needs", abi, threadMinABI)
	}
	hidden := resolveAllHidden(p.Hide)
	write, err := expandResolved(p.Write, hidden)
	if err != nil {
		return err
	}
	read, err := expandResolved(p.Read, hidden)
	if err != nil {
		return err
	}
	handled := uint64(accessHandled)
	if abi < ioctlDevMinABI {
		handled &^= llsys.AccessFSIoctlDev
	}
	if abi < truncateMinABI {
		handled &^= llsys.AccessFSTruncate
	}
	attr := llsys.RulesetAttr{HandledAccessFS: handled}
	if abi >= scopeMinABI {
		attr.Scoped = scopesHandled
	}
	fd, err := llsys.LandlockCreateRuleset(&attr, 0)
	if err != nil {
		return fmt.Errorf("sandbox: landlock_create_ruleset: %w", err)
	}
	defer unix.Close(fd)
	for _, g := range write {
		access := uint64(accessRWFile)
		if g.dir {
			access = accessRWDir
		}
		if err := addRule(fd, g.path, access&handled); err != nil {
			return err
		}
	}
	for _, g := range read {
		access := uint64(accessROFile)
		if g.dir {
			access = accessRODir
		}
		if err := addRule(fd, g.path, access&handled); err != nil {
			return err
		}
	}
	if err := dropCapabilities(); err != nil {
		return err
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("sandbox: prctl(PR_SET_NO_NEW_PRIVS): %w", err)
	}
	if err := llsys.LandlockRestrictSelf(fd, 0); err != nil {
		return fmt.Errorf("sandbox: landlock_restrict_self: %w", err)
	}
	return nil
}

// addRule grants access beneath path. A path gone since it was expanded grants
// nothing, as in Restrict.
func addRule(ruleset int, path string, access uint64) error {
	pfd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("sandbox: landlock: opening %s: %w", path, err)
	}
	defer unix.Close(pfd)
	attr := llsys.PathBeneathAttr{AllowedAccess: access, ParentFd: pfd}
	if err := llsys.LandlockAddPathBeneathRule(ruleset, &attr, 0); err != nil {
		return fmt.Errorf("sandbox: landlock: the rule for %s: %w", path, err)
	}
	return nil
}
