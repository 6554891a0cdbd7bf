// Package codex is the `codex` agent adapter: it runs one `codex app-server` per agent
// session, kept alive across the session's turns, and drives it over the app-server's
// JSON-RPC stdio protocol (initialize → initialized → thread/start or thread/resume →
// turn/start per turn). It normalises the server's notifications into agent events with
// cumulative token usage, answers its approval requests under a documented policy, and
// maps its failures to the agent error kinds. The session id is codex's thread id.
//
// Codex runs with a CODEX_HOME of Sortie's own (home.go), so that an operator's
// ~/.codex configuration cannot change runs. docs/agents/codex.md is the operator's
// reference, including what the pinned CLI (0.169.0) made us decide.
package codex

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"sortie/internal/agent"
	"sortie/internal/agent/cli"
	"sortie/internal/agent/proc"
	"sortie/internal/runas"
)

// DefaultTurnTimeout is how long a turn may go without a message from the app-server
// when codex.turn_timeout_ms is unset (Symphony's default).
const DefaultTurnTimeout = time.Hour

// versionTimeout is the least time Version gives the CLI.
const versionTimeout = 30 * time.Second

// optOut are the notifications the adapter asks the app-server not to send: streaming
// deltas, which it does not read, would otherwise cost a line per token.
var optOut = []string{
	"item/agentMessage/delta", "item/commandExecution/outputDelta", "item/fileChange/outputDelta",
	"item/reasoning/summaryTextDelta", "item/reasoning/summaryPartAdded", "item/reasoning/textDelta",
	"item/plan/delta", "command/exec/outputDelta", "process/outputDelta",
	"rawResponseItem/completed", "rawResponse/completed",
}

// adapter serves every codex session.
type adapter struct {
	program     []string // agent.command split into words, ending in app-server; unused with codex.command
	opts        options
	warnings    []string
	readTimeout time.Duration // per JSON-RPC request
	turnTimeout time.Duration // silence within a turn
	env         []string      // the environment of the --version preflight (agent.Config.Env)
	workflowDir string
	grace       time.Duration // SIGTERM → SIGKILL; proc.DefaultGrace outside tests
	now         func() time.Time
	record      func([]byte) // test hook: every line the app-server writes
}

// New builds the adapter. cfg.Options is the `codex:` block: a value of the wrong type
// or an unknown enum value is an error naming the key; unknown keys are warnings.
func New(cfg agent.Config) (agent.Adapter, error) {
	opts, warnings, err := parseOptions(cfg.Options, cfg.WorkflowDir)
	if err != nil {
		return nil, err
	}
	a := &adapter{opts: opts, warnings: warnings, env: cfg.Env, workflowDir: cfg.WorkflowDir,
		grace: proc.DefaultGrace, now: time.Now, readTimeout: opts.ReadTimeout, turnTimeout: opts.TurnTimeout}
	if a.readTimeout == 0 {
		a.readTimeout = cfg.ReadTimeoutOrDefault()
	}
	if a.turnTimeout == 0 {
		a.turnTimeout = DefaultTurnTimeout
	}
	a.program = cfg.Program(DefaultCommand)
	if !slices.Contains(a.program[1:], "app-server") {
		// agent.command names the CLI (`codex`, `/opt/codex/bin/codex`); the adapter
		// always runs its app-server.
		a.program = append(a.program, "app-server")
	}
	if opts.UseLogin {
		a.warnings = append(a.warnings, "codex.use_login: codex uses a copy of the agent user's ChatGPT login (~/.codex/auth.json) in CODEX_HOME, "+
			"where the agent can read it: an injected agent can take its refresh token; prefer OPENAI_API_KEY or CODEX_API_KEY (docs/agents/codex.md#authentication)")
	}
	if opts.Command != "" && cfg.Command != "" && cfg.Command != DefaultCommand {
		a.warnings = append(a.warnings, fmt.Sprintf("codex.command (%q) is used; agent.command (%q) is ignored", opts.Command, cfg.Command))
	}
	return a, nil
}

// Warnings lists what was ignored in the `codex:` block.
func (a *adapter) Warnings() []string { return a.warnings }

