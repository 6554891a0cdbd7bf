package orchestrator_test

// The benchmarks in this file are the performance figures of docs/performance.md. Each
// runs the real parts the daemon is assembled from in cmd/sortie — the WORKFLOW.md
// watcher, the file tracker in a temporary directory, the SQLite store, the mock agent
// adapter and its child processes (this test binary, re-executed: see TestMain in
// harness_test.go) — on the real clock. They report their figures with b.ReportMetric
// and fail only when work went missing (an issue not handed off, an event not
// counted); they never assert on speed. Run them with `make bench`, or one at a time:
//
//	go test -run '^$' -bench BenchmarkDrain ./internal/orchestrator/

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"sortie/internal/agent"
	_ "sortie/internal/agent/mock" // registers agent.kind mock
	"sortie/internal/config"
	"sortie/internal/orchestrator"
	"sortie/internal/prompt"
	"sortie/internal/store/sqlite"
	"sortie/internal/tracker"
	_ "sortie/internal/tracker/file" // registers tracker.kind file
)

const (
	stateTodo    = "Todo"
	stateHandoff = "Human Review"
)

// BenchmarkDrain measures how long Sortie takes to run 200 issues to handoff with 10
// agent slots and one 8-tool-call turn of about 50 ms per issue, against the physical
// limit: the same mock agent child run 200 times by `xargs -P 10`, each in a fresh
// directory with the turn file the adapter writes. It also reports the adapter on its
// own (200 RunTurn calls from 10 goroutines), which adds the JSONL reading Sortie
// cannot avoid. ns/op is Sortie's drain.
func BenchmarkDrain(b *testing.B) {
	skipShort(b)
	const issues, slots = 200, 10
	mockBlock := "  delay_ms: 50\n  tool_calls: [" + toolCalls(8) + "]\n"
	setup := benchSetup{issues: issues, slots: slots, pollMS: 30000, inProgress: true, mock: mockBlock, exitWhenIdle: true}

	var sortie, xargs, direct, selfCPUTime, childCPUTime time.Duration
	var ticks, wasted, reads, writes int64
	for range b.N {
		b.StopTimer()
		xargs += xargsBaseline(b, setup)
		direct += adapterBaseline(b, setup)
		d := newBenchDaemon(b, setup)
		b.StartTimer()

		start, self0, child0 := time.Now(), cpuTime(b, syscall.RUSAGE_SELF), cpuTime(b, syscall.RUSAGE_CHILDREN)
		if err := d.orch.Run(context.Background()); err != nil {
			b.Fatalf("Run: %v", err)
		}
		sortie += time.Since(start)
		selfCPUTime += cpuTime(b, syscall.RUSAGE_SELF) - self0
		childCPUTime += cpuTime(b, syscall.RUSAGE_CHILDREN) - child0

		b.StopTimer()
		d.wantHandedOff(b, issueIDs(1, issues))
		if got, want := d.totals().ToolCalls, int64(issues*8); got != want {
			b.Fatalf("tool calls counted: got %d, want %d", got, want)
		}
		t, e := d.counts()
		ticks += int64(t)
		wasted += int64(e - issues) // exits without a run: dispatched from a stale candidate
		reads += d.trk.reads.Load()
		writes += d.trk.writes.Load()
		d.close()
		b.StartTimer()
	}
	n := float64(b.N)
	b.ReportMetric(sortie.Seconds()/n, "sortie_s")
	b.ReportMetric(xargs.Seconds()/n, "xargs_s")
	b.ReportMetric(direct.Seconds()/n, "adapter_s")
	b.ReportMetric(float64(ticks)/n, "ticks")
	b.ReportMetric(float64(wasted)/n, "stale_dispatches")
	b.ReportMetric(float64(reads)/n/issues, "tracker_reads/issue")
	b.ReportMetric(float64(writes)/n/issues, "tracker_writes/issue")
	b.ReportMetric(selfCPUTime.Seconds()/n, "daemon_cpu_s")
	b.ReportMetric(childCPUTime.Seconds()/n, "agents_cpu_s")
	b.ReportMetric(sortie.Seconds()/xargs.Seconds(), "ratio_vs_xargs")
	b.ReportMetric(sortie.Seconds()/direct.Seconds(), "ratio_vs_adapter")
}

