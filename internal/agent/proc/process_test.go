//go:build linux

package proc

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"sortie/internal/agent"
	"sortie/internal/agent/proc/proctest"
)

func mustStart(t *testing.T, ctx context.Context, c Command) *Process {
	t.Helper()
	p, err := Start(ctx, c)
	if err != nil {
		t.Fatalf("Start(%s %q): %v", c.Path, c.Args, err)
	}
	t.Cleanup(func() { p.Stop(); p.Wait() })
	return p
}

func shell(script string) Command {
	return Command{Path: "sh", Args: []string{"-c", script}}
}

// nextLine returns the next stdout line or fails the test.
func nextLine(t *testing.T, lr *LineReader) string {
	t.Helper()
	if !lr.Next() {
		t.Fatalf("want another stdout line, got end of output (err %v)", lr.Err())
	}
	return string(lr.Line())
}

func nextPID(t *testing.T, lr *LineReader) int {
	t.Helper()
	s := nextLine(t, lr)
	pid, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("want a pid line, got %q", s)
	}
	return pid
}

// restOfOutput reads stdout to its end and returns the remaining lines.
func restOfOutput(lr *LineReader) []string {
	var lines []string
	for lr.Next() {
		lines = append(lines, string(lr.Line()))
	}
	return lines
}

func TestStop_CancelStopsWholeGroupIncludingGrandchild(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	p := mustStart(t, ctx, shell(`sleep 300 & echo $!; wait`))
	lr := NewLineReader(p.Stdout(), 0)
	grandchild := nextPID(t, lr)
	if !proctest.Alive(grandchild) {
		t.Fatalf("grandchild %d: want alive before cancel", grandchild)
	}

	cancel()
	// EOF arrives only once every holder of the pipe, the grandchild included, is gone.
	if rest := restOfOutput(lr); len(rest) != 0 || lr.Err() != nil {
		t.Fatalf("after cancel: want clean EOF, got lines %q err %v", rest, lr.Err())
	}
	exit := p.Wait()

	if !exit.Cancelled || !exit.Stopped || exit.Signal != syscall.SIGTERM {
		t.Errorf("exit: want cancelled, stopped, killed by SIGTERM; got %+v", exit)
	}
	if got := Classify(exit, lr.Err()); got != agent.ErrTurnCancelled {
		t.Errorf("Classify: want %s, got %q", agent.ErrTurnCancelled, got)
	}
	proctest.WaitExited(t, grandchild, 10*time.Second)
	proctest.RequireGroupGone(t, p.PGID())
}

func TestStop_EscalatesToSIGKILLWhenSIGTERMIsIgnored(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	c := shell(`trap '' TERM; sleep 300 & echo ready; exec sleep 300`)
	c.Grace = 300 * time.Millisecond
	p := mustStart(t, ctx, c)
	lr := NewLineReader(p.Stdout(), 0)
	if got := nextLine(t, lr); got != "ready" {
		t.Fatalf("want ready, got %q", got)
	}

	cancel()
	restOfOutput(lr)
	exit := p.Wait()

	if exit.Signal != syscall.SIGKILL || !exit.Cancelled {
		t.Errorf("exit: want cancelled and killed by SIGKILL after the grace period, got %+v", exit)
	}
	proctest.RequireGroupGone(t, p.PGID())
}

func TestStop_GivesChildTimeToFlush(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	p := mustStart(t, ctx, shell(`trap 'echo flushed; exit 0' TERM; echo ready; sleep 300 & wait`))
	lr := NewLineReader(p.Stdout(), 0)
	if got := nextLine(t, lr); got != "ready" {
		t.Fatalf("want ready, got %q", got)
	}

	cancel()
	rest := restOfOutput(lr)
	exit := p.Wait()

	if len(rest) != 1 || rest[0] != "flushed" {
		t.Errorf("want the line the SIGTERM trap wrote, got %q", rest)
	}
	if exit.Code != 0 || exit.Signalled() || !exit.Cancelled {
		t.Errorf("exit: want status 0 after a cancel, got %+v", exit)
	}
	if got := Classify(exit, nil); got != agent.ErrTurnCancelled {
		t.Errorf("Classify: a cancelled turn is %s even if the child exits 0; got %q", agent.ErrTurnCancelled, got)
	}
}

