package linear

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"sortie/internal/tracker"
)

const (
	// MaxResponseBytes bounds one response body of the adapter's own queries (16 MiB);
	// a bigger one is a tracker_payload_error rather than read into memory.
	MaxResponseBytes = 16 << 20
	// requestTimeout bounds every request, body included.
	requestTimeout = 30 * time.Second
)

// gqlError is one entry of a GraphQL response's errors. Linear puts its error code in
// extensions.code (AUTHENTICATION_ERROR, FORBIDDEN, RATELIMITED, INVALID_INPUT,
// GRAPHQL_VALIDATION_FAILED...) and a message meant for people in
// extensions.userPresentableMessage.
type gqlError struct {
	Message    string `json:"message"`
	Extensions struct {
		Code                   string `json:"code"`
		Type                   string `json:"type"`
		UserPresentableMessage string `json:"userPresentableMessage"`
	} `json:"extensions"`
}

type gqlResponse struct {
	Data   json.RawMessage `json:"data"`
	Errors []gqlError      `json:"errors"`
}

// exchange is one HTTP round trip's outcome.
type exchange struct {
	status int
	body   []byte
}

// post sends one GraphQL request body, unless the rate limiter holds requests back
// (floor is the budget share below which it does), and returns the raw answer. It maps
// transport failures and rate-limit refusals to tracker errors; other statuses are the
// caller's to judge (a GraphQL error may come with any of them).
func (t *Tracker) post(ctx context.Context, op string, payload []byte, floor int, limit int64) (exchange, error) {
	if held := t.limits.hold(t.now(), floor); held != nil {
		return exchange{}, &tracker.Error{Kind: tracker.ErrAPI, Op: op, Message: "held back, no request sent", Err: held}
	}
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.endpoint, bytes.NewReader(payload))
	if err != nil {
		return exchange{}, &tracker.Error{Kind: tracker.ErrTransport, Op: op, Err: err}
	}
	req.Header.Set("Authorization", t.auth)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", t.userAgent)
	resp, err := t.client.Do(req)
	if err != nil {
		// The error names the endpoint, never the key (it is in a header).
		return exchange{}, &tracker.Error{Kind: tracker.ErrTransport, Op: op, Message: "POST " + t.endpoint, Err: unwrapURLError(err)}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return exchange{}, &tracker.Error{Kind: tracker.ErrTransport, Op: op, Message: "reading Linear's answer", Err: unwrapURLError(err)}
	}
	limited := resp.StatusCode == http.StatusTooManyRequests || hasCode(body, "RATELIMITED")
	t.limits.observe(t.now(), resp.Header, limited)
	if limited {
		held := t.limits.hold(t.now(), floor)
		if held == nil {
			held = &RateLimitedError{Until: t.now()}
		}
		return exchange{}, &tracker.Error{Kind: tracker.ErrAPI, Op: op,
			Message: fmt.Sprintf("HTTP %d: Linear refused the request for its rate limit", resp.StatusCode), Err: held}
	}
	if int64(len(body)) > limit {
		return exchange{}, tracker.Errorf(tracker.ErrPayload, op, "Linear's answer is larger than %d bytes", limit)
	}
	return exchange{status: resp.StatusCode, body: body}, nil
}

// query runs one of the adapter's own GraphQL operations for polling and
// reconciling, held back below pollFloorFraction, and decodes data into out.
func (t *Tracker) query(ctx context.Context, op, query string, vars map[string]any, out any) error {
	return t.queryAt(ctx, op, pollFloorFraction, query, vars, out)
}

// queryAt runs one of the adapter's own GraphQL operations, held back when a budget is
// below its 1/floor share (pollFloorFraction for the daemon's own work,
// agentFloorFraction for what an agent's call needs), and decodes data into out.
// GraphQL errors are errors even in a 200 answer.
func (t *Tracker) queryAt(ctx context.Context, op string, floor int, query string, vars map[string]any, out any) error {
	payload, err := json.Marshal(map[string]any{"query": query, "variables": vars})
	if err != nil {
		return &tracker.Error{Kind: tracker.ErrPayload, Op: op, Message: "encoding the request", Err: err}
	}
	x, err := t.post(ctx, op, payload, floor, MaxResponseBytes)
	if err != nil {
		return err
	}
	var r gqlResponse
	decodeErr := json.Unmarshal(x.body, &r)
	if len(r.Errors) > 0 {
		return t.graphQLError(op, x.status, r.Errors)
	}
	if x.status != http.StatusOK {
		return t.statusError(op, x.status, x.body)
	}
	if decodeErr != nil {
		return &tracker.Error{Kind: tracker.ErrPayload, Op: op, Message: "Linear's answer is not a GraphQL response", Err: decodeErr}
	}
	if len(r.Data) == 0 || string(r.Data) == "null" {
		return tracker.Errorf(tracker.ErrPayload, op, "Linear's answer has neither data nor errors")
	}
	if err := json.Unmarshal(r.Data, out); err != nil {
		return &tracker.Error{Kind: tracker.ErrPayload, Op: op, Message: "Linear sent malformed data", Err: err}
	}
	return nil
}

