package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"sortie/internal/testkit/browser"
)

// The dashboard in a real browser: Debian's Chromium, headless, driven over the
// DevTools protocol, against the real daemon on a copy of the demo. The test waits on
// conditions in the page (chromedp.Poll), never for fixed times.
//
// Set SORTIE_DASHBOARD_SCREENSHOT to a PNG path (relative to the repository root) to
// store the screenshot of the overview there too: that is how docs/img/dashboard.png
// is made. Run with -artifacts to keep every screenshot the test takes.

func TestDashboard_LiveSessionAndHistoryInABrowser(t *testing.T) {
	chromium := browser.FindChromium(t)
	dir := t.TempDir()
	writeBrowserDemo(t, dir)

	port := freePort(t)
	base := "http://127.0.0.1:" + strconv.Itoa(port)
	d := startDaemon(t, testEnv(t.TempDir()), "--port", strconv.Itoa(port), filepath.Join(dir, "WORKFLOW.md"))
	waitHTTP(t, d, base+"/livez")

	b := newBrowser(t, chromium)

	// The first wave of the demo: DEMO-3 fails once (its retry waits 10 s), DEMO-4 is
	// held, DEMO-5 is handed off. DEMO-1 and DEMO-6 wait in Backlog until the page is
	// open, so their sessions start while it watches. The page is opened through the
	// login link the daemon prints, as an operator would.
	b.Do(chromedp.Navigate(printedLoginLink(t, d)))
	b.WaitFor("the overview with its live feed connected, after the first wave", `
		document.body.dataset.live === 'open' &&
		card('running') === '0' && card('held') === '1' &&
		document.querySelectorAll('#history tbody tr').length >= 3`)
	var n int
	b.Eval(`document.querySelectorAll('.feed li').length`, &n)
	if n != 0 {
		t.Fatalf("feed rows before any session ran = %d, want 0: rows only come from the live stream", n)
	}

	setIssueStates(t, filepath.Join(dir, "issues.json"), map[string]string{"DEMO-1": "Todo", "DEMO-6": "Todo"})

	// Rows arrive over Server-Sent Events: the page was loaded before the session began.
	b.WaitFor("DEMO-6's session with live tool calls and a finished turn", `
		rows('DEMO-6').some((r) => r.includes('Read')) &&
		rows('DEMO-6').some((r) => r.includes('turn completed')) &&
		document.querySelector('#usage svg') !== null &&
		document.querySelector('.session[data-issue="DEMO-6"] [data-field="tokens"]')?.textContent !== '0'`)
	var rows []string
	b.Eval(`rows('DEMO-6')`, &rows)
	for _, want := range []string{"run started", "session started", "mock: turn 1 step 1/3"} {
		if !anyContains(rows, want) {
			t.Errorf("DEMO-6's live feed has no row with %q; rows:\n%s", want, strings.Join(rows, "\n"))
		}
	}
	screenshot(t, b, "overview-running.png", os.Getenv("SORTIE_DASHBOARD_SCREENSHOT"))

	b.WaitFor("DEMO-6 handed off in the run history", `
		[...document.querySelectorAll('#history tbody tr')].some((tr) =>
			tr.textContent.includes('DEMO-6') && tr.querySelector('.s-handed_off'))`)
	screenshot(t, b, "overview-done.png", "")

	// The history's filters go to the API: by status, then by issue.
	var none struct{}
	b.Eval(`(() => { const s = document.querySelector('select[name="status"]');
		s.value = 'failed'; s.dispatchEvent(new Event('change')); return {}; })()`, &none)
	b.WaitFor("only DEMO-3's failed run in the history", `(() => {
		const trs = [...document.querySelectorAll('#history tbody tr')];
		return trs.length === 1 && trs[0].textContent.includes('DEMO-3') && trs[0].querySelector('.s-failed'); })()`)
	b.Eval(`(() => { const s = document.querySelector('select[name="status"]');
		s.value = ''; s.dispatchEvent(new Event('change')); return {}; })()`, &none)
	b.Do(chromedp.SendKeys(chromedp.CSS(`input[name="issue"]`), "DEMO-6"))
	b.WaitFor("only DEMO-6's run in the history", `(() => {
		const trs = [...document.querySelectorAll('#history tbody tr')];
		return trs.length === 1 && trs[0].textContent.includes('DEMO-6'); })()`)

	b.Do(chromedp.Navigate(base + "/issues/DEMO-6"))
	b.WaitFor("DEMO-6's page with its handed-off run and recent events", `
		document.querySelector('#runs tbody .s-handed_off') !== null &&
		document.querySelectorAll('#events .feed li').length > 0`)
	screenshot(t, b, "issue.png", "")

	// A phone: nothing may scroll sideways.
	b.Do(chromedp.EmulateViewport(375, 812, chromedp.EmulateMobile, chromedp.EmulateScale(2)),
		chromedp.Navigate(base+"/"))
	b.WaitFor("the overview on a phone", `document.body.dataset.loaded === 'true' &&
		document.querySelectorAll('#history tbody tr').length >= 4`)
	var width int
	b.Eval(`document.documentElement.scrollWidth`, &width)
	if width != 375 {
		t.Errorf("page width on a 375 px phone = %d px, want 375 (no horizontal scroll)", width)
	}
	screenshot(t, b, "phone.png", "")

	// A broken edit of WORKFLOW.md is refused, and the page says so.
	wf := filepath.Join(dir, "WORKFLOW.md")
	data, err := os.ReadFile(wf)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(wf, []byte(strings.Replace(string(data), "max_turns: 2", "max_turns: lots", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	b.WaitFor("the reload error banner", `document.querySelector('[data-banner="reload"]')?.textContent.includes('max_turns')`)
	b.CheckNoErrors()

	d.signal(syscall.SIGTERM)
	if code := d.wait(commandTimeout); code != 0 {
		t.Errorf("daemon exit code after SIGTERM = %d, want 0", code)
	}
}

// writeBrowserDemo copies the demo into dir with slower turns (so sessions last long
// enough to watch), a failure backoff long enough to see the retry queue, and DEMO-1
// and DEMO-6 parked in Backlog.
func writeBrowserDemo(t *testing.T, dir string) {
	t.Helper()
	wf, err := os.ReadFile(filepath.Join("assets", "demo", "WORKFLOW.md"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(wf)
	for _, r := range [][2]string{
		{"delay_ms: 400", "delay_ms: 1500"},
		{"max_retry_backoff_ms: 2000", "max_retry_backoff_ms: 60000"},
	} {
		if !strings.Contains(s, r[0]) {
			t.Fatalf("the demo WORKFLOW.md no longer contains %q; update this test", r[0])
		}
		s = strings.Replace(s, r[0], r[1], 1)
	}
	writeFile(t, dir, "WORKFLOW.md", s)
	issues, err := os.ReadFile(filepath.Join("assets", "demo", "issues.json"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "issues.json", string(issues))
	setIssueStates(t, filepath.Join(dir, "issues.json"), map[string]string{"DEMO-1": "Backlog", "DEMO-6": "Backlog"})
}

// setIssueStates edits the issues file as an operator would: read, change the states,
// replace the file in one rename.
func setIssueStates(t *testing.T, path string, states map[string]string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var issues []map[string]any
	if err := json.Unmarshal(data, &issues); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	found := 0
	for _, is := range issues {
		if st, ok := states[fmt.Sprint(is["identifier"])]; ok {
			is["state"] = st
			found++
		}
	}
	if found != len(states) {
		t.Fatalf("%s: found %d of the issues %v", path, found, states)
	}
	out, err := json.MarshalIndent(issues, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	tmp := path + ".edit"
	if err := os.WriteFile(tmp, out, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// freePort returns a TCP port that was free on 127.0.0.1 a moment ago.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// waitHTTP waits until url answers 200, or fails when the daemon exits or
// browser.Timeout passes.
func waitHTTP(t testing.TB, d *runningDaemon, url string) {
	t.Helper()
	deadline := time.Now().Add(browser.Timeout)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	client := &http.Client{Timeout: 2 * time.Second}
	for {
		res, err := client.Get(url)
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case <-d.done:
			t.Fatalf("%s exited (code %d) before serving %s", d.name, d.exitCode(), url)
		case <-tick.C:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %s did not answer 200 within %s (last error: %v)", d.name, url, browser.Timeout, err)
		}
	}
}

func anyContains(list []string, sub string) bool {
	for _, s := range list {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// pageHelpers are defined in the page before each wait, for readable conditions.
const pageHelpers = `
	window.card = (k) => document.querySelector('[data-card="' + k + '"] .card-value')?.textContent;
	window.rows = (id) => [...document.querySelectorAll('.session[data-issue="' + id + '"] .feed li')].map((li) => li.textContent);`

// newBrowser opens the dashboard's browser: a desktop window, the pageHelpers, and the
// banners logged on a failure.
func newBrowser(t *testing.T, chromium string) *browser.Page {
	t.Helper()
	return browser.Start(t, chromium, browser.Options{
		Width: 1280, Height: 900,
		Prelude:     pageHelpers,
		FailureText: `document.getElementById('banners')?.innerText || ''`,
	})
}

// screenshot saves a full-page PNG as name among the test's artifacts and, when extra
// is set, there too (relative to the repository root).
func screenshot(t *testing.T, b *browser.Page, name, extra string) {
	t.Helper()
	png := b.Screenshot(name)
	if extra == "" {
		return
	}
	if !filepath.IsAbs(extra) {
		extra = filepath.Join("..", "..", extra) // from cmd/sortie to the repository root
	}
	if err := os.WriteFile(extra, png, 0o644); err != nil {
		t.Fatalf("SORTIE_DASHBOARD_SCREENSHOT: %v", err)
	}
	t.Logf("screenshot: %s", extra)
}
