package github

import (
	"bytes"
	"container/list"
	"context"
	"encoding/json"
	"errors"
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

const (
	// MaxResponseBytes bounds one response body (32 MiB); a bigger one is a
	// tracker_payload_error rather than read into memory.
	MaxResponseBytes = 32 << 20
	// MaxPages bounds one paginated listing (100 pages of 100).
	MaxPages = 100
	// requestTimeout bounds every request, body included.
	requestTimeout = 30 * time.Second
	// etagCacheSize bounds the conditional-request cache, in URLs.
	etagCacheSize = 1000
	apiVersion    = "2022-11-28"
)

// response is what a GET returned, from the network or, on a 304, from the cache.
type response struct {
	body        []byte
	next        string // the Link rel="next" URL; "" on the last page
	notModified bool   // GitHub answered 304: body is the cached one, and the request was free
}

// get fetches rawURL conditionally: with If-None-Match when an earlier response to the
// same URL carried an ETag, in which case a 304 (free against the rate limit) returns
// the cached body.
func (t *Tracker) get(ctx context.Context, op, rawURL string) (response, error) {
	cached, hasCached := t.etags.get(rawURL)
	h := http.Header{}
	if hasCached {
		h.Set("If-None-Match", cached.etag)
	}
	status, hdr, body, err := t.roundTrip(ctx, op, http.MethodGet, rawURL, nil, h)
	if err != nil {
		return response{}, err
	}
	if status == http.StatusNotModified {
		if !hasCached {
			return response{}, tracker.Errorf(tracker.ErrPayload, op, "GitHub answered 304 Not Modified to an unconditional request for %s", redactURL(rawURL))
		}
		next := cached.next
		if next == "" && cached.full {
			// A 304 says this page is unchanged, not that nothing follows it: the ETag
			// is of the body, so a full last page answers 304 after an issue was added
			// on a new page behind it. Look at the page after it (an empty page, then
			// 304s, while there is none).
			next = pageAfter(rawURL)
		}
		return response{body: cached.body, next: next, notModified: true}, nil
	}
	next, err := t.nextLink(hdr.Get("Link"))
	if err != nil {
		return response{}, &tracker.Error{Kind: tracker.ErrPayload, Op: op, Err: err}
	}
	if etag := hdr.Get("ETag"); etag != "" {
		t.etags.put(rawURL, cachedResponse{etag: etag, body: body, next: next, full: next == "" && fullPage(rawURL, body)})
	}
	return response{body: body, next: next}, nil
}

// send makes a write request with a JSON body and returns the response body.
func (t *Tracker) send(ctx context.Context, op, method, rawURL string, payload any) ([]byte, error) {
	data, err := json.Marshal(payload)
	if err != nil {
		return nil, &tracker.Error{Kind: tracker.ErrPayload, Op: op, Err: err}
	}
	_, _, body, err := t.roundTrip(ctx, op, method, rawURL, data, http.Header{"Content-Type": {"application/json"}})
	return body, err
}

// roundTrip sends one request, unless the rate limiter says not yet, and maps the
// response status to a tracker error kind. Requests are serialised: GitHub asks
// integrators not to send concurrent requests (secondary rate limits).
func (t *Tracker) roundTrip(ctx context.Context, op, method, rawURL string, payload []byte, extra http.Header) (int, http.Header, []byte, error) {
	resource := resourceFor(pathOf(rawURL))
	t.reqMu.Lock()
	defer t.reqMu.Unlock()

	now := t.now()
	if until := t.limits.until(now, resource); until.After(now) {
		return 0, nil, nil, tracker.Errorf(tracker.ErrAPI, op, "GitHub rate limited until %s (%s budget); no request sent", until.UTC().Format(time.RFC3339), resource)
	}

	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	var rd io.Reader
	if payload != nil {
		rd = bytes.NewReader(payload)
	}
	req, err := http.NewRequestWithContext(ctx, method, rawURL, rd)
	if err != nil {
		return 0, nil, nil, &tracker.Error{Kind: tracker.ErrTransport, Op: op, Err: err}
	}
	for k, v := range extra {
		req.Header[k] = v
	}
	req.Header.Set("Authorization", "Bearer "+t.token)
	req.Header.Set("Accept", "application/vnd.github+json")
	req.Header.Set("X-GitHub-Api-Version", apiVersion)
	req.Header.Set("User-Agent", t.userAgent)

	t.sent.Add(1)
	resp, err := t.client.Do(req)
	if err != nil {
		// The error names the URL, never the token (it is in a header).
		return 0, nil, nil, &tracker.Error{Kind: tracker.ErrTransport, Op: op, Message: method + " " + redactURL(rawURL), Err: unwrapURLError(err)}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxResponseBytes+1))
	if err != nil {
		return 0, nil, nil, &tracker.Error{Kind: tracker.ErrTransport, Op: op, Message: "reading the response to " + method + " " + redactURL(rawURL), Err: unwrapURLError(err)}
	}
	if len(body) > MaxResponseBytes {
		return 0, nil, nil, tracker.Errorf(tracker.ErrPayload, op, "response to %s %s is larger than %d bytes", method, redactURL(rawURL), MaxResponseBytes)
	}
	limited := t.limits.observe(t.now(), resource, resp.StatusCode, resp.Header, body)
	if resp.StatusCode < 300 || resp.StatusCode == http.StatusNotModified {
		return resp.StatusCode, resp.Header, body, nil
	}
	return resp.StatusCode, resp.Header, nil, t.statusError(op, method, rawURL, resp.StatusCode, body, limited, resource)
}