// BenchmarkEventLoad runs 20 issues whose agent emits a 20,000-line turn (1,000 tool
// calls and 18,997 notifications between session_started and usage: 400,000 events in
// all) and measures the daemon's own CPU time (getrusage RUSAGE_SELF; the agent
// children are not counted). It fails if any event or tool call is not counted.
func BenchmarkEventLoad(b *testing.B) {
	skipShort(b)
	const (
		issues, slots = 20, 10
		tools         = 1000 // the mock's maximum tool_calls
		lines         = 20000
		notes         = lines - tools - 3 // session_started, usage, result
		// Events the adapter delivers per turn: one per line except result, plus the
		// terminal turn_completed.
		eventsPerTurn = lines
	)
	mockBlock := fmt.Sprintf("  events_per_turn: %d\n  tool_calls: [%s]\n", notes, toolCalls(tools))
	setup := benchSetup{issues: issues, slots: slots, pollMS: 30000, inProgress: true, mock: mockBlock, exitWhenIdle: true}

	var cpu time.Duration
	var lost, lostTools int64
	for range b.N {
		b.StopTimer()
		d := newBenchDaemon(b, setup)
		b.StartTimer()

		before := selfCPU(b)
		if err := d.orch.Run(context.Background()); err != nil {
			b.Fatalf("Run: %v", err)
		}
		cpu += selfCPU(b) - before

		b.StopTimer()
		d.wantHandedOff(b, issueIDs(1, issues))
		lost += int64(issues*eventsPerTurn) - d.agent.events.Load()
		lostTools += int64(issues*tools) - d.totals().ToolCalls
		d.close()
		b.StartTimer()
	}
	b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu_s")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N*issues*eventsPerTurn), "cpu_ns/event")
	b.ReportMetric(float64(lost), "lost_events")
	b.ReportMetric(float64(lostTools), "lost_tool_calls")
	if lost != 0 || lostTools != 0 {
		b.Fatalf("events lost: %d of %d events and %d of %d tool calls were not counted",
			lost, b.N*issues*eventsPerTurn, lostTools, b.N*issues*tools)
	}
}

// BenchmarkDispatchLatency appends an issue to the issues file 50 times, one after the
// other, with polling.interval_ms at 30 s, and measures the time from the file's
// rename to the agent child's first event (session_started: the process is running)
// and to RunTurn being called (the daemon's part: watch, tick, claim, re-read,
// in-progress transition, run row, workspace). Each issue runs to handoff before the
// next is appended, so the benchmark never edits the file while Sortie writes it.
func BenchmarkDispatchLatency(b *testing.B) {
	skipShort(b)
	const appends = 50
	setup := benchSetup{issues: 0, slots: 10, pollMS: 30000, inProgress: true, mock: "  delay_ms: 0\n"}

	var started, spawned []time.Duration
	for range b.N {
		b.StopTimer()
		d := newBenchDaemon(b, setup)
		turnCalled := make(chan turnEvent, appends)
		firstEvent := make(chan turnEvent, appends)
		d.agent.onTurn = func(id string) { turnCalled <- turnEvent{id, time.Now()} }
		d.agent.onFirstEvent = func(id string) { firstEvent <- turnEvent{id, time.Now()} }
		exits := make(chan string, 4*appends)
		ticked := make(chan struct{}, 1)
		d.onStep = func(ob orchestrator.Observation) {
			switch ob.Step {
			case orchestrator.StepExit:
				exits <- ob.IssueID
			case orchestrator.StepTick:
				select {
				case ticked <- struct{}{}:
				default:
				}
			}
		}
		stop := d.start(b)
		waitFor(b, ticked, "the first tick")
		b.StartTimer()

		for i := 1; i <= appends; i++ {
			id := strconv.Itoa(i)
			t0 := appendIssue(b, d.issuesPath, i)
			called := waitTurn(b, turnCalled, "B-"+id)
			first := waitTurn(b, firstEvent, "B-"+id)
			spawned = append(spawned, called.Sub(t0))
			started = append(started, first.Sub(t0))
			for got := ""; got != id; {
				got = waitFor(b, exits, "the exit of B-"+id)
			}
		}

		b.StopTimer()
		stop()
		d.wantHandedOff(b, issueIDs(1, appends))
		d.close()
		b.StartTimer()
	}
	b.ReportMetric(percentileMS(started, 50), "p50_ms")
	b.ReportMetric(percentileMS(started, 99), "p99_ms")
	b.ReportMetric(percentileMS(spawned, 50), "p50_spawn_ms")
	b.ReportMetric(percentileMS(spawned, 99), "p99_spawn_ms")
}

