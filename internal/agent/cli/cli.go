// Package cli is the runner every agent CLI that runs once per turn shares: it owns
// the session and turn lifecycle (the workspace check, the environment, the SSH
// branch, finding the binary, confinement, run_as and the cgroup, one process at a
// time, the line loop, the stop and the wait, the remote group's end, the outcome of a
// crashed process, usage carried across turns), and a CLI supplies only its Dialect:
// what to prepare for a session, the argv and stdin of a turn, and a translator from
// its output lines to Sortie's events. A Runner is an agent.Adapter.
//
// Optional capabilities are the dialect's by type assertion, as database/sql/driver
// does: a Dialect that is also a StateRemover lets the runner remove an issue's CLI
// state, a Stopper releases what a session kept, and so on.
package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"syscall"
	"time"

	"sortie/internal/agent"
	"sortie/internal/agent/proc"
	"sortie/internal/agent/remote"
	"sortie/internal/runas"
)

// Dialect is one CLI's part of a session: S is its own per-session state.
type Dialect[S any] interface {
	// Start prepares a session the runner has checked and resolved: s.Env,
	// s.Program and s.MCP are set and s.ID is the session to resume ("" for a new
	// one). Locally (s.Remote() false) it prepares the CLI's state and says in
	// s.Write, s.Create and s.Read what the confined CLI may write and read. It
	// spawns no turn; an error ends the start.
	Start(ctx context.Context, s *Session[S], p agent.StartParams) error
	// Turn prepares one turn: the CLI's arguments after agent.command's words, its
	// standard input, and the translator of its output, which reports events through
	// emit. An error fails the turn before a process starts (startup_failed).
	Turn(ctx context.Context, s *Session[S], p agent.TurnParams, emit func(agent.Event)) (Invocation, error)
}

// Invocation is one turn's run of the CLI.
type Invocation struct {
	Args  []string
	Stdin string
	// Started, when not "", is the message of a session_started event sent once the
	// process runs, before anything else of the turn.
	Started    string
	Translator Translator
}

// Translator reads one turn's output. It is used by the turn's goroutine only.
type Translator interface {
	// Line handles one line of standard output. It never fails: what it cannot read
	// becomes a malformed event.
	Line(line []byte)
	// SessionID is the id the CLI announced so far, "" for none.
	SessionID() string
	// End is called once the process has exited: it settles the turn's figures (it
	// may still emit events) and judges the turn. e.Kind is already turn_cancelled
	// for a cancelled turn, whose verdict the runner ignores.
	End(e *Ending) (Totals, Verdict)
}

// Totals are the session's figures after a turn, which the runner keeps for the
// next: the id that resumes it and the cumulative usage and cost.
type Totals struct {
	SessionID     string
	Usage         agent.Usage
	CostUSD       float64
	APIDurationMS int64 // the turn's API time, for its terminal event
}

// Verdict is how a turn ended, when it was not cancelled.
type Verdict struct {
	Reason  agent.EventType // turn_completed, turn_failed, turn_input_required
	Kind    agent.ErrorKind // the error's kind when Reason is not turn_completed
	Message string
	Model   string // the model the terminal event names, "" for none
}

// Completed is a completed turn's verdict.
func Completed(msg string) Verdict {
	return Verdict{Reason: agent.EventTurnCompleted, Message: msg}
}

// Failed is a failed turn's verdict: turn_failed with an error of kind.
func Failed(kind agent.ErrorKind, format string, args ...any) Verdict {
	return Verdict{Reason: agent.EventTurnFailed, Kind: kind, Message: fmt.Sprintf(format, args...)}
}

// Ending is how a turn's process ended, for Translator.End.
type Ending struct {
	Exit    proc.Exit
	ReadErr error
	// Kind is proc.Classify's, and turn_cancelled for a clean exit StopSession caused
	// (a CLI may answer SIGTERM by ending its turn with exit 0).
	Kind   agent.ErrorKind
	Stderr string // its end, one line's worth, without terminal escapes
	Name   string // what ran: the CLI's name, or "ssh to <host>"
	PID    int
	Host   string // the SSH host, "" locally
}