func TestStop_ExplicitStopIsNotCancellation(t *testing.T) {
	p := mustStart(t, t.Context(), shell(`echo ready; exec sleep 300`))
	lr := NewLineReader(p.Stdout(), 0)
	nextLine(t, lr)

	done := make(chan struct{})
	go func() { p.Stop(); close(done) }()
	p.Stop() // concurrent and repeated calls are fine
	<-done
	p.Stop()
	exit := p.Wait()

	if exit.Cancelled || !exit.Stopped || exit.Signal != syscall.SIGTERM {
		t.Errorf("exit: want stopped (not cancelled) by SIGTERM, got %+v", exit)
	}
}

func TestWait_KillsStragglersAfterLeaderExits(t *testing.T) {
	p := mustStart(t, t.Context(), shell(`sleep 300 & echo $!`))
	lr := NewLineReader(p.Stdout(), 0)
	straggler := nextPID(t, lr)

	// The straggler holds stdout, so EOF proves it was killed when the leader exited.
	if rest := restOfOutput(lr); len(rest) != 0 || lr.Err() != nil {
		t.Fatalf("want clean EOF, got lines %q err %v", rest, lr.Err())
	}
	exit := p.Wait()

	if exit.Code != 0 || exit.Signalled() || exit.Cancelled || exit.Stopped {
		t.Errorf("exit: want a plain status 0, got %+v", exit)
	}
	if got := Classify(exit, nil); got != "" {
		t.Errorf("Classify: want \"\" for a clean exit, got %q", got)
	}
	proctest.WaitExited(t, straggler, 10*time.Second)
	proctest.RequireGroupGone(t, p.PGID())
}

func TestStdout_HeldOpenOutsideGroupEndsWithError(t *testing.T) {
	c := shell(`setsid sh -c 'echo $$; exec sleep 300' & exec sleep 300`)
	c.Grace = 200 * time.Millisecond
	p := mustStart(t, t.Context(), c)
	lr := NewLineReader(p.Stdout(), 0)
	escaped := nextPID(t, lr) // printed after setsid, so it has left the group
	t.Cleanup(func() {
		syscall.Kill(escaped, syscall.SIGKILL)
		proctest.WaitExited(t, escaped, 10*time.Second)
	})

	p.Stop()
	rest := restOfOutput(lr)
	exit := p.Wait()

	if len(rest) != 0 || !errors.Is(lr.Err(), ErrStdoutHeldOpen) {
		t.Errorf("want ErrStdoutHeldOpen instead of blocking forever, got lines %q err %v", rest, lr.Err())
	}
	// A pipe held open after the exit is not the agent's failure: the exit decides
	// (here the stop's signal), so a result followed by exit 0 stays a success.
	if got := Classify(exit, lr.Err()); got != agent.ErrTurnCancelled {
		t.Errorf("Classify: want %s (the stop's signal decides), got %q", agent.ErrTurnCancelled, got)
	}
	if got := Classify(Exit{Code: 0}, lr.Err()); got != "" {
		t.Errorf("Classify of exit 0 with the pipe held open: want \"\" (the events decide), got %q", got)
	}
}

func TestLineReader_OverlongLineFromProcessIsError(t *testing.T) {
	p := mustStart(t, t.Context(), shell(`echo first; head -c 3000000 /dev/zero | tr '\0' a; echo; echo after`))
	lr := NewLineReader(p.Stdout(), 1<<20)

	lines := restOfOutput(lr)
	err := lr.Err()
	p.Stop() // the adapter stops the child on a read error
	exit := p.Wait()

	if len(lines) != 1 || lines[0] != "first" {
		t.Errorf("want the lines before the over-long one, got %q", lines)
	}
	if !errors.Is(err, ErrLineTooLong) {
		t.Fatalf("want ErrLineTooLong, got %v", err)
	}
	if got := Classify(exit, err); got != agent.ErrPortExit {
		t.Errorf("Classify: want %s, got %q", agent.ErrPortExit, got)
	}
}

