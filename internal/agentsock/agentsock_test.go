package agentsock

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

type fakeHandler struct {
	mu      sync.Mutex
	tracker []TrackerRequest
	sess    []Session
	notify  []NotifyRequest
}

func (h *fakeHandler) Tracker(_ context.Context, s Session, r TrackerRequest) (any, *Error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.tracker = append(h.tracker, r)
	h.sess = append(h.sess, s)
	if r.IssueID == "404" {
		return nil, Errorf("tracker_not_found", "issue 404 does not exist")
	}
	return map[string]string{"id": r.IssueID}, nil
}

func (h *fakeHandler) Notify(_ context.Context, s Session, r NotifyRequest) (NotifyResult, *Error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.notify = append(h.notify, r)
	return NotifyResult{Delivered: true, Backends: []string{"ops"}}, nil
}

func (h *fakeHandler) Info() SessionInfo {
	return SessionInfo{Capabilities: Capabilities{TrackerAPI: true}, TrackerKind: "file"}
}

func listen(t *testing.T) (*Server, *fakeHandler) {
	t.Helper()
	h := &fakeHandler{}
	return listenWith(t, h), h
}

// listenWith is a server with handler h on a socket of its own.
func listenWith(t *testing.T, h Handler) *Server {
	t.Helper()
	// A short directory: t.TempDir() paths can exceed the socket path limit.
	dir, err := os.MkdirTemp("", "as")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	s, err := Listen(filepath.Join(dir, "state", "agent.sock"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	s.Start(h)
	return s
}

func TestSocket_Permissions(t *testing.T) {
	s, _ := listen(t)
	fi, err := os.Lstat(s.Path())
	if err != nil || fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o600 {
		t.Errorf("socket mode = %v (%v), want a 0600 socket", fi.Mode(), err)
	}
	di, _ := os.Stat(filepath.Dir(s.Path()))
	if di.Mode().Perm() != 0o700 {
		t.Errorf("socket directory mode = %v, want 0700", di.Mode().Perm())
	}
}

func TestSocket_GrantedSessionCallsAndRevocation(t *testing.T) {
	s, h := listen(t)
	sess := Session{IssueID: "1", Identifier: "P-1", RunID: 3}
	tok := s.Grant(sess)
	if len(tok) != 64 {
		t.Errorf("token %q: want 64 hex characters", tok)
	}
	c := Dial(s.Path(), tok)
	ctx := context.Background()

	info, err := c.Session(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.Session != sess || !info.Capabilities.TrackerAPI || info.Capabilities.NotifyOperator || info.TrackerKind != "file" {
		t.Errorf("session info = %+v", info)
	}

	data, err := c.Tracker(ctx, TrackerRequest{Operation: "fetch_issue", IssueID: "7"})
	if err != nil || string(data) != `{"id":"7"}` {
		t.Errorf("tracker = %s, %v", data, err)
	}
	_, err = c.Tracker(ctx, TrackerRequest{Operation: "fetch_issue", IssueID: "404"})
	var e *Error
	if !errors.As(err, &e) || e.Kind != "tracker_not_found" {
		t.Errorf("tool failure = %v, want *Error tracker_not_found", err)
	}
	if _, err := c.Notify(ctx, NotifyRequest{Message: "hi", Severity: "warning"}); err != nil {
		t.Fatal(err)
	}
	if len(h.sess) != 2 || h.sess[0] != sess || len(h.notify) != 1 || h.notify[0].Severity != "warning" {
		t.Errorf("handler saw sessions %+v, notifications %+v", h.sess, h.notify)
	}

	s.Revoke(tok)
	_, err = c.Tracker(ctx, TrackerRequest{Operation: "fetch_issue", IssueID: "7"})
	if !errors.As(err, &e) || e.Kind != "unauthorized" {
		t.Errorf("after revocation: %v, want unauthorized", err)
	}
	if _, err := Dial(s.Path(), "guess").Session(ctx); !errors.As(err, &e) || e.Kind != "unauthorized" {
		t.Errorf("unknown token: %v", err)
	}
	if s.Granted() != 0 {
		t.Errorf("granted = %d after revocation", s.Granted())
	}
}

// TestSocket_CallsBeforeStartWaitForTheHandler: a token granted between Listen and Start
// is valid, and a call made then is answered by the Handler once it is started, not
// refused.
func TestSocket_CallsBeforeStartWaitForTheHandler(t *testing.T) {
	dir, err := os.MkdirTemp("", "as")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	s, err := Listen(filepath.Join(dir, "agent.sock"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	sess := Session{IssueID: "1", Identifier: "P-1", RunID: 3}
	c := Dial(s.Path(), s.Grant(sess))
	type answer struct {
		info SessionInfo
		err  error
	}
	done := make(chan answer, 1)
	go func() {
		info, err := c.Session(context.Background())
		done <- answer{info, err}
	}()
	select {
	case a := <-done:
		t.Fatalf("a call before Start was answered: %+v, %v", a.info, a.err)
	case <-time.After(100 * time.Millisecond):
	}
	s.Start(&fakeHandler{})
	select {
	case a := <-done:
		if a.err != nil || a.info.Session != sess || a.info.TrackerKind != "file" {
			t.Fatalf("the call made before Start = %+v, %v; want the handler's answer for the session", a.info, a.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the call made before Start was never answered")
	}
}

func TestSocket_StrictRequests(t *testing.T) {
	s, h := listen(t)
	tok := s.Grant(Session{IssueID: "1"})
	client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", s.Path())
	}}}
	post := func(body string) (int, Reply) {
		req, _ := http.NewRequest(http.MethodPost, "http://sortie/v1/tracker", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var r Reply
		json.NewDecoder(resp.Body).Decode(&r)
		return resp.StatusCode, r
	}
	for _, body := range []string{`{`, `{"operation":"fetch_issue","extra":1}`, `{"operation":"x"} {"again":1}`, `[]`} {
		code, r := post(body)
		if code != http.StatusBadRequest || r.Error == nil || r.Error.Kind != "invalid_input" {
			t.Errorf("body %q: %d %+v, want 400 invalid_input", body, code, r)
		}
	}
	if len(h.tracker) != 0 {
		t.Errorf("bad requests reached the handler: %+v", h.tracker)
	}
	resp, err := client.Get("http://sortie/v1/tracker")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET /v1/tracker = %d, want 405", resp.StatusCode)
	}
}

func TestListen_StaleSocketAndForeignFile(t *testing.T) {
	s, _ := listen(t)
	path := s.Path()
	// A crashed daemon leaves its socket behind: the next one replaces it.
	ln := s.ln
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	s.srv.Close()
	if _, err := os.Lstat(path); err != nil {
		t.Fatalf("stale socket not left behind: %v", err)
	}
	s2, err := Listen(path)
	if err != nil {
		t.Fatalf("over a stale socket: %v", err)
	}
	s2.Close()

	if _, err := os.Stat(filepath.Dir(path)); err == nil {
		t.Error("Close left the socket's empty directory behind")
	}
	os.MkdirAll(filepath.Dir(path), 0o700)
	os.WriteFile(path, []byte("not a socket"), 0o600)
	if _, err := Listen(path); err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Errorf("over a regular file: %v", err)
	}
	if data, _ := os.ReadFile(path); string(data) != "not a socket" {
		t.Error("the regular file was touched")
	}
}

func TestSocketPath(t *testing.T) {
	if p := SocketPath("/var/lib/sortie/sortie.db"); p != "/var/lib/sortie/sortie.db.run/agent.sock" {
		t.Errorf("short state dir: %s", p)
	}
	long := "/" + strings.Repeat("d", 120)
	p := SocketPath(long)
	if len(p) > MaxPathLen || !strings.HasPrefix(p, os.TempDir()) {
		t.Errorf("long state dir: %s (%d bytes)", p, len(p))
	}
	if p == SocketPath(long+"x") {
		t.Error("two state directories share a socket")
	}
	// A $TMPDIR too long for a socket path of its own falls back to /tmp.
	t.Setenv("TMPDIR", "/"+strings.Repeat("t", 100))
	if p := SocketPath(long); len(p) > MaxPathLen || !strings.HasPrefix(p, "/tmp/sortie-") {
		t.Errorf("long state dir and long TMPDIR: %s (%d bytes)", p, len(p))
	}
}

func TestFromEnv(t *testing.T) {
	env := map[string]string{}
	get := func(k string) string { return env[k] }
	if FromEnv(get) != nil {
		t.Error("client without settings")
	}
	env[EnvSocket], env[EnvToken] = "/tmp/x.sock", "tok"
	if FromEnv(get) == nil {
		t.Error("no client with both settings")
	}
}
