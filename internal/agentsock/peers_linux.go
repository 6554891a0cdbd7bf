package agentsock

import (
	"errors"
	"fmt"
	"os"
	"slices"

	"golang.org/x/sys/unix"

	"sortie/internal/agent/cgroup"
	"sortie/internal/agent/supervise"
)

// peerCred reads the peer credentials of the unix socket fd, and a pidfd of the peer
// where the kernel has SO_PEERPIDFD.
func peerCred(fd int) Peer {
	p := Peer{pidfd: -1}
	cred, err := unix.GetsockoptUcred(fd, unix.SOL_SOCKET, unix.SO_PEERCRED)
	if err != nil || cred.Pid <= 0 {
		return p
	}
	p.Known, p.PID, p.UID = true, int(cred.Pid), int(cred.Uid)
	if pidfd, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_PEERPIDFD); err == nil && pidfd >= 0 {
		unix.CloseOnExec(pidfd)
		p.pidfd = pidfd
	}
	return p
}

// closePeer releases what connPeer opened for p.
func closePeer(p Peer) {
	if p.pidfd >= 0 {
		unix.Close(p.pidfd)
	}
}

// alive reports whether the peer's process still exists (a zombie counts: its pid is
// not reused yet), so what was read of its pid was read of it. Without a pidfd it
// cannot tell, and says yes.
func alive(p Peer) bool {
	if p.pidfd < 0 {
		return true
	}
	return unix.PidfdSendSignal(p.pidfd, 0, nil, 0) == nil
}

// parentOf is pid's parent, from /proc/<pid>/stat.
func parentOf(pid int) (int, error) {
	ppid, _, _, err := supervise.ProcStat(pid)
	if errors.Is(err, os.ErrNotExist) {
		return 0, errors.New("has exited")
	}
	return ppid, err
}

// inCgroup says why pid is not in the cgroup at dir (its cgroup.procs), nil when it
// is.
func inCgroup(dir string, pid int) error {
	if slices.Contains(cgroup.Members(dir), pid) {
		return nil
	}
	return fmt.Errorf("the calling process (pid %d) is not in the session's cgroup", pid)
}
