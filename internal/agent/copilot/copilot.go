// Package copilot is the `copilot-cli` agent adapter: it runs the GitHub Copilot CLI once
// per turn in autopilot mode (`--output-format json -s --autopilot --no-ask-user`),
// locally or on an SSH host, reads its JSONL stream and normalises it into agent events
// with cumulative output-token usage and tool-call timing. The CLI names its session
// only in the final result event, so the first turn starts a new conversation and later
// turns resume the id it reported. One adapter serves every session concurrently;
// per-session state lives in the session handle.
//
// The behaviour is ../spec/copilot-cli-adapter.md's; docs/agents/copilot-cli.md is the
// operator's reference, including where the real CLI made us depart from the spec.
package copilot

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"sortie/internal/agent"
	"sortie/internal/agent/proc"
	"sortie/internal/agent/remote"
	"sortie/internal/runas"
)

// Kind is the agent.kind that selects this adapter.
const Kind = "copilot-cli"

// DefaultCommand is the CLI the adapter runs when agent.command is empty.
const DefaultCommand = "copilot"

// canaryTimeout bounds `copilot --version` at session start (spec: 5 seconds).
const canaryTimeout = 5 * time.Second

// maxArg is the longest single argument the adapter puts on a command line. Linux
// refuses any one argument over 128 KiB (MAX_ARG_STRLEN), and in SSH mode the whole
// remote command, prompt included, is one argument of ssh. A prompt that would make an
// argument longer goes to the CLI's standard input instead, which it reads as the
// prompt when there is no --prompt.
const maxArg = 120 << 10

func init() {
	agent.Register(Kind, agent.Meta{RequiresCommand: true, DefaultCommand: DefaultCommand, Env: EnvNames, Options: optionSpecs}, New)
}

// adapter serves every copilot-cli session.
type adapter struct {
	program     []string // agent.command split into words; program[0] is looked up on PATH
	opts        options
	warnings    []string
	readTimeout time.Duration
	env         []string      // the environment of the --version preflight (agent.Config.Env)
	workflowDir string        // keys the per-issue homes
	grace       time.Duration // SIGTERM → SIGKILL; proc.DefaultGrace outside tests
	now         func() time.Time
	gh          string // the GitHub CLI asked by the authentication fallback

	usageOnce sync.Once
	usageFlag bool // the CLI knows --usage-output-file
}

// New builds the adapter. cfg.Options is the `copilot-cli:` block: a value of the wrong
// type is an error naming the key; unknown keys are warnings.
func New(cfg agent.Config) (agent.Adapter, error) {
	opts, warnings, err := parseOptions(cfg.Options, cfg.WorkflowDir)
	if err != nil {
		return nil, err
	}
	env := cfg.Env
	if env == nil {
		env = os.Environ()
	}
	if w := sharedHomeWarning(env); w != "" {
		warnings = append(warnings, w)
	}
	return &adapter{program: cfg.Program(DefaultCommand), opts: opts, warnings: warnings, readTimeout: cfg.ReadTimeoutOrDefault(),
		env: cfg.Env, workflowDir: cfg.WorkflowDir, grace: proc.DefaultGrace, now: time.Now, gh: "gh"}, nil
}

// Warnings lists what was ignored in the `copilot-cli:` block.
func (a *adapter) Warnings() []string { return a.warnings }

// Version runs `<command> --version` locally, with the environment agent turns get,
// and returns its first line without the final period, e.g. "GitHub Copilot CLI
// 1.0.102", or "" when that line is not a version (agent.VersionOf). An error means the
// CLI cannot run here (for the npm package, often a missing or too old Node.js).
func (a *adapter) Version(ctx context.Context) (string, error) {
	exe, err := exec.LookPath(a.program[0])
	if err != nil {
		return "", &agent.Error{Kind: agent.ErrNotFound, Message: Kind + ": agent.command " + a.program[0], Err: err}
	}
	return a.version(ctx, exe, a.env, nil)
}