// BenchmarkMemoryFlat drains issues through one daemon in waves of 100 — the issues
// file holds one wave at a time, as an operator archives finished work, so the
// tracker's own cache stays the same size — and reads the heap in use (after two GCs)
// once 1,000 and once all issues have been handed off. A daemon that keeps something
// per finished issue shows it as heap_B/issue well above 0 and a ratio above 1.
// Every issue costs a real agent process, so the default total is 3,000 (about a
// minute on 2 vCPUs); SORTIE_BENCH_MEMORY_ISSUES=10000 runs the full comparison. With
// SORTIE_BENCH_HEAP_PROFILE=prefix, heap profiles of both moments are written to
// prefix-1k.pprof and prefix-<total/1000>k.pprof (add -memprofilerate=512 to sample
// finely), for `go tool pprof -diff_base`.
func BenchmarkMemoryFlat(b *testing.B) {
	skipShort(b)
	const wave, slots, first = 100, 10, 1000
	total := 3000
	if v := os.Getenv("SORTIE_BENCH_MEMORY_ISSUES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 2*first || n%wave != 0 {
			b.Fatalf("SORTIE_BENCH_MEMORY_ISSUES: want a multiple of %d of at least %d (got %q)", wave, 2*first, v)
		}
		total = n
	}
	setup := benchSetup{issues: wave, slots: slots, pollMS: 30000, mock: "  delay_ms: 0\n"}

	var heapFirst, heapTotal float64
	for range b.N {
		b.StopTimer()
		d := newBenchDaemon(b, setup)
		var mu sync.Mutex
		pending := map[string]bool{}
		armed := false // a wave is pending; cleared when its done is signalled
		waveDone := make(chan struct{}, 1)
		arm := func(lo, hi int) {
			mu.Lock()
			defer mu.Unlock()
			for _, id := range issueIDs(lo, hi) {
				pending[id] = true
			}
			armed = true
		}
		d.onStep = func(ob orchestrator.Observation) {
			if ob.Step != orchestrator.StepExit {
				return
			}
			mu.Lock()
			delete(pending, ob.IssueID)
			// Exits also come from stale candidates of the last wave (dispatched from
			// a poll that read the file before their handoff, then skipped): only the
			// first moment a wave is complete counts.
			done := armed && len(pending) == 0 && len(ob.Snapshot.Running) == 0
			if done {
				armed = false
			}
			mu.Unlock()
			if done {
				waveDone <- struct{}{}
			}
		}
		arm(1, wave)
		stop := d.start(b)
		b.StartTimer()

		for lo := 1; lo <= total; lo += wave {
			hi := lo + wave - 1
			if lo > 1 {
				arm(lo, hi)
				writeIssues(b, d.issuesPath, lo, hi)
			}
			waitFor(b, waveDone, fmt.Sprintf("issues %d to %d to be handed off", lo, hi))
			b.StopTimer()
			d.wantHandedOff(b, issueIDs(lo, hi))
			switch hi {
			case first:
				heapFirst = heapInUseMB()
				writeHeapProfile(b, "1k")
			case total:
				heapTotal = heapInUseMB()
				writeHeapProfile(b, strconv.Itoa(total/1000)+"k")
			}
			b.StartTimer()
		}

		b.StopTimer()
		stop()
		d.close()
		b.StartTimer()
	}
	b.ReportMetric(heapFirst, "heap_MB_1k")
	b.ReportMetric(heapTotal, fmt.Sprintf("heap_MB_%dk", total/1000))
	b.ReportMetric(heapTotal/heapFirst, "heap_ratio")
	// What the daemon keeps per finished issue; ~0 when flat.
	b.ReportMetric((heapTotal-heapFirst)*(1<<20)/float64(total-first), "heap_B/issue")
}