// Version runs `codex --version` locally, with the environment agent turns get, and
// returns its first line, e.g. "codex-cli 0.169.0". With codex.command, the first word
// of that command line is asked, through bash -lc as the runs are. An error means the
// CLI cannot run here.
func (a *adapter) Version(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, max(a.readTimeout, versionTimeout))
	defer cancel()
	var cmd *exec.Cmd
	if a.opts.Command != "" {
		bash, err := exec.LookPath("bash")
		if err != nil {
			return "", &agent.Error{Kind: agent.ErrNotFound, Message: "codex: bash, to run codex.command", Err: err}
		}
		first := strings.Fields(a.opts.Command)[0]
		cmd = exec.CommandContext(ctx, bash, "-lc", first+" --version")
	} else {
		exe, err := exec.LookPath(a.program[0])
		if err != nil {
			return "", &agent.Error{Kind: agent.ErrNotFound, Message: "codex: agent.command " + a.program[0], Err: err}
		}
		cmd = exec.CommandContext(ctx, exe, "--version")
	}
	cmd.Env = a.env
	out, err := cli.Output(cmd)
	if err != nil {
		return "", &agent.Error{Kind: agent.ErrNotFound, Message: "codex: " + strings.Join(cmd.Args, " "), Err: err}
	}
	v, _ := agent.VersionOf(out)
	return v, nil
}

// session is the adapter's per-session state (agent.Session.Internal).
type session struct {
	cmd   proc.Command   // the app-server's process, without its stdin
	home  string         // CODEX_HOME, the issue's own (home.go)
	owner *runas.User    // agent.run_as, who owns home; nil for the daemon's user
	env   []string       // the app-server's environment
	mcp   map[string]any // mcp_servers for the thread's configuration
	notes []string       // said as notifications at the start of the first turn
	// authHint says how to give codex credentials when the session seems to have none;
	// it is added to a failed turn's error.
	authHint string
	// landlocked: Sortie confines the app-server with Landlock (agent.sandbox). Codex's
	// own sandbox cannot run inside it: its bubblewrap needs mounts, which Landlock
	// forbids to a confined process, and 0.169.0's Landlock fallback refuses
	// workspace-write without bubblewrap. So codex runs its commands unsandboxed
	// (danger-full-access) inside Sortie's confinement, which holds them to the
	// workspace (docs/agents/codex.md, "Sandboxes").
	landlocked bool

	mu      sync.Mutex
	conn    *conn // the running app-server, nil before the first turn and after a stop
	stopped bool  // StopSession ran: every later turn fails
	running bool  // a turn is running

	// Touched only by the goroutine running the current turn; running keeps turns apart.
	usage   agent.Usage
	marks   map[string]tokenTotals // per thread, its total at the last usage update (events.go)
	model   string
	turns   int
	started bool // the thread exists in codex (it was started or resumed once)
}

