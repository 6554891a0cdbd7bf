//go:build !linux

package proc

import "syscall"

// sysProcAttr starts the child in its own process group, as c.Credential's user;
// there are no cgroups here.
func sysProcAttr(c Command) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Credential: c.Credential}
}