// benchSetup is the daemon one benchmark runs.
type benchSetup struct {
	issues       int    // issues B-1 … B-n in Todo in issues.json at start
	slots        int    // agent.max_concurrent_agents
	pollMS       int    // polling.interval_ms
	inProgress   bool   // set tracker.in_progress_state, as the demo does
	mock         string // the body of the mock: block, each line indented two spaces
	exitWhenIdle bool
}

// benchDaemon is a daemon assembled as cmd/sortie assembles one.
type benchDaemon struct {
	dir, workflowPath, issuesPath string

	watcher *config.Watcher
	cfg     *config.Config
	trk     *countingTracker
	agent   *countingAdapter
	store   *sqlite.Store
	orch    *orchestrator.Orchestrator

	// onStep, when set before the daemon starts, sees every loop step.
	onStep func(orchestrator.Observation)

	mu    sync.Mutex
	last  orchestrator.Totals // totals of the latest step
	ticks int                 // polls applied
	exits int                 // worker exits handled
}

func newBenchDaemon(b *testing.B, s benchSetup) *benchDaemon {
	b.Helper()
	dir := b.TempDir()
	d := &benchDaemon{dir: dir, workflowPath: filepath.Join(dir, "WORKFLOW.md"), issuesPath: filepath.Join(dir, "issues.json")}
	writeIssues(b, d.issuesPath, 1, s.issues)
	if err := os.WriteFile(d.workflowPath, []byte(workflowText(s)), 0o644); err != nil {
		b.Fatal(err)
	}

	logger := slog.New(slog.NewTextHandler(io.Discard, nil)) // formatted, as the daemon's log is
	validate := func(c *config.Config) error {
		_, err := prompt.Parse(c.Path, c.Prompt, c.PromptLine)
		return err
	}
	var err error
	if d.watcher, err = config.NewWatcher(d.workflowPath, config.Options{}, validate, logger); err != nil {
		b.Fatal(err)
	}
	d.cfg = d.watcher.Current()
	trk, err := tracker.New(trackerConfig(d.cfg))
	if err != nil {
		b.Fatal(err)
	}
	d.trk = &countingTracker{Tracker: trk}
	inner, err := agent.New(agentConfig(d.cfg))
	if err != nil {
		b.Fatal(err)
	}
	d.agent = &countingAdapter{Adapter: inner, issues: map[*agent.Session]string{}}
	if d.store, err = sqlite.Open(context.Background(), d.cfg.DBPath); err != nil {
		b.Fatal(err)
	}
	d.orch, err = orchestrator.New(orchestrator.Options{
		Config:        d.watcher.Current,
		Reload:        d.watcher.Reload,
		ConfigChanges: d.watcher.Changes(),
		Tracker:       d.trk,
		Agent:         d.agent,
		Store:         d.store,
		Logger:        logger,
		Environ:       os.Environ(),
		ExitWhenIdle:  s.exitWhenIdle,
		Observe: func(ob orchestrator.Observation) {
			d.mu.Lock()
			d.last = ob.Snapshot.Totals
			switch ob.Step {
			case orchestrator.StepTick:
				d.ticks++
			case orchestrator.StepExit:
				d.exits++
			}
			d.mu.Unlock()
			if d.onStep != nil {
				d.onStep(ob)
			}
		},
	})
	if err != nil {
		b.Fatal(err)
	}
	return d
}

