package cli

// The runner's lifecycle, tested once for every CLI that runs on it: a test dialect
// (testDialect) drives fake CLIs (clis.Fake), shell scripts that print what a test
// scripted and exit as told. What each CLI makes of its own output (its translator's
// verdicts, its argv) is tested in its adapter's package; the real CLIs pass the
// contract suite (agenttest) on top of this.

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"sortie/internal/agent"
	"sortie/internal/agent/agenttest"
	"sortie/internal/agent/proc"
	"sortie/internal/agent/proc/proctest"
	"sortie/internal/testkit/clis"
)

// testState is the test dialect's per-session state.
type testState struct {
	stops int // how often the runner let the dialect release the session
}

// testDialect runs `<command> turn <n>` with the prompt on standard input. Its
// translator (testTranslator) reads a small line protocol.
type testDialect struct {
	notes    []string // said at the start of the first turn
	started  string   // Invocation.Started
	startErr error    // returned by Start
	turnErr  error    // returned by Turn
	seen     *Session[testState]
	turns    int // Turn calls: what a turn prepares, before its process starts
}

func (d *testDialect) Start(_ context.Context, s *Session[testState], _ agent.StartParams) error {
	d.seen = s
	s.Notes = d.notes
	return d.startErr
}

func (d *testDialect) Turn(_ context.Context, s *Session[testState], p agent.TurnParams, emit func(agent.Event)) (Invocation, error) {
	d.turns++
	if d.turnErr != nil {
		return Invocation{}, d.turnErr
	}
	return Invocation{Args: []string{"turn", strconv.Itoa(p.TurnNumber)}, Stdin: p.Prompt, Started: d.started,
		Translator: &testTranslator{emit: emit, usage: s.Usage, cost: s.CostUSD}}, nil
}

func (d *testDialect) Stop(s *Session[testState]) error {
	s.State.stops++
	return nil
}

var _ Stopper[testState] = (*testDialect)(nil)

// testTranslator reads "id X" (the CLI names its session X), "tokens N" (a model
// request of N output tokens, costing N cents) and any other line as a notification.
// A turn whose process failed fails with Ending.Crash's message; any other completes.
type testTranslator struct {
	emit  func(agent.Event)
	id    string
	usage agent.Usage
	cost  float64
}

func (tr *testTranslator) Line(b []byte) {
	word, arg, _ := strings.Cut(string(b), " ")
	switch word {
	case "id":
		tr.id = arg
	case "tokens":
		n, _ := strconv.ParseInt(arg, 10, 64)
		tr.usage.Output += n
		tr.usage.Total += n
		tr.cost += float64(n) / 100
		tr.emit(agent.Event{Type: agent.EventTokenUsage, Usage: tr.usage, CostUSD: tr.cost})
	default:
		tr.emit(agent.Event{Type: agent.EventNotification, Message: string(b)})
	}
}

func (tr *testTranslator) SessionID() string { return tr.id }

func (tr *testTranslator) End(e *Ending) (Totals, Verdict) {
	totals := Totals{SessionID: tr.id, Usage: tr.usage, CostUSD: tr.cost, APIDurationMS: 7}
	if e.Kind != "" {
		return totals, Failed(e.Kind, "%s", e.Crash())
	}
	return totals, Completed("done")
}

const versionHint = " (the fake CLI has no version file)"

// newRunner is the runner of the CLI command (agent.command) with dialect d.
func newRunner(t *testing.T, command string, d *testDialect) *Runner[testState] {
	t.Helper()
	r := New(Config{Config: agent.Config{Kind: "fake-cli", Command: command}, Name: "fake", DefaultCommand: "fake",
		VersionHint: versionHint}, d, nil)
	r.Grace = time.Second
	return r
}

// fake is a fake CLI whose runs 1..len(outs) print outs[i] and exit 0, and the runner of
// it with dialect d.
func fake(t *testing.T, d *testDialect, outs ...[]string) (*clis.Fake, *Runner[testState]) {
	t.Helper()
	f := clis.NewFake(t, "fake")
	for i, lines := range outs {
		f.Run(t, i+1, 0, lines...)
	}
	return f, newRunner(t, f.Path, d)
}

// start starts a session in a new workspace unless p names one.
func start(t *testing.T, r *Runner[testState], p agent.StartParams) *agent.Session {
	t.Helper()
	if p.Workspace == "" {
		p.Workspace = t.TempDir()
	}
	return agenttest.StartSession(t, r, p)
}