// version runs the canary: `<exe> --version` with env (nil: this process's), as the
// user of cred (nil: the daemon's), so that whatever the CLI writes in the home of
// agent.run_as's user stays that user's. A CLI that prints nothing fails it; one whose
// first line is not a version still runs, and its version is "".
func (a *adapter) version(ctx context.Context, exe string, env []string, cred *syscall.Credential) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, max(canaryTimeout, a.readTimeout))
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, append(a.program[1:], "--version")...)
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	// The npm package's loader runs the native binary as its child; if the timeout
	// kills the loader, do not wait for the child to let go of the pipes.
	cmd.WaitDelay = time.Second
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err == nil && len(bytes.TrimSpace(out)) == 0 {
		err = fmt.Errorf("printed no version")
	}
	if err != nil {
		msg := fmt.Sprintf("%s: %s --version (the CLI does not run; the npm package needs Node.js 22 or later)", Kind, exe)
		if s := stderrTail(stderr.String()); s != "" {
			msg += "; stderr: " + s
		}
		return "", &agent.Error{Kind: agent.ErrNotFound, Message: msg, Err: err}
	}
	v, _ := agent.VersionOf(out)
	return v, nil
}

// supportsUsageFile reports, once per adapter, whether the CLI knows
// --usage-output-file, where the pinned version reports its token counts (older
// versions put them on assistant.message and lack the flag).
func (a *adapter) supportsUsageFile(ctx context.Context, exe string, env []string, cred *syscall.Credential) bool {
	a.usageOnce.Do(func() {
		ctx, cancel := context.WithTimeout(ctx, max(canaryTimeout, a.readTimeout))
		defer cancel()
		cmd := exec.CommandContext(ctx, exe, append(a.program[1:], "--help")...)
		cmd.Env = env
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		cmd.WaitDelay = time.Second
		out, _ := cmd.Output()
		a.usageFlag = bytes.Contains(out, []byte("--usage-output-file"))
	})
	return a.usageFlag
}

// session is the adapter's per-session state (agent.Session.Internal).
type session struct {
	exe      string         // the resolved local binary: the CLI, or ssh in SSH mode
	target   *remote.Target // nil when local
	strict   string         // StrictHostKeyChecking in SSH mode
	env      []string
	mcp      []string            // --additional-mcp-config files
	usageDir string              // private directory for the CLI's usage file, "" when not used
	launch   agent.Launch        // how the CLI is confined and supervised; zero over SSH
	cred     *syscall.Credential // agent.run_as's user, nil for the daemon's or over SSH
	cgroup   int                 // the run's cgroup v2 directory (fd), 0 for none
	notes    []string            // said as notifications at the start of the first turn
	// home is the issue's own COPILOT_HOME, reset before every run of the CLI
	// (home.go); "" over SSH or when the operator set COPILOT_HOME.
	home  string
	owner *runas.User // agent.run_as's user, who owns home; nil for the daemon's

	guard proc.Guard // one process at a time; StopSession stops it

	// Touched only by the goroutine running the current turn; the guard keeps turns apart.
	turns int         // turns that started the CLI; without an id, later ones --continue
	usage agent.Usage // cumulative for the session
	model string      // the last model the CLI named
	mark  cliMark     // the CLI session's own cumulative figures after our last turn
}

// cliMark is where the CLI session's cumulative counters stood after the last turn,
// so that a turn's share can be taken from the next reading. The CLI counts from the
// start of its session, across every invocation that resumed it.
type cliMark struct {
	session   string // the CLI session the figures belong to
	output    int64  // output tokens, from the usage file
	apiMS     int64  // result.usage.totalApiDurationMs
	hasOutput bool
	hasAPI    bool
}

