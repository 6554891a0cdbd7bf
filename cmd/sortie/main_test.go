package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"sortie/internal/agent/mock"
	"sortie/internal/store"
	"sortie/internal/store/sqlite"
)

// sortieBin is the sortie binary the end-to-end tests run, built once by TestMain.
var sortieBin string

// testBin is this test binary. The restart test runs it as the agent program (see
// agentLockArg), so it must also be able to play the mock agent's child.
var testBin string

// TestMain builds the real binary once per run. This binary is also the mock agent's
// child when the adapter (here: through a daemon started by a test) executes it.
func TestMain(m *testing.M) {
	if mock.IsChild() {
		os.Exit(childMain())
	}
	// Under -race every mock child (and the race-built daemon) would otherwise sleep a
	// second before exiting.
	os.Setenv("GORACE", strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	dir, err := os.MkdirTemp("", "sortie-cmd-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "creating the build directory:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	if sortieBin, err = buildSortie(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if testBin, err = os.Executable(); err != nil {
		fmt.Fprintln(os.Stderr, "locating the test binary:", err)
		return 1
	}
	return m.Run()
}

// testVersion is stamped into the binary, so `sortie version` can be checked.
const testVersion = "v0.0.0-e2e"

// buildSortie builds this package into dir. It is built with -race when the tests are,
// so the daemon's own races fail the end-to-end tests too.
func buildSortie(dir string) (string, error) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("building sortie: the go tool is not on PATH: %w", err)
	}
	bin := filepath.Join(dir, "sortie")
	args := []string{"build", "-o", bin, "-ldflags", "-X main.version=" + testVersion}
	if raceEnabled {
		args = append(args, "-race")
	}
	cmd := exec.Command(goTool, append(args, ".")...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building sortie: %v\n%s", err, out)
	}
	return bin, nil
}

// childMain plays one mock agent turn (or helper). When the restart test runs this
// binary as agent.command with agentLockArg, the turn first takes the workspace's agent
// lock (see holdAgentLock).
func childMain() int {
	if len(os.Args) > 3 && os.Args[1] == agentLockArg && os.Getenv(mock.ChildEnv) == "1" {
		holdAgentLock(os.Args[2])
	}
	return mock.ChildMain()
}

// agentLockArg makes the test binary, run as the mock agent's program, take an
// exclusive flock on agentLockFile in its workspace before playing its turn. The lock
// is taken on a descriptor without close-on-exec, so the helper processes the turn
// starts inherit it: it is held until every process of the agent's process group has
// exited. Each turn appends a line to the log named by the next argument: "locked",
// or "OVERLAP" when an agent of an earlier run still lives in the same workspace. A
// log without OVERLAP therefore proves that no two agents ever worked one issue at the
// same time, checked at the moment each one started.
const (
	agentLockArg  = "-sortie-e2e-agent-lock"
	agentLockFile = ".e2e-agent.lock"
)

func holdAgentLock(logPath string) {
	report := func(format string, a ...any) {
		f, err := os.OpenFile(logPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			fmt.Fprintln(os.Stderr, "agent lock:", err)
			return
		}
		defer f.Close()
		wd, _ := os.Getwd()
		// One write per line: O_APPEND keeps concurrent agents' lines whole.
		fmt.Fprintf(f, "%s (pid %d, workspace %s): %s\n",
			os.Getenv("SORTIE_ISSUE_IDENTIFIER"), os.Getpid(), wd, fmt.Sprintf(format, a...))
	}
	// syscall.Open, unlike os.OpenFile, leaves the descriptor inheritable.
	fd, err := syscall.Open(agentLockFile, syscall.O_RDWR|syscall.O_CREAT, 0o644)
	if err != nil {
		report("OVERLAP check impossible: opening the agent lock: %v", err)
		return
	}
	if err := syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		report("OVERLAP: another agent still holds the workspace: %v", err)
		return
	}
	report("locked")
	// The descriptor stays open for the life of the process (and of its helpers).
}

// testEnv is the environment of every sortie process a test starts: the test's own,
// without SORTIE_* variables (they would override the workflow under test), with
// TMPDIR set to tmp (mock turn files, `sortie demo`'s default directory) and extra
// appended.
func testEnv(tmp string, extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "SORTIE_") || strings.HasPrefix(kv, "TMPDIR=") {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "TMPDIR="+tmp)
	return append(env, extra...)
}

