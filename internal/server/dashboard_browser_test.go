package server

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"sortie/internal/orchestrator"
	"sortie/internal/server/dashboard"
	"sortie/internal/store"
)

// The dashboard's checkpoint answers in a real browser: Debian's Chromium, headless,
// over the DevTools protocol, against this package's server with a fake scheduler.
// The test waits on conditions in the page (chromedp.Poll), never for fixed times.
//
// go test ./internal/server -run TestDashboard_AnswersACheckpoint -args -screenshot
// also writes the screenshot docs/workflows.md shows.

var writeScreenshot = flag.Bool("screenshot", false, "write "+checkpointScreenshot+" from TestDashboard_AnswersACheckpoint")

// checkpointScreenshot is the screenshot's path from the repository root.
const checkpointScreenshot = "docs/img/dashboard-checkpoint.png"

// browserTimeout bounds each wait on the page: a guard against a hung test on a
// loaded machine, not a speed assertion.
const browserTimeout = 60 * time.Second

// linkedAnswerer answers like fakeAnswerer, then changes the scheduler's snapshot the
// way the orchestrator does: the checkpoint is answered and the hold lifts.
type linkedAnswerer struct {
	*fakeAnswerer
	sched *fakeScheduler
}

func (l linkedAnswerer) AnswerCheckpoint(ctx context.Context, identifier, checkpointID, option, by, source string) (orchestrator.CheckpointView, error) {
	v, err := l.fakeAnswerer.AnswerCheckpoint(ctx, identifier, checkpointID, option, by, source)
	if err != nil {
		return v, err
	}
	l.sched.set(func(s *orchestrator.Snapshot) {
		for i := range s.Checkpoints {
			if s.Checkpoints[i].ID == v.ID {
				s.Checkpoints[i] = v
			}
		}
		held := s.Held[:0]
		for _, h := range s.Held {
			if h.IssueID != v.IssueID {
				held = append(held, h)
			}
		}
		s.Held = held
	})
	return v, nil
}

