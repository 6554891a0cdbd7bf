package workspace

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// hookWorkspace returns a Manager with the given hook timeout and an existing
// workspace directory to run hooks in.
func hookWorkspace(t *testing.T, timeout time.Duration) (*Manager, Workspace) {
	t.Helper()
	m := newManager(t, Config{HookTimeout: timeout})
	ws, err := m.Prepare(t.Context(), testIssue, 0)
	if err != nil {
		t.Fatal(err)
	}
	return m, ws
}

func TestRunHook_BlankScriptDoesNothing(t *testing.T) {
	m := newManager(t, Config{})
	// The directory does not even exist: a blank hook is not validated or run.
	if err := m.RunHook(t.Context(), HookBeforeRun, " \n\t", Workspace{Path: "/nonexistent"}, testIssue, nil); err != nil {
		t.Fatalf("RunHook(blank) = %v, want nil", err)
	}
}

func TestRunHook_RunsInWorkspaceDirectory(t *testing.T) {
	m, ws := hookWorkspace(t, 0)
	if err := m.RunHook(t.Context(), HookBeforeRun, "pwd > pwd.out", ws, testIssue, nil); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(filepath.Join(ws.Path, "pwd.out"))
	if strings.TrimSpace(string(got)) != ws.Path {
		t.Fatalf("hook ran in %q, want %q", got, ws.Path)
	}
}

func TestRunHook_ValidationErrors(t *testing.T) {
	m, ws := hookWorkspace(t, 0)
	dir := ws.Path
	tests := []struct {
		name   string
		script string
		dir    string
		env    map[string]string
	}{
		{"missing workspace", "true", filepath.Join(dir, "missing"), nil},
		{"NUL in script", "true\x00", dir, nil},
		{"bad env name", "true", dir, map[string]string{"A=B": "x"}},
		{"NUL in env value", "true", dir, map[string]string{"A": "x\x00"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := m.RunHook(t.Context(), HookBeforeRun, tt.script, Workspace{Path: tt.dir}, testIssue, tt.env)
			if he, ok := errors.AsType[*HookError](err); !ok || he.Op != HookOpValidate {
				t.Fatalf("RunHook err = %v, want a validate HookError", err)
			}
		})
	}
}

func TestRunHook_TimeoutIsATimeoutError(t *testing.T) {
	m, ws := hookWorkspace(t, 200*time.Millisecond)
	err := m.RunHook(t.Context(), HookBeforeRun, "sleep 30", ws, testIssue, nil)
	he, ok := errors.AsType[*HookError](err)
	if !ok || he.Op != HookOpTimeout {
		t.Fatalf("RunHook err = %v, want a timeout HookError", err)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("timeout error %v does not wrap context.DeadlineExceeded", err)
	}
	if !strings.Contains(err.Error(), "hooks.timeout_ms") {
		t.Errorf("timeout error %q does not tell the operator what to raise", err)
	}
}

// backgroundChildScript opens the FIFO $FIFO, starts a background child that
// inherits it, closes its own copy and waits. Only the child then holds the FIFO.
const backgroundChildScript = `exec 3>"$FIFO"; (echo ready >&3; exec sleep 300) & exec 3>&-; wait`

// groupWatch is a FIFO a script's background child holds (backgroundChildScript):
// EOF on it means every writer, the child included, has exited.
type groupWatch struct {
	path string
	r, w *os.File
}

func newGroupWatch(t *testing.T) *groupWatch {
	t.Helper()
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	// Our own writer keeps reads blocking (not EOF) until the child has opened it.
	w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return &groupWatch{path: fifo, r: r, w: w}
}

// ready waits for the child's ready line.
func (g *groupWatch) ready(t *testing.T) {
	t.Helper()
	line, err := bufio.NewReader(g.r).ReadString('\n')
	if err != nil || line != "ready\n" {
		t.Fatalf("reading child's ready line: %q, %v", line, err)
	}
}

