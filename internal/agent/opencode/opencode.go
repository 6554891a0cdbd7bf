// Package opencode is the `opencode` agent adapter: it runs the OpenCode CLI once per
// turn (`opencode run --format json`, the prompt on standard input), locally or on an
// SSH host, reads its JSON event lines and normalises them into agent events with
// cumulative token usage, cost and tool-call timing. Sessions continue with
// `--session <id>`, the id the CLI reports on its first line.
//
// Locally, every turn runs with OpenCode's configuration, data, state and cache
// directories in a place of the daemon's own, one per issue (issueDir), so
// that an operator's personal OpenCode configuration cannot change or break a run and
// one issue's agent cannot reach another's sessions, while sessions still resume across
// turns and daemon restarts. A confined CLI writes only its issue's data, state and
// cache; the configuration directory is emptied before every turn. The adapter's configuration (Sortie's MCP server, the
// operator's `opencode:` block) reaches the CLI inline, in OPENCODE_CONFIG_CONTENT.
//
// docs/agents/opencode.md is the operator's reference, including what the real CLI
// (1.18.33) made us decide.
package opencode

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

// Kind is the agent.kind that selects this adapter, and the name of its block in
// WORKFLOW.md.
const Kind = "opencode"

// DefaultCommand is the CLI the adapter runs when agent.command is empty.
const DefaultCommand = "opencode"

func init() {
	agent.Register(Kind, agent.Meta{RequiresCommand: true, DefaultCommand: DefaultCommand, Env: EnvNames}, New)
}

// adapter serves every opencode session.
type adapter struct {
	program     []string // agent.command split into words; program[0] is looked up on PATH
	opts        options
	warnings    []string
	workflowDir string
	readTimeout time.Duration
	env         []string      // the environment of the --version preflight (agent.Config.Env)
	grace       time.Duration // SIGTERM → SIGKILL; proc.DefaultGrace outside tests
	now         func() time.Time
}

// New builds the adapter. cfg.Options is the `opencode:` block: a value of the wrong
// type is an error naming the key; an unknown key is a warning.
func New(cfg agent.Config) (agent.Adapter, error) {
	opts, warnings, err := parseOptions(cfg.Options, cfg.WorkflowDir)
	if err != nil {
		return nil, err
	}
	return &adapter{program: cfg.Program(DefaultCommand), opts: opts, warnings: warnings, workflowDir: cfg.WorkflowDir,
		readTimeout: cfg.ReadTimeoutOrDefault(), env: cfg.Env, grace: proc.DefaultGrace, now: time.Now}, nil
}

// Warnings lists what was ignored in the `opencode:` block.
func (a *adapter) Warnings() []string { return a.warnings }

// versionTimeout is the least time Version gives the CLI.
const versionTimeout = 30 * time.Second

// Version runs `<command> --version` locally, with the environment agent turns get,
// and returns its first line, e.g. "1.18.33", or "" when that line is not a version.
// An error means the CLI cannot run here.
func (a *adapter) Version(ctx context.Context) (string, error) {
	exe, err := exec.LookPath(a.program[0])
	if err != nil {
		return "", &agent.Error{Kind: agent.ErrNotFound, Message: Kind + ": agent.command " + a.program[0], Err: err}
	}
	ctx, cancel := context.WithTimeout(ctx, max(a.readTimeout, versionTimeout))
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, append(a.program[1:], "--version")...)
	cmd.Env = a.env
	cmd.WaitDelay = time.Second
	out, err := cmd.Output()
	if err != nil {
		return "", &agent.Error{Kind: agent.ErrNotFound, Message: fmt.Sprintf("%s: %s --version", Kind, exe), Err: err}
	}
	v, _ := agent.VersionOf(out)
	return v, nil
}

// session is the adapter's per-session state (agent.Session.Internal).
type session struct {
	exe     string         // the resolved local binary: the CLI, or ssh in SSH mode
	target  *remote.Target // nil when local
	strict  string         // StrictHostKeyChecking in SSH mode
	env     []string       // the local process's environment
	program []string       // what runs: the CLI's words, after `env VAR=…` over SSH
	// stdinHead goes to the CLI's standard input before the prompt: over SSH, the line
	// the remote shell reads the inline configuration from (remoteProgram).
	stdinHead string
	launch    agent.Launch // how the CLI is confined and supervised; zero over SSH
	cred      *syscall.Credential
	cgroup    int

	// stateDir is the issue's isolated OpenCode directory (issueDir), prepared again
	// before every local turn with base and owner; "" over SSH.
	stateDir string
	base     []string
	owner    *runas.User

	guard proc.Guard // one process at a time; StopSession stops it

	// Touched only by the goroutine running the current turn; the guard keeps turns apart.
	usage agent.Usage // cumulative for the session
	cost  float64     // cumulative for the session
}