// runTurn runs turn n and checks what every turn's events must be, however it ended.
func runTurn(t *testing.T, ctx context.Context, r *Runner[testState], s *agent.Session, n int, watch ...func(agent.Event)) agenttest.Outcome {
	t.Helper()
	o := agenttest.RunTurn(ctx, r, s, n, "prompt "+strconv.Itoa(n), watch...)
	agenttest.CheckTurn(t, n, s, o, false)
	return o
}

// onFirst returns a watch that runs f at the first event of type typ.
func onFirst(typ agent.EventType, f func()) func(agent.Event) {
	var once sync.Once
	return func(e agent.Event) {
		if e.Type == typ {
			once.Do(f)
		}
	}
}

func wantTurn(t *testing.T, o agenttest.Outcome, reason agent.EventType, kind agent.ErrorKind, msg string) {
	t.Helper()
	if o.Result.ExitReason != reason || agent.KindOf(o.Err) != kind {
		t.Fatalf("turn = %s, %v; want %s with kind %q; events %v", o.Result.ExitReason, o.Err, reason, kind, o.Types())
	}
	if last := o.Last(); !strings.Contains(last.Message, msg) || (o.Err != nil && !strings.Contains(o.Err.Error(), msg)) {
		t.Errorf("terminal event %q, error %v; want both to say %q", last.Message, o.Err, msg)
	}
}

func TestStartSession_InvalidWorkspace(t *testing.T) {
	_, r := fake(t, &testDialect{})
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, ws := range []string{"", "relative/dir", filepath.Join(t.TempDir(), "missing"), file} {
		if _, err := r.StartSession(context.Background(), agent.StartParams{Workspace: ws}); agent.KindOf(err) != agent.ErrInvalidWorkspace {
			t.Errorf("workspace %q: %v, want invalid_workspace_cwd", ws, err)
		}
	}
}

func TestStartSession_MissingCommandIsAgentNotFound(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no-such-cli")
	r := newRunner(t, missing, &testDialect{})
	_, err := r.StartSession(context.Background(), agent.StartParams{Workspace: t.TempDir()})
	if agent.KindOf(err) != agent.ErrNotFound || !strings.Contains(err.Error(), "agent.command "+missing) {
		t.Errorf("StartSession = %v; want agent_not_found naming agent.command", err)
	}
	if _, err := r.Version(context.Background()); agent.KindOf(err) != agent.ErrNotFound {
		t.Errorf("Version = %v, want agent_not_found", err)
	}
}

// The dialect's Start sees the checked, resolved session, and its error ends the start.
func TestStartSession_PreparesTheSessionForTheDialect(t *testing.T) {
	d := &testDialect{}
	f, r := fake(t, d)
	mcp := filepath.Join(t.TempDir(), "mcp.json")
	s := start(t, r, agent.StartParams{Env: []string{"PATH=" + os.Getenv("PATH"), "A=1"}, MCPConfigPath: mcp, ResumeSessionID: "old"})
	if s.ID != "old" || d.seen.ID != "old" || d.seen.Remote() || d.seen.Exe != f.Path ||
		!slices.Contains(d.seen.Env, "A=1") || !slices.Equal(d.seen.MCP, []string{mcp}) {
		t.Errorf("the dialect saw session %q, remote %t, exe %q, env %q, MCP %q; want old, local, %s, the session's env, %s",
			d.seen.ID, d.seen.Remote(), d.seen.Exe, d.seen.Env, d.seen.MCP, f.Path, mcp)
	}
	d.startErr = errors.New("no state directory")
	if _, err := r.StartSession(context.Background(), agent.StartParams{Workspace: t.TempDir()}); err != d.startErr {
		t.Errorf("StartSession = %v, want the dialect's error", err)
	}
}

