package server

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"sortie/internal/orchestrator"
	"sortie/internal/server/dashboard"
	"sortie/internal/store"
	"sortie/internal/testkit/browser"
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
	chromium := browser.FindChromium(t)
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
	// The page's text is logged on a failure.
	b := browser.Start(t, chromium, browser.Options{Width: 1200, Height: 820, FailureText: `document.body.innerText`})

	b.Do(chromedp.EmulateViewport(1200, 820), chromedp.Navigate(base+"/"))
	approve := `.checkpoint[data-issue="PROJ-8"][data-checkpoint="approve-plan"] button[data-option="approve"]`
	b.WaitFor("PROJ-8's plan approval with its options", `(() => {
		const b = document.querySelector('`+approve+`');
		return b && !b.disabled && b.title === 'Implement the plan as written' &&
			document.querySelector('.checkpoint[data-checkpoint="review-tests"] .countdown')?.textContent.startsWith('in ');
	})()`)
	b.Do(chromedp.SendKeys(chromedp.CSS(`.checkpoint[data-issue="PROJ-8"] input[name="answered_by"]`), "alice"))
	if *writeScreenshot {
		path := filepath.Join("..", "..", checkpointScreenshot)
		if err := os.WriteFile(path, b.ScreenshotNode(`.queues`), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot: %s", path)
	}

	b.Do(chromedp.Click(chromedp.CSS(approve)))
	b.WaitFor("the answer recorded and shown", `(() => {
		const c = document.querySelector('.checkpoint[data-checkpoint="approve-plan"]');
		return c && c.querySelector('.answered')?.textContent.includes('alice') && !c.querySelector('button[data-option]');
	})()`)
	call, n := a.lastCall()
	if want := (answerCall{"PROJ-8", "approve-plan", "approve", "alice", store.AnswerDashboard}); n != 1 || call != want {
		t.Fatalf("the answerer got %d call(s), last %+v; want one %+v", n, call, want)
	}

	// The issue's page: the activity path of its run and its checkpoint decisions.
	b.Do(chromedp.Navigate(base + "/issues/PROJ-8"))
	b.WaitFor("PROJ-8's activity path and decisions", `(() => {
		const w = document.querySelector('#workflow');
		return w && !w.hidden && w.querySelector('.paths li')?.textContent.includes('plan → implement') &&
			w.querySelector('.decisions tbody tr')?.textContent.includes('alice');
	})()`)
	b.CheckNoErrors()
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