// StartSession checks the workspace, resolves the CLI, prepares CODEX_HOME and reads
// the MCP configuration. It spawns nothing: the first turn starts the app-server.
func (a *adapter) StartSession(ctx context.Context, p agent.StartParams) (*agent.Session, error) {
	if err := agent.CheckWorkspace(p.Workspace); err != nil {
		return nil, err
	}
	if p.SSHHost != "" {
		return nil, agent.Errorf(agent.ErrNotFound, "codex: running codex over SSH (worker.ssh_hosts, host %s) is not supported yet; run it locally or use claude-code or copilot-cli", p.SSHHost)
	}
	env := cli.Environ(p.Env)
	var exe string
	var args []string
	var err error
	if a.opts.Command != "" {
		// Symphony's form: a shell command line, run as bash -lc does.
		if exe, err = exec.LookPath("bash"); err != nil {
			return nil, &agent.Error{Kind: agent.ErrNotFound, Message: "codex: bash, to run codex.command", Err: err}
		}
		args = []string{"-lc", a.opts.Command}
	} else {
		if exe, err = exec.LookPath(a.program[0]); err != nil {
			return nil, &agent.Error{Kind: agent.ErrNotFound, Message: "codex: agent.command " + a.program[0], Err: err}
		}
		args = a.program[1:]
	}
	home, err := homeDir(env, a.opts.CodexHome, a.workflowDir, p.Workspace, p.RunAs)
	if err != nil {
		return nil, &agent.Error{Kind: agent.ErrPortExit, Message: "codex: CODEX_HOME", Err: err}
	}
	env = append(withoutKey(env, "CODEX_HOME"), "CODEX_HOME="+home)
	st := &session{home: home, owner: p.RunAs, env: env, started: p.ResumeSessionID != "", landlocked: p.Confine != nil}
	notes, err := a.prepareHome(st)
	if err != nil {
		return nil, err
	}
	st.notes = notes
	if st.authHint = a.authHint(env); st.authHint != "" {
		st.notes = append(st.notes, st.authHint)
	}
	if st.landlocked && cmp.Or(a.opts.ThreadSandbox, DefaultThreadSandbox) != "danger-full-access" {
		st.notes = append(st.notes, "codex: Sortie's Landlock confinement holds this session to its workspace; codex's own sandbox ("+
			cmp.Or(a.opts.ThreadSandbox, DefaultThreadSandbox)+") cannot run inside it and is off")
	}
	if p.MCPConfigPath != "" {
		servers, err := p.Servers()
		if err == nil {
			st.mcp, err = mcpServers(servers)
		}
		if err != nil {
			return nil, &agent.Error{Kind: agent.ErrPortExit, Message: "codex: reading the MCP configuration", Err: err}
		}
	}
	// Confined, the CLI's installation must be readable. With codex.command the program
	// started is bash; the installation to grant is that of the command line's first
	// word (codex, found on the agent's PATH as bash will find it).
	installed := exe
	if a.opts.Command != "" {
		if first := strings.Fields(a.opts.Command); len(first) > 0 {
			if p, err := lookPathIn(first[0], env); err == nil {
				installed = p
			}
		}
	}
	launch := agent.LocalLaunch(p, installed, []string{home}, nil)
	st.cmd = proc.Command{Path: exe, Args: args, Dir: p.Workspace, Env: env, Grace: a.grace,
		Wrap: launch.Wrap, Confine: launch.Confine, SweepCgroup: launch.SweepCgroup, Credential: p.RunAs.Credential(), CgroupFD: p.Supervise.Cgroup()}
	return &agent.Session{ID: p.ResumeSessionID, Workspace: p.Workspace, Internal: st}, nil
}

func withoutKey(env []string, key string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if k, _, _ := strings.Cut(kv, "="); k != key {
			out = append(out, kv)
		}
	}
	return out
}

// StopSession ends the app-server and everything in its process group, and makes later
// turns fail. A turn running at the time ends as turn_cancelled.
func (a *adapter) StopSession(ctx context.Context, s *agent.Session) error {
	st, ok := s.Internal.(*session)
	if !ok {
		return nil
	}
	st.mu.Lock()
	st.stopped = true
	c := st.conn
	st.conn = nil
	st.mu.Unlock()
	if c != nil {
		c.stop()
	}
	return nil
}

