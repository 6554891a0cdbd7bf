package notify

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestSend_WebhookPayload(t *testing.T) {
	rc := newReceiver(t)
	n := parseYAML(t, block("webhook", rc.URL+"/hook", `headers: {Authorization: "Bearer $OPS_TOKEN"}`), testEnv)
	if err := n.Send(context.Background(), sample); err != nil {
		t.Fatalf("Send: %v", err)
	}
	reqs := rc.got()
	if len(reqs) != 1 {
		t.Fatalf("receiver got %d requests, want 1", len(reqs))
	}
	r := reqs[0]
	for k, want := range map[string]string{"Content-Type": "application/json", "User-Agent": "sortie", "Authorization": "Bearer opsT0ken-s3cr3t"} {
		if got := r.Header.Get(k); got != want {
			t.Errorf("header %s = %q, want %q", k, got, want)
		}
	}
	want := map[string]any{
		"source":   "sortie",
		"event":    "blocked",
		"severity": "warning",
		"title":    "Issue blocked",
		"message":  "waiting on <review> & sign-off",
		"issue":    map[string]any{"id": "10042", "identifier": "ABC-123", "url": "https://tracker.test/browse/ABC-123?x=1&y=2"},
		"time":     "2025-03-04T04:06:07Z",
	}
	if !reflect.DeepEqual(r.Payload, want) {
		t.Errorf("payload =\n  %s\nwant\n  %v", r.Body, want)
	}
	if strings.Contains(string(r.Body), `\u003c`) {
		t.Errorf("payload HTML-escapes <: %s", r.Body)
	}
}

func TestSend_SlackPayload(t *testing.T) {
	rc := newReceiver(t)
	n := parseYAML(t, block("slack", rc.URL+"/services/T/B/X"), testEnv)
	if err := n.Send(context.Background(), sample); err != nil {
		t.Fatalf("Send: %v", err)
	}
	reqs := rc.got()
	if len(reqs) != 1 {
		t.Fatalf("receiver got %d requests, want 1", len(reqs))
	}
	if reqs[0].Path != "/services/T/B/X" {
		t.Errorf("posted to %q, want the webhook path", reqs[0].Path)
	}
	if got := reqs[0].Header.Get("Content-Type"); got != "application/json" {
		t.Errorf("Content-Type = %q, want application/json", got)
	}
	want := map[string]any{"text": "[warning] ABC-123 Issue blocked: waiting on &lt;review&gt; &amp; sign-off (https://tracker.test/browse/ABC-123?x=1&amp;y=2)"}
	if !reflect.DeepEqual(reqs[0].Payload, want) {
		t.Errorf("payload = %s, want %v", reqs[0].Body, want)
	}
}

func TestSlackText_LeavesOutMissingParts(t *testing.T) {
	tests := []struct {
		msg  Notification
		want string
	}{
		{Notification{Severity: "info", Message: "hello"}, "[info] hello"},
		{Notification{Severity: "critical", Title: "Retries exhausted", Message: "gave up"}, "[critical] Retries exhausted: gave up"},
		{Notification{Severity: "info", IssueIdentifier: "ABC-1", Message: "done"}, "[info] ABC-1 done"},
		{Notification{Severity: "info", Message: "<!channel> ping"}, "[info] &lt;!channel&gt; ping"},
	}
	for _, tt := range tests {
		if got := slackText(tt.msg); got != tt.want {
			t.Errorf("slackText(%+v) = %q, want %q", tt.msg, got, tt.want)
		}
	}
}

func TestSend_TruncatesLongValues(t *testing.T) {
	rc := newReceiver(t)
	n := parseYAML(t, block("webhook", rc.URL), testEnv)
	msg := sample
	msg.Message = strings.Repeat("é", 10_000) // 20,000 bytes of two-byte runes
	msg.Title = strings.Repeat("t", 1000)
	if err := n.Send(context.Background(), msg); err != nil {
		t.Fatalf("Send: %v", err)
	}
	p := rc.got()[0].Payload
	got, _ := p["message"].(string)
	if len(got) > maxMessageBytes || !utf8.ValidString(got) || !strings.HasSuffix(got, truncatedMark) {
		t.Errorf("message is %d bytes, valid UTF-8 %v, marked %v; want at most %d, valid, marked", len(got), utf8.ValidString(got), strings.HasSuffix(got, truncatedMark), maxMessageBytes)
	}
	if title, _ := p["title"].(string); len(title) > maxTitleBytes {
		t.Errorf("title is %d bytes, want at most %d", len(title), maxTitleBytes)
	}
}