// childGone fails the test unless the background child has exited.
func (g *groupWatch) childGone(t *testing.T) {
	t.Helper()
	g.w.Close()
	// A deadline, not a wait: if the child survived, it holds the FIFO for 300s.
	if err := g.r.SetReadDeadline(time.Now().Add(20 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if rest, err := io.ReadAll(g.r); err != nil {
		t.Fatalf("background child still holds the FIFO after the script ended (%v, read %q): process group not killed", err, rest)
	}
}

// TestRunHook_KillsWholeProcessGroup proves that a background child of the hook dies
// with it, on timeout and on cancellation.
func TestRunHook_KillsWholeProcessGroup(t *testing.T) {
	for _, via := range []string{"timeout", "cancel"} {
		t.Run(via, func(t *testing.T) {
			timeout := time.Hour
			if via == "timeout" {
				timeout = 200 * time.Millisecond
			}
			m, ws := hookWorkspace(t, timeout)
			g := newGroupWatch(t)

			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			done := make(chan error, 1)
			go func() {
				done <- m.RunHook(ctx, HookBeforeRun, backgroundChildScript, ws, testIssue, map[string]string{"FIFO": g.path})
			}()

			g.ready(t)
			if via == "cancel" {
				cancel()
			}
			err := <-done
			he, ok := errors.AsType[*HookError](err)
			if !ok {
				t.Fatalf("RunHook err = %v, want a HookError", err)
			}
			if via == "timeout" && he.Op != HookOpTimeout {
				t.Errorf("Op = %s, want timeout", he.Op)
			}
			if via == "cancel" && (he.Op != HookOpRun || !errors.Is(err, context.Canceled)) {
				t.Errorf("err = %v (op %s), want run op wrapping context.Canceled", err, he.Op)
			}
			g.childGone(t)
		})
	}
}

func TestRunHook_DoesNotHangOnEscapedGrandchild(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("setsid not installed")
	}
	m, ws := hookWorkspace(t, time.Hour)
	m.waitDelay = 100 * time.Millisecond
	// setsid moves the sleep out of the hook's process group; it keeps stdout open.
	script := `setsid sleep 300 & echo $! > grandchild.pid; exit 0`
	t.Cleanup(func() {
		if b, err := os.ReadFile(filepath.Join(ws.Path, "grandchild.pid")); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	done := make(chan error, 1)
	go func() { done <- m.RunHook(t.Context(), HookBeforeRun, script, ws, testIssue, nil) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("RunHook = %v, want nil (the script itself succeeded)", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("RunHook still blocked 20s after the script exited: a grandchild holding the pipe hangs it")
	}
}

func TestRunHook_OutputIsCappedKeepingTheEnd(t *testing.T) {
	m, ws := hookWorkspace(t, 0)
	// 300 000 'a' bytes, then a final line that must survive the cap.
	script := `head -c 300000 /dev/zero | tr '\0' a; echo; echo FINAL LINE >&2; exit 1`
	err := m.RunHook(t.Context(), HookBeforeRun, script, ws, testIssue, nil)
	he, ok := errors.AsType[*HookError](err)
	if !ok {
		t.Fatalf("RunHook err = %v, want a HookError", err)
	}
	if len(he.Output) > MaxHookOutput+100 {
		t.Errorf("Output has %d bytes, want at most about %d", len(he.Output), MaxHookOutput)
	}
	if !strings.HasPrefix(he.Output, "[") || !strings.Contains(he.Output, "earlier bytes of output dropped") {
		t.Errorf("Output does not say output was dropped: %q…", he.Output[:min(80, len(he.Output))])
	}
	if !strings.HasSuffix(he.Output, "FINAL LINE\n") {
		t.Errorf("Output does not end with the script's last line")
	}
	if len(err.Error()) > 1000 {
		t.Errorf("Error() is %d bytes; it should quote only the end of the output", len(err.Error()))
	}
}

func TestTailBuffer(t *testing.T) {
	b := &tailBuffer{max: 5}
	for _, s := range []string{"ab", "cd", "ef", "ghijklm", "n"} {
		b.Write([]byte(s))
	}
	if got, want := b.String(), "[9 earlier bytes of output dropped]\njklmn"; got != want {
		t.Fatalf("tailBuffer = %q, want %q", got, want)
	}
	small := &tailBuffer{max: 5}
	small.Write([]byte("hi"))
	if got := small.String(); got != "hi" {
		t.Fatalf("tailBuffer under the cap = %q, want %q", got, "hi")
	}
}
