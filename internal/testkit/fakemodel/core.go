package fakemodel

// What the dialects share: the HTTP server and the stalls it holds, the script of
// replies, the recorded requests, id counters, and the framing of errors, event streams
// and string-or-list JSON. Each server embeds a core, whose exported methods (Close,
// SetDefault, Push, Requests, Remaining, WaitStall) it offers as its own, with its
// dialect's Reply and Request types for core's type parameters.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// scripted is a reply of either dialect.
type scripted interface {
	// times is how many requests the reply answers: its Times, at least 1.
	times() int
}

func (r Reply) times() int          { return max(r.Times, 1) }
func (r ResponsesReply) times() int { return max(r.Times, 1) }

// core is the plumbing of a server answering requests Q with replies R.
type core[Q any, R scripted] struct {
	srv     *httptest.Server
	stalled chan int // the server's Stalled
	closing chan struct{}
	once    sync.Once
	// noun names a reply in WaitStall's failure ("reply", "response").
	noun string

	script   queue[R]
	requests recorder[Q]
}

// start serves h on 127.0.0.1. The server's script is set before, its URL after.
func (c *core[Q, R]) start(h http.HandlerFunc, stalled chan int, noun string) {
	c.stalled, c.noun = stalled, noun
	c.closing = make(chan struct{})
	c.srv = httptest.NewServer(h)
}

// Close releases stalled handlers and shuts the server down; calls after the first do
// nothing.
func (c *core[Q, R]) Close() {
	c.once.Do(func() {
		close(c.closing)
		c.srv.CloseClientConnections()
		c.srv.Close()
	})
}

// stall announces reply idx on stalled (if there is room) and holds the handler until
// its client goes away or the server is closed.
func (c *core[Q, R]) stall(ctx context.Context, idx int) {
	select {
	case c.stalled <- idx:
	default:
	}
	select {
	case <-ctx.Done():
	case <-c.closing:
	}
}

// SetDefault replaces the reply used once the script is exhausted.
func (c *core[Q, R]) SetDefault(r R) { c.script.setDefault(r) }

// Push appends replies to the script.
func (c *core[Q, R]) Push(r ...R) { c.script.push(r...) }

// Requests returns a copy of every request recorded so far.
func (c *core[Q, R]) Requests() []Q { return c.requests.all() }

// where returns the recorded requests keep accepts, oldest first.
func (c *core[Q, R]) where(keep func(Q) bool) []Q {
	var out []Q
	for _, r := range c.requests.all() {
		if keep(r) {
			out = append(out, r)
		}
	}
	return out
}

// Remaining is how many scripted replies have not been served.
func (c *core[Q, R]) Remaining() int { return c.script.remaining() }

// WaitStall waits for the next stall to begin, or fails t after d.
func (c *core[Q, R]) WaitStall(t testing.TB, d time.Duration) int {
	t.Helper()
	select {
	case idx := <-c.stalled:
		return idx
	case <-time.After(d):
		t.Fatalf("fakemodel: no stalled %s within %s (requests: %d)", c.noun, d, len(c.requests.all()))
		return -1
	}
}

// queue is a script of replies served in order, each for its Times requests, then a
// default reply for every request after.
type queue[R scripted] struct {
	mu       sync.Mutex
	script   []R
	next     int // index into script
	repeated int // how many times script[next] has been served
	def      R
}

// take returns the next scripted reply and its index, or -1 and the default.
func (q *queue[R]) take() (int, R) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.next >= len(q.script) {
		return -1, q.def
	}
	idx, r := q.next, q.script[q.next]
	q.repeated++
	if q.repeated >= r.times() {
		q.next++
		q.repeated = 0
	}
	return idx, r
}

func (q *queue[R]) push(r ...R) {
	q.mu.Lock()
	q.script = append(q.script, r...)
	q.mu.Unlock()
}

func (q *queue[R]) setDefault(r R) {
	q.mu.Lock()
	q.def = r
	q.mu.Unlock()
}

// remaining is how many requests the script still has replies for.
func (q *queue[R]) remaining() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := 0
	for _, r := range q.script[q.next:] {
		n += r.times()
	}
	return n - q.repeated
}

// recorder keeps every request a server received, in the order it recorded them.
type recorder[Q any] struct {
	mu   sync.Mutex
	list []Q
}

func (l *recorder[Q]) record(r Q) {
	l.mu.Lock()
	l.list = append(l.list, r)
	l.mu.Unlock()
}

// all returns a copy of the requests recorded so far.
func (l *recorder[Q]) all() []Q {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Q(nil), l.list...)
}

// counter numbers ids: prefix_fake0001, prefix_fake0002, and so on.
type counter struct {
	mu sync.Mutex
	n  int
}

func (c *counter) id(prefix string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
	return fmt.Sprintf("%s_fake%04d", prefix, c.n)
}

// eventStream writes server-sent events on a 200 response, flushing each so that the
// client sees it before the next one is written.
type eventStream struct {
	w  io.Writer
	fl http.Flusher
}

// startEvents sends the headers of an event stream.
func startEvents(w http.ResponseWriter) eventStream {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	return eventStream{w: w, fl: fl}
}

// send writes one event whose data is data as JSON.
func (e eventStream) send(event string, data any) {
	b, _ := json.Marshal(data)
	e.raw(fmt.Sprintf("event: %s\ndata: %s\n\n", event, b))
}

// raw writes text as it is, for a malformed stream.
func (e eventStream) raw(text string) {
	io.WriteString(e.w, text)
	if e.fl != nil {
		e.fl.Flush()
	}
}

// writeJSONError answers status with body as JSON, and a Retry-After header when
// retryAfter is not empty.
func writeJSONError(w http.ResponseWriter, status int, retryAfter string, body any) {
	w.Header().Set("Content-Type", "application/json")
	if retryAfter != "" {
		w.Header().Set("Retry-After", retryAfter)
	}
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(body)
}

// stringOrList decodes raw, which both APIs allow in places to be a JSON string or a
// list: a string is returned with isString true; a list is decoded into list. Absent
// and null are neither, and leave list as it was.
func stringOrList(raw json.RawMessage, list any) (s string, isString bool, err error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", false, nil
	}
	if raw[0] == '"' {
		err := json.Unmarshal(raw, &s)
		return s, true, err
	}
	return "", false, json.Unmarshal(raw, list)
}
