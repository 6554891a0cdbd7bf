package orchestrator

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"sortie/internal/agent"
	"sortie/internal/agent/mock"
	"sortie/internal/clock"
	"sortie/internal/config"
	"sortie/internal/runas"
	"sortie/internal/store"
	"sortie/internal/store/sqlite"
	"sortie/internal/testkit/faketracker"
	"sortie/internal/tracker"
	"sortie/internal/workflow/checkpoint"
	"sortie/internal/workflow/engine"
	"sortie/internal/workspace"
)

// TestMain lets this test binary act as the mock agent's child: the mock adapter
// re-executes os.Executable(), which here is this binary.
func TestMain(m *testing.M) {
	if mock.IsChild() {
		os.Exit(mock.ChildMain())
	}
	// Under -race every child would otherwise sleep a second before exiting
	// (GORACE atexit_sleep_ms defaults to 1000).
	os.Setenv("GORACE", strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	os.Exit(m.Run())
}

// waitLimit guards every wait of these tests. It is a failure guard, not a timing
// assumption: most waits end in milliseconds, and the longest (the 200-issue
// exclusivity run) takes seconds alone but over a minute when the whole suite, real
// agent CLIs included, loads both cores.
const waitLimit = 3 * time.Minute

// t0 is the fake clock's start.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// testConfig returns a configuration for the mock agent with everything under a temp
// dir: active states Todo and In Progress, terminal Done and Cancelled, one turn per run,
// the default limits, a mock agent that succeeds at once. mutate may change anything.
func testConfig(t *testing.T, mutate func(*config.Config)) *config.Config {
	t.Helper()
	dir := t.TempDir()
	c := &config.Config{Path: filepath.Join(dir, "WORKFLOW.md"), Dir: dir}
	c.Tracker = config.TrackerConfig{
		Kind:           "memory",
		ActiveStates:   []string{"Todo", "In Progress"},
		TerminalStates: []string{"Done", "Cancelled"},
	}
	c.Polling.Interval = config.DefaultPollingInterval
	c.Workspace.Root = filepath.Join(dir, "workspaces")
	c.Hooks.Timeout = config.DefaultHookTimeout
	c.Agent = config.AgentConfig{
		Kind:                mock.Kind,
		TurnTimeout:         config.DefaultTurnTimeout,
		ReadTimeout:         config.DefaultReadTimeout,
		StallTimeout:        config.DefaultStallTimeout,
		MaxRetryBackoff:     config.DefaultMaxRetryBackoff,
		MaxConcurrentAgents: config.DefaultMaxConcurrentAgents,
		MaxRetries:          config.DefaultMaxRetries,
		MaxTurns:            1,
	}
	c.DBPath = filepath.Join(dir, config.DefaultDBName)
	c.Extensions = map[string]any{"mock": map[string]any{"events_per_turn": 1}}
	c.Prompt = "Work on {{ .issue.identifier }}: {{ .issue.title }} (attempt {{ .attempt }})"
	c.PromptLine = 5
	if mutate != nil {
		mutate(c)
	}
	return c
}

// issue builds a tracker issue with the fields dispatch requires.
func issue(id, state string) tracker.Issue {
	return tracker.Issue{ID: id, Identifier: id, Title: "Title of " + id, State: state}
}

func prio(p int) *int { return &p }

// harness runs a real Orchestrator with a fake clock, the fake tracker, the real SQLite
// store and the real mock agent (behind a tap that records what it was asked to do).
type harness struct {
	t     *testing.T
	clk   *clock.Fake
	trk   *faketracker.Tracker
	st    *sqlite.Store
	agent *tapAdapter
	orch  *Orchestrator
	obs   *feed[Observation]
	// desk is the checkpoint component (harnessOptions.checkpoints), hooks the engine
	// hooks it gave its engine: tests arm checkpoints through hooks.Armed.
	desk  *checkpoint.Desk
	hooks engine.Hooks

	cfg     atomic.Pointer[config.Config]
	cfgCh   chan *config.Config
	cancel  context.CancelFunc
	done    chan error    // Run's result
	exited  chan struct{} // closed when Run has returned
	stopped bool
	runErr  error

	// invariants are checked on the loop after every step; set them before start.
	invariants []func(Observation) string
	violMu     sync.Mutex
	violations []string

	whenMu sync.Mutex
	whens  []whenEntry
}

type whenEntry struct {
	pred func(Observation) bool
	ch   chan struct{}
}

type harnessOptions struct {
	pollOnly     bool // hide the tracker's Watch: only polls (fake clock) and Refresh tick
	exitWhenIdle bool
	dropObs      bool                 // keep only the latest observation (long runs)
	trk          *faketracker.Tracker // a tracker already filled; nil for an empty one
	environ      []string
	stallCheck   time.Duration
	flush        time.Duration // Options.ProgressFlushInterval
	ext          workspace.Extensions
	alert        func(context.Context, Alert) error
	activity     func(Activity)
	checkpoints  bool              // Options.Checkpoints is a checkpoint.Desk on the harness's store (h.desk)
	engine       checkpoint.Engine // the desk's workflow engine; nil for none
	stopRemote   func(ctx context.Context, host string, pgid int) error
	wrapStore    func(Store) Store // what the orchestrator gets in place of the store
	reactions    Reactions         // Options.Reactions; nil for none
}

func newHarness(t *testing.T, cfg *config.Config, ho harnessOptions) *harness {
	t.Helper()
	h := &harness{t: t, clk: clock.NewFake(t0), trk: ho.trk, cfgCh: make(chan *config.Config, 1)}
	if h.trk == nil {
		h.trk = faketracker.New(cfg.Tracker.ActiveStates...)
	}
	h.cfg.Store(cfg)
	h.obs = newFeed[Observation](!ho.dropObs, true)

	st, err := sqlite.Open(t.Context(), cfg.DBPath)
	if err != nil {
		t.Fatalf("opening the store: %v", err)
	}
	h.st = st
	t.Cleanup(func() { st.Close() })

	inner, err := mock.New(agent.Config{Kind: mock.Kind, Command: cfg.Agent.Command, Options: cfg.Block("mock")})
	if err != nil {
		t.Fatalf("building the mock agent: %v", err)
	}
	h.agent = newTapAdapter(inner)

	var trk tracker.Tracker = h.trk
	if ho.pollOnly {
		trk = h.trk.PollOnly()
	}
	environ := ho.environ
	if environ == nil {
		environ = os.Environ()
	}
	var orchStore Store = st
	if ho.wrapStore != nil {
		orchStore = ho.wrapStore(st)
	}
	var desk Checkpoints
	if ho.checkpoints {
		h.desk, err = checkpoint.New(checkpoint.Options{
			Store: st, Config: func() *config.Config { return h.cfg.Load() }, Clock: h.clk, Logger: testLogger(t),
			Report: func(e checkpoint.Event) {
				if ho.activity != nil {
					ho.activity(Activity{Kind: ActivityCheckpoint, Time: e.Time, IssueID: e.IssueID, Identifier: e.Identifier,
						RunID: e.RunID, Result: e.Result, Message: e.Message})
				}
			},
		}, func(hooks engine.Hooks) (checkpoint.Engine, error) {
			h.hooks = hooks
			return ho.engine, nil
		})
		if err != nil {
			t.Fatalf("building the checkpoint desk: %v", err)
		}
		t.Cleanup(h.desk.Close)
		desk = h.desk
	}
	h.orch, err = New(Options{
		Config:                func() *config.Config { return h.cfg.Load() },
		ConfigChanges:         h.cfgCh,
		Tracker:               trk,
		Agent:                 h.agent,
		Store:                 orchStore,
		Clock:                 h.clk,
		Logger:                testLogger(t),
		Environ:               environ,
		ExitWhenIdle:          ho.exitWhenIdle,
		StallCheckInterval:    ho.stallCheck,
		ProgressFlushInterval: ho.flush,
		Observe:               h.observe,
		Extensions:            ho.ext,
		Alert:                 ho.alert,
		Activity:              ho.activity,
		StopRemote:            ho.stopRemote,
		Checkpoints:           desk,
		Reactions:             ho.reactions,
	})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	// Default invariants of every test: an issue is in at most one of running, retrying
	// and held (checked after every loop step), and has at most one agent session open
	// at a time (checked by the tap).
	h.invariants = append(h.invariants, exclusiveClaims)
	return h
}

// testLogger logs to the test output with -v, and nowhere otherwise.
func testLogger(t *testing.T) *slog.Logger {
	if !testing.Verbose() {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func (h *harness) observe(o Observation) {
	for _, inv := range h.invariants {
		if msg := inv(o); msg != "" {
			h.violMu.Lock()
			h.violations = append(h.violations, fmt.Sprintf("after step %s (%s): %s", o.Step, o.IssueID, msg))
			h.violMu.Unlock()
		}
	}
	h.whenMu.Lock()
	live := h.whens[:0]
	for _, w := range h.whens {
		if w.pred(o) {
			close(w.ch)
		} else {
			live = append(live, w)
		}
	}
	h.whens = live
	h.whenMu.Unlock()
	h.obs.add(o)
}

// when returns a channel closed after the first loop step whose observation satisfies
// pred, for code that must wait for the loop without consuming the observation feed
// (an agent or tracker hook running on a worker goroutine).
func (h *harness) when(pred func(Observation) bool) <-chan struct{} {
	ch := make(chan struct{})
	h.whenMu.Lock()
	h.whens = append(h.whens, whenEntry{pred: pred, ch: ch})
	h.whenMu.Unlock()
	return ch
}

// waitClosed waits for ch, failing with desc after waitLimit. Safe on any goroutine
// (it reports with Errorf and returns false).
func (h *harness) waitClosed(ch <-chan struct{}, desc string) bool {
	select {
	case <-ch:
		return true
	case <-time.After(waitLimit):
		h.t.Errorf("waiting for %s: expected it within %v, got nothing; last state: %s", desc, waitLimit, describe(h.obs.latest().Snapshot))
		return false
	}
}

// start runs the orchestrator until the test ends (or stop).
func (h *harness) start() {
	h.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	h.done = make(chan error, 1)
	h.exited = make(chan struct{})
	go func() {
		h.done <- h.orch.Run(ctx)
		close(h.exited)
	}()
	h.t.Cleanup(func() {
		h.stop()
		h.checkInvariants()
	})
}

// stop cancels Run and waits for it to return, with every worker exited.
func (h *harness) stop() error {
	h.t.Helper()
	if h.stopped {
		return h.runErr
	}
	h.cancel()
	return h.wait()
}

// wait waits for Run to return by itself (ExitWhenIdle) or after stop.
func (h *harness) wait() error {
	h.t.Helper()
	if h.stopped {
		return h.runErr
	}
	select {
	case h.runErr = <-h.done:
		h.stopped = true
		return h.runErr
	case <-h.agent.broken:
		h.stopped = true
		h.cancel()
		select {
		case h.runErr = <-h.done:
		case <-time.After(waitLimit):
		}
		h.checkInvariants()
		h.t.FailNow()
		return nil
	case <-time.After(waitLimit):
		h.stopped = true
		h.cancel()
		h.t.Fatalf("Run did not return within %v; last state: %s", waitLimit, describe(h.obs.latest().Snapshot))
		return nil
	}
}

func (h *harness) checkInvariants() {
	h.t.Helper()
	h.agent.mu.Lock()
	for _, o := range h.agent.overlaps {
		h.t.Errorf("two agents on one issue: %s", o)
	}
	h.agent.overlaps = nil
	h.agent.mu.Unlock()
	h.violMu.Lock()
	defer h.violMu.Unlock()
	for i, v := range h.violations {
		if i == 10 {
			h.t.Errorf("... and %d more invariant violations", len(h.violations)-10)
			break
		}
		h.t.Errorf("invariant violated %s", v)
	}
	h.violations = nil
}

// setConfig makes cfg current and announces it, as a WORKFLOW.md reload would.
func (h *harness) setConfig(cfg *config.Config) {
	h.cfg.Store(cfg)
	h.cfgCh <- cfg
}

// mutateConfig applies mutate to a copy of the current configuration and applies it.
func (h *harness) mutateConfig(mutate func(*config.Config)) {
	c := *h.cfg.Load()
	mutate(&c)
	h.setConfig(&c)
}

// Actions that make the loop step. Each first forgets the observations so far, so the
// waits that follow see only the steps the action caused.

// advance moves the fake clock.
func (h *harness) advance(d time.Duration) {
	h.obs.skip()
	h.clk.Advance(d)
}

// refresh asks for a poll.
func (h *harness) refresh() {
	h.obs.skip()
	h.orch.Refresh()
}

// setState moves an issue in the tracker, as a human would.
func (h *harness) setState(id, state string) {
	h.t.Helper()
	h.obs.skip()
	if err := h.trk.SetState(id, state); err != nil {
		h.t.Fatal(err)
	}
}

// await returns the next observation (after the ones already consumed) that
// satisfies pred, failing the test after waitLimit.
func (h *harness) await(desc string, pred func(Observation) bool) Observation {
	h.t.Helper()
	o, ok := h.obs.await(pred, h.exited)
	if !ok {
		h.checkInvariants()
		h.t.Fatalf("waiting for %s: expected it within %v, got none; last state: %s", desc, waitLimit, describe(h.obs.latest().Snapshot))
	}
	return o
}

// awaitStep returns the next observation of the given step for issue id ("" for any).
func (h *harness) awaitStep(step Step, id string) Observation {
	h.t.Helper()
	return h.await(fmt.Sprintf("step %s of issue %q", step, id), func(o Observation) bool {
		return o.Step == step && (id == "" || o.IssueID == id)
	})
}

// awaitExits waits until each of the issues has had a worker exit, in any order, and
// returns the observation of the last one.
func (h *harness) awaitExits(ids ...string) Observation {
	h.t.Helper()
	pending := map[string]bool{}
	for _, id := range ids {
		pending[id] = true
	}
	return h.await(fmt.Sprintf("exits of %v", ids), func(o Observation) bool {
		if o.Step == StepExit {
			delete(pending, o.IssueID)
		}
		return len(pending) == 0
	})
}

// awaitEvent returns the next agent event of type typ for the issue with identifier ident.
func (h *harness) awaitEvent(ident string, typ agent.EventType) agentEvent {
	h.t.Helper()
	e, ok := h.agent.events.await(func(e agentEvent) bool { return e.identifier == ident && e.ev.Type == typ }, h.exited)
	if !ok {
		h.t.Fatalf("waiting for agent event %s of %s: expected it within %v, got none; last state: %s",
			typ, ident, waitLimit, describe(h.obs.latest().Snapshot))
	}
	return e
}

// runs returns the run rows of an issue, oldest first.
func (h *harness) runs(issueID string) []store.Run {
	h.t.Helper()
	runs, err := h.st.RunsForIssue(context.Background(), issueID, 1000)
	if err != nil {
		h.t.Fatalf("RunsForIssue(%s): %v", issueID, err)
	}
	slices.Reverse(runs)
	return runs
}

// statuses returns the statuses of an issue's runs, oldest first.
func (h *harness) statuses(issueID string) []store.RunStatus {
	h.t.Helper()
	var out []store.RunStatus
	for _, r := range h.runs(issueID) {
		out = append(out, r.Status)
	}
	return out
}

// workspace returns the workspace path of an issue under cfg's root.
func workspacePath(t *testing.T, cfg *config.Config, identifier string) string {
	t.Helper()
	root, err := filepath.EvalSymlinks(cfg.Workspace.Root)
	if err != nil {
		t.Fatalf("resolving the workspace root: %v", err)
	}
	return filepath.Join(root, identifier)
}

// Snapshot helpers.

func runningIDs(s Snapshot) []string {
	var out []string
	for _, r := range s.Running {
		out = append(out, r.IssueID)
	}
	return out
}

func retryOf(s Snapshot, id string) (RetryView, bool) {
	for _, r := range s.Retrying {
		if r.IssueID == id {
			return r, true
		}
	}
	return RetryView{}, false
}

func heldOf(s Snapshot, id string) (HeldView, bool) {
	for _, h := range s.Held {
		if h.IssueID == id {
			return h, true
		}
	}
	return HeldView{}, false
}

func runningOf(s Snapshot, id string) (RunningView, bool) {
	for _, r := range s.Running {
		if r.IssueID == id {
			return r, true
		}
	}
	return RunningView{}, false
}

func isRunning(s Snapshot, id string) bool { _, ok := runningOf(s, id); return ok }

// settled reports whether the issue is neither running nor retrying.
func settled(s Snapshot, id string) bool {
	_, r := retryOf(s, id)
	return !isRunning(s, id) && !r
}

func describe(s Snapshot) string {
	var b strings.Builder
	fmt.Fprintf(&b, "now=%s running=[", s.GeneratedAt.Sub(t0))
	for i, r := range s.Running {
		if i > 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "%s(%s,turn %d,stop=%q)", r.IssueID, r.State, r.Turn, r.Stopping)
	}
	b.WriteString("] retrying=[")
	for i, r := range s.Retrying {
		if i > 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "%s(%s,attempt %d,due +%s)", r.IssueID, r.Kind, r.Attempt, r.DueAt.Sub(s.GeneratedAt))
	}
	b.WriteString("] held=[")
	for i, x := range s.Held {
		if i > 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "%s(%s)", x.IssueID, x.Reason)
	}
	fmt.Fprintf(&b, "] candidates=%d poll_ok=%v", s.Candidates, s.LastPollOK)
	return b.String()
}