// statusError maps a failed response to the tracker error kind and an operator action.
func (t *Tracker) statusError(op, method, rawURL string, status int, body []byte, limited bool, resource string) error {
	msg := apiMessage(body)
	where := fmt.Sprintf("%s %s: HTTP %d", method, redactURL(rawURL), status)
	if msg != "" {
		where += ": " + msg
	}
	if repo, perm, ok := t.codeHostRequest(rawURL); ok && !limited {
		// A reactions request (pull requests, checks, statuses, Actions logs) names the
		// repository of .sortie/scm.json, which may not be tracker.project, and needs
		// other permissions than the issues.
		switch {
		case status == 403:
			return tracker.Errorf(tracker.ErrAuth, op, "%s; the token may not do this: it needs %s read on %s (fine-grained) or the repo scope (classic)", where, perm, repo)
		case status >= 300 && status < 400:
			return tracker.Errorf(tracker.ErrNotFound, op, "%s; GitHub redirects this request (a renamed or transferred repository?), and Sortie does not follow it: check the repository (%s) in .sortie/scm.json or tracker.project", where, repo)
		case status == 404 || status == 410:
			return tracker.Errorf(tracker.ErrNotFound, op, "%s; check that %s exists, that the token can see it, and the pull request or commit named", where, repo)
		case status == 422 && strings.Contains(strings.ToLower(msg), "no commit found"):
			// GitHub's answer for a commit it does not have.
			return tracker.Errorf(tracker.ErrNotFound, op, "%s; the commit is not in %s (not pushed yet, or force-pushed away)", where, repo)
		}
	}
	switch {
	case limited:
		until := t.limits.until(t.now(), resource)
		return tracker.Errorf(tracker.ErrAPI, op, "%s; rate limited until %s, no request will be sent before then", where, until.UTC().Format(time.RFC3339))
	case status == 401:
		return tracker.Errorf(tracker.ErrAuth, op, "%s; tracker.api_key was refused: check that the token is valid and not expired", where)
	case status == 403:
		return tracker.Errorf(tracker.ErrAuth, op, "%s; the token may not do this: it needs Issues read and write and Metadata read on %s (fine-grained) or the repo scope (classic)", where, t.repo)
	case status >= 300 && status < 400:
		return &tracker.Error{Kind: tracker.ErrNotFound, Op: op, Err: tracker.ErrOutOfProject,
			Message: fmt.Sprintf("%s; GitHub redirects this request (an issue transferred to another repository, or a renamed repository), and Sortie does not follow redirects out of %s: check tracker.project", where, t.repo)}
	case status == 404 || status == 410:
		return tracker.Errorf(tracker.ErrNotFound, op, "%s; check tracker.project (%s) and that the token can see the repository", where, t.repo)
	case status == 400 || status == 422:
		return tracker.Errorf(tracker.ErrPayload, op, "%s", where)
	default:
		return tracker.Errorf(tracker.ErrAPI, op, "%s", where)
	}
}

// apiMessage extracts GitHub's {"message": "..."} from an error body, bounded.
func apiMessage(body []byte) string {
	var e struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(body, &e) != nil {
		return ""
	}
	m := strings.TrimSpace(e.Message)
	if len(m) > 300 {
		m = m[:300] + "…"
	}
	return m
}

// nextLink returns the rel="next" URL of a Link header. It must point at the configured
// API host: the token is never sent anywhere else.
func (t *Tracker) nextLink(header string) (string, error) {
	for part := range strings.SplitSeq(header, ",") {
		target, params, ok := strings.Cut(strings.TrimSpace(part), ";")
		if !ok || !strings.HasPrefix(target, "<") || !strings.HasSuffix(target, ">") {
			continue
		}
		isNext := false
		for p := range strings.SplitSeq(params, ";") {
			k, v, _ := strings.Cut(strings.TrimSpace(p), "=")
			if strings.TrimSpace(k) == "rel" && strings.Contains(" "+strings.Trim(strings.TrimSpace(v), `"`)+" ", " next ") {
				isNext = true
			}
		}
		if !isNext {
			continue
		}
		u, err := url.Parse(target[1 : len(target)-1])
		if err != nil || !u.IsAbs() {
			return "", fmt.Errorf("malformed Link next URL %q", target)
		}
		if u.Scheme != t.base.Scheme || !strings.EqualFold(u.Host, t.base.Host) {
			return "", fmt.Errorf("the Link next URL points at %s, not the configured endpoint %s; refusing to send the token there", u.Host, t.base.Host)
		}
		return u.String(), nil
	}
	return "", nil
}

