package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// The dashboard in a real browser: Debian's Chromium, headless, driven over the
// DevTools protocol, against the real daemon on a copy of the demo. The test waits on
// conditions in the page (chromedp.Poll), never for fixed times.
//
// Set SORTIE_DASHBOARD_SCREENSHOT to a PNG path (relative to the repository root) to
// store the screenshot of the overview there too: that is how docs/img/dashboard.png
// is made. Run with -artifacts to keep every screenshot the test takes.

// browserTimeout bounds each wait on the page. It is a guard against a hung test on a
// loaded machine, not a speed assertion.
const browserTimeout = 60 * time.Second

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
		t.Fatal(msg + "; CI must run the browser test (.ci/run installs it)")
	}
	t.Skip(msg)
	return ""
}

func TestDashboard_LiveSessionAndHistoryInABrowser(t *testing.T) {
	chromium := findChromium(t)
	dir := t.TempDir()
	writeBrowserDemo(t, dir)

	port := freePort(t)
	base := "http://127.0.0.1:" + strconv.Itoa(port)
	d := startDaemon(t, testEnv(t.TempDir()), "--port", strconv.Itoa(port), filepath.Join(dir, "WORKFLOW.md"))
	waitHTTP(t, d, base+"/livez")

	b := newBrowser(t, chromium)

	// The first wave of the demo: DEMO-3 fails once (its retry waits 10 s), DEMO-4 is
	// held, DEMO-5 is handed off. DEMO-1 and DEMO-6 wait in Backlog until the page is
	// open, so their sessions start while it watches.
	b.do(chromedp.Navigate(base + "/"))
	b.waitFor("the overview with its live feed connected, after the first wave", `
		document.body.dataset.live === 'open' &&
		card('running') === '0' && card('held') === '1' &&
		document.querySelectorAll('#history tbody tr').length >= 3`)
	var n int
	b.eval(`document.querySelectorAll('.feed li').length`, &n)
	if n != 0 {
		t.Fatalf("feed rows before any session ran = %d, want 0: rows only come from the live stream", n)
	}

	setIssueStates(t, filepath.Join(dir, "issues.json"), map[string]string{"DEMO-1": "Todo", "DEMO-6": "Todo"})

	// Rows arrive over Server-Sent Events: the page was loaded before the session began.
	b.waitFor("DEMO-6's session with live tool calls and a finished turn", `
		rows('DEMO-6').some((r) => r.includes('Read')) &&
		rows('DEMO-6').some((r) => r.includes('turn completed')) &&
		document.querySelector('#usage svg') !== null &&
		document.querySelector('.session[data-issue="DEMO-6"] [data-field="tokens"]')?.textContent !== '0'`)
	var rows []string
	b.eval(`rows('DEMO-6')`, &rows)
	for _, want := range []string{"run started", "session started", "mock: turn 1 step 1/3"} {
		if !anyContains(rows, want) {
			t.Errorf("DEMO-6's live feed has no row with %q; rows:\n%s", want, strings.Join(rows, "\n"))
		}
	}
	b.screenshot("overview-running.png", os.Getenv("SORTIE_DASHBOARD_SCREENSHOT"))

	b.waitFor("DEMO-6 handed off in the run history", `
		[...document.querySelectorAll('#history tbody tr')].some((tr) =>
			tr.textContent.includes('DEMO-6') && tr.querySelector('.s-handed_off'))`)
	b.screenshot("overview-done.png", "")

	// The history's filters go to the API: by status, then by issue.
	var none struct{}
	b.eval(`(() => { const s = document.querySelector('select[name="status"]');
		s.value = 'failed'; s.dispatchEvent(new Event('change')); return {}; })()`, &none)
	b.waitFor("only DEMO-3's failed run in the history", `(() => {
		const trs = [...document.querySelectorAll('#history tbody tr')];
		return trs.length === 1 && trs[0].textContent.includes('DEMO-3') && trs[0].querySelector('.s-failed'); })()`)
	b.eval(`(() => { const s = document.querySelector('select[name="status"]');
		s.value = ''; s.dispatchEvent(new Event('change')); return {}; })()`, &none)
	b.do(chromedp.SendKeys(chromedp.CSS(`input[name="issue"]`), "DEMO-6"))
	b.waitFor("only DEMO-6's run in the history", `(() => {
		const trs = [...document.querySelectorAll('#history tbody tr')];
		return trs.length === 1 && trs[0].textContent.includes('DEMO-6'); })()`)

	b.do(chromedp.Navigate(base + "/issues/DEMO-6"))
	b.waitFor("DEMO-6's page with its handed-off run and recent events", `
		document.querySelector('#runs tbody .s-handed_off') !== null &&
		document.querySelectorAll('#events .feed li').length > 0`)
	b.screenshot("issue.png", "")

	// A phone: nothing may scroll sideways.
	b.do(chromedp.EmulateViewport(375, 812, chromedp.EmulateMobile, chromedp.EmulateScale(2)),
		chromedp.Navigate(base+"/"))
	b.waitFor("the overview on a phone", `document.body.dataset.loaded === 'true' &&
		document.querySelectorAll('#history tbody tr').length >= 4`)
	var width int
	b.eval(`document.documentElement.scrollWidth`, &width)
	if width != 375 {
		t.Errorf("page width on a 375 px phone = %d px, want 375 (no horizontal scroll)", width)
	}
	b.screenshot("phone.png", "")

	// A broken edit of WORKFLOW.md is refused, and the page says so.
	wf := filepath.Join(dir, "WORKFLOW.md")
	data, err := os.ReadFile(wf)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(wf, []byte(strings.Replace(string(data), "max_turns: 2", "max_turns: lots", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	b.waitFor("the reload error banner", `document.querySelector('[data-banner="reload"]')?.textContent.includes('max_turns')`)
	b.checkNoErrors()

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
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// waitHTTP waits until url answers 200, or fails when the daemon exits or
// browserTimeout passes.
func waitHTTP(t *testing.T, d *daemon, url string) {
	t.Helper()
	deadline := time.Now().Add(browserTimeout)
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
			t.Fatalf("%s: %s did not answer 200 within %s (last error: %v)", d.name, url, browserTimeout, err)
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

// browser is one headless Chromium with one tab, for one test.
type browser struct {
	t   *testing.T
	ctx context.Context

	mu     sync.Mutex
	errors []string // uncaught exceptions in the page
}

// pageHelpers are defined in the page before each wait, for readable conditions.
const pageHelpers = `
	window.card = (k) => document.querySelector('[data-card="' + k + '"] .card-value')?.textContent;
	window.rows = (id) => [...document.querySelectorAll('.session[data-issue="' + id + '"] .feed li')].map((li) => li.textContent);`

func newBrowser(t *testing.T, chromium string) *browser {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium),
		chromedp.UserDataDir(t.TempDir()),
		// Chromium's sandbox needs user namespaces, which containers and root lack;
		// the pages are our own, on loopback.
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		// The machine's network is closed: nothing may try to reach Google.
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.WindowSize(1280, 900),
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

// eval evaluates expr in the page and decodes its value into v.
func (b *browser) eval(expr string, v any) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, browserTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](pageHelpers)); err != nil {
		b.fail("browser: %v", err)
	}
	raw, err := chromedp.Run(ctx, chromedp.Evaluate[[]byte](expr))
	if err != nil {
		b.fail("evaluating %s: %v", expr, err)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		b.fail("evaluating %s: decoding %s: %v", expr, raw, err)
	}
}

// waitFor waits until the JavaScript condition cond holds in the page.
func (b *browser) waitFor(what, cond string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, browserTimeout+5*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](pageHelpers)); err != nil {
		b.fail("browser: %v", err)
	}
	_, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](cond,
		chromedp.WithPollingInterval(100*time.Millisecond), chromedp.WithPollingTimeout(browserTimeout)))
	if err != nil {
		if errors.Is(err, chromedp.ErrPollingTimeout) {
			err = fmt.Errorf("not within %s", browserTimeout)
		}
		b.fail("waiting for %s: %v", what, err)
	}
}

