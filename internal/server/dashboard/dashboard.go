// Package dashboard is the operator's web page: embedded HTML, CSS and JavaScript that
// draw the daemon's state from the JSON API of the same origin (/api/v1/...) and its
// live feed from the Server-Sent Events stream. It serves only the page shells and
// their static assets; the API, the event stream and authentication belong to package
// server, which mounts Handler at "/" behind its own routes.
//
// There is no build step: the files in static/ are what the browser runs, plain
// modules without a framework, and nothing is loaded from another origin.
package dashboard

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"path"
	"sort"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

//go:embed page.html static
var files embed.FS

// maxIdentifierLen bounds the identifier of /issues/{identifier}: tracker keys are
// short, and the page repeats the value.
const maxIdentifierLen = 200

// Handler serves the dashboard for a daemon of this version:
//
//	GET /                        the overview
//	GET /issues/{identifier}     one issue's page
//	GET /assets/{hash}/{name}    the scripts, styles and icon the pages load
//	GET /favicon.ico             the icon
//
// Anything else is 404. Pages are never cached without revalidation; assets live
// under the hash of their contents, so the browser keeps them for a year and a new
// daemon's pages load its own. Every response carries a Content-Security-Policy that
// allows only same-origin scripts, styles and connections.
func Handler(version string) http.Handler {
	h, err := newHandler(version)
	if err != nil {
		// The embedded files are part of the binary; a broken one is a build error that
		// every test of this package catches.
		panic(err)
	}
	return h
}

// asset is one embedded file, ready to serve.
type asset struct {
	body        []byte
	contentType string
	etag        string
}

type handler struct {
	mux    *http.ServeMux
	assets map[string]asset // by file name
	hash   string           // of every asset, names and contents
	page   *template.Template
	ver    string
}

// contentTypes are the asset extensions the dashboard ships; any other file in
// static/ is a mistake caught by newHandler.
var contentTypes = map[string]string{
	".js":  "text/javascript; charset=utf-8",
	".css": "text/css; charset=utf-8",
	".svg": "image/svg+xml",
}

func newHandler(version string) (*handler, error) {
	h := &handler{assets: map[string]asset{}, ver: version}
	entries, err := fs.ReadDir(files, "static")
	if err != nil {
		return nil, fmt.Errorf("dashboard: reading the embedded assets: %w", err)
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	all := sha256.New()
	for _, name := range names {
		ct, ok := contentTypes[path.Ext(name)]
		if !ok {
			return nil, fmt.Errorf("dashboard: static/%s: no content type for %q files", name, path.Ext(name))
		}
		body, err := files.ReadFile("static/" + name)
		if err != nil {
			return nil, fmt.Errorf("dashboard: %w", err)
		}
		sum := sha256.Sum256(body)
		h.assets[name] = asset{body: body, contentType: ct, etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
		fmt.Fprintf(all, "%s\x00%x\x00", name, sum)
	}
	h.hash = hex.EncodeToString(all.Sum(nil))[:16]
	h.page, err = template.ParseFS(files, "page.html")
	if err != nil {
		return nil, fmt.Errorf("dashboard: %w", err)
	}

	h.mux = http.NewServeMux()
	h.mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		h.servePage(w, r, "overview", "")
	})
	h.mux.HandleFunc("GET /issues/{identifier}", func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("identifier")
		if !validIdentifier(id) {
			http.NotFound(w, r)
			return
		}
		h.servePage(w, r, "issue", id)
	})
	h.mux.HandleFunc("GET /assets/{hash}/{name}", h.serveAsset)
	h.mux.HandleFunc("GET /favicon.ico", func(w http.ResponseWriter, r *http.Request) {
		h.serveFile(w, r, "favicon.svg", "public, max-age=86400")
	})
	return h, nil
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hdr := w.Header()
	// The pages build their DOM from API data with textContent; the policy is the
	// second line of defence: no inline script, nothing from another origin, no framing.
	hdr.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; "+
		"img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
	hdr.Set("X-Content-Type-Options", "nosniff")
	hdr.Set("Referrer-Policy", "no-referrer")
	h.mux.ServeHTTP(w, r)
}

// pageData is what page.html renders.
type pageData struct {
	Version    string
	Page       string // overview or issue
	Identifier string // the issue's, on its page
	Assets     string // URL prefix of the assets, ending in /
}

func (h *handler) servePage(w http.ResponseWriter, r *http.Request, page, identifier string) {
	var buf bytes.Buffer
	err := h.page.Execute(&buf, pageData{
		Version: h.ver, Page: page, Identifier: identifier, Assets: "/assets/" + h.hash + "/",
	})
	if err != nil {
		http.Error(w, "dashboard: rendering the page: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	// Revalidate every time: the page names the assets of the daemon that serves it.
	w.Header().Set("Cache-Control", "no-cache")
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(buf.Bytes()))
}

func (h *handler) serveAsset(w http.ResponseWriter, r *http.Request) {
	cache := "public, max-age=31536000, immutable"
	if r.PathValue("hash") != h.hash {
		// A page of another version of the daemon (open across an upgrade): give it
		// today's file, but do not let it be cached under the old name.
		cache = "no-cache"
	}
	h.serveFile(w, r, r.PathValue("name"), cache)
}

func (h *handler) serveFile(w http.ResponseWriter, r *http.Request, name, cache string) {
	a, ok := h.assets[name]
	if !ok {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", a.contentType)
	w.Header().Set("Cache-Control", cache)
	w.Header().Set("ETag", a.etag)
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(a.body))
}

// validIdentifier accepts what a tracker could call an issue: printable, bounded.
func validIdentifier(s string) bool {
	if s == "" || len(s) > maxIdentifierLen || !utf8.ValidString(s) {
		return false
	}
	return !strings.ContainsFunc(s, func(r rune) bool { return !unicode.IsPrint(r) })
}