// Crash is the message of a process that failed (Kind not ""): what ran, how it ended,
// a hint for a missing CLI or an unreachable host, more (each after "; ") and the end
// of its stderr.
func (e *Ending) Crash(more ...string) string {
	msg := fmt.Sprintf("%s (pid %d): %s", e.Name, e.PID, e.Exit)
	if e.ReadErr != nil {
		msg = fmt.Sprintf("%s (pid %d): reading its output: %v (%s)", e.Name, e.PID, e.ReadErr, e.Exit)
	}
	switch {
	case e.Kind == agent.ErrNotFound:
		msg += "; the CLI was not found (check agent.command and PATH, on the SSH host in SSH mode)"
	case e.Kind == agent.ErrPortExit && e.Host != "" && e.Exit.Code == 255:
		msg += "; ssh could not reach or log in to " + e.Host
	}
	for _, m := range more {
		if m != "" {
			msg += "; " + m
		}
	}
	if e.Stderr != "" {
		msg += "; stderr: " + e.Stderr
	}
	return msg
}

// Config is what a Runner is built from besides its dialect.
type Config struct {
	agent.Config
	// Name is the CLI's short name in messages, e.g. "claude".
	Name string
	// DefaultCommand is the CLI run when agent.command is empty.
	DefaultCommand string
	// VersionTimeout is the least time a `--version` run gets.
	VersionTimeout time.Duration
	// VersionHint follows a failed `--version` run's message: why a CLI may not run.
	VersionHint string
	// VersionRequired makes a `--version` run that prints nothing a failure (copilot's
	// canary, by its spec); otherwise the version is only unknown.
	VersionRequired bool
}

// Runner is the agent.Adapter of one CLI: its lifecycle, with the dialect D for what
// is the CLI's own.
type Runner[S any] struct {
	Kind    string
	Name    string
	Program []string // agent.command split into words; Program[0] is looked up on PATH
	Dialect Dialect[S]
	// Grace is SIGTERM → SIGKILL for a turn's process group; proc.DefaultGrace
	// outside tests.
	Grace time.Duration
	Now   func() time.Time

	warnings        []string
	readTimeout     time.Duration
	env             []string // the environment of runs outside a session (agent.Config.Env)
	versionTimeout  time.Duration
	versionHint     string
	versionRequired bool
}

// New builds the runner of cfg with dialect d and the warnings its options drew.
func New[S any](cfg Config, d Dialect[S], warnings []string) *Runner[S] {
	return &Runner[S]{Kind: cfg.Kind, Name: cfg.Name, Program: cfg.Program(cfg.DefaultCommand), Dialect: d, warnings: warnings,
		Grace: proc.DefaultGrace, Now: time.Now, readTimeout: cfg.ReadTimeoutOrDefault(), env: cfg.Env,
		versionTimeout: cfg.VersionTimeout, versionHint: cfg.VersionHint, versionRequired: cfg.VersionRequired}
}

// Session is one session's state: the runner's, and the dialect's own in State.
type Session[S any] struct {
	*agent.Session
	// Env is the CLI's environment; Start may add to it.
	Env []string
	// Program is the CLI's words (agent.command); Start may replace it, e.g. to run
	// the CLI through `env` on an SSH host.
	Program []string
	// MCP is the MCP configuration files of the session: the daemon's generated
	// .sortie/mcp.json, else none.
	MCP []string
	// Write and Create are what a confined local CLI may write, and which of them are
	// created when missing; Read is what it may read besides the run's policy.
	Write, Create, Read []string
	// Notes are said as notifications at the start of the first turn.
	Notes []string
	// Prepared says the dialect prepared the CLI's state (reset its directory) since a
	// CLI of the session last ran: Start's reset then serves the first turn too. The
	// runner clears it when a turn's process starts.
	Prepared bool
	// Turns is how many turns started a process.
	Turns int
	// Usage and CostUSD are the session's cumulative figures.
	Usage   agent.Usage
	CostUSD float64
	// Exe is the resolved local binary: the CLI, or ssh over SSH.
	Exe string
	// Owner is agent.run_as's user, nil for the daemon's or over SSH.
	Owner *runas.User
	State S

	target *remote.Target
	strict string
	launch agent.Launch
	cred   *syscall.Credential
	cgroup int
	guard  proc.Guard
}