func TestSend_DefaultsSeverityByEventAndTimeToNow(t *testing.T) {
	rc := newReceiver(t)
	n := parseYAML(t, block("webhook", rc.URL), testEnv)
	n.now = func() time.Time { return time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC) }
	want := map[string]string{
		EventAgent:            "info",
		EventBlocked:          "warning",
		EventBudgetExhausted:  "warning",
		EventBudgetWarning:    "warning",
		EventRetriesExhausted: "critical",
		EventNeedsReview:      "info",
		EventFailed:           "critical",
		EventAwaitingInput:    "warning",
	}
	for _, event := range Events {
		if err := n.Send(context.Background(), Notification{Event: event, Message: "hi"}); err != nil {
			t.Fatalf("Send(%s): %v", event, err)
		}
	}
	for _, r := range rc.got() {
		event, _ := r.Payload["event"].(string)
		if r.Payload["severity"] != want[event] || r.Payload["time"] != "2030-01-02T03:04:05Z" {
			t.Errorf("%s: severity, time = %v, %v; want %s, 2030-01-02T03:04:05Z", event, r.Payload["severity"], r.Payload["time"], want[event])
		}
	}
	if got := len(rc.got()); got != len(Events) {
		t.Errorf("receiver got %d notifications, want %d", got, len(Events))
	}
}

func TestSend_FiltersBySeverityAndEvent(t *testing.T) {
	all, warn, budget := newReceiver(t), newReceiver(t), newReceiver(t)
	n := parseYAML(t, ""+
		block("webhook", all.URL, "name: all")+
		block("webhook", warn.URL, "name: warn", "min_severity: warning")+
		block("slack", budget.URL, "name: budget", "events: [budget_exhausted, retries_exhausted]"),
		testEnv)
	sends := []struct {
		event, severity string
		want            []string
	}{
		{EventAgent, "", []string{"all"}},
		{EventAgent, SeverityWarning, []string{"all", "warn"}},
		{EventBudgetExhausted, SeverityInfo, []string{"all", "budget"}},
		{EventBudgetExhausted, "", []string{"all", "warn", "budget"}},
		{EventRetriesExhausted, SeverityCritical, []string{"all", "warn", "budget"}},
	}
	counts := map[string]int{}
	for _, s := range sends {
		msg := Notification{Event: s.event, Severity: s.severity, Message: "m"}
		if got := n.Recipients(msg); !slices.Equal(got, s.want) {
			t.Errorf("Recipients(%s/%s) = %v, want %v", s.event, s.severity, got, s.want)
		}
		if err := n.Send(context.Background(), msg); err != nil {
			t.Fatalf("Send(%s/%s): %v", s.event, s.severity, err)
		}
		for _, name := range s.want {
			counts[name]++
		}
	}
	for name, rc := range map[string]*receiver{"all": all, "warn": warn, "budget": budget} {
		if got := len(rc.got()); got != counts[name] {
			t.Errorf("backend %s received %d notifications, want %d", name, got, counts[name])
		}
	}
}

func TestSend_NothingSelectedIsNotAnError(t *testing.T) {
	rc := newReceiver(t)
	n := parseYAML(t, block("webhook", rc.URL, "events: [blocked]"), testEnv)
	if err := n.Send(context.Background(), Notification{Event: EventAgent, Message: "m"}); err != nil {
		t.Errorf("Send to no selected backend = %v, want nil", err)
	}
	if len(rc.got()) != 0 {
		t.Errorf("filtered-out backend received %d requests", len(rc.got()))
	}
	var none *Notifier
	if err := none.Send(context.Background(), Notification{Event: EventAgent, Message: "m"}); err != nil || none.Enabled() {
		t.Errorf("nil Notifier: Send = %v, Enabled = %v; want nil, false", err, none.Enabled())
	}
}