// screenshot saves a full-page PNG into the test's artifact directory and, when
// extra is set, there too (relative to the repository root).
func (b *browser) screenshot(name, extra string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, browserTimeout)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.fail("screenshot %s: %v", name, err)
	}
	p := filepath.Join(b.t.ArtifactDir(), name)
	if err := os.WriteFile(p, png, 0o644); err != nil {
		b.t.Fatal(err)
	}
	b.t.Logf("screenshot: %s", p)
	if extra == "" {
		return
	}
	if !filepath.IsAbs(extra) {
		extra = filepath.Join("..", "..", extra) // from cmd/sortie to the repository root
	}
	if err := os.WriteFile(extra, png, 0o644); err != nil {
		b.t.Fatalf("SORTIE_DASHBOARD_SCREENSHOT: %v", err)
	}
	b.t.Logf("screenshot: %s", extra)
}

// fail ends the test with a screenshot of the page as it was, the page's banners, and
// any script errors.
func (b *browser) fail(format string, args ...any) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	if png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)); err == nil {
		p := filepath.Join(b.t.ArtifactDir(), "failure.png")
		if os.WriteFile(p, png, 0o644) == nil {
			b.t.Logf("screenshot at the failure: %s", p)
		}
	}
	if text, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById('banners')?.innerText || ''`)); err == nil && text != "" {
		b.t.Logf("banners on the page:\n%s", text)
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