// result is a finished sortie command.
type result struct {
	code           int
	stdout, stderr string
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\n--- stdout ---\n%s--- stderr ---\n%s", r.code, r.stdout, r.stderr)
}

// commandTimeout bounds any single sortie command a test waits for. It is a guard
// against a hung process, not a speed assertion.
const commandTimeout = 90 * time.Second

// runSortie runs the binary to completion in dir (the package's directory when dir is
// "") with env (a fresh testEnv when nil) and returns its exit code and output.
func runSortie(t testing.TB, dir string, env []string, args ...string) result {
	t.Helper()
	return runSortieWithin(t, commandTimeout, dir, env, args...)
}

// runSortieWithin is runSortie with its own guard: the process is killed and the test
// fails when it runs longer than timeout.
func runSortieWithin(t testing.TB, timeout time.Duration, dir string, env []string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, sortieBin, args...)
	cmd.Dir = dir
	if env == nil {
		env = testEnv(t.TempDir())
	}
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := result{stdout: stdout.String(), stderr: stderr.String()}
	var exitErr *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("sortie %s: still running after %s; killed\n%s", strings.Join(args, " "), timeout, r)
	case errors.As(err, &exitErr):
		r.code = exitErr.ExitCode()
	case err != nil:
		t.Fatalf("sortie %s: %v", strings.Join(args, " "), err)
	}
	if strings.Contains(r.stderr, "WARNING: DATA RACE") {
		t.Errorf("sortie %s: the race detector fired in the daemon:\n%s", strings.Join(args, " "), r.stderr)
	}
	return r
}

// runningDaemon is a sortie process a test started and talks to through signals and its
// stderr, which a goroutine reads line by line.
type runningDaemon struct {
	t    testing.TB
	cmd  *exec.Cmd
	name string

	mu      sync.Mutex
	lines   []string
	changed chan struct{} // closed and replaced whenever a line arrives or the process ends
	exited  bool
	code    int
	stdout  bytes.Buffer
	done    chan struct{} // closed once the process has been waited for
}

// startDaemon starts `sortie args...` with env, and kills it at the end of the test if
// it is still running.
func startDaemon(t testing.TB, env []string, args ...string) *runningDaemon {
	t.Helper()
	cmd := exec.Command(sortieBin, args...)
	cmd.Env = env
	d := &runningDaemon{t: t, cmd: cmd, name: "sortie " + strings.Join(args, " "),
		changed: make(chan struct{}), done: make(chan struct{})}
	cmd.Stdout = &lockedWriter{mu: &d.mu, w: &d.stdout}
	cmd.Stderr = &lineWriter{d: d}
	// Should anything the daemon started keep its stderr open after it exits, Wait
	// stops reading after this long instead of hanging.
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", d.name, err)
	}
	go d.waitExit()
	t.Cleanup(func() {
		select {
		case <-d.done:
		default:
			_ = cmd.Process.Kill()
			<-d.done
		}
		d.mu.Lock()
		defer d.mu.Unlock()
		if t.Failed() {
			t.Logf("%s (pid %d) stdout:\n%s\nstderr:\n%s", d.name, cmd.Process.Pid, d.stdout.String(), strings.Join(d.lines, "\n"))
		}
	})
	return d
}

func (d *runningDaemon) waitExit() {
	err := d.cmd.Wait()
	w := d.cmd.Stderr.(*lineWriter)
	if len(w.pending) > 0 { // os/exec's copy has finished: no more writes
		d.addLine(string(w.pending))
	}
	d.mu.Lock()
	d.exited = true
	d.code = d.cmd.ProcessState.ExitCode()
	if err != nil && d.code == 0 {
		d.code = -1
	}
	close(d.changed)
	d.mu.Unlock()
	close(d.done)
}

// lineWriter splits the daemon's stderr into lines. os/exec calls Write from one
// goroutine at a time.
type lineWriter struct {
	d       *runningDaemon
	pending []byte
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.pending = append(w.pending, p...)
	for {
		i := bytes.IndexByte(w.pending, '\n')
		if i < 0 {
			return len(p), nil
		}
		w.d.addLine(string(w.pending[:i]))
		w.pending = w.pending[i+1:]
	}
}

func (d *runningDaemon) addLine(s string) {
	d.mu.Lock()
	d.lines = append(d.lines, s)
	close(d.changed)
	d.changed = make(chan struct{})
	d.mu.Unlock()
}