// start runs the daemon in the background until the returned stop is called.
func (d *benchDaemon) start(b *testing.B) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	if err := d.watcher.Start(ctx); err != nil {
		b.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- d.orch.Run(ctx) }()
	return func() {
		cancel()
		if err := <-done; err != nil {
			b.Errorf("Run: %v", err)
		}
		d.watcher.Wait()
	}
}

func (d *benchDaemon) close() {
	d.store.Close()
}

func (d *benchDaemon) totals() orchestrator.Totals {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.last
}

// counts returns the polls applied and the worker exits handled so far.
func (d *benchDaemon) counts() (ticks, exits int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.ticks, d.exits
}

// wantHandedOff fails unless every issue in ids is in the handoff state and has
// exactly one run, handed off.
func (d *benchDaemon) wantHandedOff(b *testing.B, ids []string) {
	b.Helper()
	ctx := context.Background()
	states, err := d.trk.FetchIssueStatesByIDs(ctx, ids)
	if err != nil {
		b.Fatal(err)
	}
	counts, err := d.store.CountRuns(ctx, ids)
	if err != nil {
		b.Fatal(err)
	}
	for _, id := range ids {
		if states[id] != stateHandoff || counts[id] != 1 {
			b.Fatalf("issue %s: state %q after %d runs, want %q after 1 run", id, states[id], counts[id], stateHandoff)
		}
	}
}

// countingTracker wraps the real tracker to count the calls the daemon makes.
type countingTracker struct {
	tracker.Tracker
	reads, writes atomic.Int64
}

func (t *countingTracker) FetchCandidateIssues(ctx context.Context) ([]tracker.Issue, error) {
	t.reads.Add(1)
	return t.Tracker.FetchCandidateIssues(ctx)
}

func (t *countingTracker) FetchIssueByID(ctx context.Context, id string) (tracker.Issue, error) {
	t.reads.Add(1)
	return t.Tracker.FetchIssueByID(ctx, id)
}

func (t *countingTracker) FetchIssueStatesByIDs(ctx context.Context, ids []string) (map[string]string, error) {
	t.reads.Add(1)
	return t.Tracker.FetchIssueStatesByIDs(ctx, ids)
}

func (t *countingTracker) TransitionIssue(ctx context.Context, id, state string) error {
	t.writes.Add(1)
	return t.Tracker.TransitionIssue(ctx, id, state)
}

// Watch forwards the file tracker's watch, so the daemon sees its edits as it would
// without the wrapper.
func (t *countingTracker) Watch(ctx context.Context) <-chan struct{} {
	return t.Tracker.(tracker.Watcher).Watch(ctx)
}

// countingAdapter wraps the real adapter to count the events it delivers and, for the
// latency benchmark, to note when a turn starts and when its first event arrives.
type countingAdapter struct {
	agent.Adapter
	events       atomic.Int64
	onTurn       func(identifier string) // RunTurn called: the child is about to be spawned
	onFirstEvent func(identifier string) // the child's first event (session_started)

	mu     sync.Mutex
	issues map[*agent.Session]string
}

func (a *countingAdapter) StartSession(ctx context.Context, p agent.StartParams) (*agent.Session, error) {
	s, err := a.Adapter.StartSession(ctx, p)
	if err == nil && a.onTurn != nil {
		for _, kv := range p.Env {
			if v, ok := strings.CutPrefix(kv, "SORTIE_ISSUE_IDENTIFIER="); ok {
				a.mu.Lock()
				a.issues[s] = v
				a.mu.Unlock()
			}
		}
	}
	return s, err
}

