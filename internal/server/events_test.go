package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"sortie/internal/agent"
	"sortie/internal/orchestrator"
)

// frame is one Server-Sent Events message.
type frame struct {
	event, data, retry, comment string
}

// nextFrame reads the next message of an SSE stream.
func nextFrame(t *testing.T, rd *bufio.Reader) frame {
	t.Helper()
	var f frame
	for {
		line, err := rd.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the stream: %v (frame so far %+v)", err, f)
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case line == "":
			return f
		case strings.HasPrefix(line, ":"):
			f.comment = strings.TrimSpace(line[1:])
		default:
			k, v, _ := strings.Cut(line, ":")
			v = strings.TrimPrefix(v, " ")
			switch k {
			case "event":
				f.event = v
			case "data":
				f.data += v
			case "retry":
				f.retry = v
			default:
				t.Fatalf("unknown SSE field %q", line)
			}
		}
	}
}

// openStream connects to the live feed of the server at base and returns its reader
// once the server has answered. The connection closes when the test ends.
func openStream(t *testing.T, base, query string, hdr ...string) (*bufio.Reader, *http.Response, context.CancelFunc) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/v1/events"+query, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return bufio.NewReader(resp.Body), resp, cancel
}

// startServer serves f over real HTTP on loopback until the test ends.
func startServer(t *testing.T, f *fixture) string {
	t.Helper()
	ts := httptest.NewServer(f.srv.Handler())
	t.Cleanup(ts.Close) // runs after the streams' cleanups have closed them
	return ts.URL
}

// waitClients waits, without sleeping, until the hub has n clients.
func waitClients(t *testing.T, h *Hub, n int) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		changed, now := h.clientsChanged()
		if now == n {
			return
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("the hub has %d clients after 10s, want %d", now, n)
		}
	}
}

func activity(identifier string, i int) orchestrator.Activity {
	return orchestrator.Activity{Kind: orchestrator.ActivityTurn, Time: t0, IssueID: "id-" + identifier,
		Identifier: identifier, RunID: 7, Result: "turn_completed", Message: strconv.Itoa(i)}
}

func decodeActivity(t *testing.T, fr frame) activityJSON {
	t.Helper()
	var a activityJSON
	if err := json.Unmarshal([]byte(fr.data), &a); err != nil {
		t.Fatalf("data of %q is not an activity: %v\n%s", fr.event, err, fr.data)
	}
	if string(a.Kind) != fr.event {
		t.Fatalf("event %q carries kind %q", fr.event, a.Kind)
	}
	return a
}

func TestEvents_StreamsActivitiesInOrder(t *testing.T) {
	f := newFixture(t, nil)
	rd, resp, _ := openStream(t, startServer(t, f), "")
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream; charset=utf-8" || resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d Content-Type %q, want 200 text/event-stream", resp.StatusCode, ct)
	}
	if fr := nextFrame(t, rd); fr.retry != "2000" {
		t.Fatalf("first frame = %+v, want retry: 2000", fr)
	}
	ev := agent.Event{Type: agent.EventTokenUsage, Time: t0, Usage: agent.Usage{Input: 900, Output: 40, Total: 940},
		Model: "claude-opus-4", Message: strings.Repeat("é", maxFeedMessageBytes)}
	f.hub.Publish(orchestrator.Activity{Kind: orchestrator.ActivityAgentEvent, Time: t0, IssueID: "id-1", Identifier: "PROJ-1",
		RunID: 7, Event: &ev, Delta: agent.Usage{Input: 100, Output: 4, Total: 104}, Model: "claude-opus-4"})
	for i := range 20 {
		f.hub.Publish(activity("PROJ-1", i))
	}
	f.hub.Publish(orchestrator.Activity{Kind: orchestrator.ActivityPoll, Time: t0, Result: "ok", Duration: 1500 * time.Millisecond})

	a := decodeActivity(t, nextFrame(t, rd))
	if a.Kind != orchestrator.ActivityAgentEvent || a.Event == nil || a.Event.Type != agent.EventTokenUsage ||
		a.Event.Usage == nil || a.Event.Usage.Total != 940 || a.Delta == nil || a.Delta.Total != 104 || a.Identifier != "PROJ-1" {
		t.Fatalf("agent event = %+v (event %+v), want token_usage with usage 940 and delta 104", a, a.Event)
	}
	if len(a.Event.Message) > maxFeedMessageBytes || !strings.HasSuffix(a.Event.Message, "…") {
		t.Errorf("a %d-byte message went out as %d bytes, want at most %d ending in …", 2*maxFeedMessageBytes,
			len(a.Event.Message), maxFeedMessageBytes)
	}
	for i := range 20 {
		fr := nextFrame(t, rd)
		if a := decodeActivity(t, fr); fr.event != "turn" || a.Message != strconv.Itoa(i) || a.RunID != 7 {
			t.Fatalf("frame %d = %+v, want turn %d", i, fr, i)
		}
	}
	if a := decodeActivity(t, nextFrame(t, rd)); a.Kind != orchestrator.ActivityPoll || a.DurationMS != 1500 {
		t.Fatalf("poll = %+v, want duration_ms 1500", a)
	}
}

