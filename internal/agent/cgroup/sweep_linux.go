package cgroup

import (
	"io"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// SweepAt stops every process in the group whose directory is open as dirfd: SIGTERM,
// up to grace for them to exit, then SIGKILL to the whole group (cgroup.kill),
// waiting a moment for the kernel to empty it. It is what `sortie supervise` does to
// a CLI's leftovers, for a CLI started in a group without a supervisor.
func SweepAt(dirfd int, grace time.Duration) {
	left := MembersAt(dirfd)
	if len(left) == 0 {
		return
	}
	for _, pid := range left {
		_ = syscall.Kill(pid, syscall.SIGTERM)
	}
	deadline := time.Now().Add(grace)
	for len(MembersAt(dirfd)) > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond) // foreign processes: there is nothing to wait on
	}
	if len(MembersAt(dirfd)) == 0 {
		return
	}
	if fd, err := unix.Openat(dirfd, "cgroup.kill", unix.O_WRONLY|unix.O_CLOEXEC, 0); err == nil {
		_, _ = unix.Write(fd, []byte("1"))
		unix.Close(fd)
	}
	for end := time.Now().Add(time.Second); len(MembersAt(dirfd)) > 0 && time.Now().Before(end); {
		time.Sleep(10 * time.Millisecond) // the kernel empties it asynchronously
	}
}

// MembersAt lists the processes of the group whose directory is open as dirfd.
func MembersAt(dirfd int) []int {
	fd, err := unix.Openat(dirfd, "cgroup.procs", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	f := os.NewFile(uintptr(fd), "cgroup.procs")
	defer f.Close()
	b, err := io.ReadAll(f) // cgroup files report no size
	if err != nil {
		return nil
	}
	return pids(b)
}
