// Package proc runs one agent CLI invocation as a child process in its own process
// group and stops it the way the adapter specs require: SIGTERM to the whole group, a
// grace period, then SIGKILL, and a final SIGKILL to the group once the leader has
// exited so that no descendant outlives the turn. It also provides the JSONL line reader
// for the child's stdout, a bounded head+tail buffer for its stderr and the mapping from
// an exit to an agent error kind. It knows nothing about any CLI's event format.
//
// proc is POSIX-only (process groups and signals); Linux additionally kills stragglers
// while the exited leader still pins the group id (see waitExited).
package proc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"sortie/internal/agent/sandbox"
	_ "sortie/internal/platform" // Linux and macOS only
)

// DefaultGrace is how long Stop waits between SIGTERM and SIGKILL (spec: 5 seconds).
const DefaultGrace = 5 * time.Second

// Default sizes of the stderr head and tail kept by a Process.
const (
	DefaultStderrHead = 64 << 10
	DefaultStderrTail = 64 << 10
)

// ErrStdoutHeldOpen is returned by a Process's stdout reader when the process has exited
// and its group has been killed, yet the pipe stayed open and silent for a whole grace
// period: a descendant that left the process group (setsid) still holds it.
var ErrStdoutHeldOpen = errors.New("stdout still open after the process exited (a descendant outside its process group holds it)")

// Command describes one child process.
type Command struct {
	// Path is the program; a name without a slash is looked up on PATH.
	Path string
	Args []string // arguments, without the program name
	Dir  string   // working directory
	// Env is the complete environment (KEY=VALUE). nil inherits this process's
	// environment, as in os/exec.
	Env []string
	// Stdin is the child's standard input; nil means /dev/null.
	Stdin io.Reader
	// Grace is the time between SIGTERM and SIGKILL when stopping; 0 means DefaultGrace.
	Grace time.Duration
	// StderrHead and StderrTail bound the stderr kept in memory, in bytes; 0 means the
	// defaults. Bytes between head and tail are counted and dropped.
	StderrHead, StderrTail int
	// Wrap, when not empty, is a command the program runs through: Wrap[0] is started
	// with Wrap[1:], then Path and Args, as its arguments (`sortie confine <policy> --`,
	// which confines itself and then executes the program in the same process).
	Wrap []string
	// Credential, when not nil, starts the child as another user (agent.run_as; the
	// daemon must be root). The wrapper, if any, runs as that user too.
	Credential *syscall.Credential
	// CgroupFD, when positive, is an open cgroup v2 directory the child starts in
	// (Linux; internal/agent/cgroup), so that all it starts can be found and killed.
	CgroupFD int
	// SweepCgroup, with CgroupFD, stops whatever the child leaves in its cgroup once
	// it has exited, its process group aside (SIGTERM, Grace, then SIGKILL): what
	// `sortie supervise` does for a child started without it. The cgroup must hold
	// this child's processes only.
	SweepCgroup bool
	// Confine, when set, confines the child before it runs anything of its own: it is
	// called on the OS thread that then starts the child, which inherits what Confine
	// set on that thread (Landlock, no_new_privs, capabilities: sandbox.RestrictThread).
	// That thread runs nothing else and ends with the start. A Confine error fails the
	// start; the child never runs unconfined.
	Confine func() error
}

// Process is a started child and its process group (the group id is the child's pid).
// Read Stdout until it ends, or call Stop, before Wait: a child blocked on a full stdout
// pipe never exits by itself.
type Process struct {
	cmd    *exec.Cmd
	pid    int
	grace  time.Duration
	stdout *os.File
	stderr *HeadTailBuffer

	// mu is held while signalling the group and while marking the leader reaped, so
	// that no signal is ever sent to a group id the kernel may have handed out again.
	mu     sync.Mutex
	reaped bool

	sweep  int           // the cgroup (fd) to sweep once the leader has exited; -1 for none
	trace  *Trace        // the start's context's Trace, told when the leader exits
	exited chan struct{} // closed when the leader has exited (before it is reaped)
	done   chan struct{} // closed once the leader is reaped and exit is set
	exit   Exit

	stopOnce  sync.Once
	stopped   atomic.Bool // Stop was called before the leader exited
	cancelled atomic.Bool // ctx was done before the leader exited
	closeOnce sync.Once
	wg        sync.WaitGroup
}

