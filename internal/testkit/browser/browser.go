// Package browser lets tests drive a page in a real browser: Debian's Chromium,
// headless, over the DevTools protocol (chromedp). FindChromium finds the binary, or
// skips the test without it (fails it under CI, CI set); Start opens one tab whose
// helpers wait on conditions in the page (chromedp.Poll), never for fixed times, collect
// the page's script errors, and on a failure log what the page showed. What a test
// checks on its page, and where its screenshots go, stay in the test.
package browser

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// Timeout bounds each wait on the page. It is a guard against a hung test on a loaded
// machine, not a speed assertion.
const Timeout = 60 * time.Second

// chromiumPaths are where Chromium is looked for, unless $SORTIE_CHROMIUM names it.
var chromiumPaths = []string{"/usr/bin/chromium", "/usr/bin/chromium-browser"}

// FindChromium returns the path of Chromium: $SORTIE_CHROMIUM, or Debian's. Without it
// the test is skipped, or fails when CI is set, since CI must run the browser tests.
func FindChromium(t testing.TB) string {
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

// Options shape the page Start opens.
type Options struct {
	// Width and Height are the browser window's size in CSS pixels.
	Width, Height int
	// Prelude is JavaScript run in the page before each Eval and WaitFor, to define
	// the helpers their expressions use; "" runs nothing.
	Prelude string
	// FailureText is a JavaScript expression whose string value Fail logs, to show
	// what the page said (its banners, its text); "" logs nothing.
	FailureText string
}

// Page is one headless Chromium with one tab, for one test. Its methods end the test
// with Fail when the browser does not do as asked within Timeout.
type Page struct {
	t    testing.TB
	ctx  context.Context
	opts Options

	mu     sync.Mutex
	errors []string // uncaught exceptions in the page
}

// Start runs chromium, headless, with a profile in a temporary directory, and opens a
// blank tab. The browser is stopped when the test ends.
func Start(t testing.TB, chromium string, opts Options) *Page {
	t.Helper()
	allocOpts := append(chromedp.DefaultExecAllocatorOptions[:],
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
		chromedp.WindowSize(opts.Width, opts.Height),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), allocOpts...)
	p := &Page{t: t, opts: opts}
	ctx, cancelTab := chromedp.NewContext(actx, chromedp.WithListener(func(ev any) {
		if e, ok := ev.(*runtime.EventExceptionThrown); ok {
			msg := e.ExceptionDetails.Text
			if ex := e.ExceptionDetails.Exception; ex != nil && ex.Description != "" {
				msg += ": " + ex.Description
			}
			p.mu.Lock()
			p.errors = append(p.errors, msg)
			p.mu.Unlock()
		}
	}))
	p.ctx = ctx
	t.Cleanup(func() {
		cancelTab()
		cancelAlloc()
	})
	// Start the browser with a context that outlives every wait (chromedp ties the
	// browser's life to the first Run's context).
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting %s: %v", chromium, err)
	}
	return p
}

// Do runs the actions in the page.
func (p *Page) Do(actions ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, Timeout)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		p.Fail("browser: %v", err)
	}
}

// Eval evaluates expr in the page, after the Prelude, and decodes its value into v.
func (p *Page) Eval(expr string, v any) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, Timeout)
	defer cancel()
	p.prelude(ctx)
	raw, err := chromedp.Run(ctx, chromedp.Evaluate[[]byte](expr))
	if err != nil {
		p.Fail("evaluating %s: %v", expr, err)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		p.Fail("evaluating %s: decoding %s: %v", expr, raw, err)
	}
}

// WaitFor waits, polling every 100 ms for up to Timeout, until the JavaScript
// condition cond holds in the page; what names the condition in the failure.
func (p *Page) WaitFor(what, cond string) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, Timeout+5*time.Second)
	defer cancel()
	p.prelude(ctx)
	_, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](cond,
		chromedp.WithPollingInterval(100*time.Millisecond), chromedp.WithPollingTimeout(Timeout)))
	if err != nil {
		if errors.Is(err, chromedp.ErrPollingTimeout) {
			err = fmt.Errorf("not within %s", Timeout)
		}
		p.Fail("waiting for %s: %v", what, err)
	}
}

// prelude runs Options.Prelude in the page, if there is one.
func (p *Page) prelude(ctx context.Context) {
	p.t.Helper()
	if p.opts.Prelude == "" {
		return
	}
	if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](p.opts.Prelude)); err != nil {
		p.Fail("browser: %v", err)
	}
}

// Screenshot saves a full-page PNG as name in the test's artifact directory (kept
// with go test -artifacts) and returns it.
func (p *Page) Screenshot(name string) []byte {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, Timeout)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		p.Fail("screenshot %s: %v", name, err)
	}
	path := filepath.Join(p.t.ArtifactDir(), name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		p.t.Fatal(err)
	}
	p.t.Logf("screenshot: %s", path)
	return png
}

// ScreenshotNode returns a PNG of the first node that the CSS selector sel matches.
func (p *Page) ScreenshotNode(sel string) []byte {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, Timeout)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.Screenshot(chromedp.CSS(sel)))
	if err != nil {
		p.Fail("screenshot of %s: %v", sel, err)
	}
	return png
}

// Fail ends the test with a screenshot of the page as it was (failure.png among the
// test's artifacts), the Options.FailureText, and any script errors.
func (p *Page) Fail(format string, args ...any) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, 10*time.Second)
	defer cancel()
	if png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)); err == nil {
		path := filepath.Join(p.t.ArtifactDir(), "failure.png")
		if os.WriteFile(path, png, 0o644) == nil {
			p.t.Logf("screenshot at the failure: %s", path)
		}
	}
	if p.opts.FailureText != "" {
		if text, err := chromedp.Run(ctx, chromedp.Evaluate[string](p.opts.FailureText)); err == nil && text != "" {
			p.t.Logf("the page at the failure:\n%s", text)
		}
	}
	p.mu.Lock()
	if len(p.errors) > 0 {
		p.t.Logf("script errors:\n%s", strings.Join(p.errors, "\n"))
	}
	p.mu.Unlock()
	p.t.Fatalf(format, args...)
}

// CheckNoErrors marks the test failed, without ending it, if the page has thrown any
// uncaught script error since Start.
func (p *Page) CheckNoErrors() {
	p.t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.errors) > 0 {
		p.t.Errorf("the page threw %d script error(s):\n%s", len(p.errors), strings.Join(p.errors, "\n"))
	}
}
