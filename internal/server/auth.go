package server

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"html/template"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

const (
	// cookieName is the dashboard's session cookie. Browsers cannot add an
	// Authorization header to page loads or to an EventSource, so after /login they
	// carry this instead.
	cookieName = "sortie_token"
	// cookieMaxAge is how long a browser stays logged in. Changing the token logs every
	// browser out: the cookie is derived from it.
	cookieMaxAge = 30 * 24 * time.Hour
	// minTokenLen is the shortest token New accepts without a warning.
	minTokenLen = 16
	// maxTokenLen bounds a presented token, so a huge header costs nothing to reject.
	maxTokenLen = 4096
	// LoginCodeTTL is how long a one-time login code (LoginCode) stays good, unused.
	LoginCodeTTL = 10 * time.Minute
	// maxLoginCodes bounds the codes waiting to be used; minting one more drops the
	// oldest.
	maxLoginCodes = 32
)

// authenticator checks presented credentials against the token in constant time. It
// keeps only digests, so comparisons take the same time whatever the lengths.
type authenticator struct {
	tokenSum  [sha256.Size]byte // of the token
	cookie    string            // the value /login sets: derived from the token, not the token
	cookieSum [sha256.Size]byte

	mu    sync.Mutex
	codes []loginCode // unused one-time login codes, oldest first
}

// loginCode is a one-time login code, by its digest, and when it expires.
type loginCode struct {
	sum     [sha256.Size]byte
	expires time.Time
}

// newCode mints a one-time login code, good until now plus LoginCodeTTL.
func (a *authenticator) newCode(now time.Time) string {
	var b [16]byte
	rand.Read(b[:])
	code := hex.EncodeToString(b[:])
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.codes) >= maxLoginCodes {
		a.codes = a.codes[1:]
	}
	a.codes = append(a.codes, loginCode{sum: sha256.Sum256([]byte(code)), expires: now.Add(LoginCodeTTL)})
	return code
}

// redeem reports whether v is a login code neither used nor expired at now, and uses
// it up. Expired codes go on the way.
func (a *authenticator) redeem(v string, now time.Time) bool {
	if len(v) > maxTokenLen {
		return false
	}
	sum := sha256.Sum256([]byte(v))
	a.mu.Lock()
	defer a.mu.Unlock()
	ok := false
	live := a.codes[:0]
	for _, c := range a.codes {
		switch {
		case !now.Before(c.expires):
		case !ok && subtle.ConstantTimeCompare(sum[:], c.sum[:]) == 1:
			ok = true
		default:
			live = append(live, c)
		}
	}
	clear(a.codes[len(live):])
	a.codes = live
	return ok
}

func newAuthenticator(token string) *authenticator {
	mac := hmac.New(sha256.New, []byte(token))
	mac.Write([]byte("sortie dashboard cookie v1"))
	a := &authenticator{tokenSum: sha256.Sum256([]byte(token)),
		cookie: base64.RawURLEncoding.EncodeToString(mac.Sum(nil))}
	a.cookieSum = sha256.Sum256([]byte(a.cookie))
	return a
}

// token reports whether v is the token.
func (a *authenticator) token(v string) bool {
	if len(v) > maxTokenLen {
		return false
	}
	sum := sha256.Sum256([]byte(v))
	return subtle.ConstantTimeCompare(sum[:], a.tokenSum[:]) == 1
}

// allowed reports whether r carries the token: as a bearer token, or as the cookie
// /login sets (the token itself is accepted there too, for clients that set the
// cookie by hand).
func (a *authenticator) allowed(r *http.Request) bool {
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, v, ok := strings.Cut(h, " ")
		return ok && strings.EqualFold(scheme, "Bearer") && a.token(strings.TrimSpace(v))
	}
	c, err := r.Cookie(cookieName)
	if err != nil || len(c.Value) > maxTokenLen {
		return false
	}
	sum := sha256.Sum256([]byte(c.Value))
	return subtle.ConstantTimeCompare(sum[:], a.cookieSum[:]) == 1 || a.token(c.Value)
}

// authenticate lets requests with the token through to next, when a token is set.
func (s *Server) authenticate(next http.Handler) http.Handler {
	if s.auth == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.auth.allowed(r) {
			next.ServeHTTP(w, r)
			return
		}
		s.unauthorized(w, r, false)
	})
}

// unauthorized answers a request without a valid token: a login form for a browser
// opening a page, the JSON error for everything else.
func (s *Server) unauthorized(w http.ResponseWriter, r *http.Request, failedLogin bool) {
	why := loginNone
	if failedLogin {
		why = loginWrongToken
	}
	s.loginRefused(w, r, why)
}

// Why a login page is shown.
const (
	loginNone       = iota // not logged in
	loginWrongToken        // a wrong token was given
	loginExpired           // a one-time code was used already, expired or never issued
)