func TestEvents_IssueFilter(t *testing.T) {
	f := newFixture(t, nil)
	rd, _, _ := openStream(t, startServer(t, f), "?issue=PROJ-2")
	nextFrame(t, rd) // retry
	f.hub.Publish(activity("PROJ-1", 1))
	f.hub.Publish(activity("PROJ-2", 2))
	f.hub.Publish(orchestrator.Activity{Kind: orchestrator.ActivityPoll, Result: "ok"})
	f.hub.Publish(activity("PROJ-2", 4))
	f.hub.Publish(activity("PROJ-20", 5))
	f.hub.Publish(activity("PROJ-2", 6))
	for _, want := range []string{"2", "4", "6"} { // adjacent: nothing else came between
		if a := decodeActivity(t, nextFrame(t, rd)); a.Identifier != "PROJ-2" || a.Message != want {
			t.Fatalf("got %s %q, want PROJ-2 %q", a.Identifier, a.Message, want)
		}
	}
}

func TestEvents_Keepalive(t *testing.T) {
	f := newFixture(t, nil)
	ticks := make(chan time.Time)
	f.srv.ticker = func(d time.Duration) (<-chan time.Time, func()) {
		if d != 15*time.Second {
			t.Errorf("keepalive every %v, want 15s", d)
		}
		return ticks, func() {}
	}
	rd, _, _ := openStream(t, startServer(t, f), "")
	nextFrame(t, rd)
	ticks <- t0
	if fr := nextFrame(t, rd); fr.comment != "keepalive" || fr.event != "" {
		t.Fatalf("after a tick: %+v, want the comment keepalive", fr)
	}
}

func TestEvents_DisconnectFreesTheClient(t *testing.T) {
	f := newFixture(t, nil)
	rd, _, cancel := openStream(t, startServer(t, f), "")
	nextFrame(t, rd)
	waitClients(t, f.hub, 1)
	cancel()
	waitClients(t, f.hub, 0) // the handler returned and unsubscribed
	f.hub.Publish(activity("PROJ-1", 1))
}

func TestEvents_ShutdownEndsStreams(t *testing.T) {
	f := newFixture(t, nil)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- f.srv.Serve(ctx, l) }()
	rd, _, _ := openStream(t, "http://"+l.Addr().String(), "")
	nextFrame(t, rd)
	waitClients(t, f.hub, 1)

	cancel()
	select {
	case err := <-served:
		if err != nil {
			t.Fatalf("Serve = %v, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return within 10s: the stream held the shutdown")
	}
	if _, err := rd.ReadString('\n'); err == nil {
		t.Fatal("the stream is still open after shutdown")
	}
	if n := f.hub.Clients(); n != 0 {
		t.Fatalf("%d clients after shutdown, want 0", n)
	}
}

// The feed lives longer than the server's read and write timeouts. This test has to
// let real time pass beyond them (the kernel's deadlines use the wall clock); the
// outcome does not depend on how much.
func TestEvents_OutlivesServerTimeouts(t *testing.T) {
	f := newFixture(t, nil)
	f.srv.limits.read, f.srv.limits.write = 20*time.Millisecond, 20*time.Millisecond
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- f.srv.Serve(ctx, l) }()
	defer func() { cancel(); <-served }()
	rd, _, _ := openStream(t, "http://"+l.Addr().String(), "")
	nextFrame(t, rd)
	<-time.After(200 * time.Millisecond) // 10× both timeouts
	f.hub.Publish(activity("PROJ-1", 1))
	if a := decodeActivity(t, nextFrame(t, rd)); a.Message != "1" {
		t.Fatalf("got %+v, want turn 1", a)
	}
}

