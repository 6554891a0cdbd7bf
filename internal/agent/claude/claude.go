// Package claude is the `claude-code` agent adapter: it runs the Claude Code CLI once
// per turn in headless mode (`-p --output-format stream-json --verbose`), locally or on
// an SSH host, reads its JSONL stream and normalises it into agent events with
// cumulative token usage, tool-call timing and cost. One adapter serves every session
// concurrently; per-session state lives in the session handle.
//
// The behaviour is ../spec/claude-code-adapter.md's; docs/agents/claude-code.md is the
// operator's reference, including where the real CLI made us depart from the spec.
package claude

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"sortie/internal/agent"
	"sortie/internal/agent/proc"
	"sortie/internal/agent/remote"
	"sortie/internal/runas"
)

// Kind is the agent.kind that selects this adapter.
const Kind = "claude-code"

// DefaultCommand is the CLI the adapter runs when agent.command is empty.
const DefaultCommand = "claude"

func init() {
	agent.Register(Kind, agent.Meta{RequiresCommand: true, DefaultCommand: DefaultCommand, Env: EnvNames, Options: optionSpecs}, New)
}

// adapter serves every claude-code session.
type adapter struct {
	program     []string // agent.command split into words; program[0] is looked up on PATH
	opts        options
	warnings    []string
	readTimeout time.Duration
	env         []string      // the environment of the --version preflight (agent.Config.Env)
	workflowDir string        // keys the per-issue configuration directories
	grace       time.Duration // SIGTERM → SIGKILL; proc.DefaultGrace outside tests
	now         func() time.Time
}

// New builds the adapter. cfg.Options is the `claude-code:` block: a value of the wrong
// type or an unknown enum value is an error naming the key.
func New(cfg agent.Config) (agent.Adapter, error) {
	opts, warnings, err := parseOptions(cfg.Options, cfg.WorkflowDir)
	if err != nil {
		return nil, err
	}
	env := cfg.Env
	if env == nil {
		env = os.Environ()
	}
	if dir := agent.EnvValue(env, configEnv); dir != "" {
		warnings = append(warnings, fmt.Sprintf("%s=%s is set: every issue's agent shares that Claude Code configuration directory and can "+
			"write it, so one issue's agent can plant instructions and hooks (CLAUDE.md, settings.json) for every other issue and for "+
			"whoever runs claude with it; unset it to give each issue a directory of its own", configEnv, dir))
	}
	return &adapter{program: cfg.Program(DefaultCommand), opts: opts, warnings: warnings, readTimeout: cfg.ReadTimeoutOrDefault(),
		env: cfg.Env, workflowDir: cfg.WorkflowDir, grace: proc.DefaultGrace, now: time.Now}, nil
}

// Warnings lists what was ignored in the `claude-code:` block.
func (a *adapter) Warnings() []string { return a.warnings }

// versionTimeout is the least time Version gives the CLI.
const versionTimeout = 30 * time.Second

// Version runs `<command> --version` locally, with the environment agent turns get,
// and returns its first line, e.g. "2.1.330 (Claude Code)", or "" when that line is not
// a version (agent.VersionOf). An error means the CLI cannot run here.
func (a *adapter) Version(ctx context.Context) (string, error) {
	exe, err := exec.LookPath(a.program[0])
	if err != nil {
		return "", &agent.Error{Kind: agent.ErrNotFound, Message: "claude-code: agent.command " + a.program[0], Err: err}
	}
	// Once, at start-up: a slow disk or a loaded machine may take seconds to map the
	// CLI's large binary, and waiting costs nothing here.
	ctx, cancel := context.WithTimeout(ctx, max(a.readTimeout, versionTimeout))
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, append(a.program[1:], "--version")...)
	cmd.Env = a.env
	out, err := cmd.Output()
	if err != nil {
		return "", &agent.Error{Kind: agent.ErrNotFound, Message: fmt.Sprintf("claude-code: %s --version", exe), Err: err}
	}
	v, _ := agent.VersionOf(out)
	return v, nil
}

