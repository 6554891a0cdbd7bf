// Package mock is the `mock` agent adapter: a real fork-per-turn adapter whose "CLI" is
// the running executable itself in a hidden child mode, so that demos and orchestrator
// tests exercise process groups, signals, stalls and exit mapping exactly as with the
// real CLIs, without credentials or network. What each turn does (outcome, delay,
// events, tokens, files, .sortie/status) comes from the `mock:` block of WORKFLOW.md,
// per issue if asked; docs/agents/mock.md is the reference.
//
// The package owns the adapter, the child (IsChild, ChildMain) and the JSONL format
// between them. Process handling is internal/agent/proc's.
package mock

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
	"unicode/utf8"

	"sortie/internal/agent"
	"sortie/internal/agent/proc"
	"sortie/internal/runas"
)

// Kind is the agent.kind that selects this adapter.
const Kind = "mock"

func init() {
	agent.Register(Kind, agent.Meta{Env: EnvNames, Options: optionSpecs}, New)
}

// adapter serves every mock session; per-session state is in *session.
type adapter struct {
	exe   string   // program to run: agent.command's first field, or this executable
	args  []string // agent.command's other fields
	opts  options
	grace time.Duration // SIGTERM → SIGKILL; proc.DefaultGrace outside tests
	now   func() time.Time
}

// New builds the mock adapter from cfg. cfg.Options is the `mock:` block; it is
// validated here, so that a typo fails at startup with the key's path. agent.command is
// optional: when set, its first field is run instead of this executable (with the
// other fields as leading arguments), and must speak the child protocol.
func New(cfg agent.Config) (agent.Adapter, error) {
	opts, err := parseOptions(cfg.Options)
	if err != nil {
		return nil, err
	}
	a := &adapter{opts: opts, grace: proc.DefaultGrace, now: time.Now}
	if fields := strings.Fields(cfg.Command); len(fields) > 0 {
		a.exe, a.args = fields[0], fields[1:]
	} else if a.exe, err = os.Executable(); err != nil {
		return nil, fmt.Errorf("mock: finding this executable to run as the mock agent: %w", err)
	}
	return a, nil
}

// session is the adapter's per-session state (agent.Session.Internal).
type session struct {
	exe    string
	env    []string
	launch agent.Launch // how the child is confined and supervised
	user   *runas.User  // agent.run_as's user, nil for the daemon's
	// cgroup is the run's cgroup v2 directory (fd), 0 for none.
	cgroup int

	guard proc.Guard // one process at a time; StopSession stops it

	// usage is the session's cumulative token usage. Only the goroutine running the
	// current turn touches it; the guard keeps turns from overlapping.
	usage agent.Usage
}

// StartSession checks the workspace and the program, and picks the session id: the
// resumed one, or a new random UUID. It spawns nothing. The mock always runs locally;
// SSH settings are kept on the session but not used.
func (a *adapter) StartSession(ctx context.Context, p agent.StartParams) (*agent.Session, error) {
	if err := agent.CheckWorkspace(p.Workspace); err != nil {
		return nil, err
	}
	exe, err := exec.LookPath(a.exe)
	if err != nil {
		return nil, &agent.Error{Kind: agent.ErrNotFound, Message: "mock: agent.command", Err: err}
	}
	id := p.ResumeSessionID
	if id == "" {
		id = agent.NewSessionID()
	}
	base := p.Env
	if base == nil {
		base = os.Environ()
	}
	env := append(withoutKey(base, ChildEnv), ChildEnv+"="+childModeTurn)
	return &agent.Session{
		ID: id, Workspace: p.Workspace, SSHHost: p.SSHHost,
		Internal: &session{exe: exe, env: env, launch: agent.LocalLaunch(p, exe, nil, nil), user: p.RunAs, cgroup: p.Supervise.Cgroup()},
	}, nil
}