// Remote reports whether the session runs on an SSH host.
func (s *Session[S]) Remote() bool { return s.target != nil }

// Argv is the arguments of the process that runs the CLI with args: the CLI's own
// words and args, or, over SSH, ssh's, the remote command line being one of them.
func (s *Session[S]) Argv(args []string) []string {
	if s.target != nil {
		// The remote shell runs in the remote user's home; the local directory only has
		// to exist for ssh to start.
		return remote.Command(*s.target, s.strict, s.Workspace, s.Program, args)
	}
	return append(slices.Clone(s.Program[1:]), args...)
}

// Warnings implements agent.Warner: what the CLI's block of WORKFLOW.md drew.
func (r *Runner[S]) Warnings() []string { return r.warnings }

// Version runs `<command> --version` locally, with the environment agent turns get,
// and returns its first line, or "" when that line is not a version (agent.VersionOf).
// An error means the CLI cannot run here.
func (r *Runner[S]) Version(ctx context.Context) (string, error) {
	exe, err := exec.LookPath(r.Program[0])
	if err != nil {
		return "", &agent.Error{Kind: agent.ErrNotFound, Message: r.Kind + ": agent.command " + r.Program[0], Err: err}
	}
	return r.RunVersion(ctx, exe, r.env, nil)
}

// RunVersion runs `<exe> --version` with env (nil: this process's) as the user of cred
// (nil: the daemon's). With Config.VersionRequired a CLI that prints nothing fails it;
// one whose first line is not a version still runs, and its version is "". It never waits for a child of the CLI
// that holds its output open.
func (r *Runner[S]) RunVersion(ctx context.Context, exe string, env []string, cred *syscall.Credential) (string, error) {
	var stderr bytes.Buffer
	out, err := r.output(ctx, exe, env, cred, &stderr, "--version")
	if err == nil && r.versionRequired && len(bytes.TrimSpace(out)) == 0 {
		err = fmt.Errorf("printed no version")
	}
	if err != nil {
		msg := fmt.Sprintf("%s: %s --version%s", r.Kind, exe, r.versionHint)
		if s := agent.Tail(agent.StripANSI(stderr.String()), 1024); s != "" {
			msg += "; stderr: " + s
		}
		return "", &agent.Error{Kind: agent.ErrNotFound, Message: msg, Err: err}
	}
	v, _ := agent.VersionOf(out)
	return v, nil
}

// Output runs `<exe> <agent.command's arguments> args` as RunVersion does and returns
// its standard output, e.g. for a probe of the CLI's flags.
func (r *Runner[S]) Output(ctx context.Context, exe string, env []string, cred *syscall.Credential, args ...string) ([]byte, error) {
	return r.output(ctx, exe, env, cred, nil, args...)
}

func (r *Runner[S]) output(ctx context.Context, exe string, env []string, cred *syscall.Credential, stderr *bytes.Buffer, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, max(r.readTimeout, r.versionTimeout))
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, append(slices.Clone(r.Program[1:]), args...)...)
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if stderr != nil {
		cmd.Stderr = stderr
	}
	return Output(cmd)
}

// Output runs cmd, a short run of a CLI outside a session, and returns its standard
// output. It waits at most a second for a child of the CLI that holds the output open
// (an npm package's loader runs the real program as its child): once the CLI has
// exited 0, that is not a failure.
func Output(cmd *exec.Cmd) ([]byte, error) {
	cmd.WaitDelay = time.Second
	out, err := cmd.Output()
	if errors.Is(err, exec.ErrWaitDelay) && cmd.ProcessState != nil && cmd.ProcessState.Success() {
		err = nil
	}
	return out, err
}