// exclusiveClaims is the invariant behind "two agents never run one issue": an issue
// appears at most once across running, retrying and held.
func exclusiveClaims(o Observation) string {
	where := map[string]string{}
	var problems []string
	note := func(id, set string) {
		if prev, ok := where[id]; ok {
			problems = append(problems, fmt.Sprintf("issue %s is in %s and in %s", id, prev, set))
			return
		}
		where[id] = set
	}
	for _, r := range o.Snapshot.Running {
		note(r.IssueID, "running")
	}
	for _, r := range o.Snapshot.Retrying {
		note(r.IssueID, "retrying")
	}
	for _, x := range o.Snapshot.Held {
		note(x.IssueID, "held")
	}
	return strings.Join(problems, "; ")
}

// feed is an append-only log with one consumer that waits for items by predicate.
// An ordered feed (observations) consumes everything up to the item it returns, so a
// wait is for the next matching step; an unordered one (agent events) consumes only the
// matching item.
type feed[T any] struct {
	mu      sync.Mutex
	keep    bool
	ordered bool
	items   []T // not yet consumed
	last    T
	changed chan struct{} // closed and replaced on every add
}

func newFeed[T any](keep, ordered bool) *feed[T] {
	return &feed[T]{keep: keep, ordered: ordered, changed: make(chan struct{})}
}