func TestDashboard_AnswersACheckpoint(t *testing.T) {
	chromium := findChromium(t)
	a := &fakeAnswerer{}
	f := newFixture(t, func(o *Options) {
		o.Dashboard = dashboard.Handler("1.2.3")
		o.Now = time.Now
	})
	f.srv.opts.Checkpoints = linkedAnswerer{a, f.sched}

	// PROJ-8 is parked on its plan's approval; PROJ-1 is running, and its agent's
	// non-blocking checkpoint takes the default option in four minutes.
	plan := planCheckpoint()
	review := planCheckpoint()
	review.ID, review.IssueID, review.Identifier, review.Activity = 9, "id-1", "PROJ-1", "verify"
	review.CheckpointID, review.Name, review.Blocking = "review-tests", "Review the test plan", false
	review.Message = "The agent added 14 tests for the retry path. Look at them before it moves on?"
	review.Options = []store.CheckpointOption{{ID: "continue", Label: "Continue", Description: "Accept the tests"},
		{ID: "stop", Label: "Stop and ask", Description: "Hold the issue for a review"}}
	review.DefaultOption, review.AutoAdvanceAt = "continue", t0.Add(4*time.Minute)
	a.pending = []orchestrator.CheckpointView{plan, review}
	f.sched.set(func(s *orchestrator.Snapshot) {
		s.Running = []orchestrator.RunningView{runningView(1)}
		s.Held = []orchestrator.HeldView{{IssueID: "id-8", Identifier: "PROJ-8", Reason: "awaiting_input",
			Message: "waiting for a human's answer to checkpoint approve-plan", State: "In Progress", Since: t0.Add(-3 * time.Minute)},
			{IssueID: "id-6", Identifier: "PROJ-6", Reason: "error", Message: "agent_not_found: codex is not on PATH", State: "Todo", Since: t0.Add(-30 * time.Minute)}}
		s.Retrying = []orchestrator.RetryView{{IssueID: "id-3", Identifier: "PROJ-3", Attempt: 2, Kind: "failure",
			DueAt: t0.Add(40 * time.Second), Error: "turn_failed: exit 1"}}
		s.Checkpoints = []orchestrator.CheckpointView{plan, review}
		s.Totals = orchestrator.Totals{InputTokens: 50000, OutputTokens: 9000, TotalTokens: 59000, CostUSD: 3.5, SecondsRunning: 4000, ToolCalls: 120}
	})
	seedWorkflowHistory(t, f.st)
	base := serveFixture(t, f)
	b := newBrowser(t, chromium)

	b.do(chromedp.EmulateViewport(1200, 820), chromedp.Navigate(base+"/"))
	approve := `.checkpoint[data-issue="PROJ-8"][data-checkpoint="approve-plan"] button[data-option="approve"]`
	b.waitFor("PROJ-8's plan approval with its options", `(() => {
		const b = document.querySelector('`+approve+`');
		return b && !b.disabled && b.title === 'Implement the plan as written' &&
			document.querySelector('.checkpoint[data-checkpoint="review-tests"] .countdown')?.textContent.startsWith('in ');
	})()`)
	b.do(chromedp.SendKeys(chromedp.CSS(`.checkpoint[data-issue="PROJ-8"] input[name="answered_by"]`), "alice"))
	if *writeScreenshot {
		b.screenshot(filepath.Join("..", "..", checkpointScreenshot), `.queues`)
	}

	b.do(chromedp.Click(chromedp.CSS(approve)))
	b.waitFor("the answer recorded and shown", `(() => {
		const c = document.querySelector('.checkpoint[data-checkpoint="approve-plan"]');
		return c && c.querySelector('.answered')?.textContent.includes('alice') && !c.querySelector('button[data-option]');
	})()`)
	call, n := a.lastCall()
	if want := (answerCall{"PROJ-8", "approve-plan", "approve", "alice", store.AnswerDashboard}); n != 1 || call != want {
		t.Fatalf("the answerer got %d call(s), last %+v; want one %+v", n, call, want)
	}

	// The issue's page: the activity path of its run and its checkpoint decisions.
	b.do(chromedp.Navigate(base + "/issues/PROJ-8"))
	b.waitFor("PROJ-8's activity path and decisions", `(() => {
		const w = document.querySelector('#workflow');
		return w && !w.hidden && w.querySelector('.paths li')?.textContent.includes('plan → implement') &&
			w.querySelector('.decisions tbody tr')?.textContent.includes('alice');
	})()`)
	b.checkNoErrors()
}

