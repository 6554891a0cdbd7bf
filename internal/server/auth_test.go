package server

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// protected are requests every one of which needs the token when one is set.
var protected = []struct{ method, path string }{
	{http.MethodPost, "/api/v1/PROJ-1/checkpoints/ship"},
	{http.MethodGet, "/api/v1/state"},
	{http.MethodGet, "/api/v1/runs"},
	{http.MethodGet, "/api/v1/PROJ-1"},
	{http.MethodPost, "/api/v1/refresh"},
	{http.MethodGet, "/api/v1/events"},
	{http.MethodGet, "/metrics"},
	{http.MethodGet, "/"},
	{http.MethodGet, "/api/v1/no/such/route"},
}

func withToken(o *Options) {
	o.AuthToken = testToken
	o.Host = "0.0.0.0"
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) })
	o.Metrics, o.Dashboard = ok, ok
}

func TestAuth_EveryRouteButLivezNeedsTheToken(t *testing.T) {
	f := newFixture(t, withToken)
	f.sched.snap = stateSnapshot()
	for _, p := range protected {
		for _, hdr := range [][]string{
			nil,
			{"Authorization", "Bearer wrong"},
			{"Authorization", "Bearer " + testToken + "x"},
			{"Authorization", "Basic " + testToken},
			{"Authorization", testToken},
			{"Cookie", cookieName + "=wrong"},
		} {
			w := f.serve(request(p.method, p.path, hdr...))
			wantError(t, w, http.StatusUnauthorized, codeUnauthorized)
			if got := w.Header().Get("WWW-Authenticate"); !strings.HasPrefix(got, "Bearer") {
				t.Errorf("%s %s: WWW-Authenticate = %q, want Bearer", p.method, p.path, got)
			}
		}
	}
	if w := f.get(t, "/readyz"); w.Code != http.StatusOK {
		t.Errorf("GET /readyz without a token = %d, want 200 (supervisors probe it)", w.Code)
	}
	if w := f.get(t, "/livez"); w.Code != http.StatusOK {
		t.Errorf("GET /livez without a token = %d, want 200", w.Code)
	}
}

func TestAuth_BearerTokenPasses(t *testing.T) {
	f := newFixture(t, withToken)
	f.sched.snap = stateSnapshot()
	for _, p := range protected {
		if p.path == "/api/v1/events" {
			continue // streams; TestEvents_CookieAuth covers it
		}
		for _, scheme := range []string{"Bearer ", "bearer ", "BEARER  "} {
			w := f.serve(request(p.method, p.path, "Authorization", scheme+testToken))
			if w.Code == http.StatusUnauthorized || w.Code == http.StatusForbidden {
				t.Errorf("%s %s with %q: status %d, want through (%s)", p.method, p.path, scheme, w.Code, w.Body)
			}
		}
	}
}

func TestAuth_LoginSetsACookieTheDashboardAndAPIAccept(t *testing.T) {
	f := newFixture(t, withToken)
	for _, login := range []*http.Request{
		request(http.MethodGet, "/login?token="+url.QueryEscape(testToken)),
		func() *http.Request {
			r := request(http.MethodPost, "/login", "Content-Type", "application/x-www-form-urlencoded")
			r.Body = stringBody("token=" + url.QueryEscape(testToken))
			return r
		}(),
	} {
		w := f.serve(login)
		if w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/" {
			t.Fatalf("%s /login = %d to %q, want 303 to /", login.Method, w.Code, w.Header().Get("Location"))
		}
		cookies := w.Result().Cookies()
		if len(cookies) != 1 || cookies[0].Name != cookieName || !cookies[0].HttpOnly || cookies[0].Path != "/" ||
			cookies[0].SameSite != http.SameSiteLaxMode || cookies[0].MaxAge <= 0 {
			t.Fatalf("cookies = %+v, want one HttpOnly, Lax, persistent %s for /", cookies, cookieName)
		}
		if strings.Contains(cookies[0].Value, testToken) {
			t.Errorf("the cookie holds the token itself, want a value derived from it")
		}
		for _, path := range []string{"/", "/api/v1/state", "/readyz"} {
			if w := f.get(t, path, "Cookie", cookieName+"="+cookies[0].Value); w.Code != http.StatusOK {
				t.Errorf("GET %s with the login cookie = %d, want 200 (%s)", path, w.Code, w.Body)
			}
		}
	}
	// A cookie holding the token itself is accepted too.
	if w := f.get(t, "/api/v1/state", "Cookie", cookieName+"="+testToken); w.Code != http.StatusOK {
		t.Errorf("GET /api/v1/state with the token as cookie = %d, want 200", w.Code)
	}
}