// session is the adapter's per-session state (agent.Session.Internal).
type session struct {
	exe    string         // the resolved local binary: the CLI, or ssh in SSH mode
	target *remote.Target // nil when local
	strict string         // StrictHostKeyChecking in SSH mode
	env    []string
	mcp    []string            // --mcp-config files
	launch agent.Launch        // how the CLI is confined and supervised; zero over SSH
	cred   *syscall.Credential // agent.run_as's user, nil for the daemon's or over SSH
	cgroup int                 // the run's cgroup v2 directory (fd), 0 for none
	owner  *runas.User         // agent.run_as's user, who owns configDir; nil for the daemon's

	// configDir is the issue's own Claude Code configuration directory, reset before
	// every turn (configdir.go); "" over SSH or when the operator set CLAUDE_CONFIG_DIR.
	configDir string
	reset     bool     // configDir was reset since a CLI last ran in it (StartSession's reset)
	login     string   // the user's credentials file, copied into configDir (use_login); "" for none
	notes     []string // said as notifications at the start of the first turn
	turns     int      // turns started

	guard proc.Guard // one process at a time; StopSession stops it

	// Touched only by the goroutine running the current turn; the guard keeps turns apart.
	created   bool        // the CLI has a conversation under the session id: --resume
	usage     agent.Usage // cumulative for the session
	cost      float64     // cumulative for the session
	lastTotal float64     // the CLI's last total_cost_usd, 0 if unknown
}

// StartSession checks the workspace and resolves the binary (ssh in SSH mode, where the
// CLI is looked up on the remote host when the turn runs). It spawns nothing. A resumed
// session's turns all use --resume.
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
			return nil, &agent.Error{Kind: agent.ErrPortExit, Message: "claude-code: worker.ssh_hosts", Err: perr}
		}
		st.target = &t
		if st.exe, err = exec.LookPath("ssh"); err != nil {
			return nil, &agent.Error{Kind: agent.ErrNotFound, Message: "claude-code: ssh client for host " + p.SSHHost, Err: err}
		}
	} else if st.exe, err = exec.LookPath(a.program[0]); err != nil {
		return nil, &agent.Error{Kind: agent.ErrNotFound, Message: "claude-code: agent.command " + a.program[0], Err: err}
	} else {
		state := stateDirs(st.env)
		if agent.EnvValue(st.env, configEnv) == "" {
			st.configDir = issueConfigDir(st.env, a.workflowDir, p.Workspace)
			st.owner = p.RunAs
			if a.opts.UseLogin {
				st.login = loginFile(st.env)
			}
			if err := resetConfigDir(st.configDir, st.owner, st.login); err != nil {
				return nil, &agent.Error{Kind: agent.ErrPortExit, Message: "claude-code: the issue's configuration directory", Err: err}
			}
			st.reset = true
			st.env = append(slices.Clip(st.env), configEnv+"="+st.configDir)
			state = []string{st.configDir}
			st.notes = authNotes(st.env, st.login)
		}
		st.launch = agent.LocalLaunch(p, st.exe, state, state[:min(1, len(state))])
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
	id := p.ResumeSessionID
	st.created = id != ""
	if id == "" {
		id = agent.NewSessionID()
	}
	return &agent.Session{ID: id, Workspace: p.Workspace, SSHHost: p.SSHHost, Internal: st}, nil
}