func TestStderr_KeepsHeadAndTailOfLargeOutput(t *testing.T) {
	c := shell(`head -c 1000000 /dev/zero | tr '\0' x >&2; echo done >&2`)
	c.StderrHead, c.StderrTail = 1024, 1024
	p := mustStart(t, t.Context(), c)
	restOfOutput(NewLineReader(p.Stdout(), 0))
	p.Wait()

	got := p.Stderr().String()
	if n := p.Stderr().Len(); n != 1000005 {
		t.Errorf("Len: want 1000005 bytes written, got %d", n)
	}
	want := strings.Repeat("x", 1024) + "\n... [997957 bytes omitted] ...\n" + strings.Repeat("x", 1019) + "done\n"
	if got != want {
		t.Errorf("String: want %d bytes (head, marker, tail), got %d bytes: %.80q...%q", len(want), len(got), got, got[max(0, len(got)-80):])
	}
}

func TestWait_ExitStatusIsClassified(t *testing.T) {
	tests := []struct {
		script string
		want   agent.ErrorKind
	}{
		{`exit 0`, ""},
		{`exit 3`, agent.ErrPortExit},
		{`exit 127`, agent.ErrNotFound},
		{`no-such-command-sortie-test`, agent.ErrNotFound},
		{`kill -KILL $$`, agent.ErrTurnCancelled},
	}
	for _, tt := range tests {
		t.Run(tt.script, func(t *testing.T) {
			p := mustStart(t, t.Context(), shell(tt.script))
			restOfOutput(NewLineReader(p.Stdout(), 0))
			exit := p.Wait()
			if got := Classify(exit, nil); got != tt.want {
				t.Errorf("Classify(%s): want %q, got %q", exit, tt.want, got)
			}
		})
	}
}

func TestStart_ErrorsAreClassified(t *testing.T) {
	cancelled, cancel := context.WithCancel(t.Context())
	cancel()
	tests := []struct {
		name string
		ctx  context.Context
		cmd  Command
		want agent.ErrorKind
	}{
		{"missing program on PATH", t.Context(), Command{Path: "sortie-no-such-agent"}, agent.ErrNotFound},
		{"missing program path", t.Context(), Command{Path: "/nonexistent/agent"}, agent.ErrNotFound},
		{"missing working directory", t.Context(), Command{Path: "true", Dir: "/nonexistent/ws"}, agent.ErrInvalidWorkspace},
		{"working directory is a file", t.Context(), Command{Path: "true", Dir: "/proc/self/stat"}, agent.ErrInvalidWorkspace},
		{"cancelled context", cancelled, Command{Path: "true"}, agent.ErrTurnCancelled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Start(tt.ctx, tt.cmd)
			if err == nil {
				p.Stop()
				p.Wait()
				t.Fatal("Start: want an error, got a process")
			}
			if got := ClassifyStart(err); got != tt.want {
				t.Errorf("ClassifyStart(%v): want %s, got %q", err, tt.want, got)
			}
		})
	}
}

func TestStart_PassesDirAndEnv(t *testing.T) {
	dir := t.TempDir()
	p := mustStart(t, t.Context(), Command{
		Path: "sh", Args: []string{"-c", `pwd; echo "$SORTIE_PROC_TEST"`},
		Dir: dir, Env: []string{"SORTIE_PROC_TEST=hello", "PATH=/usr/bin:/bin"},
	})
	got := restOfOutput(NewLineReader(p.Stdout(), 0))
	p.Wait()
	if len(got) != 2 || got[0] != dir || got[1] != "hello" {
		t.Errorf("want [%s hello], got %q", dir, got)
	}
	if p.PID() <= 0 || p.PGID() != p.PID() {
		t.Errorf("want PGID == PID > 0, got pid %d pgid %d", p.PID(), p.PGID())
	}
}

func TestStop_AfterExitSignalsNothing(t *testing.T) {
	p := mustStart(t, t.Context(), shell(`exit 0`))
	restOfOutput(NewLineReader(p.Stdout(), 0))
	first := p.Wait()

	p.Stop()
	if again := p.Wait(); again != first || again.Stopped {
		t.Errorf("Stop after exit: want the exit unchanged and not stopped, got %+v (was %+v)", again, first)
	}
}