func TestSend_RejectsInvalidNotification(t *testing.T) {
	rc := newReceiver(t)
	n := parseYAML(t, block("webhook", rc.URL), testEnv)
	for _, msg := range []Notification{
		{Event: "stalled", Message: "m"},
		{Event: EventAgent, Severity: "urgent", Message: "m"},
		{Event: EventAgent, Message: "  "},
	} {
		if err := n.Send(context.Background(), msg); !errors.Is(err, ErrInvalidNotification) {
			t.Errorf("Send(%+v) = %v, want ErrInvalidNotification", msg, err)
		}
	}
	if len(rc.got()) != 0 {
		t.Errorf("invalid notifications reached the backend %d times", len(rc.got()))
	}
}

func TestSend_RetriesServerErrorsWithBackoffThenSucceeds(t *testing.T) {
	rc := newReceiver(t, reply{status: 500}, reply{status: 502}, reply{status: 200})
	n := parseYAML(t, block("webhook", rc.URL), testEnv)
	var s sleeps
	s.install(n)
	if err := n.Send(context.Background(), sample); err != nil {
		t.Fatalf("Send: %v", err)
	}
	if got := len(rc.got()); got != 3 {
		t.Errorf("receiver got %d requests, want 3", got)
	}
	if got, want := s.got(), []time.Duration{500 * time.Millisecond, time.Second}; !slices.Equal(got, want) {
		t.Errorf("waits = %v, want %v", got, want)
	}
}

func TestSend_HonoursRetryAfter(t *testing.T) {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name, header string
		want         time.Duration
	}{
		{"seconds", "7", 7 * time.Second},
		{"capped", "3600", maxRetryAfter},
		{"date", now.Add(4 * time.Second).Format(http.TimeFormat), 4 * time.Second},
		{"garbage falls back to backoff", "soon", baseBackoff},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rc := newReceiver(t, reply{status: 429, retryAfter: tt.header}, reply{status: 200})
			n := parseYAML(t, block("slack", rc.URL), testEnv)
			n.now = func() time.Time { return now }
			var s sleeps
			s.install(n)
			if err := n.Send(context.Background(), sample); err != nil {
				t.Fatalf("Send: %v", err)
			}
			if got := s.got(); !slices.Equal(got, []time.Duration{tt.want}) {
				t.Errorf("waits = %v, want [%v]", got, tt.want)
			}
		})
	}
}

func TestSend_DoesNotRetryClientErrors(t *testing.T) {
	rc := newReceiver(t, reply{status: 400, body: "invalid_payload\n"})
	n := parseYAML(t, block("slack", rc.URL, "name: team"), testEnv)
	var s sleeps
	s.install(n)
	err := n.Send(context.Background(), sample)
	var de *DeliveryError
	if !errors.As(err, &de) {
		t.Fatalf("Send = %v, want a *DeliveryError", err)
	}
	if got := len(rc.got()); got != 1 || len(s.got()) != 0 {
		t.Errorf("requests, waits = %d, %v; want 1, none", got, s.got())
	}
	if len(de.Failed) != 1 || de.Failed[0].Status != 400 || de.Failed[0].Attempts != 1 {
		t.Fatalf("Failed = %+v, want one failure with status 400 after 1 attempt", de.Failed)
	}
	want := "notify: 1 of 1 backends failed: team (" + rc.URL + "): HTTP 400 Bad Request: invalid_payload"
	if err.Error() != want {
		t.Errorf("error =\n  %v\nwant\n  %s", err, want)
	}
}

func TestSend_GivesUpAfterRetries(t *testing.T) {
	rc := newReceiver(t, reply{status: 503, body: "<html>busy</html>"})
	n := parseYAML(t, block("webhook", rc.URL, "retries: 3"), testEnv)
	var s sleeps
	s.install(n)
	err := n.Send(context.Background(), sample)
	if err == nil {
		t.Fatal("Send = nil, want an error")
	}
	if got := len(rc.got()); got != 4 {
		t.Errorf("receiver got %d requests, want 4 (1 + 3 retries)", got)
	}
	if got, want := s.got(), []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second}; !slices.Equal(got, want) {
		t.Errorf("waits = %v, want %v", got, want)
	}
	if want := "HTTP 503 Service Unavailable (after 4 attempts)"; !strings.HasSuffix(err.Error(), want) {
		t.Errorf("error = %v, want it to end %q (an HTML body is not quoted)", err, want)
	}
}