func TestAuth_WrongLogin(t *testing.T) {
	f := newFixture(t, withToken)
	w := f.get(t, "/login?token=nope")
	wantError(t, w, http.StatusUnauthorized, codeUnauthorized)
	if len(w.Result().Cookies()) != 0 {
		t.Errorf("a wrong login set cookies: %v", w.Result().Cookies())
	}
	// A browser gets the form again, saying the token was wrong.
	w = f.get(t, "/login?token=nope", "Accept", "text/html")
	if w.Code != http.StatusUnauthorized || !strings.Contains(w.Body.String(), "not right") {
		t.Errorf("browser wrong login = %d %q, want 401 with the form and a notice", w.Code, w.Body)
	}
}

func TestAuth_BrowserWithoutTokenGetsALoginForm(t *testing.T) {
	f := newFixture(t, withToken)
	w := f.get(t, "/", "Accept", "text/html,application/xhtml+xml")
	if w.Code != http.StatusUnauthorized || !strings.HasPrefix(w.Header().Get("Content-Type"), "text/html") ||
		!strings.Contains(w.Body.String(), `action="/login"`) {
		t.Fatalf("GET / from a browser = %d %s %q, want 401 with a login form", w.Code, w.Header().Get("Content-Type"), w.Body)
	}
	// The API answers JSON even to a browser.
	wantError(t, f.get(t, "/api/v1/state", "Accept", "text/html"), http.StatusUnauthorized, codeUnauthorized)
}

func TestAuth_OffOnLoopback(t *testing.T) {
	f := newFixture(t, nil)
	if w := f.get(t, "/api/v1/state"); w.Code != http.StatusOK {
		t.Errorf("GET /api/v1/state without a token configured = %d, want 200", w.Code)
	}
	if w := f.get(t, "/login?token=anything"); w.Code != http.StatusSeeOther || len(w.Result().Cookies()) != 0 {
		t.Errorf("GET /login without a token configured = %d with cookies %v, want a plain 303", w.Code, w.Result().Cookies())
	}
}

// Without a token, only requests naming this machine are served: a web page that
// rebinds its domain to 127.0.0.1 cannot read the API through the operator's browser.
func TestAuth_OpenServerRefusesForeignHosts(t *testing.T) {
	f := newFixture(t, nil)
	tests := []struct {
		host string
		ok   bool
	}{
		{"127.0.0.1:7678", true},
		{"localhost:7678", true},
		{"LOCALHOST", true},
		{"[::1]:7678", true},
		{"app.localhost:7678", true},
		{"evil.example:7678", false},
		{"evil.example", false},
		{"127.0.0.1.evil.example", false},
		{"192.168.1.5:7678", false},
	}
	for _, tt := range tests {
		r := request(http.MethodGet, "/api/v1/state")
		r.Host = tt.host
		w := f.serve(r)
		if tt.ok && w.Code != http.StatusOK {
			t.Errorf("Host %s: %d, want 200", tt.host, w.Code)
		}
		if !tt.ok {
			wantError(t, w, http.StatusForbidden, codeForbiddenHost)
		}
	}
	// With a token, the token decides.
	g := newFixture(t, withToken)
	r := request(http.MethodGet, "/api/v1/state", "Authorization", "Bearer "+testToken)
	r.Host = "sortie.internal.example:7678"
	if w := g.serve(r); w.Code != http.StatusOK {
		t.Errorf("token server, Host sortie.internal.example: %d, want 200", w.Code)
	}
}

