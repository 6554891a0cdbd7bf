package notify

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// testEnv is the environment every test's lookup sees.
var testEnv = map[string]string{
	"SLACK_WEBHOOK_URL": "https://hooks.slack.test/services/T0/B0/s3cr3tSlackPath",
	"OPS_TOKEN":         "opsT0ken-s3cr3t",
	"EMPTY":             "",
	"HOST":              "ops.example.test",
}

func lookupIn(env map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := env[k]
		return v, ok
	}
}

// decodeYAML decodes the value of a `notifications:` key as WORKFLOW.md's loader does.
func decodeYAML(t testing.TB, src string) any {
	t.Helper()
	var doc map[string]any
	if err := yaml.Unmarshal([]byte("notifications:\n"+src), &doc); err != nil {
		t.Fatalf("test YAML does not parse: %v\n%s", err, src)
	}
	return doc["notifications"]
}

// parseYAML parses a notifications block and fails the test on error.
func parseYAML(t testing.TB, src string, env map[string]string) *Notifier {
	t.Helper()
	n, err := Parse(decodeYAML(t, src), lookupIn(env))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return n
}

// sleeps replaces a Notifier's retry wait: it records each wait and returns at once.
type sleeps struct {
	mu    sync.Mutex
	waits []time.Duration
}

func (s *sleeps) install(n *Notifier) {
	n.sleep = func(ctx context.Context, d time.Duration) error {
		s.mu.Lock()
		s.waits = append(s.waits, d)
		s.mu.Unlock()
		return ctx.Err()
	}
}

func (s *sleeps) got() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.waits...)
}

// received is one request a test server saw.
type received struct {
	Path    string
	Query   string
	Header  http.Header
	Body    []byte
	Payload map[string]any
}

// receiver is a test webhook endpoint that answers with a scripted sequence of
// statuses (the last one repeats) and records every request.
type receiver struct {
	*httptest.Server
	mu       sync.Mutex
	requests []received
	replies  []reply
}

type reply struct {
	status     int
	retryAfter string
	body       string
}

func newReceiver(t *testing.T, replies ...reply) *receiver {
	t.Helper()
	if len(replies) == 0 {
		replies = []reply{{status: http.StatusOK, body: "ok"}}
	}
	rc := &receiver{replies: replies}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var payload map[string]any
		_ = json.Unmarshal(body, &payload)
		rc.mu.Lock()
		rc.requests = append(rc.requests, received{Path: r.URL.Path, Query: r.URL.RawQuery, Header: r.Header.Clone(), Body: body, Payload: payload})
		rp := rc.replies[min(len(rc.requests), len(rc.replies))-1]
		rc.mu.Unlock()
		if rp.retryAfter != "" {
			w.Header().Set("Retry-After", rp.retryAfter)
		}
		w.WriteHeader(rp.status)
		_, _ = io.WriteString(w, rp.body)
	}))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *receiver) got() []received {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]received(nil), rc.requests...)
}

// block is a notifications block with one backend of kind posting to url.
func block(kind, url string, extra ...string) string {
	key := "url"
	if kind == "slack" {
		key = "webhook_url"
	}
	s := "  - kind: " + kind + "\n    " + key + ": " + url + "\n"
	for _, e := range extra {
		s += "    " + e + "\n"
	}
	return s
}

var sample = Notification{
	Event:           EventBlocked,
	Severity:        SeverityWarning,
	Title:           "Issue blocked",
	Message:         "waiting on <review> & sign-off",
	IssueID:         "10042",
	IssueIdentifier: "ABC-123",
	IssueURL:        "https://tracker.test/browse/ABC-123?x=1&y=2",
	Time:            time.Date(2025, 3, 4, 5, 6, 7, 0, time.FixedZone("CET", 3600)),
}

func mustContainNone(t *testing.T, s string, secrets ...string) {
	t.Helper()
	for _, sec := range secrets {
		if strings.Contains(s, sec) {
			t.Errorf("text reveals secret %q:\n%s", sec, s)
		}
	}
}
