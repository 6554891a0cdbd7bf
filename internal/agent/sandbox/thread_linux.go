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
	if err := enterPrivateMounts(p); err != nil {
		return err
	}
	err = restrictThread(p, abi, true)
	if _, ok := err.(staleError); ok {
		// A cached path changed under us (it became a link, or changed type): expand
		// everything afresh. Nothing is enforced yet, so trying again is safe.
		expansions.forget()
		err = restrictThread(p, abi, false)
	}
	return err
}

// staleError is addRule's report that a grant no longer matches the file system:
// its path has become a link, or its directory something else.
type staleError struct{ path string }

func (e staleError) Error() string {
	return "sandbox: landlock: " + e.path + " changed while it was being granted (it is a link now, or no longer a directory)"
}

// restrictThread is RestrictThread with the ABI known, expanding p through the cache
// when cached is true.
func restrictThread(p Policy, abi int, cached bool) error {
	expandPolicy := expand
	if cached {
		expandPolicy = expansions.expandPolicy
	}
	write, read, err := expandPolicy(p)
	if err != nil {
		return err
	}
	write, read = prune(write, read)
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
		if err := addRule(fd, g, access&handled); err != nil {
			return err
		}
	}
	for _, g := range read {
		access := uint64(accessROFile)
		if g.dir {
			access = accessRODir
		}
		if err := addRule(fd, g, access&handled); err != nil {
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

// addRule grants access beneath g's path. A path gone since it was expanded grants
// nothing, as in Restrict. The path is resolved, so it is opened without following
// any link: one that has become a link (or a directory that has become a file) since
// it was expanded is a staleError, never a grant of wherever it points now.
func addRule(ruleset int, g grant, access uint64) error {
	pfd, err := unix.Openat2(unix.AT_FDCWD, g.path, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	switch {
	case errors.Is(err, unix.ENOENT):
		return nil
	case errors.Is(err, unix.ELOOP):
		return staleError{g.path}
	case err != nil:
		return fmt.Errorf("sandbox: landlock: opening %s: %w", g.path, err)
	}
	defer unix.Close(pfd)
	attr := llsys.PathBeneathAttr{AllowedAccess: access, ParentFd: pfd}
	err = llsys.LandlockAddPathBeneathRule(ruleset, &attr, 0)
	if g.dir && errors.Is(err, unix.EINVAL) {
		return staleError{g.path} // a directory's rights on what is not one any more
	}
	if err != nil {
		return fmt.Errorf("sandbox: landlock: the rule for %s: %w", g.path, err)
	}
	return nil
}