// RunTurn runs one turn: it starts the app-server and its thread when none runs (the
// first turn, or after a turn that had to stop it), then turn/start, and reads until the
// turn ends. Events are delivered in order through p.OnEvent before it returns; the last
// is the turn's terminal event.
func (a *adapter) RunTurn(ctx context.Context, s *agent.Session, p agent.TurnParams) (agent.TurnResult, error) {
	st, ok := s.Internal.(*session)
	if !ok {
		return agent.TurnResult{}, fmt.Errorf("codex: session %q was not started by this adapter", s.ID)
	}
	t := &turn{a: a, s: s, st: st, onEvent: p.OnEvent}
	st.mu.Lock()
	switch {
	case st.stopped:
		st.mu.Unlock()
		return t.fail(agent.EventTurnCancelled, agent.Errorf(agent.ErrTurnCancelled, "codex: session already stopped"))
	case st.running:
		st.mu.Unlock()
		return t.fail(agent.EventTurnFailed, agent.Errorf(agent.ErrResponse, "codex: a turn of this session is already running"))
	}
	st.running = true
	c := st.conn
	st.mu.Unlock()
	defer func() {
		st.mu.Lock()
		st.running = false
		st.mu.Unlock()
	}()
	if st.marks == nil {
		st.marks = map[string]tokenTotals{}
	}
	t.tr = newTranslator(a.now, t.emit, st.usage, st.marks)
	t.tr.threadID, t.tr.model = s.ID, st.model
	defer func() { st.usage = t.tr.usage }()

	how := "continuing thread " + s.ID
	if c == nil || c.ended() {
		if c != nil {
			a.drop(st, c)
		}
		var err error
		if c, err = a.spawn(ctx, st); err != nil {
			reason := agent.EventStartupFailed
			if agent.KindOf(err) == agent.ErrTurnCancelled {
				reason = agent.EventTurnCancelled
			}
			return t.fail(reason, err)
		}
		t.c = c
		s.PID, t.pid = c.p.PID(), c.p.PID()
		if how, err = t.handshake(ctx); err != nil {
			return t.failConn(err)
		}
	}
	t.c = c
	t.pid = c.p.PID()
	s.PID = t.pid
	st.turns++

	t.emit(agent.Event{Type: agent.EventSessionStarted, Message: fmt.Sprintf("turn %d: %s", p.TurnNumber, how)})
	if st.turns == 1 {
		for _, n := range st.notes {
			t.emit(agent.Event{Type: agent.EventNotification, Message: n})
		}
	}
	return t.run(ctx, p.Prompt)
}

// prepareHome makes the session's CODEX_HOME ready for an app-server: created, reset,
// config.toml rewritten from the adapter's options, the login copied (home.go). It
// returns notes for the first turn.
func (a *adapter) prepareHome(st *session) ([]string, error) {
	notes, err := prepareHome(st.home, st.owner, a.opts.configTOML(), st.env, a.opts.UseLogin)
	if err != nil {
		return nil, &agent.Error{Kind: agent.ErrPortExit, Message: "codex", Err: err}
	}
	return notes, nil
}

// authHint is what to do when a session with environment env has no credentials for
// OpenAI's API: no OPENAI_API_KEY or CODEX_API_KEY, no codex.use_login, and no
// provider of the workflow's own (whose env_key is the operator's business). "" when
// it has some.
func (a *adapter) authHint(env []string) string {
	if a.opts.UseLogin || (a.opts.ModelProvider != "" && a.opts.ModelProvider != "openai") ||
		agent.EnvValue(env, "OPENAI_API_KEY") != "" || agent.EnvValue(env, "CODEX_API_KEY") != "" {
		return ""
	}
	return "codex: no credentials: the agent's environment has no OPENAI_API_KEY or CODEX_API_KEY, and codex.use_login is off; " +
		"set one of the keys in the daemon's environment, or codex.use_login: true to let codex use a copy of ~/.codex/auth.json, which the agent can then read (docs/agents/codex.md#authentication)"
}

// spawn starts the session's app-server unless the session was stopped. CODEX_HOME is
// reset first: what the agent wrote there during an earlier app-server's life is not
// loaded by the next.
func (a *adapter) spawn(ctx context.Context, st *session) (*conn, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.stopped {
		return nil, agent.Errorf(agent.ErrTurnCancelled, "codex: session already stopped")
	}
	if _, err := a.prepareHome(st); err != nil {
		return nil, err
	}
	c, err := startConn(ctx, st.cmd, a.record)
	if err != nil {
		return nil, &agent.Error{Kind: proc.ClassifyStart(err), Message: "codex: starting " + st.cmd.Path, Err: err}
	}
	st.conn = c
	return c, nil
}

// drop stops c and forgets it, so that the next turn starts a new app-server and
// resumes the thread.
func (a *adapter) drop(st *session, c *conn) proc.Exit {
	st.mu.Lock()
	if st.conn == c {
		st.conn = nil
	}
	st.mu.Unlock()
	return c.stop()
}

// turn is one RunTurn.
type turn struct {
	a       *adapter
	s       *agent.Session
	st      *session
	c       *conn
	tr      *translator
	onEvent func(agent.Event)
	pid     int
	turnID  string
}