// hangingServer accepts requests and answers none until the client gives up. arrived
// receives one value per request.
func hangingServer(t *testing.T) (*httptest.Server, chan struct{}) {
	t.Helper()
	arrived := make(chan struct{}, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The server notices a client hanging up only once the body has been read.
		_, _ = io.Copy(io.Discard, r.Body)
		arrived <- struct{}{}
		<-r.Context().Done()
	}))
	t.Cleanup(srv.Close)
	return srv, arrived
}

func TestSend_TimesOutEachAttempt(t *testing.T) {
	srv, arrived := hangingServer(t)
	n := parseYAML(t, block("webhook", srv.URL, "timeout_ms: 20", "retries: 1"), testEnv)
	var s sleeps
	s.install(n)
	err := n.Send(context.Background(), sample)
	if err == nil || !strings.Contains(err.Error(), "no response within 20ms (timeout_ms) (after 2 attempts)") {
		t.Errorf("Send = %v, want a timeout after 2 attempts", err)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Send error %v matches context.DeadlineExceeded; only the caller's context should", err)
	}
	if got := len(arrived); got != 2 {
		t.Errorf("server saw %d requests, want 2", got)
	}
}

func TestSend_ContextCancellationStopsDelivery(t *testing.T) {
	srv, arrived := hangingServer(t)
	n := parseYAML(t, block("webhook", srv.URL, "timeout_ms: 60000"), testEnv)
	var s sleeps
	s.install(n)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-arrived
		cancel()
	}()
	err := n.Send(ctx, sample)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Send = %v, want an error matching context.Canceled", err)
	}
	if len(s.got()) != 0 || len(arrived) != 0 {
		t.Errorf("after cancellation: waits %v, further requests %d; want none", s.got(), len(arrived))
	}
}

func TestSend_ContextCancelledDuringRetryWait(t *testing.T) {
	rc := newReceiver(t, reply{status: 500})
	n := parseYAML(t, block("webhook", rc.URL), testEnv)
	ctx, cancel := context.WithCancel(context.Background())
	n.sleep = func(ctx context.Context, d time.Duration) error {
		cancel()
		return ctx.Err()
	}
	err := n.Send(ctx, sample)
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "HTTP 500 Internal Server Error; gave up waiting to retry") {
		t.Errorf("Send = %v, want HTTP 500 and context.Canceled", err)
	}
	if got := len(rc.got()); got != 1 {
		t.Errorf("receiver got %d requests, want 1", got)
	}
}

func TestSend_FansOutConcurrently(t *testing.T) {
	// Each server answers only once both have a request in hand, so a Send that posted
	// to one backend after the other would time out instead.
	const backends = 3
	arrived := make(chan struct{}, backends)
	release := make(chan struct{})
	go func() {
		for range backends {
			<-arrived
		}
		close(release)
	}()
	var yamlBlock string
	for range backends {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			arrived <- struct{}{}
			select {
			case <-release:
			case <-r.Context().Done():
				return
			}
			_, _ = io.WriteString(w, "ok")
		}))
		t.Cleanup(srv.Close)
		yamlBlock += block("webhook", srv.URL, "timeout_ms: 10000", "retries: 0")
	}
	n := parseYAML(t, yamlBlock, testEnv)
	if err := n.Send(context.Background(), sample); err != nil {
		t.Fatalf("Send = %v, want every backend reached at once", err)
	}
}

func TestSend_ReportsEachFailedBackend(t *testing.T) {
	ok, bad := newReceiver(t), newReceiver(t, reply{status: 404, body: "no_service"})
	n := parseYAML(t, block("webhook", ok.URL, "name: good")+block("slack", bad.URL, "name: chat"), testEnv)
	err := n.Send(context.Background(), sample)
	var de *DeliveryError
	if !errors.As(err, &de) || de.Selected != 2 || len(de.Failed) != 1 || de.Failed[0].Backend != "chat" {
		t.Fatalf("Send = %v, want only backend chat failed out of 2", err)
	}
	if len(ok.got()) != 1 {
		t.Errorf("healthy backend got %d requests, want 1", len(ok.got()))
	}
}

