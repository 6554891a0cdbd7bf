package main

import "syscall"

// hideEnviron marks the daemon non-dumpable. The kernel then makes its /proc/<pid>
// files, environ among them, readable by root only, so an agent running as the same
// user cannot read the tracker and notification secrets out of the daemon's
// environment (docs/security.md). It also turns off core dumps, which would hold the
// same secrets. Children get a dumpable state back when they exec.
func hideEnviron() error {
	_, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_DUMPABLE, 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}

// dumpable reports the process's dumpable flag.
func dumpable() (bool, error) {
	r, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_GET_DUMPABLE, 0, 0)
	if errno != 0 {
		return false, errno
	}
	return r != 0, nil
}
