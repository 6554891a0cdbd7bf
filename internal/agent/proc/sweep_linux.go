package proc

import (
	"time"

	"golang.org/x/sys/unix"

	"sortie/internal/agent/cgroup"
)

func dupCloexec(fd int) (int, error) { return unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0) }

func closeFD(fd int) {
	if fd >= 0 {
		unix.Close(fd)
	}
}

// sweepCgroup stops what is left in the child's cgroup (cgroup.SweepAt).
func sweepCgroup(dir int, grace time.Duration) { cgroup.SweepAt(dir, grace) }
