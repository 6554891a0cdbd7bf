package main

import (
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var loginLinkLine = regexp.MustCompile(`sortie: open the dashboard, logged in: (\S+)`)

// printedLoginLink is the login link the daemon d printed in its log (once its
// server answers, it has).
func printedLoginLink(t *testing.T, d *runningDaemon) string {
	t.Helper()
	m := loginLinkLine.FindStringSubmatch(d.stderrText())
	if m == nil {
		t.Fatalf("the daemon printed no login link:\n%s", d.stderrText())
	}
	return m[1]
}

// TestLoginLink_OneTimeCode: the link in the daemon's log carries a one-time code, not
// the operator token: it logs one browser in, then is dead.
func TestLoginLink_OneTimeCode(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "issues.json", `[]`)
	d, base := startServingDaemon(t, dir)
	token := daemonToken(t, filepath.Join(dir, "sortie.db"))
	link := printedLoginLink(t, d)
	if !strings.HasPrefix(link, base+"/login?code=") || strings.Contains(d.stderrText(), token) {
		t.Fatalf("the daemon's log holds the operator token, or a link without a code: %s\n%s", link, d.stderrText())
	}
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	open := func() *http.Response {
		t.Helper()
		res, err := noRedirect.Get(link)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res
	}
	res := open()
	if res.StatusCode != http.StatusSeeOther || len(res.Cookies()) != 1 {
		t.Fatalf("opening the printed link = %d with cookies %v, want 303 and the dashboard cookie", res.StatusCode, res.Cookies())
	}
	req, _ := http.NewRequest(http.MethodGet, base+"/api/v1/state", nil)
	req.AddCookie(res.Cookies()[0])
	state, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	state.Body.Close()
	if state.StatusCode != http.StatusOK {
		t.Errorf("GET /api/v1/state with the cookie = %d, want 200", state.StatusCode)
	}
	if res := open(); res.StatusCode != http.StatusUnauthorized || len(res.Cookies()) != 0 {
		t.Errorf("opening the printed link twice = %d with cookies %v, want 401 and none", res.StatusCode, res.Cookies())
	}
}
