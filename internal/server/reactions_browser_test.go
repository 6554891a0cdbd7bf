package server

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"sortie/internal/orchestrator"
	"sortie/internal/reactions"
	"sortie/internal/server/dashboard"
	"sortie/internal/store"
	"sortie/internal/testkit/browser"
)

// fakeReactions stands for the pull-request watcher: the views the test sets.
type fakeReactions struct {
	mu    sync.Mutex
	views []reactions.View
}

func (f *fakeReactions) Views() []reactions.View {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.views
}

func (f *fakeReactions) set(v ...reactions.View) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.views = v
}

// reactionRow is what a row of the Pull requests panel shows.
type reactionRow struct {
	Issue     string   `json:"issue"`
	IssueHref string   `json:"issueHref"`
	PR        string   `json:"pr"`
	Href      string   `json:"href"`
	Rel       string   `json:"rel"`
	Target    string   `json:"target"`
	CIClass   string   `json:"ciClass"`
	CI        string   `json:"ci"`
	Checks    []string `json:"checks"`
	Review    string   `json:"review"`
	Pending   string   `json:"pending"`
	Attempts  string   `json:"attempts"`
	Escalated bool     `json:"escalated"`
	LastError string   `json:"lastError"`
	ErrorTip  string   `json:"errorTip"`
}