func TestStartSession_SSHNeedsOnlyTheSSHClient(t *testing.T) {
	d := &testDialect{}
	r := newRunner(t, "fake-not-installed-here", d)
	t.Setenv("PATH", t.TempDir()) // neither the CLI nor ssh
	ws := t.TempDir()
	_, err := r.StartSession(context.Background(), agent.StartParams{Workspace: ws, SSHHost: "-oProxyCommand=evil"})
	if err == nil || !strings.Contains(err.Error(), "worker.ssh_hosts") {
		t.Errorf("host starting with '-': %v, want an error naming worker.ssh_hosts", err)
	}
	_, err = r.StartSession(context.Background(), agent.StartParams{Workspace: ws, SSHHost: "build-1"})
	if agent.KindOf(err) != agent.ErrNotFound || !strings.Contains(err.Error(), "ssh client") {
		t.Errorf("no ssh on PATH: %v, want agent_not_found naming the ssh client", err)
	}
	clis.FakeSSH(t, 0, "")
	if _, err := r.StartSession(context.Background(), agent.StartParams{Workspace: ws, SSHHost: "build-1"}); err != nil {
		t.Fatalf("StartSession with ssh but no local CLI = %v, want success (the CLI is looked up on the host)", err)
	}
	if !d.seen.Remote() || filepath.Base(d.seen.Exe) != "ssh" {
		t.Errorf("the dialect saw remote %t, exe %q; want an SSH session running ssh", d.seen.Remote(), d.seen.Exe)
	}
}

// The CLI runs as agent.command's words and the dialect's arguments, in the workspace,
// with the dialect's standard input whole, or none.
func TestRunTurn_ArgvAndStandardInput(t *testing.T) {
	f := clis.NewFake(t, "fake")
	f.Set(t, "each", `pwd > "$dir/pwd.$n"`)
	f.Run(t, 1, 0, "working")
	f.Run(t, 2, 0, "working")
	r := newRunner(t, f.Path+" --profile ci", &testDialect{})
	ws := t.TempDir()
	s := start(t, r, agent.StartParams{Workspace: ws})
	prompt := strings.Repeat("a long prompt line with 'quotes' and $(no expansion)\n", 5000) // > 128 KiB: too big for one argv string
	agenttest.MustComplete(t, agenttest.RunTurn(context.Background(), r, s, 1, prompt))
	agenttest.MustComplete(t, agenttest.RunTurn(context.Background(), r, s, 2, "")) // no stdin: the CLI reads EOF
	if got := f.Argvs(t); !slices.Equal(got[0], []string{"--profile", "ci", "turn", "1"}) {
		t.Errorf("argv = %q, want agent.command's words, then the dialect's", got[0])
	}
	if got := f.Stdin(t, 1); got != prompt {
		t.Errorf("stdin got %d bytes, want the %d-byte prompt", len(got), len(prompt))
	}
	if got := f.Stdin(t, 2); got != "" {
		t.Errorf("stdin of a turn without one = %q, want nothing", got)
	}
	if b, err := os.ReadFile(filepath.Join(f.Dir, "pwd.1")); err != nil || strings.TrimSpace(string(b)) != ws {
		t.Errorf("the CLI ran in %q (%v), want the workspace %s", b, err, ws)
	}
}

// Invocation.Started is the turn's first event; the session's notes follow it on the
// first turn only.
func TestRunTurn_StartedFirstThenNotesOnTheFirstTurnOnly(t *testing.T) {
	d := &testDialect{notes: []string{"note one", "note two"}, started: "new session"}
	_, r := fake(t, d, []string{"working"}, []string{"working"})
	s := start(t, r, agent.StartParams{})
	var got [][]string
	for n := 1; n <= 2; n++ {
		var msgs []string
		for _, e := range runTurn(t, context.Background(), r, s, n).Events {
			msgs = append(msgs, string(e.Type)+" "+e.Message)
		}
		got = append(got, msgs)
	}
	want := [][]string{
		{"session_started new session", "notification note one", "notification note two", "notification working", "turn_completed done"},
		{"session_started new session", "notification working", "turn_completed done"},
	}
	for i := range want {
		if !slices.Equal(got[i], want[i]) {
			t.Errorf("turn %d events = %q, want %q", i+1, got[i], want[i])
		}
	}
}

