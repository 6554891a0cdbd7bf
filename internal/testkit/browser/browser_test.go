package browser

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// recorder is a testing.TB that keeps what Errorf reports instead of failing the test.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func TestPage_WaitsEvaluatesAndCollectsScriptErrors(t *testing.T) {
	chromium := FindChromium(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, `<!doctype html><p id="n">0</p>
<script>setTimeout(() => { document.getElementById('n').textContent = '3'; }, 200);
setTimeout(() => { throw new Error('boom'); }, 0);</script>`)
	}))
	defer srv.Close()

	rec := &recorder{TB: t}
	p := Start(rec, chromium, Options{Width: 800, Height: 600,
		Prelude: `window.n = () => Number(document.getElementById('n').textContent);`})
	p.Do(chromedp.Navigate(srv.URL))
	p.WaitFor("the counter set by the page", `n() === 3`)
	var got int
	p.Eval(`n() * 2`, &got)
	if got != 6 {
		t.Errorf("Eval(n() * 2) = %d, want 6 (the Prelude's n() runs before it)", got)
	}
	if png := p.Screenshot("page.png"); len(png) == 0 {
		t.Error("Screenshot returned no PNG")
	}
	p.CheckNoErrors()
	if len(rec.errs) != 1 || !strings.Contains(rec.errs[0], "boom") {
		t.Errorf("CheckNoErrors reported %q, want one report of the page's uncaught error boom", rec.errs)
	}
}