func TestAuth_CrossSiteRefreshIsRefused(t *testing.T) {
	f := newFixture(t, nil)
	w := f.serve(request(http.MethodPost, "/api/v1/refresh", "Sec-Fetch-Site", "cross-site"))
	wantError(t, w, http.StatusForbidden, codeCrossOrigin)
	if f.sched.refreshes != 0 {
		t.Errorf("a cross-site POST refreshed")
	}
	for _, site := range []string{"same-origin", ""} { // "" is curl or the CLI
		w := f.serve(request(http.MethodPost, "/api/v1/refresh", "Sec-Fetch-Site", site))
		if w.Code != http.StatusAccepted {
			t.Errorf("POST with Sec-Fetch-Site %q = %d, want 202", site, w.Code)
		}
	}
}

func TestAuthenticator_ConstantTimeDigests(t *testing.T) {
	a := newAuthenticator(testToken)
	for _, v := range []string{"", "x", testToken[:len(testToken)-1], testToken + " ", strings.Repeat("a", maxTokenLen+1)} {
		if a.token(v) {
			t.Errorf("token(%q) = true", clip(v))
		}
	}
	if !a.token(testToken) {
		t.Error("token(the token) = false")
	}
}

// TestAuth_OneTimeLoginCode: the link the daemon prints carries a code, not the
// token: it logs a browser in once, then is dead, and dies unused after LoginCodeTTL.
func TestAuth_OneTimeLoginCode(t *testing.T) {
	now := t0
	f := newFixture(t, func(o *Options) {
		withToken(o)
		o.Now = func() time.Time { return now }
	})
	code := f.srv.LoginCode()
	if code == "" || strings.Contains(code, testToken) {
		t.Fatalf("LoginCode = %q", code)
	}
	w := f.get(t, "/login?code="+code)
	cookies := w.Result().Cookies()
	if w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/" || len(cookies) != 1 || cookies[0].Name != cookieName {
		t.Fatalf("GET /login?code= = %d to %q with %v, want 303 to / with the cookie", w.Code, w.Header().Get("Location"), cookies)
	}
	if w := f.get(t, "/api/v1/state", "Cookie", cookieName+"="+cookies[0].Value); w.Code != http.StatusOK {
		t.Errorf("GET /api/v1/state with the cookie a code got = %d, want 200", w.Code)
	}
	// Used: dead, for a browser and for anything else.
	for _, hdr := range [][]string{nil, {"Accept", "text/html"}} {
		w = f.get(t, "/login?code="+code, hdr...)
		if w.Code != http.StatusUnauthorized || len(w.Result().Cookies()) != 0 || !strings.Contains(w.Body.String(), "used already or has expired") {
			t.Errorf("a code used twice = %d %v %q, want 401 and the login form saying so", w.Code, w.Result().Cookies(), w.Body)
		}
	}
	// Unused but old: dead once LoginCodeTTL has passed.
	fresh, old := f.srv.LoginCode(), f.srv.LoginCode()
	now = now.Add(LoginCodeTTL - time.Second)
	if w := f.get(t, "/login?code="+fresh); w.Code != http.StatusSeeOther {
		t.Errorf("a code just within its time = %d, want 303", w.Code)
	}
	now = now.Add(time.Second)
	if w := f.get(t, "/login?code="+old); w.Code != http.StatusUnauthorized || len(w.Result().Cookies()) != 0 {
		t.Errorf("an expired code = %d %v, want 401, no cookie", w.Code, w.Result().Cookies())
	}
	if w := f.get(t, "/login?code=not-a-code"); w.Code != http.StatusUnauthorized {
		t.Errorf("a made-up code = %d, want 401", w.Code)
	}
	// The pending codes are bounded: minting many drops the oldest.
	first := f.srv.LoginCode()
	for range maxLoginCodes {
		f.srv.LoginCode()
	}
	if w := f.get(t, "/login?code="+first); w.Code != http.StatusUnauthorized {
		t.Errorf("the oldest of more than %d codes = %d, want 401 (dropped)", maxLoginCodes, w.Code)
	}
	// The operator token still logs in (scripts, `sortie status --login-url`).
	if w := f.get(t, "/login?token="+url.QueryEscape(testToken)); w.Code != http.StatusSeeOther {
		t.Errorf("GET /login?token= = %d, want 303", w.Code)
	}
}
