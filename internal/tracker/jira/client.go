package jira

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"sortie/internal/tracker"
)

// MaxResponseBytes is the largest response body the adapter reads (32 MiB); a bigger one
// is a tracker_payload_error rather than memory the daemon cannot spare.
const MaxResponseBytes = 32 << 20

// defaultRateLimitWait is how long the adapter holds back after a 429 that says nothing
// about when to come back.
const defaultRateLimitWait = 60 * time.Second

// client sends requests to one Jira site and keeps what its responses said about the
// rate limit. It never sends a request while a Retry-After is running.
type client struct {
	base      string // site URL without a trailing slash
	auth      string // Authorization header value; never logged
	userAgent string
	http      *http.Client
	now       func() time.Time

	mu   sync.Mutex // guards rate
	rate tracker.RateLimit
	seen bool // a response has carried rate-limit headers
}

// do sends method path?query with body (JSON-encoded when not nil) and decodes a 2xx
// response into out (when not nil). Errors are *tracker.Error of the kinds in
// docs/trackers/jira.md.
func (c *client) do(ctx context.Context, op, method, path string, query url.Values, body, out any) error {
	if until := c.throttledUntil(); !until.IsZero() {
		return tracker.Errorf(tracker.ErrAPI, op, "rate limited until %s (Jira asked us to wait); no request sent", until.UTC().Format(time.RFC3339))
	}
	u := c.base + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	var rd io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return &tracker.Error{Kind: tracker.ErrPayload, Op: op, Message: "encode request", Err: err}
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return &tracker.Error{Kind: tracker.ErrTransport, Op: op, Message: "build request", Err: err}
	}
	req.Header.Set("Authorization", c.auth)
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.userAgent)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		// The URL in a *url.Error holds no secret (auth is a header), so it may be shown.
		return &tracker.Error{Kind: tracker.ErrTransport, Op: op, Message: method + " " + path, Err: err}
	}
	defer resp.Body.Close()
	c.observe(resp)
	data, err := io.ReadAll(io.LimitReader(resp.Body, MaxResponseBytes+1))
	if err != nil {
		return &tracker.Error{Kind: tracker.ErrTransport, Op: op, Message: "read response of " + method + " " + path, Err: err}
	}
	if len(data) > MaxResponseBytes {
		return tracker.Errorf(tracker.ErrPayload, op, "%s %s: response larger than %d bytes", method, path, MaxResponseBytes)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return statusError(op, method, path, resp, data, c.throttledUntil())
	}
	if out == nil || len(bytes.TrimSpace(data)) == 0 && resp.StatusCode == http.StatusNoContent {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return &tracker.Error{Kind: tracker.ErrPayload, Op: op, Message: fmt.Sprintf("%s %s: malformed JSON response", method, path), Err: err}
	}
	return nil
}

// statusError maps a non-2xx response to an error kind and an operator action.
func statusError(op, method, path string, resp *http.Response, body []byte, until time.Time) error {
	detail := jiraMessages(body)
	where := fmt.Sprintf("%s %s: HTTP %d", method, path, resp.StatusCode)
	if detail != "" {
		where += ": " + detail
	}
	switch code := resp.StatusCode; {
	case code == http.StatusUnauthorized:
		return tracker.Errorf(tracker.ErrAuth, op, "%s; check tracker.api_key (Cloud: email:api_token; Data Center: a personal access token) and that it has not expired", where)
	case code == http.StatusForbidden && op == "add_label":
		return tracker.Errorf(tracker.ErrAuth, op, "%s; the token's user needs the Edit issues permission on tracker.project to add a label", where)
	case code == http.StatusForbidden:
		return tracker.Errorf(tracker.ErrAuth, op, "%s; the token's user needs the Browse projects, Transition issues and Add comments permissions on tracker.project", where)
	case code == http.StatusNotFound:
		return tracker.Errorf(tracker.ErrNotFound, op, "%s", where)
	case code == http.StatusTooManyRequests:
		return tracker.Errorf(tracker.ErrAPI, op, "%s; rate limited until %s", where, until.UTC().Format(time.RFC3339))
	case code == http.StatusBadRequest && op == "add_label":
		return tracker.Errorf(tracker.ErrPayload, op, "%s; Jira refused the label: the Labels field must be on the issue type's edit screen, and a label is one word of at most 255 characters", where)
	case code == http.StatusBadRequest:
		return tracker.Errorf(tracker.ErrPayload, op, "%s; check tracker.query_filter, tracker.project and the state names", where)
	case code >= 500:
		// spec/agent-extensions.md: 5xx is tracker_api_error (network failures are
		// tracker_transport_error); both are retried.
		return tracker.Errorf(tracker.ErrAPI, op, "%s", where)
	}
	return tracker.Errorf(tracker.ErrAPI, op, "%s", where)
}

