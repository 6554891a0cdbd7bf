package proc

import (
	"bytes"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

func dupCloexec(fd int) (int, error) { return unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0) }

func closeFD(fd int) {
	if fd >= 0 {
		unix.Close(fd)
	}
}

// sweepCgroup stops every process left in the cgroup at dir (an open directory):
// SIGTERM, up to grace for them to exit, then SIGKILL to the whole cgroup
// (cgroup.kill), waiting a moment for the kernel to empty it.
func sweepCgroup(dir int, grace time.Duration) {
	left := cgroupProcs(dir)
	if len(left) == 0 {
		return
	}
	for _, pid := range left {
		_ = syscall.Kill(pid, syscall.SIGTERM)
	}
	deadline := time.Now().Add(grace)
	for len(cgroupProcs(dir)) > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond) // foreign processes: there is nothing to wait on
	}
	if len(cgroupProcs(dir)) == 0 {
		return
	}
	if fd, err := unix.Openat(dir, "cgroup.kill", unix.O_WRONLY|unix.O_CLOEXEC, 0); err == nil {
		_, _ = unix.Write(fd, []byte("1"))
		unix.Close(fd)
	}
	for end := time.Now().Add(time.Second); len(cgroupProcs(dir)) > 0 && time.Now().Before(end); {
		time.Sleep(10 * time.Millisecond) // the kernel empties it asynchronously
	}
}

// cgroupProcs lists the processes of the cgroup at dir.
func cgroupProcs(dir int) []int {
	fd, err := unix.Openat(dir, "cgroup.procs", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	defer unix.Close(fd)
	var buf [4096]byte
	var data []byte
	for {
		n, err := unix.Read(fd, buf[:])
		if n > 0 {
			data = append(data, buf[:n]...)
		}
		if err != nil || n <= 0 {
			break
		}
	}
	var pids []int
	for _, f := range bytes.Fields(data) {
		if pid, err := strconv.Atoi(string(f)); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}