// Start starts c in a new process group. When ctx is done before the process exits, a
// goroutine stops the group gracefully (see Stop); exec.CommandContext is deliberately
// not used because its immediate SIGKILL would keep the CLI from flushing its final
// events (claude-code adapter spec, "Process shutdown"). Start fails if ctx is already
// done, or if the program cannot be started (see ClassifyStart).
func Start(ctx context.Context, c Command) (*Process, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	grace := c.Grace
	if grace <= 0 {
		grace = DefaultGrace
	}
	head, tail := c.StderrHead, c.StderrTail
	if head <= 0 {
		head = DefaultStderrHead
	}
	if tail <= 0 {
		tail = DefaultStderrTail
	}

	// exec reports a missing working directory like a missing program; say which.
	if c.Dir != "" {
		fi, err := os.Stat(c.Dir)
		var pe *fs.PathError
		switch {
		case errors.As(err, &pe):
			return nil, &fs.PathError{Op: "chdir", Path: c.Dir, Err: pe.Err}
		case err != nil:
			return nil, err
		case !fi.IsDir():
			return nil, &fs.PathError{Op: "chdir", Path: c.Dir, Err: syscall.ENOTDIR}
		}
	}

	// Our own pipe rather than cmd.StdoutPipe: Wait must be able to reap the leader
	// while the adapter is still reading what is left in the pipe.
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("proc: stdout pipe: %w", err)
	}
	path, args := c.Path, c.Args
	if len(c.Wrap) > 0 {
		path = c.Wrap[0]
		args = append(append(append([]string(nil), c.Wrap[1:]...), c.Path), c.Args...)
	}
	cmd := exec.Command(path, args...)
	cmd.Dir = c.Dir
	cmd.Env = c.Env
	cmd.Stdin = c.Stdin
	cmd.Stdout = w
	stderr := NewHeadTailBuffer(head, tail)
	cmd.Stderr = stderr
	cmd.SysProcAttr = sysProcAttr(c)
	// Backstop for an escaped descendant holding stderr: Wait gives up on the copy
	// after the grace period instead of blocking forever.
	cmd.WaitDelay = grace
	sweep := -1
	if c.SweepCgroup && c.CgroupFD > 0 {
		// Our own copy: the caller may close its descriptor before the child exits.
		if sweep, err = dupCloexec(c.CgroupFD); err != nil {
			r.Close()
			w.Close()
			return nil, fmt.Errorf("proc: the child's cgroup: %w", err)
		}
	}
	trace := traceOf(ctx)
	trace.starting()
	if err := sandbox.StartOnThread(c.Confine, cmd.Start); err != nil {
		trace.started(0)
		r.Close()
		w.Close()
		closeFD(sweep)
		return nil, err
	}
	trace.started(cmd.Process.Pid)
	w.Close() // the child has its copy; ours would keep the reader from seeing EOF

	p := &Process{
		cmd:    cmd,
		pid:    cmd.Process.Pid,
		grace:  grace,
		stdout: r,
		stderr: stderr,
		exited: make(chan struct{}),
		done:   make(chan struct{}),
		sweep:  sweep,
		trace:  trace,
	}
	p.wg.Add(2)
	go p.reap()
	go p.watch(ctx)
	return p, nil
}

// PID is the child's process id.
func (p *Process) PID() int { return p.pid }

// PGID is the child's process group id; Setpgid makes it equal to PID.
func (p *Process) PGID() int { return p.pid }

// Stdout is the child's standard output. Reads end with io.EOF once the child and every
// descendant holding the pipe are gone, or with ErrStdoutHeldOpen (see there).
func (p *Process) Stdout() io.Reader { return stdoutReader{p} }

// Stderr is the bounded capture of the child's standard error. Complete after Wait.
func (p *Process) Stderr() *HeadTailBuffer { return p.stderr }