// waitLine waits until a stderr line after index from contains every one of subs,
// and returns its index. It fails the test when the process exits first or timeout
// passes.
func (d *runningDaemon) waitLine(from int, timeout time.Duration, subs ...string) int {
	d.t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		d.mu.Lock()
		for i := from; i < len(d.lines); i++ {
			if containsAll(d.lines[i], subs) {
				d.mu.Unlock()
				return i
			}
		}
		from = len(d.lines)
		exited, changed := d.exited, d.changed
		d.mu.Unlock()
		if exited {
			d.t.Fatalf("%s exited (code %d) before logging a line with %q", d.name, d.exitCode(), subs)
		}
		select {
		case <-changed:
		case <-deadline.C:
			d.t.Fatalf("%s: no line with %q within %s", d.name, subs, timeout)
		}
	}
}

// countLines counts the stderr lines so far that contain every one of subs.
func (d *runningDaemon) countLines(subs ...string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for _, l := range d.lines {
		if containsAll(l, subs) {
			n++
		}
	}
	return n
}

func (d *runningDaemon) stderrText() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return strings.Join(d.lines, "\n")
}

func (d *runningDaemon) exitCode() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.code
}

func (d *runningDaemon) pid() int { return d.cmd.Process.Pid }

func (d *runningDaemon) signal(sig syscall.Signal) {
	d.t.Helper()
	if err := d.cmd.Process.Signal(sig); err != nil {
		d.t.Fatalf("signalling %s: %v", d.name, err)
	}
}

// wait waits for the process to exit and returns its exit code (-1 when a signal
// killed it). timeout is a guard against a hung process.
func (d *runningDaemon) wait(timeout time.Duration) int {
	d.t.Helper()
	select {
	case <-d.done:
	case <-time.After(timeout):
		d.t.Fatalf("%s did not exit within %s", d.name, timeout)
	}
	if s := d.stderrText(); strings.Contains(s, "WARNING: DATA RACE") {
		d.t.Errorf("%s: the race detector fired in the daemon", d.name)
	}
	return d.exitCode()
}

func containsAll(s string, subs []string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.w.Write(p)
}

// writeFile writes content to dir/name, creating dir.
func writeFile(t testing.TB, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// openStore opens a daemon's database read-only, as the MCP sidecar does.
func openStore(t *testing.T, path string) *sqlite.Store {
	t.Helper()
	st, err := sqlite.OpenReadOnly(context.Background(), path)
	if err != nil {
		t.Fatalf("opening the database read-only: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// runsByIssue returns every run of the database, oldest first, grouped by issue id.
func runsByIssue(t *testing.T, dbPath string) map[string][]store.Run {
	t.Helper()
	st, err := sqlite.OpenReadOnly(context.Background(), dbPath)
	if err != nil {
		t.Fatalf("opening the database read-only: %v", err)
	}
	defer st.Close()
	runs, err := st.RecentRuns(context.Background(), 1000)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]store.Run{}
	for i := len(runs) - 1; i >= 0; i-- {
		out[runs[i].IssueID] = append(out[runs[i].IssueID], runs[i])
	}
	return out
}

// groupMembers lists the live (not zombie) processes of process group pgid, read from
// /proc. A zombie has exited and closed its files; only its parent's wait is missing,
// and in a container whose init reaps lazily that can take a while.
func groupMembers(pgid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		state, group, err := procStat(pid)
		if err != nil || group != pgid || state == "Z" || state == "X" {
			continue
		}
		pids = append(pids, pid)
	}
	return pids
}

// procStat reads a process's state and process group from /proc/<pid>/stat.
func procStat(pid int) (state string, pgid int, err error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", 0, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')') // the command name may contain spaces and ')'
	if i < 0 {
		return "", 0, fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 3 {
		return "", 0, fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	pgid, err = strconv.Atoi(f[2])
	return f[0], pgid, err
}

// processEnv reads a process's environment from /proc.
func processEnv(pid int) []string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return nil
	}
	return strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
}

// killAgentGroup SIGKILLs an agent process group a test's daemon left behind (after the
// test SIGKILLed the daemon, or failed): only if a member still carries the run's
// SORTIE_RUN_ID, so a recycled process group id is never signalled.
func killAgentGroup(pgid int, runID int64) {
	marker := "SORTIE_RUN_ID=" + strconv.FormatInt(runID, 10)
	for _, pid := range groupMembers(pgid) {
		for _, kv := range processEnv(pid) {
			if kv == marker {
				_ = syscall.Kill(-pgid, syscall.SIGKILL)
				return
			}
		}
	}
}
