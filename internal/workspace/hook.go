package workspace

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"time"

	"sortie/internal/agent/sandbox"
	_ "sortie/internal/platform" // Linux and macOS only
)

// MaxHookOutput is how much of a hook's combined stdout and stderr is kept, in bytes.
// The end of the output is kept, since that is where a failing script says why.
const MaxHookOutput = 256 << 10

// HookConfinement is how one hook run is confined: what Config.ConfineHook returns.
type HookConfinement struct {
	// Wrap, when not empty, is the command line put before `/bin/sh -c script`
	// (`sortie confine <policy> --`).
	Wrap []string
	// Thread, when not nil, confines the OS thread that then starts the shell, which
	// inherits the confinement (sandbox.RestrictThread); that thread runs nothing else
	// and ends with the start.
	Thread func() error
	// Env are KEY=VALUE entries that replace the hook's own of the same name: its
	// TMPDIR, which the policy must let it write.
	Env []string
	// Done, when not nil, is called once the hook has exited: it removes what the
	// confinement made for the run (its temporary directory).
	Done func()
}

// ConfineHook confines a hook that runs after an agent may have written the workspace
// at wsPath: it returns how to start the hook named hook, whose environment is env, or
// nil to run it unconfined (agents here are not confined either). An error fails the
// hook without running it.
type ConfineHook func(hook, wsPath string, env []string) (*HookConfinement, error)

// RunHook runs script with `/bin/sh -c` in the directory ws.Path and waits for it.
// name is the hook's name for errors and logs. A blank script does nothing.
//
// The script runs in its own process group with the environment HookEnv(ws, issue,
// extraEnv) and stdin from /dev/null. When the hook timeout passes, or ctx is
// cancelled, the whole group (the shell and everything it started) is killed with
// SIGKILL. If a process that escaped the group keeps the output pipe open after the
// script ended, RunHook stops waiting for it shortly afterwards.
//
// Every hook but after_create, and before_run on the run that created ws, runs after
// an agent may have written the workspace: it runs confined (Config.ConfineHook),
// without SSH_AUTH_SOCK, and with the repository's git configuration neutralised
// (GitEnv). The others run as the operator's own scripts, before any agent.
//
// A failure is a *HookError: HookOpValidate, HookOpStart (also when the hook could not
// be confined), HookOpRun (non-zero exit; wraps ctx's error when ctx was cancelled) or
// HookOpTimeout (wraps context.DeadlineExceeded).
func (m *Manager) RunHook(ctx context.Context, name, script string, ws Workspace, issue Issue, extraEnv map[string]string) error {
	afterAgent := name != HookAfterCreate && !(name == HookBeforeRun && ws.CreatedNow)
	return m.runHook(ctx, name, script, ws.Path, issue, ws.Attempt, extraEnv, afterAgent)
}

// runHook is RunHook with the attempt given separately; attempt < 0 leaves
// SORTIE_ATTEMPT out. afterAgent says an agent may have written the workspace.
func (m *Manager) runHook(ctx context.Context, name, script, wsPath string, issue Issue, attempt int, extraEnv map[string]string, afterAgent bool) error {
	if strings.TrimSpace(script) == "" {
		return nil
	}
	_, err := m.runScript(ctx, scriptRun{
		name: name, script: script, wsPath: wsPath, issue: issue, attempt: attempt,
		extraEnv: extraEnv, afterAgent: afterAgent, timeout: m.timeout, maxOutput: MaxHookOutput,
	})
	return err
}

// scriptRun is one run of a script by runScript.
type scriptRun struct {
	name, script, wsPath string
	issue                Issue
	attempt              int // < 0 leaves SORTIE_ATTEMPT out
	extraEnv             map[string]string
	afterAgent           bool          // an agent may have written the workspace: confine it
	timeout              time.Duration // after which the process group is killed
	maxOutput            int           // bytes of the output's tail kept
}

// scriptOutcome is what runScript saw of a script that started: the tail of its
// combined output and how long it ran.
type scriptOutcome struct {
	output   string
	duration time.Duration
}