// StartSession checks the workspace and resolves the binary (ssh in SSH mode, where the
// CLI is looked up on the remote host when the turn runs). Locally it also runs the
// `--version` canary and the authentication preflight. It spawns no turn. A resumed
// session's turns use --resume from the first; a new session's id stays empty until
// the first turn's result event names it.
func (a *adapter) StartSession(ctx context.Context, p agent.StartParams) (*agent.Session, error) {
	if err := agent.CheckWorkspace(p.Workspace); err != nil {
		return nil, err
	}
	st := &session{env: p.Env, strict: p.SSHStrictHostKeyChecking}
	if st.env == nil {
		st.env = os.Environ()
	}
	var err error
	if p.SSHHost != "" {
		t, perr := remote.ParseTarget(p.SSHHost)
		if perr != nil {
			return nil, &agent.Error{Kind: agent.ErrPortExit, Message: Kind + ": worker.ssh_hosts", Err: perr}
		}
		st.target = &t
		if st.exe, err = exec.LookPath("ssh"); err != nil {
			return nil, &agent.Error{Kind: agent.ErrNotFound, Message: Kind + ": ssh client for host " + p.SSHHost, Err: err}
		}
	} else {
		if st.exe, err = exec.LookPath(a.program[0]); err != nil {
			return nil, &agent.Error{Kind: agent.ErrNotFound, Message: Kind + ": agent.command " + a.program[0], Err: err}
		}
		// The loader would otherwise run the newest CLI it finds in any of its package
		// directories, one under COPILOT_HOME included.
		st.env = append(slices.Clip(st.env), "COPILOT_AUTO_UPDATE=false")
		home := agent.EnvValue(st.env, homeEnv)
		if home == "" {
			st.home, st.owner = issueHome(st.env, a.workflowDir, p.Workspace), p.RunAs
			// Before the canary, which runs unconfined.
			if err := resetHome(st.home, st.owner); err != nil {
				return nil, &agent.Error{Kind: agent.ErrPortExit, Message: Kind + ": the issue's COPILOT_HOME", Err: err}
			}
			st.env = append(st.env, homeEnv+"="+st.home)
			home = st.home
		}
		if _, err := a.version(ctx, st.exe, st.env, p.RunAs.Credential()); err != nil {
			return nil, err
		}
		note, err := a.checkAuth(ctx, st.env)
		if err != nil {
			return nil, err
		}
		if note != "" {
			st.notes = append(st.notes, note)
		}
		if a.supportsUsageFile(ctx, st.exe, st.env, p.RunAs.Credential()) {
			// Outside the workspace, so that nothing of ours lands in the agent's tree.
			if st.usageDir, err = os.MkdirTemp("", "sortie-copilot-"); err != nil {
				return nil, &agent.Error{Kind: agent.ErrPortExit, Message: Kind + ": directory for the CLI's usage file", Err: err}
			}
			if err := p.RunAs.Chown(st.usageDir); err != nil {
				return nil, &agent.Error{Kind: agent.ErrPortExit, Message: Kind + ": giving the usage file's directory to agent.run_as", Err: err}
			}
		}
		write := []string{home}
		if st.usageDir != "" {
			write = append(write, st.usageDir)
		}
		if p.Confine != nil {
			// The runtime the canary unpacked: read, run, never changed.
			c := *p.Confine
			c.Policy.Read = append(slices.Clip(c.Policy.Read), runtimeDirs(st.env)...)
			p.Confine = &c
		}
		st.launch = agent.LocalLaunch(p, st.exe, write, write[:1])
		st.cred = p.RunAs.Credential()
		st.cgroup = p.Supervise.Cgroup()
	}
	// The daemon's generated .sortie/mcp.json already holds the operator's servers
	// (merged, with the reserved name checked); without one, mcp_config is passed as is.
	switch {
	case p.MCPConfigPath != "":
		st.mcp = []string{p.MCPConfigPath}
	case a.opts.MCPConfig != "":
		st.mcp = []string{a.opts.MCPConfig}
	}
	return &agent.Session{ID: p.ResumeSessionID, Workspace: p.Workspace, SSHHost: p.SSHHost, Internal: st}, nil
}