func (f *feed[T]) add(v T) {
	f.mu.Lock()
	if f.keep {
		f.items = append(f.items, v)
	}
	f.last = v
	close(f.changed)
	f.changed = make(chan struct{})
	f.mu.Unlock()
}

// skip consumes every item so far: later waits see only what comes after.
func (f *feed[T]) skip() {
	f.mu.Lock()
	f.items = f.items[:0]
	f.mu.Unlock()
}

// wake returns a channel that is closed at the next add.
func (f *feed[T]) wake() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.changed
}

func (f *feed[T]) latest() T {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.last
}

// await consumes items up to and including the first that satisfies pred. With a feed
// that keeps no items it checks only the latest. It gives up after waitLimit, or once
// stop is closed and nothing more matched.
func (f *feed[T]) await(pred func(T) bool, stop <-chan struct{}) (T, bool) {
	deadline := time.NewTimer(waitLimit)
	defer deadline.Stop()
	stopped := false
	for {
		f.mu.Lock()
		if f.keep {
			for i, v := range f.items {
				if pred(v) {
					if f.ordered {
						f.items = f.items[i+1:]
					} else {
						f.items = slices.Delete(f.items, i, i+1)
					}
					f.mu.Unlock()
					return v, true
				}
			}
			if f.ordered {
				f.items = f.items[:0]
			}
		} else if pred(f.last) {
			v := f.last
			f.mu.Unlock()
			return v, true
		}
		changed := f.changed
		f.mu.Unlock()
		var zero T
		if stopped {
			return zero, false
		}
		select {
		case <-changed:
		case <-stop:
			stopped = true // one more look: the last items may have arrived with it
		case <-deadline.C:
			return zero, false
		}
	}
}

