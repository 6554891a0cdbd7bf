package proc

import (
	"syscall"
	"unsafe"
)

// pPID is P_PID from <sys/wait.h>: wait for the process whose id is given.
const pPID = 1

// waitExited blocks until the child pid has exited without reaping it (waitid with
// WNOWAIT). While the zombie remains, its pid, and so its process group id, cannot be
// reused, which makes the straggler kill after exit safe.
func waitExited(pid int) error {
	var info [128]byte // siginfo_t; required by the call, not read
	for {
		_, _, errno := syscall.Syscall6(syscall.SYS_WAITID, pPID, uintptr(pid),
			uintptr(unsafe.Pointer(&info[0])), syscall.WEXITED|syscall.WNOWAIT, 0, 0)
		if errno == syscall.EINTR {
			continue
		}
		if errno != 0 {
			return errno
		}
		return nil
	}
}
