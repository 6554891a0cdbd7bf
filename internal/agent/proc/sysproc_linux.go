package proc

import (
	"os"
	"syscall"
)

// sysProcAttr starts the child in its own process group, as c.Credential's user, in
// c.CgroupFD's cgroup when given (clone3 with CLONE_INTO_CGROUP), and in user and mount
// namespaces of its own with c.UserNS.
func sysProcAttr(c Command) *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setpgid: true, Credential: c.Credential}
	if c.CgroupFD > 0 {
		a.UseCgroupFD, a.CgroupFD = true, c.CgroupFD
	}
	if c.UserNS {
		uid, gid := os.Getuid(), os.Getgid()
		a.Cloneflags |= syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS
		a.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
		a.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
		a.AmbientCaps = []uintptr{capSysAdmin} // `sortie confine` clears it before the agent runs
	}
	return a
}

// capSysAdmin is CAP_SYS_ADMIN, which mounts need.
const capSysAdmin = 21
