package proctest

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// GroupMembers returns the live (not zombie) processes whose process group is pgid.
func GroupMembers(t testing.TB, pgid int) []int {
	t.Helper()
	var pids []int
	for _, pid := range allPIDs(t) {
		state, pgrp, ok := stat(pid)
		if ok && pgrp == pgid && state != 'Z' && state != 'X' {
			pids = append(pids, pid)
		}
	}
	return pids
}

// WithEnv returns the live (not zombie) processes other than this one whose environment
// contains s, such as the URL of a fake model that only an agent's environment holds.
func WithEnv(t testing.TB, s string) []int {
	t.Helper()
	var pids []int
	for _, pid := range allPIDs(t) {
		if pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
		if err != nil || !bytes.Contains(env, []byte(s)) {
			continue
		}
		if state, _, ok := stat(pid); ok && (state == 'Z' || state == 'X') {
			continue
		}
		pids = append(pids, pid)
	}
	return pids
}

// allPIDs lists the processes in /proc.
func allPIDs(t testing.TB) []int {
	t.Helper()
	dirs, err := filepath.Glob("/proc/[0-9]*")
	if err != nil {
		t.Fatalf("proctest: listing /proc: %v", err)
	}
	pids := make([]int, 0, len(dirs))
	for _, d := range dirs {
		if pid, err := strconv.Atoi(filepath.Base(d)); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// WaitExited waits until pid has exited (a zombie counts as exited) and fails the test
// if that takes longer than timeout. The wait is on a pidfd, not a polling loop.
func WaitExited(t testing.TB, pid int, timeout time.Duration) {
	t.Helper()
	fd, _, errno := syscall.Syscall(sysPidfdOpen, uintptr(pid), 0, 0)
	if errno == syscall.ESRCH {
		return // already reaped
	}
	if errno != 0 {
		t.Fatalf("proctest: pidfd_open(%d): %v", pid, errno)
	}
	defer syscall.Close(int(fd))
	pfd := pollFd{fd: int32(fd), events: pollIn}
	ts := syscall.NsecToTimespec(int64(timeout))
	for {
		n, _, errno := syscall.Syscall6(syscall.SYS_PPOLL, uintptr(unsafe.Pointer(&pfd)), 1,
			uintptr(unsafe.Pointer(&ts)), 0, 0, 0)
		if errno == syscall.EINTR {
			continue
		}
		if errno != 0 {
			t.Fatalf("proctest: ppoll on pidfd of %d: %v", pid, errno)
		}
		if n == 0 {
			t.Fatalf("proctest: process %d still alive after %v", pid, timeout)
		}
		return
	}
}

// RequireGroupGone waits for every live member of the group to exit, then fails the
// test if any live member remains. Call it after the group was killed: a group whose
// members may still fork is not guaranteed to be empty afterwards.
func RequireGroupGone(t testing.TB, pgid int) {
	t.Helper()
	for _, pid := range GroupMembers(t, pgid) {
		WaitExited(t, pid, 10*time.Second)
	}
	if left := GroupMembers(t, pgid); len(left) > 0 {
		t.Fatalf("process group %d: want no live process left, got %v", pgid, left)
	}
}

// Alive reports whether pid exists and is not a zombie.
func Alive(pid int) bool {
	state, _, ok := stat(pid)
	return ok && state != 'Z' && state != 'X'
}

const (
	sysPidfdOpen = 434 // pidfd_open(2), the same number on every Linux architecture
	pollIn       = 0x1
)

type pollFd struct {
	fd      int32
	events  int16
	revents int16
}

// stat reads the state and process group from /proc/pid/stat.
func stat(pid int) (state byte, pgrp int, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, false
	}
	// The command name is in parentheses and may contain anything; fields follow
	// the last ')': state ppid pgrp ...
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 3 || len(f[0]) != 1 {
		return 0, 0, false
	}
	pgrp, err = strconv.Atoi(string(f[2]))
	if err != nil {
		return 0, 0, false
	}
	return f[0][0], pgrp, true
}