// StartSession checks the workspace, resolves the binary (ssh in SSH mode, where the CLI
// is looked up on the remote host when the turn runs), prepares the isolated OpenCode
// directories and builds the configuration every turn passes. It spawns nothing. A new
// session has no id until its first turn reports one.
func (a *adapter) StartSession(ctx context.Context, p agent.StartParams) (*agent.Session, error) {
	if err := agent.CheckWorkspace(p.Workspace); err != nil {
		return nil, err
	}
	base := p.Env
	if base == nil {
		base = os.Environ()
	}
	servers, err := a.servers(p.MCPConfigPath)
	if err != nil {
		return nil, &agent.Error{Kind: agent.ErrPortExit, Message: Kind + ": MCP configuration", Err: err}
	}
	content, err := a.opts.inlineConfig(servers)
	if err != nil {
		return nil, &agent.Error{Kind: agent.ErrPortExit, Message: Kind + ": configuration", Err: err}
	}

	st := &session{strict: p.SSHStrictHostKeyChecking}
	if p.SSHHost != "" {
		t, perr := remote.ParseTarget(p.SSHHost)
		if perr != nil {
			return nil, &agent.Error{Kind: agent.ErrPortExit, Message: Kind + ": worker.ssh_hosts", Err: perr}
		}
		st.target = &t
		if st.exe, err = exec.LookPath("ssh"); err != nil {
			return nil, &agent.Error{Kind: agent.ErrNotFound, Message: Kind + ": ssh client for host " + p.SSHHost, Err: err}
		}
		st.env = base
		st.program, st.stdinHead = remoteProgram(content, a.opts.ConfigFile, a.program)
		return &agent.Session{ID: p.ResumeSessionID, Workspace: p.Workspace, SSHHost: p.SSHHost, Internal: st}, nil
	}

	if st.exe, err = exec.LookPath(a.program[0]); err != nil {
		return nil, &agent.Error{Kind: agent.ErrNotFound, Message: Kind + ": agent.command " + a.program[0], Err: err}
	}
	if st.stateDir, err = issueDir(base, a.opts.StateDir, a.workflowDir, p.Workspace, p.RunAs); err != nil {
		return nil, &agent.Error{Kind: agent.ErrPortExit, Message: Kind, Err: err}
	}
	st.base, st.owner = base, p.RunAs
	dirs, err := prepareState(st.stateDir, base, p.RunAs)
	if err != nil {
		return nil, &agent.Error{Kind: agent.ErrPortExit, Message: Kind, Err: err}
	}
	// The CLI (a Bun program) takes its directory from $PWD when set, and the daemon's
	// would make it open an instance there as well, whose watchers kept the 1.18.33
	// process from exiting after its turn.
	vars := append(dirs.vars, "PWD="+p.Workspace)
	st.env = turnEnv(base, vars, content, a.opts.ConfigFile)
	st.program = a.program
	if p.Confine != nil {
		// The issue's configuration and git's are read, never written: the CLI loads
		// code and instructions from the first, and git commands of the daemon's hooks
		// run outside the confinement with the second.
		c := *p.Confine
		c.Policy.Read = append(slices.Clone(c.Policy.Read), dirs.read...)
		p.Confine = &c
	}
	st.launch = agent.LocalLaunch(p, st.exe, dirs.write, nil)
	st.cred = p.RunAs.Credential()
	st.cgroup = p.Supervise.Cgroup()
	return &agent.Session{ID: p.ResumeSessionID, Workspace: p.Workspace, Internal: st}, nil
}

// servers are the MCP servers of the session: those of the daemon's generated
// .sortie/mcp.json (which already holds the operator's mcp_config and Sortie's own
// server) or, without one, those of mcp_config.
func (a *adapter) servers(generated string) (map[string]any, error) {
	switch {
	case generated != "":
		return mcpServers(generated)
	case a.opts.MCPConfig != "":
		return mcpServers(a.opts.MCPConfig)
	}
	return nil, nil
}