// RunTurn runs the CLI once and translates its stdout into events, delivered in order
// through p.OnEvent before it returns. The first event is session_started, the last the
// turn's terminal one, sent after the process has exited.
func (a *adapter) RunTurn(ctx context.Context, s *agent.Session, p agent.TurnParams) (agent.TurnResult, error) {
	st, ok := s.Internal.(*session)
	if !ok {
		return agent.TurnResult{}, fmt.Errorf("%s: session %q was not started by this adapter", Kind, s.ID)
	}
	t := &turn{s: s, st: st, onEvent: p.OnEvent, now: a.now}
	t.tr = newTranslator(a.now, t.emit, st.usage)
	t.tr.model = st.model
	if st.home != "" {
		// Whatever an earlier turn's agent left there, this turn's CLI loads nothing
		// Sortie did not keep.
		if err := resetHome(st.home, st.owner); err != nil {
			return t.fail(agent.EventStartupFailed, &agent.Error{Kind: agent.ErrPortExit, Message: Kind + ": the issue's COPILOT_HOME", Err: err})
		}
	}

	ta := turnArgs{prompt: p.Prompt, sessionID: s.ID, mcpConfigs: st.mcp}
	switch {
	case s.ID != "":
		ta.mode = resumeID
	case st.turns > 0:
		ta.mode = resumeContinue // no result ever named the session (spec fallback)
	}
	t.mode = ta.mode
	if st.usageDir != "" {
		ta.usageFile = filepath.Join(st.usageDir, fmt.Sprintf("usage-%d.json", st.turns+1))
		os.Remove(ta.usageFile)
		defer os.Remove(ta.usageFile)
	}
	c := a.command(st, s.Workspace, ta)
	if longest(c.Args) > maxArg {
		ta.prompt = ""
		c = a.command(st, s.Workspace, ta)
		c.Stdin = strings.NewReader(p.Prompt)
	}

	pr, err := st.guard.Start(ctx, c, Kind)
	if err != nil {
		reason := agent.EventStartupFailed
		if agent.KindOf(err) == agent.ErrTurnCancelled {
			reason = agent.EventTurnCancelled
		}
		return t.fail(reason, err)
	}
	defer st.guard.Finish()
	st.turns++
	t.pid, s.PID = pr.PID(), pr.PID()
	defer func() { s.PID = 0 }()
	waited := false
	defer func() { // whatever happens below, nothing of the turn outlives RunTurn
		if !waited {
			pr.Stop()
			pr.Wait()
		}
	}()

	t.emit(agent.Event{Type: agent.EventSessionStarted, Message: t.startMessage(p.TurnNumber)})
	if st.turns == 1 {
		for _, n := range st.notes {
			t.emit(agent.Event{Type: agent.EventNotification, Message: n})
		}
	}
	lr := proc.NewLineReader(pr.Stdout(), proc.DefaultMaxLine)
	defer lr.Release() // after the turn has handled its last line
	for lr.Next() {
		if st.target != nil && !t.pgidRead {
			t.pgidRead = true
			// The remote shell names its group on stderr before the CLI starts.
			t.remotePGID = remote.AwaitPGID(pr.Stderr())
		}
		t.tr.line(lr.Line())
	}
	readErr := lr.Err()
	if readErr != nil {
		pr.Stop() // spec: on a scanner failure, stop the process, then wait
	}
	exit := pr.Wait()
	waited = true
	if st.target != nil {
		// Whatever the turn's end, nothing of it may go on running on the host: without
		// a terminal, the remote group gets no hangup when ssh ends.
		a.stopRemote(st, pr.Stderr().String())
	}
	return t.end(exit, readErr, pr.Stderr(), ta.usageFile)
}

// stopRemote ends the remote CLI of a turn that was stopped locally. Killing the local
// ssh does not reach it: without a terminal the remote shell gets no hangup, and the
// agent would go on changing the workspace while the issue is retried. It runs until
// the remote group is gone or the connection attempt fails.
func (a *adapter) stopRemote(st *session, stderr string) {
	remote.StopAnnounced(st.exe, st.env, *st.target, st.strict, stderr, a.grace)
}

// command is the process of one turn: the CLI in the workspace, or ssh running it there.
func (a *adapter) command(st *session, workspace string, ta turnArgs) proc.Command {
	args := a.opts.args(ta)
	c := proc.Command{Path: st.exe, Args: append(append([]string(nil), a.program[1:]...), args...),
		Dir: workspace, Env: st.env, Grace: a.grace, Wrap: st.launch.Wrap,
		Confine: st.launch.Confine, SweepCgroup: st.launch.SweepCgroup, Credential: st.cred, CgroupFD: st.cgroup}
	if st.target != nil {
		// The remote shell runs in the remote user's home; the local directory only has
		// to exist for ssh to start.
		c.Args = remote.Command(*st.target, st.strict, workspace, a.program, args)
	}
	return c
}