// jiraMessages extracts Jira's error text ({"errorMessages":[…],"errors":{…}}), bounded.
func jiraMessages(body []byte) string {
	var e struct {
		ErrorMessages []string          `json:"errorMessages"`
		Errors        map[string]string `json:"errors"`
	}
	if json.Unmarshal(body, &e) != nil {
		return ""
	}
	msgs := append([]string{}, e.ErrorMessages...)
	for k, v := range e.Errors {
		msgs = append(msgs, k+": "+v)
	}
	s := strings.Join(msgs, "; ")
	if len(s) > 500 {
		s = s[:500] + "…"
	}
	return s
}

// throttledUntil returns the end of a running throttle, or zero when requests may go.
func (c *client) throttledUntil() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.rate.ThrottledUntil.After(c.now()) {
		return c.rate.ThrottledUntil
	}
	return time.Time{}
}

// observe records the rate-limit headers of a response (Cloud: X-RateLimit-Limit,
// -Remaining, -Reset as ISO 8601, Retry-After in seconds; Data Center: the same limit and
// remaining plus Retry-After) and starts a throttle on a 429, on a 503 with Retry-After,
// and when the budget is spent.
func (c *client) observe(resp *http.Response) {
	h := resp.Header
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if v, err := strconv.Atoi(h.Get("X-RateLimit-Limit")); err == nil {
		c.rate.Limit, c.seen = v, true
	}
	if v, err := strconv.Atoi(h.Get("X-RateLimit-Remaining")); err == nil {
		c.rate.Remaining, c.seen = v, true
	}
	reset := parseReset(h.Get("X-RateLimit-Reset"))
	if !reset.IsZero() {
		c.rate.Reset, c.seen = reset, true
	}
	var until time.Time
	if d, ok := parseRetryAfter(h.Get("Retry-After"), now); ok {
		until = now.Add(d)
	}
	switch {
	case resp.StatusCode == http.StatusTooManyRequests && until.IsZero() && reset.After(now):
		until = reset
	case resp.StatusCode == http.StatusTooManyRequests && until.IsZero():
		until = now.Add(defaultRateLimitWait)
	case resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode != http.StatusServiceUnavailable:
		until = time.Time{}
		// Slow down before the limit: with nothing left, wait for the refill.
		if h.Get("X-RateLimit-Remaining") == "0" && reset.After(now) {
			until = reset
		}
	}
	if !until.IsZero() {
		c.rate.ThrottledUntil, c.seen = until, true
	}
	if c.seen {
		c.rate.UpdatedAt = now
	}
}

// parseRetryAfter reads a Retry-After header: seconds or an HTTP date.
func parseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n < 0 {
			return 0, false
		}
		return time.Duration(min(n, 24*3600)) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// parseReset reads X-RateLimit-Reset, which Jira Cloud sends as ISO 8601
// (yyyy-MM-ddTHH:mmZ, sometimes with seconds).
func parseReset(v string) time.Time {
	v = strings.TrimSpace(v)
	for _, layout := range []string{"2006-01-02T15:04Z07:00", time.RFC3339Nano} {
		if t, err := time.Parse(layout, v); err == nil {
			return t
		}
	}
	return time.Time{}
}

// rateLimits returns the budget the last responses reported, if any did.
func (c *client) rateLimits() []tracker.RateLimit {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.seen {
		return nil
	}
	r := c.rate
	if !r.ThrottledUntil.After(c.now()) {
		r.ThrottledUntil = time.Time{}
	}
	return []tracker.RateLimit{r}
}