func (a *countingAdapter) RunTurn(ctx context.Context, s *agent.Session, p agent.TurnParams) (agent.TurnResult, error) {
	onEvent := p.OnEvent
	if a.onTurn == nil {
		p.OnEvent = func(ev agent.Event) {
			a.events.Add(1)
			onEvent(ev)
		}
		return a.Adapter.RunTurn(ctx, s, p)
	}
	a.mu.Lock()
	id := a.issues[s]
	a.mu.Unlock()
	a.onTurn(id)
	first := true
	p.OnEvent = func(ev agent.Event) {
		a.events.Add(1)
		if first {
			first = false
			a.onFirstEvent(id)
		}
		onEvent(ev)
	}
	return a.Adapter.RunTurn(ctx, s, p)
}

func (a *countingAdapter) StopSession(ctx context.Context, s *agent.Session) error {
	a.mu.Lock()
	delete(a.issues, s)
	a.mu.Unlock()
	return a.Adapter.StopSession(ctx, s)
}

// xargsBaseline runs the mock child as `xargs -P slots` would run any agent CLI: each of
// setup.issues invocations in a fresh directory, with the turn file the adapter writes
// for this configuration, its output to /dev/null. It returns the wall time.
func xargsBaseline(b *testing.B, s benchSetup) time.Duration {
	b.Helper()
	if _, err := exec.LookPath("xargs"); err != nil {
		b.Skip("xargs not found: the physical-limit baseline needs it")
	}
	d := newBenchDaemon(b, benchSetup{issues: 0, slots: s.slots, pollMS: s.pollMS, mock: s.mock})
	defer d.close()
	turnFile := captureTurnFile(b, d.cfg)
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	dirs := freshDirs(b, s.issues)
	cmd := exec.Command("xargs", "-P", strconv.Itoa(s.slots), "-I{}",
		"env", "-C", "{}", "SORTIE_MOCK_AGENT_CHILD=1", exe, turnFile)
	cmd.Stdin = strings.NewReader(strings.Join(dirs, "\n") + "\n")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	start := time.Now()
	err = cmd.Run()
	elapsed := time.Since(start)
	if err != nil {
		b.Fatalf("xargs baseline: %v\n%s", err, stderr.String())
	}
	for _, dir := range dirs {
		if _, err := os.Stat(filepath.Join(dir, ".mock-agent", "turns")); err != nil {
			b.Fatalf("xargs baseline: the child did not run in %s: %v", dir, err)
		}
	}
	return elapsed
}

// captureTurnFile runs one turn of cfg's mock adapter with agent.command pointing at a
// script that copies the turn file it is given, and returns the copy's path.
func captureTurnFile(b *testing.B, cfg *config.Config) string {
	b.Helper()
	dir := b.TempDir()
	out := filepath.Join(dir, "turn.json")
	script := filepath.Join(dir, "capture.sh")
	body := "cp \"$1\" " + out + "\necho '{\"type\":\"result\",\"outcome\":\"success\"}'\n"
	if err := os.WriteFile(script, []byte(body), 0o644); err != nil {
		b.Fatal(err)
	}
	ac := agentConfig(cfg)
	ac.Command = "sh " + script
	ad, err := agent.New(ac)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	s, err := ad.StartSession(ctx, agent.StartParams{Workspace: dir, Env: os.Environ()})
	if err != nil {
		b.Fatal(err)
	}
	defer ad.StopSession(ctx, s)
	if _, err := ad.RunTurn(ctx, s, agent.TurnParams{Prompt: "Work on B-1: Benchmark issue 1.", TurnNumber: 1, OnEvent: func(agent.Event) {}}); err != nil {
		b.Fatalf("capturing the turn file: %v", err)
	}
	return out
}