// Done is closed when the child has exited and been reaped.
func (p *Process) Done() <-chan struct{} { return p.done }

// Stop stops the process group gracefully and returns once the child is reaped: SIGTERM
// to the group, then SIGKILL to the group if the leader has not exited within the grace
// period. It is safe to call more than once, concurrently, and after the child exited.
func (p *Process) Stop() {
	p.terminate()
	<-p.done
}

// Wait waits for the child to exit, for the goroutines Start began, and closes the
// stdout reader. Before it returns, every process left in the group has been sent
// SIGKILL. A non-zero exit is described by Exit, not reported as an error.
func (p *Process) Wait() Exit {
	<-p.done
	p.wg.Wait()
	p.closeOnce.Do(func() { p.stdout.Close() })
	return p.exit
}

func (p *Process) terminate() {
	p.stopOnce.Do(func() {
		select {
		case <-p.exited:
			return
		default:
		}
		p.stopped.Store(true)
		if !p.signalGroup(syscall.SIGTERM) {
			return
		}
		t := time.NewTimer(p.grace)
		defer t.Stop()
		select {
		case <-p.exited:
			// reap kills whatever is left in the group.
		case <-t.C:
			p.signalGroup(syscall.SIGKILL)
		}
	})
}

// watch stops the group when ctx is done first.
func (p *Process) watch(ctx context.Context) {
	defer p.wg.Done()
	select {
	case <-ctx.Done():
		select {
		case <-p.exited:
			return // already gone: the turn ended on its own
		default:
		}
		p.cancelled.Store(true)
		p.terminate()
	case <-p.exited:
	}
}

// reap waits for the leader, kills stragglers in the group, then collects the status.
func (p *Process) reap() {
	defer p.wg.Done()
	pinned := waitExited(p.pid) == nil
	if pinned {
		// The leader is a zombie, so its pid, and with it the group id, cannot have
		// been reused: kill what is left of the group, then stop signalling for good.
		close(p.exited)
		p.trace.exited(p.pid) // still a zombie: the pid is not reused yet
		p.signalGroup(syscall.SIGKILL)
		p.markReaped()
		p.sweepLeftovers() // before Wait, which waits for whoever holds stderr
		p.stdout.SetReadDeadline(time.Now().Add(p.grace))
	}

	err := p.cmd.Wait()

	if !pinned {
		close(p.exited)
		p.trace.exited(p.pid)
		// Best effort after reaping: the group id is reusable now, but only once the
		// pid space has wrapped around, a risk accepted where waitid is unavailable.
		p.signalGroup(syscall.SIGKILL)
		p.markReaped()
		p.stdout.SetReadDeadline(time.Now().Add(p.grace))
	}

	p.sweepLeftovers()
	p.exit = newExit(p.cmd.ProcessState, err)
	p.exit.Stopped = p.stopped.Load()
	p.exit.Cancelled = p.cancelled.Load()
	close(p.done)
}

// sweepLeftovers stops what left the group (setsid, a daemonising fork) and is still
// in the child's cgroup, once (Command.SweepCgroup).
func (p *Process) sweepLeftovers() {
	if p.sweep < 0 {
		return
	}
	sweepCgroup(p.sweep, p.grace)
	closeFD(p.sweep)
	p.sweep = -1
}

func (p *Process) markReaped() {
	p.mu.Lock()
	p.reaped = true
	p.mu.Unlock()
}

// signalGroup sends sig to the whole group and reports whether it was delivered.
func (p *Process) signalGroup(sig syscall.Signal) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.reaped {
		return false
	}
	return syscall.Kill(-p.pid, sig) == nil
}

type stdoutReader struct{ p *Process }

func (r stdoutReader) Read(b []byte) (int, error) {
	select {
	case <-r.p.exited:
		// The group is dead, so whatever is still in the pipe arrives at once; only a
		// descendant outside the group can keep it open and silent for a grace period.
		r.p.stdout.SetReadDeadline(time.Now().Add(r.p.grace))
	default:
	}
	n, err := r.p.stdout.Read(b)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		err = ErrStdoutHeldOpen
	}
	return n, err
}