// TestRunTurn_ExitMapping: how the process ended reaches the translator as Ending, whose
// Crash message names what ran, how it ended, a hint for a missing CLI and the end of
// its stderr without terminal escapes.
func TestRunTurn_ExitMapping(t *testing.T) {
	cases := []struct {
		name   string
		code   int
		stderr string
		then   string
		reason agent.EventType
		kind   agent.ErrorKind
		msg    string
	}{
		{"exit 0", 0, "", "", agent.EventTurnCompleted, "", "done"},
		{"exit 127", 127, "sh: fake: not found\n", "", agent.EventTurnFailed, agent.ErrNotFound,
			"exit status 127; the CLI was not found (check agent.command and PATH, on the SSH host in SSH mode); stderr: sh: fake: not found"},
		{"non-zero", 3, "\x1b[31mError:\x1b[0m boom\n", "", agent.EventTurnFailed, agent.ErrPortExit, "exit status 3; stderr: Error: boom"},
		{"long stderr", 1, strings.Repeat("x", 5000) + " END\n", "", agent.EventTurnFailed, agent.ErrPortExit, "; stderr: …xxx"},
		{"killed by a signal", 0, "", "kill -KILL $$", agent.EventTurnCancelled, agent.ErrTurnCancelled, "killed by signal"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, r := fake(t, &testDialect{})
			f.Run(t, 1, c.code, "working")
			f.Set(t, "stderr.1", c.stderr)
			f.Set(t, "then.1", c.then)
			s := start(t, r, agent.StartParams{})
			o := runTurn(t, context.Background(), r, s, 1)
			wantTurn(t, o, c.reason, c.kind, c.msg)
			if o.Err != nil && (strings.ContainsRune(o.Err.Error(), 0x1b) || len(o.Err.Error()) > 1200) {
				t.Errorf("error %q: want the stderr's end, at most 1024 bytes, without escapes", o.Err)
			}
			if c.name == "long stderr" && !strings.HasSuffix(o.Err.Error(), "xxx END") {
				t.Errorf("error %q: want the end of stderr", o.Err)
			}
			if c.code != 0 && !strings.Contains(o.Last().Message, "fake (pid "+strconv.Itoa(o.Result.PID)+"): exit status") {
				t.Errorf("terminal event %q: want it to name the CLI and its pid", o.Last().Message)
			}
		})
	}
}

func TestRunTurn_DialectErrorIsStartupFailed(t *testing.T) {
	d := &testDialect{turnErr: &agent.Error{Kind: agent.ErrPortExit, Message: "fake: the issue's directory"}}
	f, r := fake(t, d)
	s := start(t, r, agent.StartParams{})
	o := runTurn(t, context.Background(), r, s, 1)
	wantTurn(t, o, agent.EventStartupFailed, agent.ErrPortExit, "the issue's directory")
	if _, err := os.Stat(filepath.Join(f.Dir, "argv")); err == nil || o.Result.PID != 0 {
		t.Errorf("the CLI ran (pid %d) although the dialect failed the turn", o.Result.PID)
	}
}

func TestRunTurn_LineLimits(t *testing.T) {
	t.Run("a line just under 10 MB is read", func(t *testing.T) {
		line := strings.Repeat("x", proc.DefaultMaxLine-1)
		_, r := fake(t, &testDialect{}, []string{line})
		s := start(t, r, agent.StartParams{})
		o := runTurn(t, context.Background(), r, s, 1)
		agenttest.MustComplete(t, o)
		if n := o.Of(agent.EventNotification); len(n) != 1 || len(n[0].Message) != len(line) {
			t.Errorf("got %d notifications, want the line whole", len(n))
		}
	})
	t.Run("a longer line fails the turn and stops the CLI", func(t *testing.T) {
		f, r := fake(t, &testDialect{}, []string{strings.Repeat("x", proc.DefaultMaxLine+1), "after"})
		f.Set(t, "then.1", "exec sleep 600") // the CLI would go on; the runner must stop it
		s := start(t, r, agent.StartParams{})
		o := runTurn(t, context.Background(), r, s, 1)
		wantTurn(t, o, agent.EventTurnFailed, agent.ErrPortExit, "line too long")
		proctest.RequireGroupGone(t, o.Result.PID)
	})
}