// The Pull requests panel appears while Sortie watches handed-off issues' pull
// requests: per issue its PR link, CI pill and failing checks, review state, reactions
// offered and run, escalation and last error, a check name holding HTML shown as text
// and a PR URL that is not http(s) not made a link; then it hides again. Session cards
// mark reaction runs and self-review iterations, and an issue's run history shows a
// run's self-review verdict and iterations.
func TestDashboard_ShowsPullRequestsAndReactions(t *testing.T) {
	chromium := browser.FindChromium(t)
	rx := &fakeReactions{}
	f := newFixture(t, func(o *Options) {
		o.Dashboard = dashboard.Handler("1.2.3")
		o.Now = time.Now
		o.Reactions = rx.Views
	})
	f.sched.set(func(s *orchestrator.Snapshot) {
		ci, rev, plain := runningView(1), runningView(2), runningView(3)
		ci.Reaction = reactions.KindCI
		rev.Reaction, rev.SelfReview = reactions.KindReview, 2
		plain.SelfReview = 1
		s.Running = []orchestrator.RunningView{ci, rev, plain}
	})
	const meta = `{"enabled":true,"iterations":[{"iteration":1,"verdict":"iterate"},{"iteration":2,"verdict":"pass"}],` +
		`"total_iterations":2,"final_verdict":"pass","cap_reached":false}`
	seedRun(t, f.st, "id-5", "PROJ-5", 1, t0.Add(-2*time.Hour), &store.RunEnd{Status: store.StatusFailed, EndedAt: t0.Add(-110 * time.Minute)})
	seedRun(t, f.st, "id-5", "PROJ-5", 2, t0.Add(-time.Hour), &store.RunEnd{Status: store.StatusHandedOff,
		EndedAt: t0.Add(-50 * time.Minute), ReviewMetadata: meta})
	base := serveFixture(t, f)
	b := browser.Start(t, chromium, browser.Options{Width: 1200, Height: 820, FailureText: `document.body.innerText`})

	b.Do(chromedp.Navigate(base + "/"))
	b.WaitFor("the overview without the Pull requests panel, and the cards' badges", `(() => {
		const p = document.querySelector('[data-role="reactions"]');
		const badge = (n, role) => document.querySelector('.session[data-issue="PROJ-' + n + '"] [data-role="' + role + '"]');
		return document.body.dataset.loaded === 'true' && p && p.hidden && document.querySelectorAll('.session').length === 3 &&
			badge(1, 'self-review').hidden && badge(3, 'reaction-badge').hidden;
	})()`)
	var cards map[string][]string
	b.Eval(`Object.fromEntries([...document.querySelectorAll('.session')].map((s) => [s.dataset.issue,
		[...s.querySelectorAll('.session-badges .badge')].filter((b) => !b.hidden).map((b) => b.textContent)]))`, &cards)
	wantCards := map[string][]string{
		"PROJ-1": {"In Progress", "CI fix"},
		"PROJ-2": {"In Progress", "review fix", "self-review 2"},
		"PROJ-3": {"In Progress", "self-review 1"},
	}
	if !reflect.DeepEqual(cards, wantCards) {
		t.Errorf("the session cards' badges:\n got %v\nwant %v", cards, wantCards)
	}

	const hostile = `<img src=x onerror="window.injected=1">lint`
	now := t0 // the snapshot's time: the page's clock
	rx.set(
		reactions.View{IssueID: "id-5", Identifier: "PROJ-5", Branch: "sortie/proj-5", PR: 41,
			PRURL: "https://github.com/acme/api/pull/41", HeadSHA: "abc123", CI: "failing",
			FailingChecks: []string{"test (ubuntu)", hostile}, ReviewState: "none", Pending: []string{"ci"},
			Attempts: map[string]int{"ci": 1}, NextCheckAt: now.Add(time.Minute), HandedOffAt: now.Add(-time.Hour),
			LastError: "reading the checks: 502 Bad Gateway"},
		reactions.View{IssueID: "id-7", Identifier: "PROJ-7", Branch: "sortie/proj-7", PR: 42,
			PRURL: "https://github.com/acme/api/pull/42", CI: "passing", ReviewState: "changes_requested", Comments: 3,
			Attempts: map[string]int{"ci": 2, "review": 3}, Escalated: true, HandedOffAt: now.Add(-30 * time.Minute)},
		reactions.View{IssueID: "id-9", Identifier: "PROJ-9", Branch: "sortie/proj-9", PR: 43,
			PRURL: "javascript:window.injected=1", CI: "pending", ReviewState: "waiting", Comments: 1,
			Running: true, HandedOffAt: now.Add(-10 * time.Minute)},
	)
	b.WaitFor("the Pull requests panel with three rows", `(() => {
		const p = document.querySelector('[data-role="reactions"]');
		return p && !p.hidden && p.querySelectorAll('[data-role="reaction"]').length === 3;
	})()`)
	var got struct {
		Rows    []reactionRow `json:"rows"`
		Count   string        `json:"count"`
		Images  int           `json:"images"`
		Injects bool          `json:"injected"`
		Text    string        `json:"text"`
	}
	b.Eval(`(() => {
		const p = document.querySelector('[data-role="reactions"]');
		const q = (tr, sel) => tr.querySelector(sel);
		const text = (tr, sel) => q(tr, sel)?.textContent ?? '';
		return {
			rows: [...p.querySelectorAll('[data-role="reaction"]')].map((tr) => ({
				issue: text(tr, 'a.issue'), issueHref: q(tr, 'a.issue')?.getAttribute('href') ?? '',
				pr: text(tr, '[data-role="pr"]'), href: q(tr, '[data-role="pr"]')?.getAttribute('href') ?? '',
				rel: q(tr, '[data-role="pr"]')?.getAttribute('rel') ?? '', target: q(tr, '[data-role="pr"]')?.getAttribute('target') ?? '',
				ciClass: q(tr, '[data-role="ci"]').className, ci: text(tr, '[data-role="ci"]'),
				checks: [...tr.querySelectorAll('[data-role="failing-checks"] li')].map((li) => li.textContent),
				review: text(tr, '[data-role="review"]'), pending: text(tr, '[data-role="pending"]'),
				attempts: text(tr, '[data-role="attempts"]'), escalated: !!q(tr, '.s-escalated'),
				lastError: text(tr, '[data-role="last-error"]'), errorTip: q(tr, '[data-role="last-error"]')?.title ?? '',
			})),
			count: p.querySelector('h2 .count').textContent,
			images: p.querySelectorAll('img').length,
			injected: !!window.injected,
			text: p.innerText,
		};
	})()`, &got)
	want := []reactionRow{
		{Issue: "PROJ-5", IssueHref: "/issues/PROJ-5", PR: "#41", Href: "https://github.com/acme/api/pull/41",
			Rel: "noopener noreferrer", Target: "_blank", CIClass: "pill ci ci-failing error", CI: "failing",
			Checks: []string{"test (ubuntu)", hostile}, Review: "no changes requested", Pending: "CI fix offered",
			Attempts: "CI fix ×1", LastError: "reading the checks: 502 Bad Gateway", ErrorTip: "reading the checks: 502 Bad Gateway"},
		{Issue: "PROJ-7", IssueHref: "/issues/PROJ-7", PR: "#42", Href: "https://github.com/acme/api/pull/42",
			Rel: "noopener noreferrer", Target: "_blank", CIClass: "pill ci ci-passing ok", CI: "passing",
			Checks: []string{}, Review: "changes requested · 3 comments", Attempts: "CI fix ×2 · review fix ×3", Escalated: true},
		{Issue: "PROJ-9", IssueHref: "/issues/PROJ-9", PR: "#43", CIClass: "pill ci ci-pending", CI: "pending",
			Checks: []string{}, Review: "changes requested, settling · 1 comment"},
	}
	if !reflect.DeepEqual(got.Rows, want) {
		t.Errorf("the Pull requests panel:\n got %+v\nwant %+v", got.Rows, want)
	}
	if got.Count != "(3)" {
		t.Errorf("the panel's count is %q, want (3)", got.Count)
	}
	if got.Images != 0 || got.Injects {
		t.Errorf("a check name or URL was run as HTML or script: %d image(s) in the panel, script ran %v", got.Images, got.Injects)
	}
	for _, bad := range []string{"null", "undefined", "NaN", "[object"} {
		if strings.Contains(got.Text, bad) {
			t.Errorf("the Pull requests panel shows %q:\n%s", bad, got.Text)
		}
	}

	panelShot(t, b, "pull-requests.png")
	// A phone: the panel's rows stack, nothing scrolls sideways.
	b.Do(chromedp.EmulateViewport(375, 812, chromedp.EmulateMobile, chromedp.EmulateScale(2)))
	b.WaitFor("the Pull requests panel on a phone", `document.querySelectorAll('[data-role="reaction"]').length === 3`)
	var width int
	b.Eval(`document.documentElement.scrollWidth`, &width)
	if width != 375 {
		t.Errorf("page width on a 375 px phone = %d px, want 375 (no horizontal scroll)", width)
	}
	panelShot(t, b, "pull-requests-phone.png")
	b.Do(chromedp.EmulateViewport(1200, 820))

	// The issue's page: the run with a self-review shows its verdict and iterations.
	b.Do(chromedp.Navigate(base + "/issues/PROJ-5"))
	b.WaitFor("PROJ-5's runs with the self-review column", `(() => {
		const rows = document.querySelectorAll('#runs tbody tr');
		return rows.length === 2 && rows[0].querySelector('[data-role="review-verdict"]');
	})()`)
	var runs []string
	b.Eval(`[...document.querySelectorAll('#runs tbody tr')].map((tr) => tr.querySelector('td[data-label="Self-review"]').textContent)`, &runs)
	if want := []string{"pass 2 iterations", ""}; !reflect.DeepEqual(runs, want) {
		t.Errorf("the runs' Self-review column: %q, want %q", runs, want)
	}

	b.Do(chromedp.Navigate(base + "/"))
	b.WaitFor("the panel back on the overview", `(() => {
		const p = document.querySelector('[data-role="reactions"]');
		return p && !p.hidden && p.querySelectorAll('[data-role="reaction"]').length === 3;
	})()`)
	rx.set()
	b.WaitFor("the Pull requests panel hidden once nothing is watched", `(() => {
		const p = document.querySelector('[data-role="reactions"]');
		return p && p.hidden;
	})()`)
	b.CheckNoErrors()
}

// panelShot saves a PNG of the Pull requests panel in the test's artifact directory
// (kept with go test -artifacts -outputdir DIR).
func panelShot(t *testing.T, b *browser.Page, name string) {
	t.Helper()
	path := filepath.Join(t.ArtifactDir(), name)
	if err := os.WriteFile(path, b.ScreenshotNode(`[data-role="reactions"]`), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
}