func (t *turn) emit(e agent.Event) {
	e.Time = t.a.now()
	e.PID = t.pid
	e.SessionID = t.s.ID
	if t.onEvent != nil {
		t.onEvent(e)
	}
}

// handshake initializes the new app-server and starts the session's thread, or resumes
// it. It returns how the thread was opened, for session_started.
func (t *turn) handshake(ctx context.Context) (string, error) {
	_, err := t.call(ctx, "initialize", map[string]any{
		"clientInfo": map[string]any{"name": "sortie", "title": "Sortie", "version": "1"},
		"capabilities": map[string]any{"experimentalApi": false, "requestAttestation": false,
			"optOutNotificationMethods": optOut},
	})
	if err != nil {
		return "", err
	}
	if err := t.c.send(notification{Method: "initialized"}, t.a.readTimeout); err != nil {
		return "", t.connError("sending initialized", err)
	}
	o := t.a.opts
	params := map[string]any{"cwd": t.s.Workspace}
	policy := o.ApprovalPolicy
	if policy == nil {
		policy = DefaultApprovalPolicy
	}
	params["approvalPolicy"] = policy
	params["sandbox"] = cmp.Or(o.ThreadSandbox, DefaultThreadSandbox)
	if o.Model != "" {
		params["model"] = o.Model
	}
	if o.ModelProvider != "" {
		params["modelProvider"] = o.ModelProvider
	}
	config := map[string]any{}
	for k, v := range o.Config {
		config[k] = v
	}
	if len(t.st.mcp) > 0 {
		config["mcp_servers"] = t.st.mcp
	}
	if t.st.landlocked {
		params["sandbox"] = "danger-full-access"
	}
	if len(config) > 0 {
		params["config"] = config
	}
	method, how := "thread/start", "new thread"
	if t.s.ID != "" {
		method, how = "thread/resume", "resuming thread "+t.s.ID
		params["threadId"] = t.s.ID
		params["excludeTurns"] = true
	}
	res, err := t.call(ctx, method, params)
	if err != nil {
		if method == "thread/resume" && agent.KindOf(err) == agent.ErrResponse {
			return "", &agent.Error{Kind: agent.ErrResponse, Message: "codex: thread " + t.s.ID + " cannot be resumed (was CODEX_HOME cleared?)", Err: err}
		}
		return "", err
	}
	var r struct {
		Thread struct {
			ID string `json:"id"`
		} `json:"thread"`
		Model string `json:"model"`
	}
	if err := json.Unmarshal(res, &r); err != nil || r.Thread.ID == "" {
		return "", agent.Errorf(agent.ErrResponse, "codex: %s answered without a thread id: %s", method, agent.Excerpt(res, 200))
	}
	if r.Model != "" {
		t.tr.model = r.Model
		t.st.model = r.Model
	}
	t.s.ID = r.Thread.ID
	t.tr.threadID = r.Thread.ID
	if method == "thread/start" {
		t.st.marks[r.Thread.ID] = tokenTotals{} // a new thread counts from zero
		how = "new thread " + r.Thread.ID
	}
	t.st.started = true
	return how, nil
}

// call sends a request and reads until its answer, handling whatever comes before it.
// Each request has read_timeout_ms for its answer.
func (t *turn) call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	t.c.nextID++
	id := t.c.nextID
	if err := t.c.send(request{ID: id, Method: method, Params: params}, t.a.readTimeout); err != nil {
		return nil, t.connError("sending "+method, err)
	}
	timer := time.NewTimer(t.a.readTimeout)
	defer timer.Stop()
	for {
		l, err := t.c.next(ctx, timer.C)
		switch {
		case errors.Is(err, errTimeout):
			return nil, agent.Errorf(agent.ErrResponseTimeout, "codex: no answer to %s within %s (codex.read_timeout_ms)", method, t.a.readTimeout)
		case err != nil:
			return nil, t.connError("waiting for the answer to "+method, err)
		}
		m, kind, perr := parseMessage(l)
		if perr == nil && kind == kindResponse {
			if rid, ok := idOf(m.ID); ok && rid == id {
				if m.Error != nil {
					return nil, agent.Errorf(agent.ErrResponse, "codex: %s: %s (code %d)", method, agent.Truncate(m.Error.Message, maxMessage), m.Error.Code)
				}
				return m.Result, nil
			}
		}
		if err := t.handle(l); err != nil {
			return nil, err
		}
	}
}