// tapAdapter wraps the real mock adapter and records what the orchestrator asked of it:
// every StartSession's parameters and every event, per issue. A test may also act right
// after a turn ends, before the worker sees the result (afterTurn).
type tapAdapter struct {
	inner  agent.Adapter
	events *feed[agentEvent]

	mu       sync.Mutex
	starts   []startRecord
	prompts  []startRecord
	sessions map[*agent.Session]string // → issue identifier
	open     map[string]int            // issue identifier → sessions started and not stopped
	overlaps []string                  // a session started while another of its issue was open
	broken   chan struct{}             // closed at the first overlap
	// afterTurn, when set (before start), runs after each RunTurn returns.
	afterTurn func(identifier string, turn int)
	// removed records RemoveIssueState's calls: "<SORTIE_ISSUE_ID> <workspace>".
	removed []string
}

// RemoveIssueState implements agent.IssueStateRemover, recording the call.
func (a *tapAdapter) RemoveIssueState(env []string, workspace string, _ *runas.User) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.removed = append(a.removed, agent.EnvValue(env, "SORTIE_ISSUE_ID")+" "+workspace)
	return nil
}

func (a *tapAdapter) removedState() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.removed)
}

type startRecord struct {
	identifier string
	params     agent.StartParams
	prompt     string // for turn records
}