func longest(args []string) int {
	n := 0
	for _, a := range args {
		n = max(n, len(a))
	}
	return n
}

// StopSession stops the running turn, if any, gracefully, makes later turns fail and
// removes the session's private directory.
func (a *adapter) StopSession(ctx context.Context, s *agent.Session) error {
	st, ok := s.Internal.(*session)
	if !ok {
		return nil
	}
	st.guard.Stop()
	if st.usageDir != "" {
		return os.RemoveAll(st.usageDir)
	}
	return nil
}

// turn is one RunTurn.
type turn struct {
	s       *agent.Session
	st      *session
	tr      *translator
	mode    resumeMode
	onEvent func(agent.Event)
	now     func() time.Time
	pid     int
	// remotePGID is the remote process group over SSH, once announced; 0 otherwise.
	remotePGID int
	pgidRead   bool  // the announced group was looked for (once, at the first line)
	apiMS      int64 // this turn's share of the CLI's API time, for the terminal event
}

func (t *turn) emit(e agent.Event) {
	e.Time = t.now()
	e.PID = t.pid
	e.RemotePGID = t.remotePGID
	e.SessionID = t.s.ID
	if t.tr != nil && t.tr.sessionID != "" {
		e.SessionID = t.tr.sessionID
	}
	if t.onEvent != nil {
		t.onEvent(e)
	}
}

func (t *turn) startMessage(n int) string {
	var how string
	switch t.mode {
	case resumeID:
		how = "resuming session " + t.s.ID
	case resumeContinue:
		how = "continuing the workspace's most recent session (no session id was reported)"
	default:
		how = "new session"
	}
	if n > 0 {
		return fmt.Sprintf("turn %d: %s", n, how)
	}
	return how
}

// end maps the exit and the result event to the turn's outcome (spec, "Exit code
// mapping"), settles the turn's usage, emits the terminal event and builds the result.
func (t *turn) end(exit proc.Exit, readErr error, stderr *proc.HeadTailBuffer, usageFile string) (agent.TurnResult, error) {
	tr := t.tr
	tr.openTools()
	t.settle(usageFile)
	if tr.sessionID != "" {
		t.s.ID = tr.sessionID
	}
	t.st.usage, t.st.model = tr.usage(), tr.model

	kind := proc.Classify(exit, readErr)
	if kind == "" && exit.Stopped {
		// StopSession ended the turn. The CLI answers SIGTERM by aborting the turn and
		// exiting 0 with a result, which must not read as a completed turn.
		kind = agent.ErrTurnCancelled
	}
	switch {
	case kind == agent.ErrTurnCancelled:
		return t.fail(agent.EventTurnCancelled, agent.Errorf(kind, "copilot (pid %d): turn cancelled (%s)", t.pid, exit))
	case kind == agent.ErrPortExit && readErr == nil && tr.result != nil:
		// The CLI finished the turn and reported its failure itself (an API error
		// after its retries, say): a failed turn, not a crashed process.
		return t.fail(agent.EventTurnFailed, agent.Errorf(agent.ErrTurnFailed, "%s", t.failure(exit, stderr)))
	case kind != "":
		msg := fmt.Sprintf("copilot (pid %d): %s", t.pid, exit)
		if readErr != nil {
			msg = fmt.Sprintf("copilot (pid %d): reading its output: %v (%s)", t.pid, readErr, exit)
		}
		if kind == agent.ErrNotFound {
			msg += "; the CLI was not found (check agent.command and PATH, on the SSH host in SSH mode)"
		}
		if kind == agent.ErrPortExit && t.st.target != nil && exit.Code == 255 {
			msg += "; ssh could not reach or log in to " + t.s.SSHHost
		}
		if s := stderrTail(remote.StripPGID(stderr.String())); s != "" {
			msg += "; stderr: " + s
		}
		return t.fail(agent.EventTurnFailed, agent.Errorf(kind, "%s", msg))
	case tr.resultFailed():
		return t.fail(agent.EventTurnFailed, agent.Errorf(agent.ErrTurnFailed, "%s", t.failure(exit, stderr)))
	}
	// Exit 0, with a successful result or none at all: the spec treats both as done.
	return t.complete()
}