// adapterBaseline runs setup.issues turns of the real mock adapter from setup.slots
// goroutines, each in a fresh directory, and returns the wall time.
func adapterBaseline(b *testing.B, s benchSetup) time.Duration {
	b.Helper()
	d := newBenchDaemon(b, benchSetup{issues: 0, slots: s.slots, pollMS: s.pollMS, mock: s.mock})
	defer d.close()
	ad, err := agent.New(agentConfig(d.cfg))
	if err != nil {
		b.Fatal(err)
	}
	dirs := freshDirs(b, s.issues)
	jobs := make(chan string)
	errs := make(chan error, len(dirs))
	var wg sync.WaitGroup
	start := time.Now()
	for range s.slots {
		wg.Go(func() {
			ctx := context.Background()
			for dir := range jobs {
				sess, err := ad.StartSession(ctx, agent.StartParams{Workspace: dir, Env: os.Environ()})
				if err != nil {
					errs <- err
					continue
				}
				if _, err := ad.RunTurn(ctx, sess, agent.TurnParams{Prompt: "Work on B-1: Benchmark issue 1.", TurnNumber: 1, OnEvent: func(agent.Event) {}}); err != nil {
					errs <- err
				}
				ad.StopSession(ctx, sess)
			}
		})
	}
	for _, dir := range dirs {
		jobs <- dir
	}
	close(jobs)
	wg.Wait()
	elapsed := time.Since(start)
	close(errs)
	for err := range errs {
		b.Fatalf("adapter baseline: %v", err)
	}
	return elapsed
}

func freshDirs(b *testing.B, n int) []string {
	b.Helper()
	root := b.TempDir()
	dirs := make([]string, n)
	for i := range dirs {
		dirs[i] = filepath.Join(root, "B-"+strconv.Itoa(i+1))
		if err := os.Mkdir(dirs[i], 0o755); err != nil {
			b.Fatal(err)
		}
	}
	return dirs
}

func workflowText(s benchSetup) string {
	var w strings.Builder
	w.WriteString("---\ntracker:\n  kind: file\n  path: issues.json\n  active_states: [Todo, In Progress]\n")
	if s.inProgress {
		w.WriteString("  in_progress_state: In Progress\n")
	}
	fmt.Fprintf(&w, "  handoff_state: %s\n  terminal_states: [Done, Cancelled]\n", stateHandoff)
	fmt.Fprintf(&w, "polling:\n  interval_ms: %d\n", s.pollMS)
	w.WriteString("workspace:\n  root: ./workspaces\n")
	fmt.Fprintf(&w, "agent:\n  kind: mock\n  max_turns: 1\n  max_concurrent_agents: %d\n", s.slots)
	w.WriteString("db_path: ./sortie.db\n")
	w.WriteString("mock:\n" + s.mock)
	w.WriteString("---\nWork on {{ .issue.identifier }}: {{ .issue.title }}.\n")
	return w.String()
}

// trackerConfig and agentConfig build the adapters' configuration as cmd/sortie does.
func trackerConfig(cfg *config.Config) tracker.Config {
	return tracker.Config{
		Kind: cfg.Tracker.Kind, ActiveStates: cfg.Tracker.ActiveStates, TerminalStates: cfg.Tracker.TerminalStates,
		HandoffState: cfg.Tracker.HandoffState, Options: map[string]any{"path": cfg.TrackerPath()},
		WorkflowDir: cfg.Dir,
	}
}

func agentConfig(cfg *config.Config) agent.Config {
	return agent.Config{
		Kind: cfg.Agent.Kind, Command: cfg.Agent.Command, TurnTimeout: cfg.Agent.TurnTimeout,
		ReadTimeout: cfg.Agent.ReadTimeout, StallTimeout: cfg.Agent.StallTimeout,
		Options: cfg.Block(cfg.Agent.Kind), WorkflowDir: cfg.Dir,
	}
}

// toolCalls is a YAML flow list body of n tool calls.
func toolCalls(n int) string {
	names := []string{"Read", "Grep", "Edit", "Bash", "Write", "Glob", "Read", "Bash"}
	calls := make([]string, n)
	for i := range calls {
		calls[i] = "{name: " + names[i%len(names)] + "}"
	}
	return strings.Join(calls, ", ")
}