func (s *Server) loginRefused(w http.ResponseWriter, r *http.Request, why int) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="sortie"`)
	if wantsPage(r) || why == loginExpired {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusUnauthorized)
		_ = loginPage.Execute(w, struct{ Failed, Expired bool }{why == loginWrongToken, why == loginExpired})
		return
	}
	msg := "this sortie daemon requires its operator token: send Authorization: Bearer <token>, or open " +
		"/login?token=<token> in a browser; `sortie status --login-url` prints the link (the token is " +
		"server.auth_token, or the one the daemon keeps in <db_path>.operator-token)"
	if why == loginWrongToken {
		msg = "wrong token"
	}
	writeError(w, http.StatusUnauthorized, codeUnauthorized, msg)
}

// wantsPage reports whether r is a browser loading a page (not the API, not a fetch).
func wantsPage(r *http.Request) bool {
	if strings.HasPrefix(r.URL.Path, "/api/") || r.URL.Path == "/metrics" || r.URL.Path == "/readyz" {
		return false
	}
	return (r.Method == http.MethodGet || r.Method == http.MethodPost) && strings.Contains(r.Header.Get("Accept"), "text/html")
}

// LoginCode mints a one-time code for the link that logs a browser in,
// /login?code=<code>: good once, for LoginCodeTTL. The daemon prints such a link in
// its log instead of one with the operator token, which a log, a terminal's
// scrollback or a browser's history would keep for good. "" when no token is set.
func (s *Server) LoginCode() string {
	if s.auth == nil {
		return ""
	}
	return s.auth.newCode(s.now())
}

// handleLogin is GET /login?code=… (a one-time code, LoginCode), GET /login?token=…
// and POST /login (form field token): with a good code or the right token it sets the
// dashboard cookie and redirects to /. With no token configured it just redirects.
func (s *Server) handleLogin(w http.ResponseWriter, r *http.Request) {
	if s.auth == nil {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	if code := r.URL.Query().Get("code"); code != "" {
		if !s.auth.redeem(strings.TrimSpace(code), s.now()) {
			s.log.Warn("http: login with a one-time code that was used already, expired or never issued", "remote", r.RemoteAddr)
			s.loginRefused(w, r, loginExpired)
			return
		}
	} else if !s.auth.token(strings.TrimSpace(r.FormValue("token"))) {
		s.log.Warn("http: login with a wrong token", "remote", r.RemoteAddr)
		s.unauthorized(w, r, true)
		return
	}
	http.SetCookie(w, &http.Cookie{
		Name: cookieName, Value: s.auth.cookie, Path: "/",
		MaxAge:   int(cookieMaxAge.Seconds()),
		HttpOnly: true, Secure: r.TLS != nil,
		// Lax, not Strict: a link to the dashboard from chat or mail should open it
		// logged in. Cross-site POSTs are refused by the cross-origin check anyway.
		SameSite: http.SameSiteLaxMode,
	})
	// 303, not 302: after a POST the browser must GET /, and the token leaves the
	// address bar.
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

var loginPage = template.Must(template.New("login").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Sortie: log in</title>
<style>body{font:16px system-ui,sans-serif;max-width:28rem;margin:4rem auto;padding:0 1rem}
input{font:inherit;width:100%;box-sizing:border-box;padding:.5rem;margin:.5rem 0}button{font:inherit;padding:.5rem 1rem}
.err{color:#b00020}</style></head>
<body><h1>Sortie</h1>
<p>This daemon's dashboard needs its operator token. Open the login link the daemon printed when it started
(<code>sortie: open the dashboard, logged in: …</code>; it works once, within 10 minutes), or print a link
with <code>sortie status --login-url</code>.
The token is <code>server.auth_token</code> when set, otherwise the one the daemon generated in
<code>&lt;db_path&gt;.operator-token</code>.</p>
{{if .Failed}}<p class="err" role="alert">That token is not right.</p>{{end}}
{{if .Expired}}<p class="err" role="alert">That login link was used already or has expired: each link the daemon prints logs in one browser, once, within 10 minutes. Print a new link with <code>sortie status --login-url</code>, or enter the token below.</p>{{end}}
<form method="post" action="/login"><label for="token">Token</label>
<input id="token" name="token" type="password" autocomplete="current-password" required autofocus>
<button type="submit">Log in</button></form></body></html>
`))

// checkHost refuses requests whose Host header does not name this machine, when no
// token is set. Without it a web page could rebind its own domain name to 127.0.0.1
// and read the API from the operator's browser (DNS rebinding): the browser would call
// that same-origin. With a token, the token is the protection.
func (s *Server) checkHost(next http.Handler) http.Handler {
	if s.auth != nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/livez" && r.Host != "" {
			host := r.Host
			if h, _, err := net.SplitHostPort(host); err == nil {
				host = h
			}
			if !isLoopbackHost(host) {
				writeError(w, http.StatusForbidden, codeForbiddenHost,
					"the Host header names "+r.Host+", not this machine; open the dashboard at http://127.0.0.1:<port>/ "+
						"or http://localhost:<port>/, or set server.auth_token to serve other names")
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}
