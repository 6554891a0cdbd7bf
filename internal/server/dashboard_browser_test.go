package server

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"sortie/internal/orchestrator"
	"sortie/internal/server/dashboard"
	"sortie/internal/store"
	"sortie/internal/testkit/browser"
	"sortie/internal/webhook"
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

func (l linkedAnswerer) AnswerCheckpoint(ctx context.Context, identifier, checkpointID, option, by, source string) (store.CheckpointView, error) {
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
	a.pending = []store.CheckpointView{plan, review}
	f.sched.set(func(s *orchestrator.Snapshot) {
		s.Running = []orchestrator.RunningView{runningView(1)}
		s.Held = []orchestrator.HeldView{{IssueID: "id-8", Identifier: "PROJ-8", Reason: "awaiting_input",
			Message: "waiting for a human's answer to checkpoint approve-plan", State: "In Progress", Since: t0.Add(-3 * time.Minute)},
			{IssueID: "id-6", Identifier: "PROJ-6", Reason: "error", Message: "agent_not_found: codex is not on PATH", State: "Todo", Since: t0.Add(-30 * time.Minute)}}
		s.Retrying = []orchestrator.RetryView{{IssueID: "id-3", Identifier: "PROJ-3", Attempt: 2, Kind: "failure",
			DueAt: t0.Add(40 * time.Second), Error: "turn_failed: exit 1"}}
		s.Checkpoints = []store.CheckpointView{plan, review}
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

// The Cluster panel appears only while the state has a cluster: its three daemons, the
// polling one and this one marked, their issues and the lapsed one; the renewal's
// error as a banner. A daemon's host, read from the database, is shown as text.
func TestDashboard_ShowsTheClusterOnlyInOne(t *testing.T) {
	chromium := browser.FindChromium(t)
	f := newFixture(t, func(o *Options) {
		o.Dashboard = dashboard.Handler("1.2.3")
		o.Now = time.Now
	})
	f.sched.set(func(s *orchestrator.Snapshot) {
		s.Running = []orchestrator.RunningView{runningView(1), runningView(2)}
	})
	base := serveFixture(t, f)
	b := browser.Start(t, chromium, browser.Options{Width: 1200, Height: 820, FailureText: `document.body.innerText`})

	b.Do(chromedp.Navigate(base + "/"))
	b.WaitFor("a lone daemon's overview, without the Cluster panel", `(() => {
		const c = document.querySelector('#cluster');
		return document.body.dataset.loaded === 'true' && document.querySelectorAll('.session').length === 2 && c && c.hidden;
	})()`)

	const hostile = `<img src=x onerror="window.injected=1">build-3`
	c := threeDaemons()
	c.Daemons[2].Host = hostile
	c.Error = "renewing the leases: dial tcp 10.0.0.9:5432: connection refused"
	f.sched.set(func(s *orchestrator.Snapshot) { s.Cluster = &c })
	b.WaitFor("the Cluster panel with three daemons", `(() => {
		const c = document.querySelector('#cluster');
		return c && !c.hidden && c.querySelectorAll('tbody tr[data-daemon]').length === 3;
	})()`)
	var got struct {
		Rows    []clusterRow `json:"rows"`
		Count   string       `json:"count"`
		Leases  string       `json:"leases"`
		Banner  string       `json:"banner"`
		Images  int          `json:"images"`
		Injects bool         `json:"injected"`
		Text    string       `json:"text"`
	}
	b.Eval(`(() => {
		const c = document.querySelector('#cluster');
		const cell = (tr, label) => tr.querySelector('td[data-label="' + label + '"]').textContent;
		return {
			rows: [...c.querySelectorAll('tbody tr')].map((tr) => ({
				id: tr.dataset.daemon, host: cell(tr, 'Host'), pid: cell(tr, 'PID'), agents: cell(tr, 'Agents'),
				markers: [...tr.querySelectorAll('[data-marker]')].map((m) => m.dataset.marker + ':' + m.textContent),
				heartbeat: tr.querySelector('td[data-label="Heartbeat"] .badge').textContent, lapsed: tr.classList.contains('lapsed'),
				issues: [...tr.querySelectorAll('[data-lease]')].map((l) => l.textContent),
			})),
			count: c.querySelector('h2 .count').textContent,
			leases: c.querySelector('[data-field="leases"]').textContent,
			banner: document.querySelector('[data-banner="cluster"]')?.textContent || '',
			images: c.querySelectorAll('img').length,
			injected: !!window.injected,
			text: c.innerText,
		};
	})()`, &got)
	want := []clusterRow{
		{ID: "build-1-4100-a1b2", Host: "build-1", PID: "4100", Agents: "2 / 4", Markers: []string{"self:this daemon"},
			Heartbeat: "alive", Issues: []string{"PROJ-1", "PROJ-2"}},
		{ID: "build-2-5200-c3d4", Host: "build-2", PID: "5200", Agents: "1 / 4", Markers: []string{"leader:polling"},
			Heartbeat: "alive", Issues: []string{"PROJ-9", "PROJ-3 (retry)"}},
		{ID: "build-3-6300-e5f6", Host: hostile, PID: "6300", Agents: "0 / 4", Markers: []string{},
			Heartbeat: "lapsed", Lapsed: true, Issues: []string{}},
	}
	if !reflect.DeepEqual(got.Rows, want) {
		t.Errorf("the cluster's daemons:\n got %+v\nwant %+v", got.Rows, want)
	}
	if got.Count != "(3)" || got.Leases != "4 live leases: 3 running an agent, 1 waiting for a retry" {
		t.Errorf("count %q, leases %q; want (3) and 4 live leases, 3 running, 1 waiting", got.Count, got.Leases)
	}
	if !strings.Contains(got.Banner, "could not renew its leases") || !strings.Contains(got.Banner, c.Error) {
		t.Errorf("the banner is %q, want that the renewal failed, and its error", got.Banner)
	}
	for _, bad := range []string{"null", "undefined", "NaN"} {
		if strings.Contains(got.Text, bad) {
			t.Errorf("the Cluster panel shows %q:\n%s", bad, got.Text)
		}
	}
	if got.Images != 0 || got.Injects {
		t.Errorf("a daemon's host was parsed as HTML: %d image(s) in the panel, script ran %v", got.Images, got.Injects)
	}

	f.sched.set(func(s *orchestrator.Snapshot) { s.Cluster = nil })
	b.WaitFor("the Cluster panel and its banner gone once the daemon is alone", `(() => {
		const c = document.querySelector('#cluster');
		return c && c.hidden && !document.querySelector('[data-banner="cluster"]');
	})()`)
	b.CheckNoErrors()
}

// The header shows the last webhook delivery once one has come: green when accepted,
// amber when refused, with the event, result and counts in its tooltip.
func TestDashboard_ShowsTheLastWebhookDelivery(t *testing.T) {
	chromium := browser.FindChromium(t)
	recv := &fakeReceiver{}
	f := newFixture(t, func(o *Options) {
		o.Dashboard = dashboard.Handler("1.2.3")
		o.Now = time.Now
		o.Webhooks = recv
	})
	base := serveFixture(t, f)
	b := browser.Start(t, chromium, browser.Options{Width: 1200, Height: 820, FailureText: `document.body.innerText`})
	b.Do(chromedp.Navigate(base + "/"))
	b.WaitFor("the overview, without a webhook pill", `(() => {
		const p = document.querySelector('[data-role="webhook"]');
		return document.body.dataset.loaded === 'true' && p && p.hidden;
	})()`)

	now := time.Now()
	recv.set(webhook.Status{Tracker: "github", LastAt: now.Add(-3 * time.Second), LastEvent: "issues.opened",
		LastResult: webhook.Accepted, LastAcceptedAt: now, Counts: map[string]int64{webhook.Accepted: 4, webhook.Unauthorized: 0}})
	b.WaitFor("an accepted delivery in the header", `(() => {
		const p = document.querySelector('[data-role="webhook"]');
		return !p.hidden && p.textContent.startsWith('github webhook') && p.classList.contains('ok') &&
			p.title.includes('issues.opened, accepted') && p.title.includes('4 accepted');
	})()`)

	// Refusals after an accepted delivery (anyone can send them) keep it green, with the
	// accepted delivery's time; the tooltip has the refusal.
	recv.set(webhook.Status{Tracker: "github", LastAt: now, LastEvent: "", LastResult: webhook.Unauthorized,
		LastAcceptedAt: now.Add(-3 * time.Second), Counts: map[string]int64{webhook.Accepted: 4, webhook.Unauthorized: 1}})
	b.WaitFor("a refusal after an accepted delivery in the tooltip only", `(() => {
		const p = document.querySelector('[data-role="webhook"]');
		return !p.hidden && p.classList.contains('ok') && p.title.includes('unauthorized') && p.title.includes('1 unauthorized');
	})()`)
	// None accepted yet, only refusals: amber (a wrong secret on one side).
	recv.set(webhook.Status{Tracker: "jira", LastAt: now, LastResult: webhook.Unauthorized,
		Counts: map[string]int64{webhook.Unauthorized: 2}})
	b.WaitFor("refusals only, in amber", `(() => {
		const p = document.querySelector('[data-role="webhook"]');
		return !p.hidden && p.classList.contains('warn') && p.textContent === 'jira webhooks refused' && p.title.includes('2 unauthorized');
	})()`)
	b.CheckNoErrors()
}

// clusterRow is what a row of the Cluster panel's daemons shows.
type clusterRow struct {
	ID        string   `json:"id"`
	Host      string   `json:"host"`
	PID       string   `json:"pid"`
	Agents    string   `json:"agents"`
	Markers   []string `json:"markers"`
	Heartbeat string   `json:"heartbeat"`
	Lapsed    bool     `json:"lapsed"`
	Issues    []string `json:"issues"`
}
