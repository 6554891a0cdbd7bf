package proc

import "syscall"

// sysProcAttr starts the child in its own process group, as c.Credential's user, and in
// c.CgroupFD's cgroup when given (clone3 with CLONE_INTO_CGROUP).
func sysProcAttr(c Command) *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setpgid: true, Credential: c.Credential}
	if c.CgroupFD > 0 {
		a.UseCgroupFD, a.CgroupFD = true, c.CgroupFD
	}
	return a
}