func issueLine(i int) string {
	return fmt.Sprintf(`  {"id": "%d", "identifier": "B-%d", "title": "Benchmark issue %d", "state": %q, "created_at": "2026-01-01T00:00:00Z"}`,
		i, i, i, stateTodo)
}

func issueIDs(lo, hi int) []string {
	ids := make([]string, 0, hi-lo+1)
	for i := lo; i <= hi; i++ {
		ids = append(ids, strconv.Itoa(i))
	}
	return ids
}

// writeIssues replaces the issues file with issues lo … hi (none when hi < lo), by
// writing a temporary file and renaming it over the old one, as editors save.
func writeIssues(b *testing.B, path string, lo, hi int) {
	b.Helper()
	lines := make([]string, 0, max(hi-lo+1, 0))
	for i := lo; i <= hi; i++ {
		lines = append(lines, issueLine(i))
	}
	replaceFile(b, path, "[\n"+strings.Join(lines, ",\n")+"\n]\n")
}

// appendIssue adds issue i at the end of the issues file (keeping Sortie's edits to
// the others) and returns the moment the new file was renamed into place.
func appendIssue(b *testing.B, path string, i int) time.Time {
	b.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	s := strings.TrimRight(string(data), " \t\r\n")
	if !strings.HasSuffix(s, "]") {
		b.Fatalf("%s does not end with ]", path)
	}
	body := strings.TrimRight(s[:len(s)-1], " \t\r\n")
	sep := ",\n"
	if strings.HasSuffix(body, "[") {
		sep = "\n"
	}
	return replaceFile(b, path, body+sep+issueLine(i)+"\n]\n")
}

func replaceFile(b *testing.B, path, content string) time.Time {
	b.Helper()
	tmp := filepath.Join(filepath.Dir(path), ".bench-"+filepath.Base(path)+".tmp")
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		b.Fatal(err)
	}
	at := time.Now()
	if err := os.Rename(tmp, path); err != nil {
		b.Fatal(err)
	}
	return at
}

type turnEvent struct {
	identifier string
	at         time.Time
}

// waitTurn returns the time of identifier's event from ch, failing after a minute.
func waitTurn(b *testing.B, ch <-chan turnEvent, identifier string) time.Time {
	b.Helper()
	for {
		ev := waitFor(b, ch, "a turn of "+identifier)
		if ev.identifier == identifier {
			return ev.at
		}
	}
}

// waitFor receives from ch, failing after a minute: a benchmark that waits longer has
// lost work, and must say what it waited for.
func waitFor[T any](b *testing.B, ch <-chan T, what string) T {
	b.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(time.Minute):
		b.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// percentileMS is the nearest-rank p-th percentile of ds, in milliseconds.
func percentileMS(ds []time.Duration, p float64) float64 {
	if len(ds) == 0 {
		return math.NaN()
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	k := int(math.Ceil(p/100*float64(len(s)))) - 1
	return float64(s[max(k, 0)]) / float64(time.Millisecond)
}

// selfCPU is this process's user+system CPU time so far; children are not included.
func selfCPU(b *testing.B) time.Duration { return cpuTime(b, syscall.RUSAGE_SELF) }

// cpuTime is the user+system CPU time of who (RUSAGE_SELF, or RUSAGE_CHILDREN: the
// children waited for so far).
func cpuTime(b *testing.B, who int) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(who, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func heapInUseMB() float64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return float64(ms.HeapInuse) / (1 << 20)
}

// writeHeapProfile writes the live heap to $SORTIE_BENCH_HEAP_PROFILE-<name>.pprof when
// that variable is set.
func writeHeapProfile(b *testing.B, name string) {
	prefix := os.Getenv("SORTIE_BENCH_HEAP_PROFILE")
	if prefix == "" {
		return
	}
	f, err := os.Create(prefix + "-" + name + ".pprof")
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		b.Fatal(err)
	}
}

func skipShort(b *testing.B) {
	if testing.Short() {
		b.Skip("a load scenario with real agent processes; not run with -short")
	}
}
