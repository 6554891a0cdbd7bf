package agentsock

import (
	"context"
	"fmt"
	"net"
	"os"
	"sync"
)

// Peer is the process at the other end of a connection to the socket, from the
// connection's peer credentials (SO_PEERCRED), taken by the kernel when it connected.
type Peer struct {
	// Known is false where the kernel gives no peer credentials (not Linux).
	Known    bool
	PID, UID int
	// pidfd refers to the process itself (SO_PEERPIDFD, Linux 6.5), so that a check
	// of its pid can be confirmed afterwards not to have been of another process that
	// got the pid after it exited; -1 without one.
	pidfd int
}

// Binding says which processes may present a session's token (Session.Bind).
type Binding interface {
	// Admit returns nil when the process at the other end of the connection may act
	// as the session, else why not: the reason is shown to the caller and should
	// name what the operator can check. It may wait, within ctx, for a process of
	// the session that is starting right now.
	Admit(ctx context.Context, p Peer) error
}

type peerKey struct{}

// peerOf is the connection's peer, put in its context by the server.
func peerOf(ctx context.Context) Peer {
	p, ok := ctx.Value(peerKey{}).(Peer)
	if !ok {
		return Peer{pidfd: -1}
	}
	return p
}

// connPeer reads c's peer credentials. The pidfd it may open is closed by
// closePeer once the connection ends.
func connPeer(c net.Conn) Peer {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return Peer{pidfd: -1}
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return Peer{pidfd: -1}
	}
	p := Peer{pidfd: -1}
	_ = raw.Control(func(fd uintptr) { p = peerCred(int(fd)) })
	return p
}

// RunProcesses is the Binding of one agent run's token: the caller must run as the
// run's user and be one of the run's processes. With a cgroup (SetCgroup) that means
// being in the run's cgroup, which a confined agent cannot leave; without, being a
// descendant (by /proc's parent links) of a process the daemon started for the run
// (Started), the CLI of the running turn or the supervisor above it. A process a run
// left behind that was re-parented to the daemon (its supervisor was killed) or to
// init belongs to no run. The daemon learns each process as it starts
// (proc.WithTrace), so a fork-per-turn CLI's new process every turn is known before
// it can start the MCP sidecar.
type RunProcesses struct {
	uid  int
	self int // the daemon: where the walk up the tree stops

	mu       sync.Mutex
	cgroup   string       // the run's cgroup directory, "" for none
	roots    map[int]bool // the run's running processes the daemon started
	starting int          // starts under way (Starting without Started yet)
	changed  chan struct{}
}

// NewRunProcesses binds a token to the processes of a run whose agent runs as uid.
func NewRunProcesses(uid int) *RunProcesses {
	return &RunProcesses{uid: uid, self: os.Getpid(), roots: map[int]bool{}, changed: make(chan struct{})}
}

// SetCgroup binds the token to the run's cgroup (its directory) instead of its
// process tree.
func (r *RunProcesses) SetCgroup(dir string) {
	r.mu.Lock()
	r.cgroup = dir
	r.mu.Unlock()
}

// Starting says a process of the run is about to start: until Started, a caller that
// is no process of the run yet may be one of the one starting, and Admit waits.
func (r *RunProcesses) Starting() {
	r.mu.Lock()
	r.starting++
	r.mu.Unlock()
}

// Started records a process of the run the daemon started (pid 0: the start failed).
func (r *RunProcesses) Started(pid int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.starting = max(r.starting-1, 0)
	if pid > 0 {
		r.roots[pid] = true
	}
	close(r.changed)
	r.changed = make(chan struct{})
}

// Exited forgets a process of the run once it has exited, before its pid can be
// handed to another process.
func (r *RunProcesses) Exited(pid int) {
	r.mu.Lock()
	delete(r.roots, pid)
	r.mu.Unlock()
}

// isRoot reports whether pid is a process the daemon started for the run.
func (r *RunProcesses) isRoot(pid int) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.roots[pid]
}

// Admit implements Binding.
func (r *RunProcesses) Admit(ctx context.Context, p Peer) error {
	if !p.Known {
		return nil // no peer credentials on this system: the token alone (docs/security.md)
	}
	if p.UID != r.uid {
		return fmt.Errorf("the calling process (pid %d) runs as uid %d, the session's agent as uid %d", p.PID, p.UID, r.uid)
	}
	for {
		r.mu.Lock()
		cgroup, starting, changed := r.cgroup, r.starting, r.changed
		r.mu.Unlock()
		var err error
		if cgroup != "" {
			err = inCgroup(cgroup, p.PID)
		} else {
			err = r.inTree(p.PID)
		}
		if err == nil {
			if !alive(p) {
				return fmt.Errorf("the calling process (pid %d) has exited", p.PID)
			}
			return nil
		}
		if starting == 0 {
			return err
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return err
		}
	}
}

// maxTreeDepth bounds the walk up the process tree.
const maxTreeDepth = 1024

// inTree says why pid is not a descendant of one of the run's processes, nil when it
// is one.
func (r *RunProcesses) inTree(pid int) error {
	p := pid
	for range maxTreeDepth {
		if r.isRoot(p) {
			return nil
		}
		if p <= 1 || p == r.self {
			break
		}
		ppid, err := parentOf(p)
		if err != nil {
			return fmt.Errorf("the calling process (pid %d): %w", pid, err)
		}
		p = ppid
	}
	return fmt.Errorf("the calling process (pid %d) is not in the session's process tree", pid)
}