// StartSession checks the workspace and resolves the binary (ssh in SSH mode, where the
// CLI is looked up on the remote host when the turn runs), then lets the dialect
// prepare the session. It spawns no turn.
func (r *Runner[S]) StartSession(ctx context.Context, p agent.StartParams) (*agent.Session, error) {
	if err := agent.CheckWorkspace(p.Workspace); err != nil {
		return nil, err
	}
	s := &Session[S]{Session: &agent.Session{ID: p.ResumeSessionID, Workspace: p.Workspace, SSHHost: p.SSHHost},
		Env: slices.Clip(Environ(p.Env)), Program: r.Program, strict: p.SSHStrictHostKeyChecking}
	var err error
	if p.SSHHost != "" {
		t, perr := remote.ParseTarget(p.SSHHost)
		if perr != nil {
			return nil, &agent.Error{Kind: agent.ErrPortExit, Message: r.Kind + ": worker.ssh_hosts", Err: perr}
		}
		s.target = &t
		if s.Exe, err = exec.LookPath("ssh"); err != nil {
			return nil, &agent.Error{Kind: agent.ErrNotFound, Message: r.Kind + ": ssh client for host " + p.SSHHost, Err: err}
		}
	} else {
		if s.Exe, err = exec.LookPath(r.Program[0]); err != nil {
			return nil, &agent.Error{Kind: agent.ErrNotFound, Message: r.Kind + ": agent.command " + r.Program[0], Err: err}
		}
		s.Owner = p.RunAs
	}
	// The daemon's generated .sortie/mcp.json already holds the operator's servers
	// (merged, with the reserved name checked).
	if p.MCPConfigPath != "" {
		s.MCP = []string{p.MCPConfigPath}
	}
	if err := r.Dialect.Start(ctx, s, p); err != nil {
		return nil, err
	}
	if !s.Remote() {
		if p.Confine != nil && len(s.Read) > 0 {
			c := *p.Confine
			c.Policy.Read = append(slices.Clip(c.Policy.Read), s.Read...)
			p.Confine = &c
		}
		s.launch = agent.LocalLaunch(p, s.Exe, s.Write, s.Create)
		s.cred = p.RunAs.Credential()
		s.cgroup = p.Supervise.Cgroup()
	}
	s.Session.Internal = s
	return s.Session, nil
}

// session is the runner's state of s.
func (r *Runner[S]) session(s *agent.Session) (*Session[S], error) {
	st, ok := s.Internal.(*Session[S])
	if !ok {
		return nil, fmt.Errorf("%s: session %q was not started by this adapter", r.Kind, s.ID)
	}
	return st, nil
}

// StopSession stops the running turn, if any, gracefully, makes later turns fail and
// lets a dialect that is a Stopper release what it kept.
func (r *Runner[S]) StopSession(ctx context.Context, s *agent.Session) error {
	st, err := r.session(s)
	if err != nil {
		return nil
	}
	st.guard.Stop()
	if d, ok := r.Dialect.(Stopper[S]); ok {
		return d.Stop(st)
	}
	return nil
}

// Stopper is a Dialect with something to release when a session stops.
type Stopper[S any] interface {
	Stop(s *Session[S]) error
}

// StateRemover is a Dialect that keeps an issue's CLI state on the daemon's machine
// between sessions (agent.IssueStateRemover).
type StateRemover interface {
	RemoveIssueState(env []string, workspace string, owner *runas.User) error
}

// RemoveIssueState implements agent.IssueStateRemover for a dialect that keeps state.
func (r *Runner[S]) RemoveIssueState(env []string, workspace string, owner *runas.User) error {
	if d, ok := r.Dialect.(StateRemover); ok {
		return d.RemoveIssueState(env, workspace, owner)
	}
	return nil
}

// Environ is env, or this process's environment when env is nil (agent.Config.Env's
// default, which only tests rely on).
func Environ(env []string) []string {
	if env == nil {
		return os.Environ()
	}
	return env
}