func TestRunTurn_CancelKillsTheProcessGroup(t *testing.T) {
	f, r := fake(t, &testDialect{}, []string{"working"})
	f.Set(t, "then.1", "sleep 600 & exec sleep 600") // a child of the CLI in its group
	s := start(t, r, agent.StartParams{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	o := runTurn(t, ctx, r, s, 1, onFirst(agent.EventNotification, cancel))
	wantTurn(t, o, agent.EventTurnCancelled, agent.ErrTurnCancelled, "turn cancelled")
	proctest.RequireGroupGone(t, o.Result.PID)
}

func TestStopSession_CancelsTheTurnAndLaterTurns(t *testing.T) {
	f, r := fake(t, &testDialect{}, []string{"working"})
	// The CLI answers SIGTERM by ending its turn cleanly: still a cancelled turn.
	f.Set(t, "then.1", `trap 'echo "id late"; exit 0' TERM; sleep 600 & wait $!`)
	s := start(t, r, agent.StartParams{})
	running := make(chan struct{})
	done := make(chan agenttest.Outcome, 1)
	go func() {
		done <- agenttest.RunTurn(context.Background(), r, s, 1, "p", onFirst(agent.EventNotification, func() { close(running) }))
	}()
	<-running
	if err := r.StopSession(context.Background(), s); err != nil {
		t.Fatalf("StopSession: %v", err)
	}
	o := <-done
	agenttest.CheckTurn(t, 1, s, o, false)
	wantTurn(t, o, agent.EventTurnCancelled, agent.ErrTurnCancelled, "turn cancelled")
	proctest.RequireGroupGone(t, o.Result.PID)
	later := runTurn(t, context.Background(), r, s, 2)
	wantTurn(t, later, agent.EventTurnCancelled, agent.ErrTurnCancelled, "session already stopped")
	if err := r.StopSession(context.Background(), s); err != nil {
		t.Errorf("second StopSession = %v, want nil", err)
	}
	if st := s.Internal.(*Session[testState]); st.State.stops != 2 {
		t.Errorf("the dialect's Stop ran %d times, want once per StopSession", st.State.stops)
	}
}

func TestRunTurn_OneTurnAtATime(t *testing.T) {
	d := &testDialect{}
	f, r := fake(t, d, []string{"working"})
	f.Set(t, "then.1", "exec sleep 600")
	s := start(t, r, agent.StartParams{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var second agenttest.Outcome
	first := runTurn(t, ctx, r, s, 1, onFirst(agent.EventNotification, func() {
		second = agenttest.RunTurn(context.Background(), r, s, 2, "p") // while turn 1's CLI runs
		cancel()
	}))
	agenttest.CheckTurn(t, 2, s, second, true)
	wantTurn(t, second, agent.EventStartupFailed, agent.ErrResponse, "a turn of this session is already running")
	wantTurn(t, first, agent.EventTurnCancelled, agent.ErrTurnCancelled, "turn cancelled")
	if d.turns != 1 {
		// The dialect resets the CLI's state for a turn: never under a running CLI.
		t.Errorf("the dialect prepared %d turns, want 1: the second was prepared while the first's CLI ran", d.turns)
	}
	if r.StopSession(context.Background(), s); d.turns != 1 {
		t.Fatal("StopSession prepared a turn")
	}
	after := agenttest.RunTurn(context.Background(), r, s, 3, "p")
	wantTurn(t, after, agent.EventTurnCancelled, agent.ErrTurnCancelled, "session already stopped")
	if d.turns != 1 {
		t.Errorf("the dialect prepared a turn after StopSession")
	}
}

func TestRunTurn_ForeignSession(t *testing.T) {
	_, r := fake(t, &testDialect{})
	if _, err := r.RunTurn(context.Background(), &agent.Session{ID: "x"}, agent.TurnParams{}); err == nil {
		t.Error("RunTurn accepted a session of another adapter")
	}
	if err := r.StopSession(context.Background(), &agent.Session{ID: "x"}); err != nil {
		t.Errorf("StopSession of a foreign session = %v, want nil", err)
	}
}

// The figures a turn's translator settled (Totals) are the session's: the next turn's
// translator starts from them, and every terminal event and result carries them, a
// failed turn's too.
func TestRunTurn_UsageAndCostCarriedAcrossTurns(t *testing.T) {
	f, r := fake(t, &testDialect{}, []string{"tokens 10"}, []string{"tokens 5", "tokens 2"})
	f.Run(t, 3, 3)
	s := start(t, r, agent.StartParams{})
	for i, want := range []struct {
		usage agent.Usage
		cost  float64
	}{{agent.Usage{Output: 10, Total: 10}, 0.10}, {agent.Usage{Output: 17, Total: 17}, 0.17}, {agent.Usage{Output: 17, Total: 17}, 0.17}} {
		o := runTurn(t, context.Background(), r, s, i+1)
		last := o.Last()
		if o.Result.Usage != want.usage || o.Result.CostUSD != want.cost || last.Usage != want.usage || last.CostUSD != want.cost {
			t.Errorf("turn %d: result %+v $%v, terminal event %+v $%v; want %+v $%v",
				i+1, o.Result.Usage, o.Result.CostUSD, last.Usage, last.CostUSD, want.usage, want.cost)
		}
		if last.APIDurationMS != 7 {
			t.Errorf("turn %d: terminal event's API time %d ms, want the translator's 7", i+1, last.APIDurationMS)
		}
	}
}

// The session's id is what the last turn's translator named, else the one it had; each
// event names the id known when it was sent.
func TestRunTurn_SessionIDFromTheTranslator(t *testing.T) {
	_, r := fake(t, &testDialect{}, []string{"before", "id one", "after"}, []string{"working"}, []string{"id two"})
	s := start(t, r, agent.StartParams{})
	var ids [][]string
	for n := 1; n <= 3; n++ {
		o := runTurn(t, context.Background(), r, s, n)
		var got []string
		for _, e := range o.Events {
			got = append(got, e.SessionID)
		}
		ids = append(ids, append(got, "result "+o.Result.SessionID, "session "+s.ID))
	}
	want := [][]string{
		{"", "one", "one", "result one", "session one"},
		{"one", "one", "result one", "session one"},
		{"two", "result two", "session two"},
	}
	for i := range want {
		if !slices.Equal(ids[i], want[i]) {
			t.Errorf("turn %d: session ids %q, want %q", i+1, ids[i], want[i])
		}
	}
}

func TestVersion(t *testing.T) {
	cases := []struct {
		name    string
		version string // "" for none: the CLI cannot run
		want    string
		err     string
	}{
		{"first line", "2.1.3 (Fake CLI).\nRun 'fake update' to update.\n", "2.1.3 (Fake CLI)", ""},
		{"no version line", "Usage: fake [options]\n", "", ""},
		{"empty output", "\n", "", ""},
		{"cannot run", "", "", "--version" + versionHint + "; stderr: node: not found"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, r := fake(t, &testDialect{})
			f.Set(t, "version", c.version)
			if c.version == "" {
				f.Remove(t, "version")
				f.Set(t, "version.stderr", "node: not found\n")
			}
			v, err := r.Version(context.Background())
			if c.err == "" && (err != nil || v != c.want) {
				t.Errorf("Version = %q, %v; want %q", v, err, c.want)
			}
			if c.err != "" && (agent.KindOf(err) != agent.ErrNotFound || !strings.Contains(err.Error(), c.err)) {
				t.Errorf("Version = %q, %v; want agent_not_found saying %q", v, err, c.err)
			}
		})
	}
	t.Run("empty output, a version required", func(t *testing.T) {
		f := clis.NewFake(t, "fake")
		f.Set(t, "version", "\n")
		r := New(Config{Config: agent.Config{Kind: "fake-cli", Command: f.Path}, Name: "fake", VersionHint: versionHint,
			VersionRequired: true}, &testDialect{}, nil)
		if v, err := r.Version(context.Background()); agent.KindOf(err) != agent.ErrNotFound || !strings.Contains(err.Error(), "--version"+versionHint) {
			t.Errorf("Version = %q, %v; want agent_not_found: a CLI that must name its version printed nothing", v, err)
		}
	})
	t.Run("a child holding the pipe", func(t *testing.T) {
		agenttest.VersionDoesNotWaitForChildren(t, func(t *testing.T, command string) agent.Adapter {
			return newRunner(t, command, &testDialect{})
		})
	})
}

// Prepared carries a dialect's Start-time reset to the first turn, and no further: once
// a turn's CLI ran, the next turn prepares again.
func TestRunTurn_PreparedUntilACLIRuns(t *testing.T) {
	_, r := fake(t, &testDialect{}, []string{"one"}, []string{"two"})
	s := start(t, r, agent.StartParams{})
	st := s.Internal.(*Session[testState])
	st.Prepared = true // as a dialect's Start does after resetting the CLI's state
	agenttest.MustComplete(t, runTurn(t, context.Background(), r, s, 1))
	if st.Prepared {
		t.Error("Prepared survived a turn whose CLI ran: the next turn would skip its reset")
	}
}