type agentEvent struct {
	identifier string
	ev         agent.Event
}

func newTapAdapter(inner agent.Adapter) *tapAdapter {
	return &tapAdapter{inner: inner, events: newFeed[agentEvent](true, false),
		sessions: map[*agent.Session]string{}, open: map[string]int{}, broken: make(chan struct{})}
}

func envValue(env []string, name string) string {
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok && k == name {
			return v
		}
	}
	return ""
}

func (a *tapAdapter) StartSession(ctx context.Context, p agent.StartParams) (*agent.Session, error) {
	ident := envValue(p.Env, "SORTIE_ISSUE_IDENTIFIER")
	a.mu.Lock()
	a.starts = append(a.starts, startRecord{identifier: ident, params: p})
	a.mu.Unlock()
	s, err := a.inner.StartSession(ctx, p)
	if s != nil {
		a.mu.Lock()
		a.sessions[s] = ident
		if a.open[ident] > 0 {
			if len(a.overlaps) == 0 {
				close(a.broken)
			}
			a.overlaps = append(a.overlaps, fmt.Sprintf("a session of %s started while %d other(s) were open", ident, a.open[ident]))
		}
		a.open[ident]++
		a.mu.Unlock()
	}
	return s, err
}

func (a *tapAdapter) RunTurn(ctx context.Context, s *agent.Session, p agent.TurnParams) (agent.TurnResult, error) {
	a.mu.Lock()
	ident := a.sessions[s]
	a.mu.Unlock()
	a.mu.Lock()
	a.prompts = append(a.prompts, startRecord{identifier: ident, prompt: p.Prompt})
	a.mu.Unlock()
	onEvent := p.OnEvent
	p.OnEvent = func(ev agent.Event) {
		if onEvent != nil {
			onEvent(ev)
		}
		a.events.add(agentEvent{identifier: ident, ev: ev})
	}
	res, err := a.inner.RunTurn(ctx, s, p)
	if a.afterTurn != nil {
		a.afterTurn(ident, p.TurnNumber)
	}
	return res, err
}