func TestSend_DoesNotFollowRedirects(t *testing.T) {
	elsewhere := newReceiver(t)
	redirect := httptest.NewServer(http.RedirectHandler(elsewhere.URL+"/stolen", http.StatusFound))
	t.Cleanup(redirect.Close)
	n := parseYAML(t, block("webhook", redirect.URL, `headers: {Authorization: "Bearer $OPS_TOKEN"}`), testEnv)
	var s sleeps
	s.install(n)
	err := n.Send(context.Background(), sample)
	if err == nil || !strings.Contains(err.Error(), "HTTP 302 Found (redirects are not followed; check the URL)") {
		t.Errorf("Send = %v, want a 302 failure", err)
	}
	if len(elsewhere.got()) != 0 || len(s.got()) != 0 {
		t.Errorf("redirect target got %d requests, waits %v; want none", len(elsewhere.got()), s.got())
	}
}

func TestSend_ErrorsNeverRevealSecrets(t *testing.T) {
	const secret = "s3cr3t"
	// An endpoint that echoes everything it was sent into a failing response.
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = io.WriteString(w, "bad request to "+r.URL.String()+" auth="+r.Header.Get("Authorization")+" key="+r.Header.Get("X-Api-Key"))
	}))
	t.Cleanup(echo.Close)
	// A closed port: the transport error quotes the request URL.
	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := closed.URL
	closed.Close()
	// A server that hangs: the timeout error quotes the request URL too.
	hang, _ := hangingServer(t)

	env := map[string]string{
		"ECHO_URL":   echo.URL + "/services/T0/B0/" + secret + "Path?token=" + secret + "Query",
		"CLOSED_URL": closedURL + "/hooks/" + secret + "Closed",
		"HANG_URL":   "http://user:" + secret + "Pass@" + strings.TrimPrefix(hang.URL, "http://") + "/" + secret + "Hang",
		"TOKEN":      secret + "Token",
	}
	n := parseYAML(t, `
  - {kind: slack, webhook_url: $ECHO_URL, retries: 1}
  - {kind: webhook, url: $ECHO_URL, headers: {Authorization: "Bearer $TOKEN", X-Api-Key: "`+secret+`Literal"}}
  - {kind: webhook, url: $CLOSED_URL, retries: 1}
  - {kind: webhook, url: $HANG_URL, timeout_ms: 20, retries: 0}
`, env)
	var s sleeps
	s.install(n)
	err := n.Send(context.Background(), sample)
	var de *DeliveryError
	if !errors.As(err, &de) || len(de.Failed) != 4 {
		t.Fatalf("Send = %v, want all 4 backends to fail", err)
	}
	t.Logf("error text: %v", err)
	mustContainNone(t, err.Error(), secret)
	for _, f := range de.Failed {
		mustContainNone(t, f.Target+f.Cause, secret)
	}
	if !strings.Contains(err.Error(), "[redacted]") {
		t.Errorf("error %v shows no redaction; the echo server's body should have been quoted and scrubbed", err)
	}
}

// TestFiltered_SaysWhyNoBackendTakesAMessage: a message every backend's filters turn
// away is named as such, backend by backend; one that some backend takes is not.
func TestFiltered_SaysWhyNoBackendTakesAMessage(t *testing.T) {
	n, err := Parse(decodeYAML(t, `
  - kind: slack
    webhook_url: $SLACK_WEBHOOK_URL
    min_severity: warning
  - kind: webhook
    name: ops
    url: https://ops.example.test/sortie
    events: [blocked, budget_exhausted]
`), lookupIn(testEnv))
	if err != nil {
		t.Fatal(err)
	}
	info := Notification{Event: EventAgent, Message: "fyi"}
	want := "no notification backend takes this message (severity info, event agent): slack#0 takes severity warning and above; " +
		"ops takes only the events blocked, budget_exhausted"
	if got := n.Filtered(info); got != want {
		t.Errorf("Filtered(info agent message) =\n%q\nwant\n%q", got, want)
	}
	if got := n.Filtered(Notification{Event: EventAgent, Severity: SeverityWarning, Message: "x"}); got != "" {
		t.Errorf("Filtered(warning agent message) = %q, want \"\" (slack takes it)", got)
	}
	var none *Notifier
	if got := none.Filtered(info); got != "" {
		t.Errorf("a nil Notifier: Filtered = %q, want \"\"", got)
	}
}