// args are the CLI arguments of one turn; the prompt goes to standard input, since the
// CLI wraps a message argument that holds a space in quotes, and a prompt may be longer
// than one argument can be.
func (a *adapter) args(sessionID, workspace string) []string {
	args := []string{"run", "--format", "json"}
	if sessionID != "" {
		args = append(args, "--session", sessionID)
	} else {
		// A title of our own: without one, the CLI spends a model request on it. The
		// workspace's name is the issue's key.
		args = append(args, "--title=sortie "+filepath.Base(workspace))
	}
	if a.opts.Model != "" {
		args = append(args, "--model", a.opts.Model)
	}
	if a.opts.Agent != "" {
		args = append(args, "--agent", a.opts.Agent)
	}
	if a.opts.Variant != "" {
		args = append(args, "--variant", a.opts.Variant)
	}
	if a.opts.autoApprove() {
		args = append(args, "--auto")
	}
	return args
}

// RunTurn runs the CLI once with the prompt on its standard input and translates its
// stdout into events, delivered in order through p.OnEvent before it returns. The last
// event is always the turn's terminal one, sent after the process has exited.
func (a *adapter) RunTurn(ctx context.Context, s *agent.Session, p agent.TurnParams) (agent.TurnResult, error) {
	st, ok := s.Internal.(*session)
	if !ok {
		return agent.TurnResult{}, fmt.Errorf("%s: session %q was not started by this adapter", Kind, s.ID)
	}
	t := &turn{s: s, st: st, onEvent: p.OnEvent, now: a.now, name: "opencode", resumed: s.ID != ""}
	if st.target != nil {
		t.name = "ssh to " + st.target.Host
	}
	t.tr = newTranslator(t.emit, st.usage, st.cost, a.opts.modelName())

	if st.stateDir != "" {
		// Whatever the previous turn's agent left in the configuration directory goes
		// before this turn's CLI could load it.
		if _, err := prepareState(st.stateDir, st.base, st.owner); err != nil {
			return t.fail(agent.EventStartupFailed, &agent.Error{Kind: agent.ErrPortExit, Message: Kind, Err: err})
		}
	}
	args := a.args(s.ID, s.Workspace)
	c := proc.Command{Path: st.exe, Args: append(append([]string(nil), st.program[1:]...), args...),
		Dir: s.Workspace, Env: st.env, Stdin: strings.NewReader(st.stdinHead + p.Prompt), Grace: a.grace, Wrap: st.launch.Wrap,
		Confine: st.launch.Confine, SweepCgroup: st.launch.SweepCgroup, Credential: st.cred, CgroupFD: st.cgroup}
	if st.target != nil {
		// The remote shell runs in the remote user's home; the local directory only has
		// to exist for ssh to start.
		c.Args = remote.Command(*st.target, st.strict, s.Workspace, st.program, args)
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
		pr.Stop() // on a reader failure, stop the group, then wait
	}
	exit := pr.Wait()
	waited = true
	if st.target != nil {
		// Without a terminal the remote group gets no hangup when ssh ends.
		remote.StopAnnounced(st.exe, st.env, *st.target, st.strict, pr.Stderr().String(), a.grace)
	}
	return t.end(exit, readErr, pr.Stderr())
}

