package notify

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode"
)

// userAgent identifies Sortie to receivers; an entry's headers may replace it.
const userAgent = "sortie"

// Response handling bounds: how much of an error body is quoted, and how much is read in
// all so the connection can be reused.
const (
	maxQuotedBody = 200
	maxReadBody   = 64 << 10
)

func newNotifier() *Notifier {
	var rt http.RoundTripper = http.DefaultTransport
	if t, ok := rt.(*http.Transport); ok {
		// A transport of its own, so idle webhook connections do not crowd others.
		t = t.Clone()
		t.MaxIdleConnsPerHost = 2
		rt = t
	}
	return &Notifier{
		client: &http.Client{
			Transport: rt,
			// A webhook that redirects is misconfigured, and following it would send the
			// headers (credentials) and body somewhere the operator did not name.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		sleep: sleepContext,
		now:   time.Now,
	}
}

// attemptResult is the outcome of one POST.
type attemptResult struct {
	ok         bool
	status     int           // 0 when no response arrived
	cause      string        // unredacted; deliver redacts it
	retry      bool          // the failure is worth another attempt
	retryAfter time.Duration // from a Retry-After header; -1 when absent
}

// deliver posts msg to b, retrying as docs/notifications.md describes, and returns nil
// on success.
func (n *Notifier) deliver(ctx context.Context, b *backend, msg Notification) *BackendError {
	fail := func(status, attempts int, cause string, err error) *BackendError {
		return &BackendError{Backend: b.name, Target: b.target, Status: status, Attempts: attempts, Cause: b.redact(cause), err: err}
	}
	body, err := b.encode(msg)
	if err != nil {
		return fail(0, 0, "cannot encode the payload: "+err.Error(), nil)
	}
	for attempt := 1; ; attempt++ {
		res := n.post(ctx, b, body)
		if res.ok {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return fail(res.status, attempt, res.cause, err)
		}
		if !res.retry || attempt > b.retries {
			return fail(res.status, attempt, res.cause, nil)
		}
		wait := backoffDelay(attempt)
		if res.retryAfter >= 0 {
			wait = res.retryAfter
		}
		if err := n.sleep(ctx, wait); err != nil {
			return fail(res.status, attempt, res.cause+"; gave up waiting to retry: "+err.Error(), err)
		}
	}
}

// post makes one attempt, bounded by b's timeout.
func (n *Notifier) post(ctx context.Context, b *backend, body []byte) attemptResult {
	actx, cancel := context.WithTimeout(ctx, b.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(actx, http.MethodPost, b.url, bytes.NewReader(body))
	if err != nil {
		// Unreachable for a URL that passed Parse; the error would quote the URL.
		return attemptResult{cause: "cannot build the request"}
	}
	req.Header.Set("User-Agent", userAgent)
	for k, vs := range b.headers {
		req.Header[k] = vs
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := n.client.Do(req)
	if err != nil {
		switch {
		case ctx.Err() != nil:
			return attemptResult{cause: "stopped: " + ctx.Err().Error()}
		case errors.Is(actx.Err(), context.DeadlineExceeded):
			return attemptResult{cause: fmt.Sprintf("no response within %s (timeout_ms)", b.timeout), retry: true, retryAfter: -1}
		}
		// *url.Error's text quotes the whole URL; keep only what went wrong.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return attemptResult{cause: err.Error(), retry: true, retryAfter: -1}
	}
	defer resp.Body.Close()
	quoted := quoteBody(resp.Body)
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxReadBody))
	code := resp.StatusCode
	if code >= 200 && code <= 299 {
		return attemptResult{ok: true, status: code}
	}
	res := attemptResult{status: code, retryAfter: -1, cause: fmt.Sprintf("HTTP %d %s", code, http.StatusText(code))}
	if code >= 300 && code <= 399 {
		res.cause += " (redirects are not followed; check the URL)"
	}
	if quoted != "" {
		res.cause += ": " + quoted
	}
	if code == http.StatusTooManyRequests || code >= 500 {
		res.retry = true
		if d, ok := parseRetryAfter(resp.Header.Get("Retry-After"), n.now()); ok {
			res.retryAfter = d
		}
	}
	return res
}

// quoteBody reads the start of an error response and returns it as one short line of
// text, or "" for an empty or HTML body. Slack answers `invalid_token` or `no_service`,
// which tells the operator what to fix.
func quoteBody(r io.Reader) string {
	buf := make([]byte, maxQuotedBody)
	k, _ := io.ReadFull(r, buf)
	// Dropping invalid bytes also drops a rune cut in half by the read limit.
	s := strings.ToValidUTF8(string(buf[:k]), "")
	s = strings.Join(strings.FieldsFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }), " ")
	if s == "" || strings.HasPrefix(s, "<") {
		return ""
	}
	if k == maxQuotedBody {
		s += "…"
	}
	return s
}

// redact replaces every secret part of b's URL and headers in s with [redacted]. Causes
// are built to hold none, but a transport error or a response body may echo the
// request, so this is the last line of defence.
func (b *backend) redact(s string) string {
	for _, secret := range b.secrets {
		s = strings.ReplaceAll(s, secret, "[redacted]")
	}
	return s
}

// Retry timing.
const (
	baseBackoff   = 500 * time.Millisecond
	maxBackoff    = 30 * time.Second
	maxRetryAfter = 30 * time.Second
)

// backoffDelay is the wait after failed attempt number attempt (1-based): 500 ms, 1 s,
// 2 s, … capped at 30 s.
func backoffDelay(attempt int) time.Duration {
	if attempt < 1 {
		attempt = 1
	}
	if attempt > 16 {
		return maxBackoff
	}
	return min(baseBackoff<<(attempt-1), maxBackoff)
}

// parseRetryAfter reads a Retry-After header (RFC 9110 §10.2.3): delay-seconds or an
// HTTP date. The wait is capped at 30 s so one backend cannot hold a notification for
// long; a date in the past means no wait.
func parseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if v[0] >= '0' && v[0] <= '9' {
		var secs int64
		for _, c := range v {
			if c < '0' || c > '9' {
				return 0, false
			}
			secs = secs*10 + int64(c-'0')
			if secs > int64(maxRetryAfter/time.Second) {
				return maxRetryAfter, true
			}
		}
		return time.Duration(secs) * time.Second, true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return min(max(t.Sub(now), 0), maxRetryAfter), true
}

// sleepContext waits for d or until ctx ends, whichever is first.
func sleepContext(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