// RunTurn runs one child process and translates its stdout into events, delivered in
// order through p.OnEvent before it returns. The last event is always the turn's
// terminal event (turn_completed, turn_failed, turn_input_required or turn_cancelled),
// sent once the child has exited so that the exit status can overrule the child's own
// result, as the claude-code spec's exit table does.
func (a *adapter) RunTurn(ctx context.Context, s *agent.Session, p agent.TurnParams) (agent.TurnResult, error) {
	st, ok := s.Internal.(*session)
	if !ok {
		return agent.TurnResult{}, fmt.Errorf("mock: session %q was not started by the mock adapter", s.ID)
	}
	t := &turn{a: a, s: s, st: st, onEvent: p.OnEvent}

	turnFile, err := a.writeTurnFile(s, p)
	if err != nil {
		return t.fail(agent.EventStartupFailed, &agent.Error{Kind: agent.ErrPortExit, Message: "mock: writing the turn file", Err: err})
	}
	defer os.Remove(turnFile)

	pr, err := st.guard.Start(ctx, proc.Command{
		Path:        st.exe,
		Args:        append(append([]string(nil), a.args...), turnFile),
		Dir:         s.Workspace,
		Env:         st.env,
		Grace:       a.grace,
		Wrap:        st.launch.Wrap,
		Confine:     st.launch.Confine,
		SweepCgroup: st.launch.SweepCgroup,

		Credential: st.user.Credential(),
		CgroupFD:   st.cgroup,
	}, Kind)
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
	// Whatever happens below, including a panicking OnEvent, nothing of the turn
	// survives RunTurn.
	waited := false
	defer func() {
		if !waited {
			pr.Stop()
			pr.Wait()
		}
	}()

	lr := proc.NewLineReader(pr.Stdout(), proc.DefaultMaxLine)
	defer lr.Release() // after the turn has handled its last line
	for lr.Next() {
		t.handleLine(lr.Line())
	}
	readErr := lr.Err()
	if readErr != nil {
		pr.Stop() // claude-code spec: on a scanner error, stop the group, then wait
	}
	exit := pr.Wait()
	waited = true
	return t.end(exit, readErr, pr.Stderr())
}

// StopSession stops the session's running turn, if any, gracefully, and makes later
// turns fail. It always returns nil.
func (a *adapter) StopSession(ctx context.Context, s *agent.Session) error {
	st, ok := s.Internal.(*session)
	if !ok {
		return nil
	}
	st.guard.Stop()
	return nil
}