// graphQLError maps the first error of a GraphQL answer to a tracker error kind and an
// action for the operator.
func (t *Tracker) graphQLError(op string, status int, errs []gqlError) error {
	e := errs[0]
	msg := t.clip(e.Message)
	if u := t.clip(e.Extensions.UserPresentableMessage); u != "" && u != msg {
		msg += " (" + u + ")"
	}
	if len(errs) > 1 {
		msg += fmt.Sprintf(" (and %d more errors)", len(errs)-1)
	}
	code := strings.ToUpper(e.Extensions.Code)
	typ := strings.ToLower(e.Extensions.Type)
	lower := strings.ToLower(e.Message)
	switch {
	case code == "AUTHENTICATION_ERROR" || typ == "authentication error" || status == http.StatusUnauthorized:
		return tracker.Errorf(tracker.ErrAuth, op, "Linear: %s; tracker.api_key was refused: check that it is a valid personal API key (Settings → Account → Security & access) and not revoked", msg)
	case (code == "FORBIDDEN" || typ == "forbidden" || status == http.StatusForbidden) && op == "add_label":
		return tracker.Errorf(tracker.ErrAuth, op, "Linear: %s; the key may not add labels: it needs write access (an API key or OAuth token with the write scope) and access to the team%s", msg, t.scopeHint())
	case code == "FORBIDDEN" || typ == "forbidden" || status == http.StatusForbidden:
		return tracker.Errorf(tracker.ErrAuth, op, "Linear: %s; the key's user may not do this: it needs access to the team%s", msg, t.scopeHint())
	case code == "ENTITY_NOT_FOUND" || strings.Contains(lower, "entity not found") || strings.Contains(lower, "could not find referenced"):
		return tracker.Errorf(tracker.ErrNotFound, op, "Linear: %s", msg)
	case status >= 500 || code == "INTERNAL_SERVER_ERROR":
		return tracker.Errorf(tracker.ErrAPI, op, "Linear: HTTP %d: %s", status, msg)
	case code == "GRAPHQL_VALIDATION_FAILED" || code == "GRAPHQL_PARSE_FAILED" || strings.Contains(lower, "cannot query field"):
		return tracker.Errorf(tracker.ErrPayload, op, "Linear rejected Sortie's query: %s; Linear's API may have changed: report this", msg)
	}
	return tracker.Errorf(tracker.ErrPayload, op, "Linear: %s", msg)
}

// statusError maps a failed answer without GraphQL errors.
func (t *Tracker) statusError(op string, status int, body []byte) error {
	where := fmt.Sprintf("Linear answered HTTP %d", status)
	switch {
	case status == http.StatusUnauthorized:
		return tracker.Errorf(tracker.ErrAuth, op, "%s; tracker.api_key was refused: check that it is a valid personal API key and not revoked", where)
	case status == http.StatusForbidden:
		return tracker.Errorf(tracker.ErrAuth, op, "%s; the key's user may not do this%s", where, t.scopeHint())
	case status == http.StatusNotFound:
		return tracker.Errorf(tracker.ErrNotFound, op, "%s; check tracker.endpoint (%s)", where, t.endpoint)
	case status >= 500:
		return tracker.Errorf(tracker.ErrAPI, op, "%s", where)
	}
	return tracker.Errorf(tracker.ErrPayload, op, "%s: %s", where, t.clip(string(bytes.ToValidUTF8(body[:min(len(body), 200)], nil))))
}

func (t *Tracker) scopeHint() string {
	switch {
	case t.team != "":
		return " " + t.team
	case t.project != "":
		return " of project " + t.project
	}
	return ""
}

// clip bounds a message from Linear and makes sure it never carries the key.
func (t *Tracker) clip(s string) string {
	s = strings.TrimSpace(s)
	if t.key != "" {
		s = strings.ReplaceAll(s, t.key, "[redacted]")
	}
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

// hasCode reports whether a GraphQL answer carries an error with extensions.code code.
func hasCode(body []byte, code string) bool {
	if !bytes.Contains(body, []byte(code)) {
		return false
	}
	var r gqlResponse
	if json.Unmarshal(body, &r) != nil {
		return false
	}
	for _, e := range r.Errors {
		if strings.EqualFold(e.Extensions.Code, code) {
			return true
		}
	}
	return false
}

func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