// failure describes a turn the CLI reported as failed.
func (t *turn) failure(exit proc.Exit, stderr *proc.HeadTailBuffer) string {
	msg := fmt.Sprintf("copilot (pid %d): %s", t.pid, exit)
	if r := t.tr.result; r != nil && r.ExitCode != nil {
		msg += fmt.Sprintf(", result exit code %d", *r.ExitCode)
	}
	if t.tr.lastError != "" {
		msg += "; " + t.tr.lastError
	} else if s := stderrTail(remote.StripPGID(stderr.String())); s != "" {
		msg += "; stderr: " + s
	}
	return msg
}

// settle brings the turn's figures up to what the CLI counted. The pinned CLI reports
// no token counts in its stream, only in the usage file it writes on exit; that file and
// the result's API time are totals of the CLI session, so the turn's share is the
// difference from where they stood after the previous turn of the same CLI session. A
// turn that started a new CLI session starts from zero; for the first turn of a session
// resumed from an earlier run the starting point is unknown, and only the stream's
// figures count (an undercount of that one turn rather than a recount of the run before).
func (t *turn) settle(usageFile string) {
	tr, st := t.tr, t.st
	var base cliMark
	switch {
	case t.mode == resumeNone:
		base = cliMark{hasOutput: true, hasAPI: true}
	case tr.sessionID != "" && tr.sessionID == st.mark.session:
		base = st.mark
	}
	next := cliMark{session: tr.sessionID}

	if u, ok := readUsageFileIf(usageFile); ok {
		next.output, next.hasOutput = u.Output, true
		// Older CLIs reported each message's tokens in the stream: the file then only
		// revises those requests' figures, and is no API request of its own.
		streamed := tr.output > 0
		if base.hasOutput && tr.raiseOutput(u.Output-base.output) {
			if u.Model != "" {
				tr.model = u.Model
			}
			t.emit(agent.Event{Type: agent.EventTokenUsage, Usage: tr.usage(), Model: tr.model,
				Message: "turn totals from the CLI's usage file", Revision: streamed})
		}
	}
	if r := tr.result; r != nil && r.Usage != nil {
		next.apiMS, next.hasAPI = r.Usage.TotalAPIDurationMS, true
		if base.hasAPI {
			t.apiMS = max(r.Usage.TotalAPIDurationMS-base.apiMS, 0)
		}
	}
	if next.session != "" {
		st.mark = next
	}
}

func readUsageFileIf(path string) (cliUsage, bool) {
	if path == "" {
		return cliUsage{}, false
	}
	return readUsageFile(path)
}

func (t *turn) complete() (agent.TurnResult, error) {
	msg := "turn completed"
	switch {
	case t.tr.result == nil && t.s.ID == "":
		msg += " without a result event; the next turn continues the workspace's most recent session"
	case t.tr.result == nil:
		msg += " without a result event"
	}
	t.emit(agent.Event{Type: agent.EventTurnCompleted, Usage: t.st.usage, APIDurationMS: t.apiMS, Message: msg})
	return t.resultOf(agent.EventTurnCompleted), nil
}

// fail emits the terminal event of type reason carrying err's text and returns err.
func (t *turn) fail(reason agent.EventType, err error) (agent.TurnResult, error) {
	t.emit(agent.Event{Type: reason, Usage: t.st.usage, APIDurationMS: t.apiMS, Message: err.Error()})
	return t.resultOf(reason), err
}

func (t *turn) resultOf(reason agent.EventType) agent.TurnResult {
	return agent.TurnResult{SessionID: t.s.ID, ExitReason: reason, Usage: t.st.usage, PID: t.pid}
}

// stderrTail is the end of the CLI's stderr, enough to explain a failure in one line.
func stderrTail(s string) string { return agent.Tail(s, 1024) }