// RunTurn runs the CLI once with the prompt on its standard input and translates its
// stdout into events, delivered in order through p.OnEvent before it returns. The last
// event is always the turn's terminal one, sent after the process has exited.
func (a *adapter) RunTurn(ctx context.Context, s *agent.Session, p agent.TurnParams) (agent.TurnResult, error) {
	st, ok := s.Internal.(*session)
	if !ok {
		return agent.TurnResult{}, fmt.Errorf("claude-code: session %q was not started by this adapter", s.ID)
	}
	if !a.opts.SessionPersistence && st.created {
		// Without persistence nothing can be resumed: each turn is a new conversation.
		s.ID, st.created = agent.NewSessionID(), false
	}
	t := &turn{s: s, st: st, onEvent: p.OnEvent, now: a.now, name: "claude"}
	if st.target != nil {
		t.name = "ssh to " + st.target.Host
	}
	t.tr = newTranslator(a.now, t.emit, st.usage, st.cost, st.lastTotal)

	if st.configDir != "" && !st.reset {
		// Whatever an earlier turn's agent left there, this turn's CLI loads nothing
		// Sortie did not write. (The first turn's was reset by StartSession, and no CLI
		// has run in it since.)
		if err := resetConfigDir(st.configDir, st.owner, st.login); err != nil {
			return t.fail(agent.EventStartupFailed, &agent.Error{Kind: agent.ErrPortExit, Message: "claude-code: the issue's configuration directory", Err: err})
		}
	}
	st.reset = false
	args := a.opts.args(s.ID, st.created, st.mcp)
	c := proc.Command{Path: st.exe, Args: append(append([]string(nil), a.program[1:]...), args...),
		Dir: s.Workspace, Env: st.env, Stdin: strings.NewReader(p.Prompt), Grace: a.grace, Wrap: st.launch.Wrap,
		Confine: st.launch.Confine, SweepCgroup: st.launch.SweepCgroup, Credential: st.cred, CgroupFD: st.cgroup}
	if st.target != nil {
		// The remote shell runs in the remote user's home; the local directory only has
		// to exist for ssh to start.
		c.Args = remote.Command(*st.target, st.strict, s.Workspace, a.program, args)
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
	t.pid, s.PID = pr.PID(), pr.PID()
	defer func() { s.PID = 0 }()
	if st.turns++; st.turns == 1 {
		for _, n := range st.notes {
			t.emit(agent.Event{Type: agent.EventNotification, Message: n})
		}
	}
	waited := false
	defer func() { // whatever happens below, nothing of the turn outlives RunTurn
		if !waited {
			pr.Stop()
			pr.Wait()
		}
	}()

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
		pr.Stop() // spec: on a scanner failure, stop the group, then wait
	}
	exit := pr.Wait()
	waited = true
	if st.target != nil {
		// Whatever the turn's end, nothing of it may go on running on the host: without
		// a terminal, the remote group gets no hangup when ssh ends.
		a.stopRemote(st, pr.Stderr().String())
	}
	return t.end(exit, readErr, pr.Stderr())
}

// stopRemote ends the remote agent of a turn that was stopped locally. Killing the
// local ssh does not reach it: without a terminal the remote shell gets no hangup, and
// the agent would go on changing the workspace while the issue is retried. It runs
// until the remote group is gone or the connection attempt fails.
func (a *adapter) stopRemote(st *session, stderr string) {
	remote.StopAnnounced(st.exe, st.env, *st.target, st.strict, stderr, a.grace)
}

// StopSession stops the running turn, if any, gracefully, and makes later turns fail.
func (a *adapter) StopSession(ctx context.Context, s *agent.Session) error {
	st, ok := s.Internal.(*session)
	if !ok {
		return nil
	}
	st.guard.Stop()
	return nil
}