// seedWorkflowHistory stores a run of PROJ-8 that entered plan, then implement, and
// alice's approval of its plan.
func seedWorkflowHistory(t *testing.T, st store.Store) {
	t.Helper()
	ctx := context.Background()
	run := seedRun(t, st, "id-8", "PROJ-8", 1, t0.Add(-time.Hour), &store.RunEnd{Status: store.StatusSucceeded, EndedAt: t0.Add(-50 * time.Minute)})
	const sid = "wf-old-8"
	if err := st.SaveWorkflowSession(ctx, store.WorkflowSession{SessionID: sid, Workflow: "work-package", IssueID: "id-8",
		Identifier: "PROJ-8", Token: "tok", UpdatedAt: t0.Add(-time.Hour)}); err != nil {
		t.Fatal(err)
	}
	for i, act := range []string{"plan", "implement"} {
		if _, err := st.AppendTraceEvent(ctx, store.TraceEvent{SessionID: sid, SpanID: fmt.Sprint(i), IssueID: "id-8", RunID: run,
			Tool: "next_activity", TS: t0.Add(time.Duration(i-59) * time.Minute), OK: true, Workflow: "work-package", Activity: act}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.ArmCheckpoints(ctx, sid, []store.Checkpoint{{SessionID: sid, IssueID: "id-8", Identifier: "PROJ-8", RunID: run,
		Workflow: "work-package", Activity: "plan", CheckpointID: "approve-plan", Name: "Approve the plan",
		Options: []store.CheckpointOption{{ID: "approve", Label: "Approve"}}, Blocking: true, IssuedAt: t0.Add(-59 * time.Minute)}}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.AnswerCheckpoint(ctx, store.CheckpointAnswer{SessionID: sid, CheckpointID: "approve-plan", Option: "approve",
		By: "alice", Source: store.AnswerDashboard, At: t0.Add(-57 * time.Minute)}); err != nil {
		t.Fatal(err)
	}
}

// serveFixture serves f on a loopback port until the test ends and returns its base URL.
func serveFixture(t *testing.T, f *fixture) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.srv.Serve(ctx, l) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return "http://" + l.Addr().String()
}

// chromiumPaths are where Chromium is looked for, unless $SORTIE_CHROMIUM names it.
var chromiumPaths = []string{"/usr/bin/chromium", "/usr/bin/chromium-browser"}

func findChromium(t *testing.T) string {
	t.Helper()
	candidates := chromiumPaths
	if p := os.Getenv("SORTIE_CHROMIUM"); p != "" {
		candidates = []string{p}
	}
	for _, p := range candidates {
		if _, err := exec.LookPath(p); err == nil {
			return p
		}
	}
	msg := fmt.Sprintf("no Chromium at %s (install Debian's chromium: apt-get install chromium, or set SORTIE_CHROMIUM)",
		strings.Join(candidates, " or "))
	if os.Getenv("CI") != "" {
		t.Fatal(msg + "; CI must run the browser test")
	}
	t.Skip(msg)
	return ""
}

// browser is one headless Chromium with one tab, for one test.
type browser struct {
	t   *testing.T
	ctx context.Context

	mu     sync.Mutex
	errors []string // uncaught exceptions in the page
}

func newBrowser(t *testing.T, chromium string) *browser {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium),
		chromedp.UserDataDir(t.TempDir()),
		// Chromium's sandbox needs user namespaces, which containers and root lack;
		// the pages are our own, on loopback.
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.WindowSize(1200, 820),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	b := &browser{t: t}
	ctx, cancelTab := chromedp.NewContext(actx, chromedp.WithListener(func(ev any) {
		if e, ok := ev.(*runtime.EventExceptionThrown); ok {
			msg := e.ExceptionDetails.Text
			if ex := e.ExceptionDetails.Exception; ex != nil && ex.Description != "" {
				msg += ": " + ex.Description
			}
			b.mu.Lock()
			b.errors = append(b.errors, msg)
			b.mu.Unlock()
		}
	}))
	b.ctx = ctx
	t.Cleanup(func() {
		cancelTab()
		cancelAlloc()
	})
	// Start the browser with a context that outlives every wait (chromedp ties the
	// browser's life to the first Run's context).
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting %s: %v", chromium, err)
	}
	return b
}

func (b *browser) do(actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, browserTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.fail("browser: %v", err)
	}
}

// waitFor waits until the JavaScript condition cond holds in the page.
func (b *browser) waitFor(what, cond string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, browserTimeout+5*time.Second)
	defer cancel()
	_, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](cond,
		chromedp.WithPollingInterval(100*time.Millisecond), chromedp.WithPollingTimeout(browserTimeout)))
	if err != nil {
		if errors.Is(err, chromedp.ErrPollingTimeout) {
			err = fmt.Errorf("not within %s", browserTimeout)
		}
		b.fail("waiting for %s: %v", what, err)
	}
}

// screenshot writes a PNG of the node sel to path.
func (b *browser) screenshot(path, sel string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, browserTimeout)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.Screenshot(chromedp.CSS(sel)))
	if err != nil {
		b.fail("screenshot of %s: %v", sel, err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Fatal(err)
	}
	b.t.Logf("screenshot: %s", path)
}

// fail ends the test with the page's text and any script errors.
func (b *browser) fail(format string, args ...any) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	if raw, err := chromedp.Run(ctx, chromedp.Evaluate[[]byte](`document.body.innerText`)); err == nil {
		var text string
		if json.Unmarshal(raw, &text) == nil {
			b.t.Logf("the page:\n%s", text)
		}
	}
	b.mu.Lock()
	if len(b.errors) > 0 {
		b.t.Logf("script errors:\n%s", strings.Join(b.errors, "\n"))
	}
	b.mu.Unlock()
	b.t.Fatalf(format, args...)
}

func (b *browser) checkNoErrors() {
	b.t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.errors) > 0 {
		b.t.Errorf("the page threw %d script error(s):\n%s", len(b.errors), strings.Join(b.errors, "\n"))
	}
}
