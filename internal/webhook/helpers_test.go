package webhook

import (
	"bytes"
	"encoding/hex"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// testNow is the receiver's clock in tests: 2026-01-01T12:00:00.5Z. The Linear
// fixtures' webhookTimestamps are within a second of it.
var testNow = time.UnixMilli(1767268800500).UTC()

const testSecret = "It's a Secret to Everybody"

// fixture is a payload in testdata and how its tracker sends it.
type fixture struct {
	kind, file string
	event      string // X-GitHub-Event (GitHub only)
}

var fixtures = []fixture{
	{GitHub, "github_issues_opened.json", "issues"},
	{GitHub, "github_issues_labeled.json", "issues"},
	{GitHub, "github_issue_comment_created.json", "issue_comment"},
	{GitHub, "github_issue_comment_pr.json", "issue_comment"},
	{GitHub, "github_label_deleted.json", "label"},
	{GitHub, "github_ping.json", "ping"},
	{Linear, "linear_issue_create.json", ""},
	{Linear, "linear_issue_update.json", ""},
	{Linear, "linear_comment_create.json", ""},
	{Jira, "jira_issue_created.json", ""},
	{Jira, "jira_issue_updated.json", ""},
	{Jira, "jira_comment_created.json", ""},
}

func readFixture(t testing.TB, file string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// settingsFor is what the tracker in force would set for the fixtures' project.
func settingsFor(kind string) Settings {
	s := Settings{Tracker: kind, Secret: testSecret}
	switch kind {
	case GitHub:
		s.Project = "acme/widgets"
	case Jira:
		s.Project = "PROJ"
	case Linear:
		s.Team = "ENG"
	}
	return s
}

// signHex is the hex HMAC-SHA256 of body keyed with secret, computed here apart from
// the package's own code.
func signHex(secret string, body []byte) string {
	return hex.EncodeToString(sign(secret, body))
}

// headersFor are the headers kind's tracker sends with body, signed with secret, with
// delivery id id ("" for none).
func headersFor(kind, event, id, secret string, body []byte) http.Header {
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	switch kind {
	case GitHub:
		h.Set("User-Agent", "GitHub-Hookshot/4f3c2a1")
		h.Set("X-GitHub-Event", event)
		h.Set("X-GitHub-Hook-ID", "523081234")
		h.Set("X-Hub-Signature-256", "sha256="+signHex(secret, body))
		if id != "" {
			h.Set("X-GitHub-Delivery", id)
		}
	case Linear:
		h.Set("User-Agent", "Linear-Webhook")
		h.Set("Linear-Signature", signHex(secret, body))
		if id != "" {
			h.Set("Linear-Delivery", id)
		}
	case Jira:
		h.Set("User-Agent", "Atlassian Webhook HTTP Client")
		h.Set("X-Hub-Signature", "sha256="+signHex(secret, body))
		if id != "" {
			h.Set("X-Atlassian-Webhook-Identifier", id)
		}
	}
	return h
}

// harness is a Receiver with its callbacks recorded.
type harness struct {
	t *testing.T
	r *Receiver

	mu        sync.Mutex
	settings  Settings
	now       time.Time
	delivered []Delivery
	counted   []string // "kind result"
	logs      bytes.Buffer
	// credentials are the signatures and tokens sent, which must never be logged.
	credentials []string
}

func newHarness(t *testing.T, s Settings) *harness {
	h := &harness{t: t, settings: s, now: testNow}
	h.r = New(Options{
		Settings: func() Settings { h.mu.Lock(); defer h.mu.Unlock(); return h.settings },
		Deliver:  func(d Delivery) { h.mu.Lock(); defer h.mu.Unlock(); h.delivered = append(h.delivered, d) },
		Count:    func(k, r string) { h.mu.Lock(); defer h.mu.Unlock(); h.counted = append(h.counted, k+" "+r) },
		Now:      func() time.Time { h.mu.Lock(); defer h.mu.Unlock(); return h.now },
		Logger:   slog.New(slog.NewTextHandler(lockedWriter{&h.mu, &h.logs}, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	t.Cleanup(h.checkLogs)
	return h
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (h *harness) setNow(t time.Time) {
	h.mu.Lock()
	h.now = t
	h.mu.Unlock()
}

// request builds a request to path with hdr and body.
func request(method, path string, hdr http.Header, body io.Reader) *http.Request {
	req := httptest.NewRequest(method, path, body)
	for k, v := range hdr {
		req.Header[k] = v
	}
	return req
}

// credentialHeaders are the headers whose values must never be logged or answered.
var credentialHeaders = []string{"X-Hub-Signature-256", "X-Hub-Signature", "Linear-Signature", "X-Sortie-Webhook-Token"}

// do serves req and checks what every answer must keep: JSON, and no secret or long
// header value repeated.
func (h *harness) do(req *http.Request) *httptest.ResponseRecorder {
	h.t.Helper()
	for _, k := range credentialHeaders {
		if v := req.Header.Get(k); len(v) >= 8 {
			h.mu.Lock()
			h.credentials = append(h.credentials, v)
			h.mu.Unlock()
		}
	}
	w := httptest.NewRecorder()
	h.r.ServeHTTP(w, req)
	got := w.Body.String()
	if ct := w.Header().Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		h.t.Errorf("Content-Type %q, want JSON", ct)
	}
	if strings.Contains(got, testSecret) {
		h.t.Errorf("the answer repeats the secret: %s", got)
	}
	for k, vs := range req.Header {
		for _, v := range vs {
			if len(v) >= 16 && strings.Contains(got, v) {
				h.t.Errorf("the answer repeats the %s header: %s", k, got)
			}
		}
	}
	return w
}

// post sends body to /webhooks/kind.
func (h *harness) post(kind string, hdr http.Header, body []byte) *httptest.ResponseRecorder {
	h.t.Helper()
	return h.do(request(http.MethodPost, "/webhooks/"+kind, hdr, bytes.NewReader(body)))
}

// checkLogs fails the test if anything logged holds the secret, a signature or token
// sent, or text from a fixture's body.
func (h *harness) checkLogs() {
	h.mu.Lock()
	defer h.mu.Unlock()
	logs := h.logs.String()
	for _, bad := range append([]string{testSecret, "Steps to reproduce", "Also happens on Firefox"}, h.credentials...) {
		if strings.Contains(logs, bad) {
			h.t.Errorf("the log holds %q:\n%s", bad, logs)
		}
	}
}

// takeDelivered returns and forgets the deliveries so far; takeCounted the counts.
func (h *harness) takeDelivered() []Delivery {
	h.mu.Lock()
	defer h.mu.Unlock()
	d := h.delivered
	h.delivered = nil
	return d
}

func (h *harness) takeCounted() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	c := h.counted
	h.counted = nil
	return c
}

// status is kind's Status, and whether there is one.
func (h *harness) status(kind string) (Status, bool) {
	i := slices.IndexFunc(h.r.Status(), func(s Status) bool { return s.Tracker == kind })
	if i < 0 {
		return Status{}, false
	}
	return h.r.Status()[i], true
}

// unreadable is a body whose reading fails the test.
type unreadable struct{ t *testing.T }

func (u unreadable) Read([]byte) (int, error) {
	u.t.Error("the body was read")
	return 0, io.ErrUnexpectedEOF
}