// turn is one RunTurn.
type turn struct {
	s       *agent.Session
	st      *session
	tr      *translator
	onEvent func(agent.Event)
	now     func() time.Time
	pid     int
	// remotePGID is the remote process group over SSH, once announced; 0 otherwise.
	remotePGID int
	pgidRead   bool   // the announced group was looked for (once, at the first line)
	name       string // what ran: "claude", or "ssh to <host>" (whose pid is the local ssh's)
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

// end maps the exit and the result line to the turn's outcome (spec, "Exit code
// mapping"), commits the turn's usage to the session, emits the terminal event and
// builds the result.
func (t *turn) end(exit proc.Exit, readErr error, stderr *proc.HeadTailBuffer) (agent.TurnResult, error) {
	tr := t.tr
	tr.openTools()
	if tr.sessionID != "" {
		t.s.ID = tr.sessionID
		t.st.created = true // the CLI has a conversation under this id now
	}
	t.st.usage, t.st.cost = tr.usage(), tr.cost()
	if tr.result != nil && tr.result.TotalCostUSD != nil {
		t.st.lastTotal = *tr.result.TotalCostUSD
	}

	kind := proc.Classify(exit, readErr)
	switch {
	case kind == agent.ErrTurnCancelled:
		return t.fail(agent.EventTurnCancelled, agent.Errorf(kind, "%s (pid %d): turn cancelled (%s)", t.name, t.pid, exit))
	case kind != "":
		msg := fmt.Sprintf("%s (pid %d): %s", t.name, t.pid, exit)
		if readErr != nil {
			msg = fmt.Sprintf("%s (pid %d): reading its output: %v (%s)", t.name, t.pid, readErr, exit)
		}
		if kind == agent.ErrNotFound {
			msg += "; the CLI was not found (check agent.command and PATH, on the SSH host in SSH mode)"
		}
		if tr.result != nil && tr.result.IsError {
			msg += "; " + resultError(tr.result)
		}
		if tail := stderrTail(stderr); tail != "" {
			msg += "; stderr: " + tail
		}
		if t.st.configDir != "" && t.st.login == "" && notLoggedIn(msg) {
			msg += "; " + authHint
		}
		return t.fail(agent.EventTurnFailed, agent.Errorf(kind, "%s", msg))
	case tr.result == nil && tr.turn.output > 0:
		// Partial output without a result line counts as success (spec).
		return t.complete("exited without a result line after producing output")
	case tr.result == nil:
		msg := fmt.Sprintf("%s (pid %d): exited 0 without a result line or any output", t.name, t.pid)
		if tail := stderrTail(stderr); tail != "" {
			msg += "; stderr: " + tail
		}
		return t.fail(agent.EventTurnFailed, agent.Errorf(agent.ErrTurnFailed, "%s", msg))
	case tr.result.IsError || tr.result.Subtype != "success":
		return t.fail(agent.EventTurnFailed, agent.Errorf(agent.ErrTurnFailed, "claude: %s", resultError(tr.result)))
	}
	return t.complete(tr.result.Result)
}

func (t *turn) complete(msg string) (agent.TurnResult, error) {
	t.emit(agent.Event{Type: agent.EventTurnCompleted, Usage: t.st.usage, CostUSD: t.st.cost,
		APIDurationMS: t.tr.pendingAPI, Message: agent.Truncate(msg, maxSummary)})
	return t.resultOf(agent.EventTurnCompleted), nil
}

// fail emits the terminal event of type reason carrying err's text and returns err.
func (t *turn) fail(reason agent.EventType, err error) (agent.TurnResult, error) {
	ev := agent.Event{Type: reason, Usage: t.st.usage, CostUSD: t.st.cost, Message: err.Error()}
	if t.tr != nil {
		ev.APIDurationMS = t.tr.pendingAPI
	}
	t.emit(ev)
	return t.resultOf(reason), err
}

func (t *turn) resultOf(reason agent.EventType) agent.TurnResult {
	return agent.TurnResult{SessionID: t.s.ID, ExitReason: reason, Usage: t.st.usage, CostUSD: t.st.cost, PID: t.pid}
}

// stderrTail is the end of the CLI's stderr, enough to explain a failure in one line.
func stderrTail(b *proc.HeadTailBuffer) string {
	return agent.Tail(stripANSI(remote.StripPGID(b.String())), 1024)
}

// stateDirs are where the CLI keeps its own state, which a confined CLI must be able to
// write: $CLAUDE_CONFIG_DIR when set (the issue's own directory unless the operator
// set it), otherwise ~/.claude and ~/.claude.json. The first is a directory.
func stateDirs(env []string) []string {
	if dir := agent.EnvValue(env, "CLAUDE_CONFIG_DIR"); dir != "" {
		return []string{dir}
	}
	home := agent.EnvValue(env, "HOME")
	if home == "" {
		return nil
	}
	return []string{filepath.Join(home, ".claude"), filepath.Join(home, ".claude.json")}
}
