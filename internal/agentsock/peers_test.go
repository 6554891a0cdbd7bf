//go:build linux

package agentsock

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"sortie/internal/agent/proc"
)

// The helper processes of these tests are this test binary, run again with one of
// these set: a caller presents the token of envToken on the socket of envSocket and
// prints the answer; a parent starts a caller as its own child and relays it.
const (
	envHelper = "AGENTSOCK_TEST_HELPER" // "call" or "parent"
	envSocket = "AGENTSOCK_TEST_SOCKET"
	envToken  = "AGENTSOCK_TEST_TOKEN"
)

func TestMain(m *testing.M) {
	switch os.Getenv(envHelper) {
	case "call":
		info, err := Dial(os.Getenv(envSocket), os.Getenv(envToken)).Session(context.Background())
		if err != nil {
			fmt.Println("refused:", err)
			os.Exit(1)
		}
		fmt.Println("accepted as", info.IssueID)
		os.Exit(0)
	case "parent":
		c := exec.Command(os.Args[0])
		c.Env = append(os.Environ(), envHelper+"=call")
		c.Stdout, c.Stderr = os.Stdout, os.Stderr
		if err := c.Run(); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// helperCmd is a helper process (mode call or parent) presenting tok on s.
func helperCmd(s *Server, tok, mode string) proc.Command {
	return proc.Command{Path: os.Args[0], Env: append(os.Environ(), envHelper+"="+mode, envSocket+"="+s.Path(), envToken+"="+tok)}
}

// runHelper starts c as the daemon starts an agent's process, under ctx (which may
// carry a run's proc.Trace), and returns what the caller printed and whether it was
// accepted.
func runHelper(t *testing.T, ctx context.Context, c proc.Command) (string, bool) {
	t.Helper()
	p, err := proc.Start(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := p.Stdout().Read(buf)
		out.Write(buf[:n])
		if err != nil {
			break
		}
	}
	ex := p.Wait()
	return strings.TrimSpace(out.String()), ex.Code == 0 && strings.HasPrefix(out.String(), "accepted")
}

// runTrace is the proc.Trace through which the daemon tells r of the run's processes.
func runTrace(ctx context.Context, r *RunProcesses) context.Context {
	return proc.WithTrace(ctx, &proc.Trace{Starting: r.Starting, Started: r.Started, Exited: r.Exited})
}

// TestBind_ProcessTree: a token bound to a run is accepted from the run's own
// process and its descendants, and refused from any other process of the same user
// that presents it (read from a sibling's mcp.json or /proc/<pid>/environ).
func TestBind_ProcessTree(t *testing.T) {
	s, _ := listen(t)
	run := NewRunProcesses(os.Getuid())
	tok := s.Grant(Session{IssueID: "B", RunID: 2, Bind: run})
	ctx := context.Background()

	if out, ok := runHelper(t, runTrace(ctx, run), helperCmd(s, tok, "call")); !ok {
		t.Errorf("the run's own process was refused: %s", out)
	}
	if out, ok := runHelper(t, runTrace(ctx, run), helperCmd(s, tok, "parent")); !ok {
		t.Errorf("a descendant of the run's process (its MCP sidecar) was refused: %s", out)
	}
	out, ok := runHelper(t, ctx, helperCmd(s, tok, "call"))
	if ok {
		t.Fatalf("a process outside the run was accepted with its token: %s", out)
	}
	if !strings.Contains(out, "not in the session's process tree") || !strings.Contains(out, "unauthorized") {
		t.Errorf("the refusal does not say why: %s", out)
	}
	// Another run's process, with this run's token: refused too.
	other := NewRunProcesses(os.Getuid())
	s.Grant(Session{IssueID: "A", RunID: 1, Bind: other})
	if out, ok := runHelper(t, runTrace(ctx, other), helperCmd(s, tok, "parent")); ok {
		t.Errorf("a process of another run was accepted with this run's token: %s", out)
	}
	// The run's processes are forgotten as they exit: none is left.
	run.mu.Lock()
	left := len(run.roots)
	run.mu.Unlock()
	if left != 0 {
		t.Errorf("%d exited processes are still the run's", left)
	}
	// The same token, unbound, is the token alone (what a session without peer
	// credentials gets): accepted.
	if out, ok := runHelper(t, ctx, helperCmd(s, s.Grant(Session{IssueID: "C"}), "call")); !ok {
		t.Errorf("an unbound token was refused: %s", out)
	}
}

// TestBind_Cgroup: with a cgroup, membership of the run's cgroup is what counts
// (cgroup.procs; a fake one here), not the process tree.
func TestBind_Cgroup(t *testing.T) {
	s, _ := listen(t)
	run := NewRunProcesses(os.Getuid())
	cg := t.TempDir()
	run.SetCgroup(cg)
	tok := s.Grant(Session{IssueID: "B", Bind: run})
	procs := filepath.Join(cg, "cgroup.procs")
	if err := os.WriteFile(procs, []byte("1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Started by the run, but not in its cgroup: refused.
	out, ok := runHelper(t, runTrace(context.Background(), run), helperCmd(s, tok, "call"))
	if ok || !strings.Contains(out, "not in the session's cgroup") {
		t.Errorf("a process outside the run's cgroup: %s", out)
	}
	// In it: accepted. The helper is the child of a shell that first writes its own
	// pid into the fake cgroup.procs, as the kernel lists a process of the group.
	sh := proc.Command{Path: "/bin/sh", Args: []string{"-c", `echo $$ >> "$1" && exec "$2"`, "sh", procs, os.Args[0]},
		Env: helperCmd(s, tok, "call").Env}
	if out, ok := runHelper(t, context.Background(), sh); !ok {
		t.Errorf("a process in the run's cgroup was refused: %s", out)
	}
}

// TestBind_UID: a process of another user is refused whatever else holds (run_as:
// the agent's user is not the daemon's).
func TestBind_UID(t *testing.T) {
	run := NewRunProcesses(os.Getuid() + 1)
	run.Started(os.Getpid())
	err := run.Admit(context.Background(), Peer{Known: true, PID: os.Getpid(), UID: os.Getuid(), pidfd: -1})
	if err == nil || !strings.Contains(err.Error(), "runs as uid") {
		t.Errorf("Admit = %v, want a refusal naming the uid", err)
	}
	// Without peer credentials (not Linux) the token alone counts.
	if err := run.Admit(context.Background(), Peer{pidfd: -1}); err != nil {
		t.Errorf("Admit without peer credentials = %v", err)
	}
}

// TestBind_WaitsForStartingProcess: a caller that is not yet known while a process of
// the run is starting is decided once the start is recorded, not refused at once.
func TestBind_WaitsForStartingProcess(t *testing.T) {
	run := NewRunProcesses(os.Getuid())
	me := Peer{Known: true, PID: os.Getpid(), UID: os.Getuid(), pidfd: -1}
	run.Starting()
	errc := make(chan error, 1)
	go func() { errc <- run.Admit(context.Background(), me) }()
	run.Started(os.Getpid())
	if err := <-errc; err != nil {
		t.Errorf("Admit = %v after the start was recorded", err)
	}
	// A start that failed ends the wait with the refusal.
	run.Exited(os.Getpid())
	run.Starting()
	go func() { errc <- run.Admit(context.Background(), me) }()
	run.Started(0)
	if err := <-errc; err == nil {
		t.Error("Admit accepted a process that is not the run's")
	}
	// The request's context bounds the wait.
	run.Starting()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := run.Admit(ctx, me); err == nil || errors.Is(err, context.Canceled) {
		t.Errorf("Admit with a done context = %v, want the refusal", err)
	}
}

// TestBind_ExitedPeer: a caller whose process has exited (its pid possibly another
// process's by now) counts as gone, where the kernel gives a pidfd of the peer.
func TestBind_ExitedPeer(t *testing.T) {
	c := exec.Command("/bin/sh", "-c", "read x")
	stdin, err := c.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	fd, err := unix.PidfdOpen(c.Process.Pid, 0)
	if err != nil {
		stdin.Close()
		c.Wait()
		t.Skipf("no pidfd here: %v", err)
	}
	p := Peer{Known: true, PID: c.Process.Pid, UID: os.Getuid(), pidfd: fd}
	defer closePeer(p)
	if !alive(p) {
		t.Error("a running process counts as exited")
	}
	stdin.Close()
	c.Wait()
	if alive(p) {
		t.Error("a reaped process counts as alive")
	}
}