// pages fetches a paginated listing, following Link rel="next", and calls each with
// every page's body.
func (t *Tracker) pages(ctx context.Context, op, first string, each func([]byte) error) error {
	return t.pagesOf(ctx, op, first, func(r response) error { return each(r.body) })
}

// pagesOf is pages handing each the page's whole response, so that a caller can tell a
// page GitHub answered 304 (free) from one it sent again.
func (t *Tracker) pagesOf(ctx context.Context, op, first string, each func(response) error) error {
	next := first
	for n := 0; next != ""; n++ {
		if n == MaxPages {
			return tracker.Errorf(tracker.ErrPayload, op, "%s has more than %d pages of results; narrow it with tracker.query_filter", redactURL(first), MaxPages)
		}
		r, err := t.get(ctx, op, next)
		if err != nil {
			return err
		}
		if err := each(r); err != nil {
			return err
		}
		next = r.next
	}
	return nil
}

func pathOf(rawURL string) string {
	if u, err := url.Parse(rawURL); err == nil {
		return u.Path
	}
	return rawURL
}

// redactURL drops the query string's values that could carry search text, keeping the
// path: errors stay short and never echo anything unexpected.
func redactURL(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "(malformed URL)"
	}
	u.User = nil
	return u.String()
}

func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// etagCache is a bounded LRU of the last response per URL.
type etagCache struct {
	mu    sync.Mutex
	size  int
	order *list.List // front = most recent; values are *cacheEntry
	byURL map[string]*list.Element
}

type cachedResponse struct {
	etag string
	body []byte
	next string
	// full is set on a last page (no next link) that holds per_page items: a page may
	// follow it by the time it is asked for again.
	full bool
}

// fullPage reports whether a page may follow body, a last page (no next link) of a
// list or a search result, by the time it is asked for again: a list page holding
// per_page items (GitHub's default is 30) short of MaxPages, or a search page before the
// search's total_count and its cap of 1,000 results (asking past that is a 422).
func fullPage(rawURL string, body []byte) bool {
	u, err := url.Parse(rawURL)
	if err != nil {
		return false
	}
	q := u.Query()
	per := 30
	if v := q.Get("per_page"); v != "" {
		if per, err = strconv.Atoi(v); err != nil || per <= 0 {
			return false
		}
	}
	page, err := strconv.Atoi(q.Get("page"))
	if err != nil || page < 1 {
		page = 1
	}
	if page >= MaxPages {
		return false
	}
	var list []json.RawMessage
	if json.Unmarshal(body, &list) == nil {
		return len(list) >= per
	}
	// A search's total_count is in its body, so a result added behind a full last page
	// changes the page's ETag; the look further is for the list's sake. It is kept
	// here only within the search's limits.
	var search struct {
		TotalCount int               `json:"total_count"`
		Items      []json.RawMessage `json:"items"`
	}
	if json.Unmarshal(body, &search) != nil {
		return false
	}
	const searchCap = 1000
	return len(search.Items) >= per && page*per < min(search.TotalCount, searchCap)
}

// pageAfter is rawURL with its page parameter one higher (page 2 when it has none).
func pageAfter(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return ""
	}
	q := u.Query()
	page, err := strconv.Atoi(q.Get("page"))
	if err != nil || page < 1 {
		page = 1
	}
	q.Set("page", strconv.Itoa(page+1))
	u.RawQuery = q.Encode()
	return u.String()
}

type cacheEntry struct {
	url string
	cachedResponse
}

func newETagCache(size int) *etagCache {
	return &etagCache{size: size, order: list.New(), byURL: map[string]*list.Element{}}
}

func (c *etagCache) get(u string) (cachedResponse, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.byURL[u]
	if !ok {
		return cachedResponse{}, false
	}
	c.order.MoveToFront(e)
	return e.Value.(*cacheEntry).cachedResponse, true
}

func (c *etagCache) put(u string, r cachedResponse) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.byURL[u]; ok {
		e.Value.(*cacheEntry).cachedResponse = r
		c.order.MoveToFront(e)
		return
	}
	c.byURL[u] = c.order.PushFront(&cacheEntry{url: u, cachedResponse: r})
	for c.order.Len() > c.size {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.byURL, last.Value.(*cacheEntry).url)
	}
}