// handle passes a line to the translator and sends the answer a server request needs.
func (t *turn) handle(l []byte) error {
	if reply := t.tr.line(l); reply != nil {
		if err := t.c.send(reply, t.a.readTimeout); err != nil {
			return t.connError("answering a request of codex", err)
		}
	}
	return nil
}

// connError describes why the connection failed: the turn's context (turn_cancelled),
// or the app-server's exit (agent_not_found for a shell's 127, else port_exit).
func (t *turn) connError(doing string, err error) error {
	if errors.Is(err, errCancelled) {
		return agent.Errorf(agent.ErrTurnCancelled, "codex (pid %d): turn cancelled while %s", t.pid, doing)
	}
	if !errors.Is(err, errExited) && !errors.Is(err, syscall.EPIPE) {
		// A write that did not finish: the app-server no longer reads.
		return &agent.Error{Kind: agent.ErrPortExit, Message: fmt.Sprintf("codex (pid %d): %s", t.pid, doing), Err: err}
	}
	exit := t.a.drop(t.st, t.c)
	kind := agent.ErrPortExit
	if exit.Code == 127 {
		kind = agent.ErrNotFound
	}
	t.st.mu.Lock()
	if t.st.stopped {
		kind = agent.ErrTurnCancelled // StopSession ended it
	}
	t.st.mu.Unlock()
	msg := fmt.Sprintf("codex (pid %d): the app-server exited (%s) while %s", t.pid, exit, doing)
	if t.c.readErr != nil {
		msg = fmt.Sprintf("codex (pid %d): reading its output: %v (%s)", t.pid, t.c.readErr, exit)
	}
	if kind == agent.ErrNotFound {
		msg += "; the CLI was not found (check codex.command or agent.command and PATH)"
	}
	if s := stderrOf(t.c); s != "" {
		msg += "; stderr: " + s
	}
	return agent.Errorf(kind, "%s", msg)
}

