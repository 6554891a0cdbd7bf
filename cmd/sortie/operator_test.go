package main

import (
	"sortie/internal/daemon"

	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestOperatorToken_EveryAPIRouteNeedsItOnLoopbackToo: with no server.auth_token, the
// daemon generates an operator token (0600, beside the database, the same across
// restarts), and every route but /livez and /readyz refuses a request without it, on
// 127.0.0.1 too; `sortie status --login-url` prints the link that logs a browser in.
func TestOperatorToken_EveryAPIRouteNeedsItOnLoopbackToo(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, dir, "issues.json", `[{"id": "1", "identifier": "OP-1", "title": "t", "state": "Backlog"}]`)
	d, base := startServingDaemon(t, dir)

	tokenFile := filepath.Join(dir, "sortie.db"+daemon.OperatorTokenSuffix)
	fi, err := os.Stat(tokenFile)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the operator token file %s: %v, mode %v; want it, 0600", tokenFile, err, fi.Mode())
	}
	token := daemonToken(t, filepath.Join(dir, "sortie.db"))
	if link := printedLoginLink(t, d); !strings.HasPrefix(link, base+"/login?code=") || strings.Contains(d.stderrText(), token) {
		t.Errorf("the daemon printed %q, want a login link with a one-time code, never the token:\n%s", link, d.stderrText())
	}
	do := func(method, path, token string) int {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, strings.NewReader(`{"option_id": "x", "answered_by": "me"}`))
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	for _, r := range []struct{ method, path string }{
		{"GET", "/"}, {"GET", "/api/v1/state"}, {"GET", "/api/v1/OP-1"}, {"POST", "/api/v1/refresh"},
		{"POST", "/api/v1/OP-1/checkpoints/ship"}, {"GET", "/metrics"}, {"GET", "/api/v1/events"},
	} {
		if code := do(r.method, r.path, ""); code != http.StatusUnauthorized {
			t.Errorf("%s %s without a token on loopback: %d, want 401", r.method, r.path, code)
		}
		if code := do(r.method, r.path, "wrong"); code != http.StatusUnauthorized {
			t.Errorf("%s %s with a wrong token: %d, want 401", r.method, r.path, code)
		}
	}
	if code := do("GET", "/api/v1/state", token); code != http.StatusOK {
		t.Errorf("GET /api/v1/state with the operator token: %d, want 200", code)
	}
	for _, path := range []string{"/livez", "/readyz"} {
		if code := do("GET", path, ""); code == http.StatusUnauthorized {
			t.Errorf("GET %s needs a token; it must not (supervisors probe it)", path)
		}
	}
	r := runSortie(t, dir, testEnv(t.TempDir()), "status", "--login-url", filepath.Join(dir, "WORKFLOW.md"))
	if want := base + "/login?token=" + token + "\n"; r.code != exitOK || r.stdout != want {
		t.Errorf("sortie status --login-url = %q (exit %d), want %q\n%s", r.stdout, r.code, want, r)
	}
}

// startServingDaemon starts a daemon with the mock agent, the file tracker's
// issues.json in dir (which the test wrote) and the HTTP server on a free port, its
// database in dir, and returns it once /livez answers, with the server's base URL.
func startServingDaemon(t *testing.T, dir string) (*runningDaemon, string) {
	t.Helper()
	port := freePort(t)
	wf := writeFile(t, dir, "WORKFLOW.md", `---
tracker:
  kind: file
  path: issues.json
  active_states: [Todo]
  terminal_states: [Done]
agent:
  kind: mock
db_path: ./sortie.db
server: {port: `+strconv.Itoa(port)+`}
---
Work.
`)
	base := "http://127.0.0.1:" + strconv.Itoa(port)
	d := startDaemon(t, testEnv(t.TempDir()), wf)
	waitHTTP(t, d, base+"/livez")
	return d, base
}