// runScript runs r.script as RunHook describes, and returns the tail of its output
// (whether or not it failed) with a *HookError when it did not exit 0.
func (m *Manager) runScript(ctx context.Context, r scriptRun) (scriptOutcome, error) {
	name, script, wsPath, issue := r.name, r.script, r.wsPath, r.issue
	if err := validateHookInput(script, wsPath, r.extraEnv); err != nil {
		return scriptOutcome{}, &HookError{Hook: name, Op: HookOpValidate, ExitCode: -1, Err: err}
	}

	env := m.hookEnv(wsPath, issue, r.attempt, r.extraEnv)
	argv := []string{"/bin/sh", "-c", script}
	var thread func() error
	if r.afterAgent {
		// SSH_AUTH_SOCK is a socket Landlock does not guard: through it, what the
		// agent planted (a git filter) would sign in as the operator anywhere.
		env = slices.DeleteFunc(GitEnv(env), func(kv string) bool { return strings.HasPrefix(kv, "SSH_AUTH_SOCK=") })
	}
	if r.afterAgent && m.confine != nil {
		hc, err := m.confine(name, wsPath, env)
		if err != nil {
			return scriptOutcome{}, &HookError{Hook: name, Op: HookOpStart, ExitCode: -1, Err: fmt.Errorf("confining it: %w", err)}
		}
		if hc != nil {
			if hc.Done != nil {
				defer hc.Done()
			}
			for _, kv := range hc.Env {
				k, _, _ := strings.Cut(kv, "=")
				env = slices.DeleteFunc(env, func(e string) bool { return strings.HasPrefix(e, k+"=") })
				env = append(env, kv)
			}
			argv = append(slices.Clone(hc.Wrap), argv...)
			thread = hc.Thread
		}
	}

	hctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()

	out := &tailBuffer{max: r.maxOutput}
	cmd := exec.CommandContext(hctx, argv[0], argv[1:]...)
	cmd.Dir = wsPath
	cmd.Env = env
	// One writer for both streams: exec then serialises the writes, and the output
	// reads in the order the script produced it.
	cmd.Stdout = out
	cmd.Stderr = out
	// Under agent.run_as hooks run as the agent's user, in the workspace that user owns.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: m.runAs.Credential()}
	cmd.Cancel = func() error {
		// The shell is the group leader (Setpgid), so its pid is the group id; a
		// negative pid signals the whole group, background children included.
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	cmd.WaitDelay = m.waitDelay

	if confine := thread; confine != nil {
		thread = func() error {
			if err := confine(); err != nil {
				return fmt.Errorf("confining it: %w", err)
			}
			return nil
		}
	}
	start := time.Now()
	if err := sandbox.StartOnThread(thread, cmd.Start); err != nil {
		if ctx.Err() != nil {
			return scriptOutcome{}, &HookError{Hook: name, Op: HookOpRun, ExitCode: -1, Err: fmt.Errorf("not started: %w", ctx.Err())}
		}
		return scriptOutcome{}, &HookError{Hook: name, Op: HookOpStart, ExitCode: -1, Err: err}
	}
	err := cmd.Wait()
	elapsed := time.Since(start)
	res := scriptOutcome{output: out.String(), duration: elapsed}

	if errors.Is(err, exec.ErrWaitDelay) {
		// The script itself succeeded; a process it left behind, outside its process
		// group, still holds the output pipe. That is the script's business.
		m.log.Warn("hook exited but left a process holding its output; stopped waiting for it",
			"hook", name, "issue", issue.Identifier, "duration", elapsed)
		err = nil
	}
	if err == nil {
		m.log.Debug("hook finished", "hook", name, "issue", issue.Identifier, "duration", elapsed)
		return res, nil
	}

	he := &HookError{Hook: name, Op: HookOpRun, ExitCode: -1, Output: res.output, Err: err}
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		he.ExitCode = exitErr.ExitCode() // -1 when killed by a signal
	}
	switch {
	case ctx.Err() != nil:
		he.Err = fmt.Errorf("cancelled: %w", ctx.Err())
	case hctx.Err() != nil:
		he.Op = HookOpTimeout
		he.Err = timeoutError(r.timeout, hctx.Err())
	}
	return res, he
}

func validateHookInput(script, wsPath string, extraEnv map[string]string) error {
	if strings.IndexByte(script, 0) >= 0 {
		return errors.New("script contains a NUL byte")
	}
	fi, err := os.Stat(wsPath)
	if err != nil {
		return fmt.Errorf("workspace directory: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("workspace directory %s: %w", wsPath, ErrConflict)
	}
	for k, v := range extraEnv {
		if !validEnvName(k) {
			return fmt.Errorf("environment variable name %q is not valid", k)
		}
		if strings.IndexByte(v, 0) >= 0 {
			return fmt.Errorf("environment variable %s contains a NUL byte", k)
		}
	}
	return nil
}

// tailBuffer keeps the last max bytes written to it and counts the rest.
type tailBuffer struct {
	max     int
	buf     []byte
	dropped int64
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	n := len(p)
	if len(p) >= b.max {
		b.dropped += int64(len(b.buf) + len(p) - b.max)
		b.buf = append(b.buf[:0], p[len(p)-b.max:]...)
		return n, nil
	}
	if over := len(b.buf) + len(p) - b.max; over > 0 {
		b.dropped += int64(over)
		b.buf = b.buf[:copy(b.buf, b.buf[over:])]
	}
	b.buf = append(b.buf, p...)
	return n, nil
}

// String returns the kept output, prefixed with a note when earlier output was dropped.
func (b *tailBuffer) String() string {
	s := strings.ToValidUTF8(string(b.buf), "\uFFFD")
	if b.dropped > 0 {
		return fmt.Sprintf("[%d earlier bytes of output dropped]\n%s", b.dropped, s)
	}
	return s
}