// run starts the turn and reads until it ends. Silence of turn_timeout_ms fails it.
func (t *turn) run(ctx context.Context, prompt string) (agent.TurnResult, error) {
	params := map[string]any{
		"threadId": t.s.ID,
		"input":    []any{map[string]any{"type": "text", "text": prompt, "text_elements": []any{}}},
	}
	if t.st.landlocked {
		params["sandboxPolicy"] = map[string]any{"type": "dangerFullAccess"}
	} else if t.a.opts.TurnSandboxPolicy != nil {
		params["sandboxPolicy"] = t.a.opts.TurnSandboxPolicy
	}
	if t.a.opts.Effort != "" {
		params["effort"] = t.a.opts.Effort
	}
	res, err := t.call(ctx, "turn/start", params)
	if err != nil {
		return t.failConn(err)
	}
	var r struct {
		Turn struct {
			ID string `json:"id"`
		} `json:"turn"`
	}
	if json.Unmarshal(res, &r) != nil || r.Turn.ID == "" {
		return t.failConn(agent.Errorf(agent.ErrResponse, "codex: turn/start answered without a turn id: %s", agent.Excerpt(res, 200)))
	}
	t.turnID = r.Turn.ID
	t.tr.setTurn(r.Turn.ID)

	timer := time.NewTimer(t.a.turnTimeout)
	defer timer.Stop()
	for t.tr.end == nil && t.tr.input == nil {
		l, err := t.c.next(ctx, timer.C)
		switch {
		case errors.Is(err, errTimeout):
			return t.failConn(agent.Errorf(agent.ErrTurnTimeout, "codex (pid %d): no message from the app-server for %s (codex.turn_timeout_ms)", t.pid, t.a.turnTimeout))
		case err != nil:
			return t.failConn(t.connError("running the turn", err))
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(t.a.turnTimeout)
		if err := t.handle(l); err != nil {
			return t.failConn(err)
		}
	}
	if in := t.tr.input; in != nil {
		t.interrupt(ctx)
		return t.fail(agent.EventTurnInputRequired, agent.Errorf(agent.ErrTurnInputRequired, "codex: %s; sortie answers no questions during a run (docs/agents/codex.md)", in.Message))
	}
	end := t.tr.end
	switch end.Status {
	case "completed":
		t.emit(agent.Event{Type: agent.EventTurnCompleted, Usage: t.tr.usage, Message: "turn completed"})
		return t.result(agent.EventTurnCompleted), nil
	case "interrupted":
		return t.fail(agent.EventTurnCancelled, agent.Errorf(agent.ErrTurnCancelled, "codex: the turn was interrupted"))
	}
	msg := end.Message
	if msg == "" {
		msg = t.tr.lastError
	}
	if msg == "" {
		msg = "no reason given"
	}
	if t.st.authHint != "" {
		msg += "; " + t.st.authHint
	}
	return t.fail(agent.EventTurnFailed, agent.Errorf(agent.ErrTurnFailed, "codex: turn %s: %s", end.Status, msg))
}

// interrupt asks codex to stop the turn after a request that needs a human was
// declined, and waits a read timeout for the turn to end; an app-server that does not
// comply is stopped (the next turn, if any, resumes the thread in a new one).
func (t *turn) interrupt(ctx context.Context) {
	if t.tr.end != nil {
		return
	}
	_, err := t.call(ctx, "turn/interrupt", map[string]any{"threadId": t.s.ID, "turnId": t.turnID})
	if err == nil {
		timer := time.NewTimer(t.a.readTimeout)
		defer timer.Stop()
		for t.tr.end == nil {
			l, nerr := t.c.next(ctx, timer.C)
			if nerr != nil {
				err = nerr
				break
			}
			if err = t.handle(l); err != nil {
				break
			}
		}
	}
	if err != nil {
		t.a.drop(t.st, t.c)
	}
}

// failConn ends a turn that failed on the connection: unless the app-server is known to
// be in a clean state, it is stopped (with its process group), so that nothing of the
// turn outlives RunTurn; the next turn starts another and resumes the thread.
func (t *turn) failConn(err error) (agent.TurnResult, error) {
	if t.c != nil {
		t.a.drop(t.st, t.c)
	}
	reason := agent.EventTurnFailed
	switch agent.KindOf(err) {
	case agent.ErrTurnCancelled:
		reason = agent.EventTurnCancelled
	case agent.ErrNotFound:
		reason = agent.EventStartupFailed
	}
	return t.fail(reason, err)
}

// fail emits the terminal event of type reason carrying err's text and returns err.
func (t *turn) fail(reason agent.EventType, err error) (agent.TurnResult, error) {
	var usage agent.Usage
	if t.tr != nil {
		usage = t.tr.usage
	} else {
		usage = t.st.usage
	}
	t.emit(agent.Event{Type: reason, Usage: usage, Message: err.Error()})
	return t.result(reason), err
}

func (t *turn) result(reason agent.EventType) agent.TurnResult {
	var usage agent.Usage
	if t.tr != nil {
		usage = t.tr.usage
	} else {
		usage = t.st.usage
	}
	return agent.TurnResult{SessionID: t.s.ID, ExitReason: reason, Usage: usage, PID: t.pid}
}

// stderrOf is a short tail of the app-server's stderr, for messages.
func stderrOf(c *conn) string {
	if c == nil {
		return ""
	}
	return agent.Tail(agent.StripANSI(strings.ToValidUTF8(c.p.Stderr().String(), "\uFFFD")), 1024)
}

// lookPathIn finds name as a shell would with the PATH of env: a name with a slash is
// taken as it is.
func lookPathIn(name string, env []string) (string, error) {
	if strings.Contains(name, "/") {
		return exec.LookPath(name)
	}
	for _, dir := range filepath.SplitList(agent.EnvValue(env, "PATH")) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue
		}
		if p, err := exec.LookPath(filepath.Join(dir, name)); err == nil {
			return p, nil
		}
	}
	return "", exec.ErrNotFound
}