func (a *tapAdapter) StopSession(ctx context.Context, s *agent.Session) error {
	err := a.inner.StopSession(ctx, s)
	a.mu.Lock()
	a.open[a.sessions[s]]--
	a.mu.Unlock()
	return err
}

// promptsOf returns the prompt of every turn run for an issue, in order.
func (a *tapAdapter) promptsOf(ident string) []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []string
	for _, p := range a.prompts {
		if p.identifier == ident {
			out = append(out, p.prompt)
		}
	}
	return out
}

// startsOf returns the StartParams of every session started for an issue, in order.
func (a *tapAdapter) startsOf(ident string) []agent.StartParams {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []agent.StartParams
	for _, s := range a.starts {
		if s.identifier == ident {
			out = append(out, s.params)
		}
	}
	return out
}

// awaitOwnWrites waits until Sortie's own writes to issue id (comments and the
// read-backs after them and after a hold) have ended, so that the next change is
// judged a human's.
func (h *harness) awaitOwnWrites(id string) {
	h.t.Helper()
	deadline := time.After(waitLimit)
	for {
		idle, changed := h.orch.own.Idle(id)
		if idle {
			return
		}
		select {
		case <-changed:
		case <-deadline:
			h.t.Fatalf("Sortie's own writes to %s did not end within %v", id, waitLimit)
		}
	}
}