func TestEvents_CookieAuth(t *testing.T) {
	f := newFixture(t, withToken)
	base := startServer(t, f)
	resp, err := http.Get(base + "/api/v1/events")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("events without a token = %d, want 401", resp.StatusCode)
	}
	rd, resp, _ := openStream(t, base, "", "Cookie", cookieName+"="+newAuthenticator(testToken).cookie)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("events with the login cookie = %d, want 200", resp.StatusCode)
	}
	if fr := nextFrame(t, rd); fr.retry != "2000" {
		t.Fatalf("first frame %+v", fr)
	}
}

func TestEvents_WithoutHubIs503(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.Hub = nil })
	wantError(t, f.get(t, "/api/v1/events"), http.StatusServiceUnavailable, codeEventsUnavailable)
	g := newFixture(t, nil)
	wantError(t, g.get(t, "/api/v1/events?issue="+strings.Repeat("x", maxIdentifierLen+1)), http.StatusBadRequest, codeInvalidQuery)
}

// pipeWriter is a ResponseWriter whose client reads only when the test says: a slow
// client. Write blocks until the test reads.
type pipeWriter struct {
	h  http.Header
	pw *io.PipeWriter
}

func (p *pipeWriter) Header() http.Header         { return p.h }
func (p *pipeWriter) WriteHeader(int)             {}
func (p *pipeWriter) Write(b []byte) (int, error) { return p.pw.Write(b) }
func (p *pipeWriter) Flush()                      {}

func TestEvents_SlowClientMissesActivitiesAndIsToldHowMany(t *testing.T) {
	f := newFixture(t, nil)
	pr, pw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.srv.Handler().ServeHTTP(&pipeWriter{h: http.Header{}, pw: pw}, request(http.MethodGet, "/api/v1/events").WithContext(ctx))
	}()
	rd := bufio.NewReader(pr)
	nextFrame(t, rd) // retry; the client is subscribed

	// The client reads nothing now: the handler blocks in its first write and its
	// buffer fills. Publish must neither block nor slow down.
	const n = 2000
	published := make(chan struct{})
	go func() {
		for i := range n {
			f.hub.Publish(activity("PROJ-1", i))
		}
		close(published)
	}()
	select {
	case <-published:
	case <-time.After(10 * time.Second):
		t.Fatal("Publish blocked on a client that does not read")
	}

	// Now it reads: every activity is either delivered, in order, or counted in a
	// dropped notice.
	delivered, dropped, last := 0, 0, -1
	for delivered+dropped < n {
		fr := nextFrame(t, rd)
		switch fr.event {
		case "dropped":
			var d struct{ Dropped int }
			if err := json.Unmarshal([]byte(fr.data), &d); err != nil || d.Dropped < 1 {
				t.Fatalf("dropped notice %q: %v", fr.data, err)
			}
			dropped += d.Dropped
		case "turn":
			i, _ := strconv.Atoi(decodeActivity(t, fr).Message)
			if i <= last {
				t.Fatalf("activity %d after %d: out of order", i, last)
			}
			last = i
			delivered++
		default:
			t.Fatalf("unexpected frame %+v", fr)
		}
	}
	if delivered+dropped != n || dropped < n-clientBuffer-feedBatch-1 {
		t.Fatalf("delivered %d + dropped %d, want %d in all with at least %d dropped", delivered, dropped, n, n-clientBuffer-feedBatch-1)
	}
	// Caught up, it gets new activities again.
	f.hub.Publish(activity("PROJ-1", n))
	if a := decodeActivity(t, nextFrame(t, rd)); a.Message != fmt.Sprint(n) {
		t.Fatalf("after catching up got %+v, want activity %d", a, n)
	}
	cancel()
	pr.Close()
	<-done
	if c := f.hub.Clients(); c != 0 {
		t.Fatalf("%d clients after the handler returned, want 0", c)
	}
}
