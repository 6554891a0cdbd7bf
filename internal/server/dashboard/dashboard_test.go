package dashboard

import (
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

func get(t *testing.T, h http.Handler, path string, header ...string) *http.Response {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Result()
}

func body(t *testing.T, res *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// assetURL finds the URL of the named asset in a page.
func assetURL(t *testing.T, page, name string) string {
	t.Helper()
	m := regexp.MustCompile(`"(/assets/[0-9a-f]+/` + regexp.QuoteMeta(name) + `)"`).FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("the page does not load %s:\n%s", name, page)
	}
	return m[1]
}

func TestHandler_PagesAreHTMLAndRevalidated(t *testing.T) {
	h := Handler("v1.2.3")
	tests := []struct {
		path, page, issue string
	}{
		{"/", "overview", ""},
		{"/issues/ENG-12", "issue", "ENG-12"},
		{"/issues/owner%2Frepo%2342", "issue", "owner/repo#42"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			res := get(t, h, tt.path)
			b := body(t, res)
			if res.StatusCode != http.StatusOK {
				t.Fatalf("GET %s: status %d, want 200", tt.path, res.StatusCode)
			}
			if ct := res.Header.Get("Content-Type"); ct != "text/html; charset=utf-8" {
				t.Errorf("Content-Type %q, want text/html; charset=utf-8", ct)
			}
			if cc := res.Header.Get("Cache-Control"); cc != "no-cache" {
				t.Errorf("Cache-Control %q, want no-cache", cc)
			}
			if !strings.Contains(b, `data-page="`+tt.page+`"`) {
				t.Errorf("page is not marked %q:\n%s", tt.page, b)
			}
			if !strings.Contains(b, `data-issue="`+tt.issue+`"`) {
				t.Errorf("page does not carry the identifier %q:\n%s", tt.issue, b)
			}
			if !strings.Contains(b, `data-version="v1.2.3"`) {
				t.Errorf("page does not carry the version:\n%s", b)
			}
			assetURL(t, b, "app.js")
			assetURL(t, b, "app.css")
		})
	}
}

func TestHandler_PageEscapesIdentifierAndVersion(t *testing.T) {
	tests := []struct {
		name, version, path string
	}{
		{"identifier", "v1", `/issues/%22%3E%3Cscript%3Ealert(1)%3C%2Fscript%3E`},
		{"version", `"><script>alert(1)</script>`, "/"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := get(t, Handler(tt.version), tt.path)
			b := body(t, res)
			if res.StatusCode != http.StatusOK {
				t.Fatalf("status %d, want 200", res.StatusCode)
			}
			if strings.Contains(b, "<script>alert") {
				t.Fatalf("the %s reached the page unescaped:\n%s", tt.name, b)
			}
		})
	}
}

func TestHandler_AssetsHaveTheirTypeAndAreImmutable(t *testing.T) {
	h := Handler("v1")
	page := body(t, get(t, h, "/"))
	tests := []struct {
		name, contentType string
	}{
		{"app.js", "text/javascript; charset=utf-8"},
		{"app.css", "text/css; charset=utf-8"},
		{"favicon.svg", "image/svg+xml"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url := assetURL(t, page, tt.name)
			res := get(t, h, url)
			b := body(t, res)
			if res.StatusCode != http.StatusOK || b == "" {
				t.Fatalf("GET %s: status %d, %d bytes; want 200 with a body", url, res.StatusCode, len(b))
			}
			if ct := res.Header.Get("Content-Type"); ct != tt.contentType {
				t.Errorf("Content-Type %q, want %q", ct, tt.contentType)
			}
			if cc := res.Header.Get("Cache-Control"); cc != "public, max-age=31536000, immutable" {
				t.Errorf("Cache-Control %q, want a year, immutable", cc)
			}
			etag := res.Header.Get("ETag")
			if etag == "" {
				t.Fatal("no ETag")
			}
			if res := get(t, h, url, "If-None-Match", etag); res.StatusCode != http.StatusNotModified {
				t.Errorf("GET with If-None-Match: status %d, want 304", res.StatusCode)
			}
		})
	}
}