// StopSession stops the running turn, if any, gracefully, and makes later turns fail.
func (a *adapter) StopSession(ctx context.Context, s *agent.Session) error {
	if st, ok := s.Internal.(*session); ok {
		st.guard.Stop()
	}
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
	name       string // what ran: "opencode", or "ssh to <host>"
	resumed    bool   // the turn continued a session by its id
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

// end maps the exit and the events seen to the turn's outcome, commits the turn's
// usage to the session, emits the terminal event and builds the result.
//
// The CLI (1.18.33) exits 1 after an error line (a provider error it did not retry,
// say) and 1 with nothing on stdout when it cannot start the turn (an unknown session,
// an empty prompt); a permission request it had to reject ends the turn with exit 0
// before the model answered.
func (t *turn) end(exit proc.Exit, readErr error, stderr *proc.HeadTailBuffer) (agent.TurnResult, error) {
	tr := t.tr
	if tr.sessionID != "" {
		t.s.ID = tr.sessionID
	}
	t.st.usage, t.st.cost = tr.usage, tr.cost

	kind := proc.Classify(exit, readErr)
	if kind == "" && exit.Stopped {
		kind = agent.ErrTurnCancelled // StopSession ended the turn
	}
	switch {
	case kind == agent.ErrTurnCancelled:
		return t.fail(agent.EventTurnCancelled, agent.Errorf(kind, "%s (pid %d): turn cancelled (%s)", t.name, t.pid, exit))
	case len(tr.errors) > 0 && readErr == nil && (kind == "" || kind == agent.ErrPortExit):
		// The CLI reported the failure itself: a failed turn, not a crashed process.
		msg := fmt.Sprintf("%s (pid %d): %s; %s", t.name, t.pid, exit, strings.Join(tr.errors, "; "))
		return t.fail(agent.EventTurnFailed, agent.Errorf(agent.ErrTurnFailed, "%s", msg))
	case kind != "":
		msg := fmt.Sprintf("%s (pid %d): %s", t.name, t.pid, exit)
		if readErr != nil {
			msg = fmt.Sprintf("%s (pid %d): reading its output: %v (%s)", t.name, t.pid, readErr, exit)
		}
		if kind == agent.ErrNotFound {
			msg += "; the CLI was not found (check agent.command and PATH, on the SSH host in SSH mode)"
		}
		if kind == agent.ErrPortExit && t.st.target != nil && exit.Code == 255 {
			msg += "; ssh could not reach or log in to " + t.s.SSHHost
		}
		tail := stderrTail(stderr)
		if tail != "" {
			msg += "; stderr: " + tail
		}
		if t.resumed && strings.Contains(tail, "Session not found") {
			msg += fmt.Sprintf(" (OpenCode has no session %s in its data directory; was %s.state_dir changed?)", t.s.ID, Kind)
		}
		return t.fail(agent.EventTurnFailed, agent.Errorf(kind, "%s", msg))
	case tr.events == 0:
		// A clean exit that said nothing did nothing: never a completed turn.
		msg := fmt.Sprintf("%s (pid %d): exited 0 without any output", t.name, t.pid)
		if tr.lines > 0 {
			msg = fmt.Sprintf("%s (pid %d): exited 0 without a single OpenCode event (%d unreadable lines)", t.name, t.pid, tr.lines)
		}
		if tail := stderrTail(stderr); tail != "" {
			msg += "; stderr: " + tail
		}
		return t.fail(agent.EventTurnFailed, agent.Errorf(agent.ErrTurnFailed, "%s", msg))
	case tr.rejected != "" && tr.lastReason == "tool-calls":
		msg := fmt.Sprintf("%s (pid %d): OpenCode rejected a permission request of the %s tool and stopped before the model answered; "+
			"a headless run cannot approve requests, so allow what the agent needs in %s.permission", t.name, t.pid, tr.rejected, Kind)
		return t.fail(agent.EventTurnInputRequired, agent.Errorf(agent.ErrTurnInputRequired, "%s", msg))
	}
	return t.complete()
}

func (t *turn) complete() (agent.TurnResult, error) {
	msg := t.tr.lastText
	if msg == "" {
		msg = "turn completed"
	}
	t.emit(agent.Event{Type: agent.EventTurnCompleted, Usage: t.st.usage, CostUSD: t.st.cost, Model: t.tr.model,
		Message: agent.Truncate(msg, maxSummary)})
	return t.resultOf(agent.EventTurnCompleted), nil
}

// fail emits the terminal event of type reason carrying err's text and returns err.
func (t *turn) fail(reason agent.EventType, err error) (agent.TurnResult, error) {
	t.emit(agent.Event{Type: reason, Usage: t.st.usage, CostUSD: t.st.cost, Message: err.Error()})
	return t.resultOf(reason), err
}

func (t *turn) resultOf(reason agent.EventType) agent.TurnResult {
	return agent.TurnResult{SessionID: t.s.ID, ExitReason: reason, Usage: t.st.usage, CostUSD: t.st.cost, PID: t.pid}
}

// stderrTail is the end of the CLI's stderr without colours, enough to explain a
// failure in one line.
func stderrTail(b *proc.HeadTailBuffer) string {
	return agent.Tail(stripANSI(remote.StripPGID(b.String())), 1024)
}

// stripANSI removes terminal escape sequences (CSI ... letter), which the CLI puts in
// its error messages even when stderr is not a terminal.
func stripANSI(s string) string {
	if !strings.Contains(s, "\x1b[") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == 0x1b && i+1 < len(s) && s[i+1] == '[' {
			j := i + 2
			for j < len(s) && (s[j] < 0x40 || s[j] > 0x7e) {
				j++
			}
			i = j
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
