// Package supervise owns the whole process tree of one agent CLI invocation. The
// daemon starts every local agent CLI as `sortie supervise [flags] -- PROGRAM ARGS`
// (inside `sortie confine` when confined). The supervisor becomes a child subreaper
// (PR_SET_CHILD_SUBREAPER), so every process the CLI starts stays its descendant
// whatever it does, setsid and double forks included; it runs PROGRAM as its child in
// its own process group, and when PROGRAM exits it stops every descendant left (SIGTERM,
// a grace period, SIGKILL) and reaps them before it exits with PROGRAM's status. A
// daemonising dev server, `redis-server --daemonize yes` or `setsid sleep &` therefore
// cannot outlive its run, and cannot hold the CLI's stdout open after it.
//
// With --keep-processes (agent.keep_processes) it leaves them running, on purpose.
package supervise

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"
)

// DefaultGrace is how long descendants get between SIGTERM and SIGKILL.
const DefaultGrace = 2 * time.Second

// Args is the command line that runs argv under the supervisor self, for proc.Command
// Wrap: self supervise --grace D [--keep-processes] --.
func Args(self string, grace time.Duration, keep bool) []string {
	args := []string{self, "supervise", "--grace", grace.String()}
	if keep {
		args = append(args, "--keep-processes")
	}
	return append(args, "--")
}

// Main runs `sortie supervise` and returns its exit status: PROGRAM's, 128+signal when
// a signal ended it, 127 when it cannot be started, 126 on a bad command line.
func Main(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("sortie supervise", flag.ContinueOnError)
	fs.SetOutput(stderr)
	grace := fs.Duration("grace", DefaultGrace, "time between SIGTERM and SIGKILL for what PROGRAM leaves behind")
	keep := fs.Bool("keep-processes", false, "leave what PROGRAM leaves behind running")
	if err := fs.Parse(args); err != nil {
		return 126
	}
	argv := fs.Args()
	if len(argv) == 0 {
		fmt.Fprintln(stderr, "sortie supervise: no program given (usage: sortie supervise [--grace D] [--keep-processes] -- PROGRAM ARGS)")
		return 126
	}
	if err := becomeSubreaper(); err != nil {
		// Without it, descendants that leave PROGRAM's session go to init; the daemon's
		// own sweep by SORTIE_RUN_ID still finds them.
		fmt.Fprintf(stderr, "sortie supervise: warning: %v\n", err)
	}
	// The daemon signals the whole process group, PROGRAM included, and escalates to
	// SIGKILL itself after its grace period: the supervisor only outlives the SIGTERM,
	// so that it can sweep once PROGRAM has gone. It forwards nothing (PROGRAM would get
	// each signal twice) and kills nothing early (PROGRAM keeps the daemon's grace).
	// Caught, not ignored: an ignored signal stays ignored across exec, and PROGRAM must
	// get SIGTERM's default.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	go func() {
		for range sigs {
		}
	}()

	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(stderr, "sortie supervise: %v\n", err)
		return 127
	}
	err := cmd.Wait()
	if !*keep {
		Sweep(*grace)
	}
	return exitCode(cmd.ProcessState, err)
}

func exitCode(st *os.ProcessState, err error) int {
	if st == nil {
		if err != nil {
			return 127
		}
		return 0
	}
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return st.ExitCode()
}

// Sweep stops every descendant of this process: SIGTERM to all, up to grace for them
// to exit, then SIGKILL to whatever is left, again until none is (a process forking as
// it dies is caught on the next pass). Every child that exits is reaped: as a
// subreaper, the descendants whose parents died are this process's children.
func Sweep(grace time.Duration) {
	self := os.Getpid()
	left := Descendants(self)
	if len(left) == 0 {
		reapAll(false)
		return
	}
	for _, p := range left {
		_ = syscall.Kill(p, syscall.SIGTERM)
	}
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) {
		reapAll(false)
		if len(Descendants(self)) == 0 {
			return
		}
		time.Sleep(20 * time.Millisecond) // foreign processes: there is nothing to wait on
	}
	for range 100 {
		left = Descendants(self)
		if len(left) == 0 {
			break
		}
		for _, p := range left {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
		reapAll(true)
	}
	reapAll(false)
}

// reapAll collects the exit status of this process's children that have exited; with
// block, it waits until it has none left.
func reapAll(block bool) {
	opts := syscall.WNOHANG
	if block {
		opts = 0
	}
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, opts, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil || pid <= 0 {
			return
		}
	}
}