// The scripts import each other by relative URL, so every module must be served
// beside app.js; nothing may come from another origin, and no module parses HTML.
func TestHandler_ModulesImportOnlyServedSiblings(t *testing.T) {
	h := Handler("v1")
	page := body(t, get(t, h, "/"))
	prefix := strings.TrimSuffix(assetURL(t, page, "app.js"), "app.js")
	importRe := regexp.MustCompile(`(?m)^import .* from '([^']+)';`)
	seen := map[string]bool{}
	queue := []string{"./app.js"}
	for len(queue) > 0 {
		spec := queue[0]
		queue = queue[1:]
		if seen[spec] {
			continue
		}
		seen[spec] = true
		if !strings.HasPrefix(spec, "./") {
			t.Fatalf("a module imports %q: only ./ siblings are served", spec)
		}
		res := get(t, h, prefix+strings.TrimPrefix(spec, "./"))
		src := body(t, res)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("module %s: status %d", spec, res.StatusCode)
		}
		for _, bad := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("} {
			if strings.Contains(src, bad) {
				t.Errorf("module %s uses %s; build the DOM with dom.js instead", spec, bad)
			}
		}
		for _, m := range importRe.FindAllStringSubmatch(src, -1) {
			queue = append(queue, m[1])
		}
	}
	if len(seen) < 3 {
		t.Fatalf("found only %d modules from app.js; is the import pattern stale?", len(seen))
	}
}

func TestHandler_StaleAssetHashIsServedButNotCached(t *testing.T) {
	res := get(t, Handler("v1"), "/assets/0123456789abcdef/app.js")
	if res.StatusCode != http.StatusOK {
		t.Fatalf("status %d, want 200", res.StatusCode)
	}
	if cc := res.Header.Get("Cache-Control"); cc != "no-cache" {
		t.Errorf("Cache-Control %q, want no-cache for another version's URL", cc)
	}
}

func TestHandler_UnknownPathsAre404(t *testing.T) {
	h := Handler("v1")
	page := body(t, get(t, h, "/"))
	prefix := strings.TrimSuffix(assetURL(t, page, "app.js"), "app.js")
	for _, path := range []string{
		prefix + "nope.js",
		prefix + "page.html",
		"/assets/app.js",
		"/page.html",
		"/static/app.js",
		"/index.html",
		"/issues/",
		"/issues/a/b",
		"/issues/" + strings.Repeat("x", maxIdentifierLen+1),
		"/issues/a%00b",
		"/issues/a%0Ab",
	} {
		if res := get(t, h, path); res.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s: status %d, want 404", path, res.StatusCode)
		}
	}
}

func TestHandler_OnlyGETAndHEAD(t *testing.T) {
	h := Handler("v1")
	for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodDelete} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(m, "/", nil))
		if rec.Code != http.StatusMethodNotAllowed {
			t.Errorf("%s /: status %d, want 405", m, rec.Code)
		}
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodHead, "/", nil))
	if rec.Code != http.StatusOK || rec.Body.Len() != 0 {
		t.Errorf("HEAD /: status %d with %d bytes, want 200 without a body", rec.Code, rec.Body.Len())
	}
}

func TestHandler_SecurityHeaders(t *testing.T) {
	h := Handler("v1")
	for _, path := range []string{"/", "/issues/X-1", "/favicon.ico", "/nope"} {
		res := get(t, h, path)
		csp := res.Header.Get("Content-Security-Policy")
		for _, want := range []string{"default-src 'none'", "script-src 'self'", "connect-src 'self'", "frame-ancestors 'none'"} {
			if !strings.Contains(csp, want) {
				t.Errorf("GET %s: Content-Security-Policy %q lacks %q", path, csp, want)
			}
		}
		if v := res.Header.Get("X-Content-Type-Options"); v != "nosniff" {
			t.Errorf("GET %s: X-Content-Type-Options %q, want nosniff", path, v)
		}
	}
}

func TestHandler_Favicon(t *testing.T) {
	res := get(t, Handler("v1"), "/favicon.ico")
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "image/svg+xml" {
		t.Fatalf("GET /favicon.ico: status %d, Content-Type %q; want 200 image/svg+xml", res.StatusCode, res.Header.Get("Content-Type"))
	}
}