func (a *adapter) writeTurnFile(s *agent.Session, p agent.TurnParams) (string, error) {
	data, err := json.Marshal(instructions{
		Version: instructionsVersion, SessionID: s.ID, Turn: p.TurnNumber, Prompt: p.Prompt, Mock: a.opts,
	})
	if err != nil {
		return "", err
	}
	// In the agent's own TMPDIR when it has one: a confined child can read only its
	// run's temporary directory, not the daemon's.
	dir := ""
	var owner *runas.User
	if st, ok := s.Internal.(*session); ok {
		dir, owner = agent.EnvValue(st.env, "TMPDIR"), st.user
	}
	f, err := os.CreateTemp(dir, "sortie-mock-turn-*.json")
	if err != nil {
		return "", err
	}
	if err := owner.Chown(f.Name()); err != nil { // the child runs as agent.run_as
		f.Close()
		os.Remove(f.Name())
		return "", err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(f.Name())
		return "", err
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

// turn is the state of one RunTurn.
type turn struct {
	a       *adapter
	s       *agent.Session
	st      *session
	onEvent func(agent.Event)
	pid     int
	result  *wireEvent // the child's last result line
}

func (t *turn) emit(e agent.Event) {
	e.Time = t.a.now()
	e.PID = t.pid
	e.SessionID = t.s.ID
	if t.onEvent != nil {
		t.onEvent(e)
	}
}

// handleLine translates one stdout line. Malformed lines become malformed events; they
// never end the turn.
func (t *turn) handleLine(line []byte) {
	ev, err := parseEventLine(line)
	if err != nil {
		t.emit(agent.Event{Type: agent.EventMalformed, Message: excerpt(line)})
		return
	}
	switch ev.Type {
	case wireSessionStarted:
		if ev.SessionID != "" {
			t.s.ID = ev.SessionID
		}
		t.emit(agent.Event{Type: agent.EventSessionStarted, Model: ev.Model})
	case wireNotification:
		t.emit(agent.Event{Type: agent.EventNotification, Message: ev.Message})
	case wireToolResult:
		t.emit(agent.Event{Type: agent.EventToolResult, ToolName: ev.Name, ToolDurationMS: ev.DurationMS, ToolError: ev.Error, Message: ev.Message})
	case wireUsage:
		u := &t.st.usage
		u.Input += ev.InputTokens
		u.Output += ev.OutputTokens
		u.CacheRead += ev.CacheReadTokens
		u.Total = u.Input + u.Output
		t.emit(agent.Event{Type: agent.EventTokenUsage, Usage: *u, Model: ev.Model, APIDurationMS: ev.APIDurationMS})
	case wireResult:
		t.result = &ev
	default:
		t.emit(agent.Event{Type: agent.EventOtherMessage, Message: excerpt(line)})
	}
}

// excerpt is the start of a stdout line for an event message (spec: 500 characters),
// without copying the rest of a line that may be megabytes long.
func excerpt(line []byte) string {
	return truncate(string(line[:min(len(line), maxMalformed+utf8.UTFMax)]), maxMalformed)
}

// end maps the child's exit and result to the turn's outcome (claude-code spec, "Exit
// code mapping"), emits the terminal event and builds the result.
func (t *turn) end(exit proc.Exit, readErr error, stderr *proc.HeadTailBuffer) (agent.TurnResult, error) {
	kind := proc.Classify(exit, readErr)
	switch {
	case kind == agent.ErrTurnCancelled:
		return t.fail(agent.EventTurnCancelled, agent.Errorf(kind, "mock agent (pid %d): turn cancelled (%s)", t.pid, exit))
	case kind != "":
		msg := fmt.Sprintf("mock agent (pid %d): %s", t.pid, exit)
		if readErr != nil {
			msg = fmt.Sprintf("mock agent (pid %d): %v (%s)", t.pid, readErr, exit)
		}
		if tail := stderrTail(stderr); tail != "" {
			msg += "; stderr: " + tail
		}
		return t.fail(agent.EventTurnFailed, agent.Errorf(kind, "%s", msg))
	case t.result == nil:
		return t.fail(agent.EventTurnFailed, agent.Errorf(agent.ErrTurnFailed, "mock agent (pid %d): exited 0 without a result line", t.pid))
	}
	switch outcome(t.result.Outcome) {
	case outcomeSuccess:
		t.emit(agent.Event{Type: agent.EventTurnCompleted, Usage: t.st.usage, Message: t.result.Message})
		return t.resultOf(agent.EventTurnCompleted), nil
	case outcomeInputRequired:
		return t.fail(agent.EventTurnInputRequired, agent.Errorf(agent.ErrTurnInputRequired, "%s", t.result.Message))
	case outcomeFailure:
		return t.fail(agent.EventTurnFailed, agent.Errorf(agent.ErrTurnFailed, "%s", t.result.Message))
	}
	return t.fail(agent.EventTurnFailed, agent.Errorf(agent.ErrTurnFailed, "mock agent (pid %d): unknown result outcome %q", t.pid, t.result.Outcome))
}

// fail emits the terminal event of type reason carrying err's text and returns err.
func (t *turn) fail(reason agent.EventType, err error) (agent.TurnResult, error) {
	t.emit(agent.Event{Type: reason, Usage: t.st.usage, Message: err.Error()})
	return t.resultOf(reason), err
}

func (t *turn) resultOf(reason agent.EventType) agent.TurnResult {
	return agent.TurnResult{SessionID: t.s.ID, ExitReason: reason, Usage: t.st.usage, PID: t.pid}
}

// stderrTail is the end of the child's stderr, enough to explain a failure in one log
// line.
func stderrTail(b *proc.HeadTailBuffer) string {
	s := strings.TrimSpace(b.String())
	const keep = 1024
	if len(s) > keep {
		s = "..." + truncateFront(s, keep)
	}
	return s
}

func truncateFront(s string, n int) string {
	cut := len(s) - n
	for cut < len(s) && cut > 0 && (s[cut]&0xC0) == 0x80 {
		cut++
	}
	return s[cut:]
}
