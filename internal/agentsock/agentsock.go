// Package agentsock is the local channel between the daemon and the MCP sidecars its
// agents start (`sortie mcp-server`), and the only one: an agent holds no path to the
// daemon's state. Tier 2 tools (tracker_api, notify_operator) need the tracker's and the
// notification backends' credentials; those stay in the daemon. The workflow tools need
// the daemon's workflow sessions and the humans' checkpoint answers; workspace_history
// and cost_budget need the run history in the daemon's database; those stay in the
// daemon too.
// The sidecar sends each call over a unix socket (mode 0600, in a 0700 directory) to
// the daemon, authenticated by a capability token that the daemon grants per agent
// session, scopes to that session's issue, binds to that session's processes (the
// connection's peer credentials: Session.Bind, RunProcesses) and revokes when the
// session ends.
//
// The protocol is HTTP/1.1 over the socket, JSON bodies, `Authorization: Bearer
// <token>`:
//
//	GET  /v1/session   → SessionInfo
//	POST /v1/tracker   TrackerRequest  → Reply
//	POST /v1/notify    NotifyRequest   → Reply
//	POST /v1/workflow  WorkflowRequest → Reply whose data is a WorkflowResult
//	POST /v1/runs      RunsRequest     → Reply whose data is []RunRecord
//	POST /v1/spend     {}              → Reply whose data is a Spend
//	POST /v1/linear_graphql LinearGraphQLRequest → Reply whose data is Linear's answer
//
// Every answer is a Reply (status 200), except an unknown, revoked or missing token
// (401 with a Reply whose error kind is "unauthorized"), a token presented by a
// process that is not its session's (403, kind "unauthorized": see Session.Bind and
// RunProcesses) and a malformed request (400, kind "invalid_input").
//
// A workflow call's Reply is OK whenever the daemon ran the tool, even when the tool
// failed: the tool's own answer, success or error, is the WorkflowResult in data,
// {"is_error": bool, "body": <JSON shown to the agent>, "meta": <its _meta>}. A Reply
// error means the call did not reach the engine: unauthorized, invalid_input (a
// malformed body, no tool, a body over MaxWorkflowBody) or unsupported_operation (the
// daemon serves no workflow tools).
package agentsock

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Environment variables through which the daemon tells a sidecar how to reach it. They
// are written into the env block of the generated .sortie/mcp.json.
const (
	EnvSocket = "SORTIE_AGENT_SOCKET" // absolute path of the socket
	EnvToken  = "SORTIE_AGENT_TOKEN"  // the session's capability token
)

// Session is what a token grants: one agent session of one issue.
type Session struct {
	IssueID    string `json:"issue_id"`
	Identifier string `json:"issue_identifier"`
	RunID      int64  `json:"run_id"`
	// Bind, when not nil, binds the token to the session's own processes: a call
	// from any other process, with the token read from elsewhere (a sibling's
	// .sortie/mcp.json, its sidecar's /proc/<pid>/environ), is refused (403,
	// unauthorized). nil: the token alone authenticates.
	Bind Binding `json:"-"`
}

// Capabilities are the tools the daemon can serve to sessions: the Tier 2 tools and
// the workflow tools.
type Capabilities struct {
	TrackerAPI     bool `json:"tracker_api"`
	NotifyOperator bool `json:"notify_operator"`
	// Workflows: the daemon has a workflow library (workflows.dir) and answers
	// POST /v1/workflow.
	Workflows bool `json:"workflows"`
	// Runs: the daemon serves the issue's run history and spend (RunHistory), for
	// workspace_history and cost_budget.
	Runs bool `json:"runs"`
	// LinearGraphQL: the tracker is Linear and the daemon answers
	// POST /v1/linear_graphql (LinearGraphQLHandler).
	LinearGraphQL bool `json:"linear_graphql,omitempty"`
}

// SessionInfo answers GET /v1/session: who the token is for and what it may call.
type SessionInfo struct {
	Session
	Capabilities Capabilities `json:"capabilities"`
	// TrackerKind and Project describe the tracker the tracker_api tool reaches.
	TrackerKind string `json:"tracker_kind"`
	Project     string `json:"project,omitempty"`
}

// TrackerRequest is a tracker_api call. The fields are the tool's input schema.
type TrackerRequest struct {
	Operation   string `json:"operation"`
	IssueID     string `json:"issue_id,omitempty"`
	TargetState string `json:"target_state,omitempty"`
}

// NotifyResult is the answer to a notify_operator call that did not fail: Delivered
// with the Backends that accepted the message, or not delivered because every backend's
// filters (min_severity, events) turned it away, with the Reason.
type NotifyResult struct {
	Delivered bool     `json:"delivered"`
	Backends  []string `json:"backends,omitempty"`
	Reason    string   `json:"reason,omitempty"`
}

// NotifyRequest is a notify_operator call. The fields are the tool's input schema.
type NotifyRequest struct {
	Message  string `json:"message"`
	Severity string `json:"severity,omitempty"` // info (default), warning, critical
	Title    string `json:"title,omitempty"`
}

// WorkflowRequest is a workflow tool call: the tool's name and the agent's arguments,
// unchanged (the engine checks them).
type WorkflowRequest struct {
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// WorkflowResult is the engine's answer to a workflow tool call: Body is the JSON
// shown to the agent, Meta its _meta (session_token, trace_token, validation), and
// IsError says the tool failed (Body is then {"error", "kind"}).
type WorkflowResult struct {
	IsError bool            `json:"is_error"`
	Body    json.RawMessage `json:"body"`
	Meta    map[string]any  `json:"meta,omitempty"`
}

// Reply is every answer: Data on success, Error otherwise.
type Reply struct {
	OK    bool            `json:"ok"`
	Data  json.RawMessage `json:"data,omitempty"`
	Error *Error          `json:"error,omitempty"`
}

// Error is a failure the tool reports to the agent: a machine-readable kind (the
// tracker_api kinds of spec/agent-extensions.md, or unauthorized, invalid_input,
// unsupported_operation, notify_error, internal_error) and a message for humans.
type Error struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
}

func (e *Error) Error() string { return e.Kind + ": " + e.Message }

// Errorf builds an *Error.
func Errorf(kind, format string, args ...any) *Error {
	return &Error{Kind: kind, Message: fmt.Sprintf(format, args...)}
}

// Handler serves the calls of granted sessions. Its methods run concurrently.
type Handler interface {
	// Tracker performs a tracker_api call for sess and returns the response data.
	Tracker(ctx context.Context, sess Session, req TrackerRequest) (any, *Error)
	// Notify delivers a notify_operator call for sess and says whether it reached anyone.
	Notify(ctx context.Context, sess Session, req NotifyRequest) (NotifyResult, *Error)
	// Info describes what the daemon can serve to sessions.
	Info() SessionInfo
}

// WorkflowHandler is the optional part of a Handler that serves the workflow tools. A
// Handler without it answers POST /v1/workflow with unsupported_operation.
type WorkflowHandler interface {
	// Workflow runs tool with args for sess. The *Error is for a call the daemon
	// cannot run at all; a tool failure is a WorkflowResult with IsError set.
	Workflow(ctx context.Context, sess Session, tool string, args json.RawMessage) (WorkflowResult, *Error)
}

// MaxBody bounds a request body, except on the routes with their own bound below.
const MaxBody = 64 << 10

// MaxLinearGraphQLBody bounds a POST /v1/linear_graphql body: linear_graphql's
// documented 16 KiB query and 32 KiB variables with every byte escaped to six in JSON
// (\u0001: control characters), plus the request around them. The daemon's policy checks the documented bounds themselves.
const MaxLinearGraphQLBody = 6*(16<<10+32<<10) + 4<<10

// MaxWorkflowBody bounds a POST /v1/workflow body: the agent's arguments (which the
// sidecar bounds at 64 KiB) plus the request around them.
const MaxWorkflowBody = MaxBody + 4<<10

// Server listens on the socket and serves granted sessions. Listening and serving are
// two steps (Listen, then Start) so that tokens can be granted, and sessions given the
// socket's path, by whatever the Handler itself depends on before the Handler exists:
// calls made in between wait in the socket's backlog until Start.
type Server struct {
	path string
	ln   net.Listener
	srv  *http.Server
	h    Handler
	// served is closed when the goroutine Start launched has returned; nil before Start.
	served chan struct{}

	mu     sync.RWMutex
	grants map[string]Session
	pidfds sync.Map // net.Conn → Peer holding a pidfd to close with the connection
}

// Listen creates the socket at path (its directory is created with mode 0700, a stale
// socket from a crashed daemon is removed). The Server grants and revokes tokens at
// once; connections are accepted, and calls answered, once Start is given the Handler.
func Listen(path string) (*Server, error) {
	if len(path) > MaxPathLen {
		return nil, fmt.Errorf("agent socket %s: path longer than %d bytes (see SocketPath)", path, MaxPathLen)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("agent socket: %w", err)
	}
	if err := os.Chmod(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("agent socket: %w", err)
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&os.ModeSocket == 0 {
			return nil, fmt.Errorf("agent socket %s: exists and is not a socket; remove it", path)
		}
		os.Remove(path) // stale: the flock on the database guarantees no other daemon owns it
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("agent socket: %w", err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("agent socket: %w", err)
	}
	s := &Server{path: path, ln: ln, grants: map[string]Session{}}
	s.srv = &http.Server{ReadHeaderTimeout: 10 * time.Second,
		// Each connection carries its peer's credentials, read once as it is
		// accepted (they are the connecting process's, whatever happens later).
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			p := connPeer(c)
			if p.pidfd >= 0 {
				s.pidfds.Store(c, p)
			}
			return context.WithValue(ctx, peerKey{}, p)
		},
		ConnState: func(c net.Conn, st http.ConnState) {
			if st == http.StateClosed || st == http.StateHijacked {
				if p, ok := s.pidfds.LoadAndDelete(c); ok {
					closePeer(p.(Peer))
				}
			}
		},
	}
	return s, nil
}

// Start serves the socket's calls with h, those waiting in the backlog first, until
// Close. It returns at once, and must be called exactly once; after Close it serves
// nothing.
func (s *Server) Start(h Handler) {
	if h == nil {
		panic("agentsock: Start with a nil Handler")
	}
	if s.h != nil {
		panic("agentsock: Start called twice")
	}
	s.h = h
	s.srv.Handler = s.routes(h)
	s.served = make(chan struct{})
	go func() {
		defer close(s.served)
		s.srv.Serve(s.ln)
	}()
}

// Path is the socket's path.
func (s *Server) Path() string { return s.path }

// ShareWithGroup lets the members of group gid connect to the socket (agent.run_as:
// the agents' user is not the daemon's): its directory becomes root's and gid's, mode
// 0710 (search, no listing), and the socket mode 0660. Connecting still needs a
// session's capability token.
func (s *Server) ShareWithGroup(gid int) error {
	dir := filepath.Dir(s.path)
	for _, step := range []struct {
		path string
		mode os.FileMode
	}{{dir, 0o710}, {s.path, 0o660}} {
		if err := os.Lchown(step.path, -1, gid); err != nil {
			return fmt.Errorf("agent socket: %w", err)
		}
		if err := os.Chmod(step.path, step.mode); err != nil {
			return fmt.Errorf("agent socket: %w", err)
		}
	}
	return nil
}

// Close stops serving and removes the socket, and its directory when that is empty.
// It returns once the goroutine Start launched has returned. Call it after Start, not
// during it.
func (s *Server) Close() error {
	err := s.srv.Close()
	// Close the listener here too: if Serve's goroutine has not started yet (or Start
	// was never called), srv.Close does not know it, and Serve would close it
	// (unlinking the path) later, possibly after another daemon made a new socket there.
	s.ln.Close()
	os.Remove(s.path)
	os.Remove(filepath.Dir(s.path)) // fails, harmlessly, when something else is in it
	if s.served != nil {
		<-s.served
	}
	return err
}

// Grant issues a new capability token for sess.
func (s *Server) Grant(sess Session) string {
	var b [32]byte
	rand.Read(b[:])
	tok := hex.EncodeToString(b[:])
	s.mu.Lock()
	s.grants[tok] = sess
	s.mu.Unlock()
	return tok
}

// Revoke makes token invalid. Calls already running finish.
func (s *Server) Revoke(token string) {
	s.mu.Lock()
	delete(s.grants, token)
	s.mu.Unlock()
}

// Granted is the number of live tokens (for tests and metrics).
func (s *Server) Granted() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.grants)
}

func (s *Server) authorize(w http.ResponseWriter, r *http.Request) (Session, bool) {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if ok {
		// A map lookup keyed by a 256-bit random value leaks nothing useful through
		// its timing.
		s.mu.RLock()
		sess, found := s.grants[tok]
		s.mu.RUnlock()
		if found {
			if sess.Bind == nil {
				return sess, true
			}
			// Within the request: Admit may wait for a process of the session
			// that is starting.
			err := sess.Bind.Admit(r.Context(), peerOf(r.Context()))
			if err == nil {
				return sess, true
			}
			writeReply(w, http.StatusForbidden, Reply{Error: Errorf("unauthorized",
				"the token is refused: %v; a session's token is accepted only from that agent session's own processes (its run's cgroup or process tree), never from another process that read it", err)})
			return Session{}, false
		}
	}
	writeReply(w, http.StatusUnauthorized, Reply{Error: Errorf("unauthorized",
		"the session's token is missing, unknown or revoked (the agent session has ended)")})
	return Session{}, false
}

func (s *Server) session(w http.ResponseWriter, r *http.Request) {
	sess, ok := s.authorize(w, r)
	if !ok {
		return
	}
	info := s.h.Info()
	info.Session = sess
	writeJSON(w, http.StatusOK, info)
}

// routes are the socket's calls, answered by h.
func (s *Server) routes(h Handler) http.Handler {
	linear := func(context.Context, Session, LinearGraphQLRequest) (json.RawMessage, *Error) {
		return nil, Errorf("unsupported_operation", "this daemon serves no linear_graphql (tracker.kind is not linear)")
	}
	if lh, ok := h.(LinearGraphQLHandler); ok {
		linear = lh.LinearGraphQL
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/session", s.session)
	mux.Handle("POST /v1/tracker", call(s, MaxBody, h.Tracker))
	mux.Handle("POST /v1/notify", call(s, MaxBody, h.Notify))
	mux.HandleFunc("POST /v1/workflow", s.workflow)
	mux.HandleFunc("POST /v1/runs", s.runs)
	mux.HandleFunc("POST /v1/spend", s.spend)
	mux.Handle("POST /v1/linear_graphql", call(s, MaxLinearGraphQLBody, linear))
	return mux
}

// call answers a call whose body is a Q of at most limit bytes with what f returns for
// the caller's session.
func call[Q, A any](s *Server, limit int64, f func(context.Context, Session, Q) (A, *Error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		sess, ok := s.authorize(w, r)
		if !ok {
			return
		}
		var req Q
		if !decodeBounded(w, r, &req, limit) {
			return
		}
		res, e := f(r.Context(), sess, req)
		reply(w, res, e)
	}
}

func (s *Server) workflow(w http.ResponseWriter, r *http.Request) {
	sess, ok := s.authorize(w, r)
	if !ok {
		return
	}
	var req WorkflowRequest
	if !decodeBounded(w, r, &req, MaxWorkflowBody) {
		return
	}
	if req.Tool == "" {
		writeReply(w, http.StatusBadRequest, Reply{Error: Errorf("invalid_input", "request body: tool is required")})
		return
	}
	wh, ok := s.h.(WorkflowHandler)
	if !ok {
		reply(w, nil, Errorf("unsupported_operation", "this daemon serves no workflow tools"))
		return
	}
	res, e := wh.Workflow(r.Context(), sess, req.Tool, req.Arguments)
	reply(w, res, e)
}

// decode reads a strict JSON body of at most MaxBody bytes: unknown fields and
// trailing data are invalid_input.
func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	return decodeBounded(w, r, v, MaxBody)
}

// decodeBounded is decode with a bound of limit bytes; a longer body is invalid_input
// saying so, not a truncated-JSON error.
func decodeBounded(w http.ResponseWriter, r *http.Request, v any, limit int64) bool {
	body := http.MaxBytesReader(w, r.Body, limit)
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil && dec.More() {
		err = errors.New("trailing data after the JSON object")
	}
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		writeReply(w, http.StatusBadRequest, Reply{Error: Errorf("invalid_input", "request body: larger than %d bytes", limit)})
		return false
	case err != nil:
		writeReply(w, http.StatusBadRequest, Reply{Error: Errorf("invalid_input", "request body: %v", err)})
		return false
	}
	return true
}

func reply(w http.ResponseWriter, data any, e *Error) {
	if e != nil {
		writeReply(w, http.StatusOK, Reply{Error: e})
		return
	}
	b, err := json.Marshal(data)
	if err != nil {
		writeReply(w, http.StatusOK, Reply{Error: Errorf("internal_error", "encoding the reply: %v", err)})
		return
	}
	writeReply(w, http.StatusOK, Reply{OK: true, Data: b})
}

func writeReply(w http.ResponseWriter, status int, r Reply) { writeJSON(w, status, r) }

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// MaxPathLen is the longest socket path Linux accepts (sun_path is 108 bytes with its
// terminating NUL).
const MaxPathLen = 107

// SocketPath picks where the daemon's socket lives: `<dbPath>.run/agent.sock` beside
// the database (the daemon's state) when the path fits, else in a per-user 0700
// directory under the system's temporary directory, named after dbPath so that two
// daemons never share it. When $TMPDIR is itself too long for a socket path, /tmp is
// used instead.
func SocketPath(dbPath string) string {
	p := filepath.Join(dbPath+".run", "agent.sock")
	if len(p) <= MaxPathLen {
		return p
	}
	name := filepath.Join(fmt.Sprintf("sortie-%d", os.Getuid()), shortHash(dbPath)+".sock")
	if p := filepath.Join(os.TempDir(), name); len(p) <= MaxPathLen {
		return p
	}
	return filepath.Join("/tmp", name)
}

func shortHash(s string) string {
	// FNV-1a, 64 bits: enough to keep the state directories of one user apart.
	var h uint64 = 14695981039346656037
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return fmt.Sprintf("%016x", h)
}

// Client is a sidecar's connection to the daemon.
type Client struct {
	token string
	http  *http.Client
}

// Dial returns a client for the socket at path with token. It connects lazily; each
// call is bounded by its context.
func Dial(path, token string) *Client {
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", path)
		},
		MaxIdleConns:    2,
		IdleConnTimeout: 30 * time.Second,
	}
	return &Client{token: token, http: &http.Client{Transport: tr}}
}

// FromEnv returns a client from EnvSocket and EnvToken, or nil when either is unset.
func FromEnv(getenv func(string) string) *Client {
	path, tok := getenv(EnvSocket), getenv(EnvToken)
	if path == "" || tok == "" {
		return nil
	}
	return Dial(path, tok)
}

// Session asks the daemon who this token is for and what it may call.
func (c *Client) Session(ctx context.Context) (SessionInfo, error) {
	var info SessionInfo
	err := c.do(ctx, http.MethodGet, "/v1/session", nil, &info)
	return info, err
}

// Tracker performs a tracker_api call. A tool failure is returned as *Error; any other
// error means the daemon could not be asked.
func (c *Client) Tracker(ctx context.Context, req TrackerRequest) (json.RawMessage, error) {
	return c.call(ctx, "/v1/tracker", req)
}

// Notify performs a notify_operator call, with errors as for Tracker.
func (c *Client) Notify(ctx context.Context, req NotifyRequest) (json.RawMessage, error) {
	return c.call(ctx, "/v1/notify", req)
}

// Workflow performs a workflow tool call. The tool's answer, failed or not, is the
// WorkflowResult; an *Error means the daemon did not run the tool, any other error
// that it could not be asked.
func (c *Client) Workflow(ctx context.Context, tool string, args json.RawMessage) (WorkflowResult, error) {
	var res WorkflowResult
	data, err := c.call(ctx, "/v1/workflow", WorkflowRequest{Tool: tool, Arguments: args})
	if err != nil {
		return res, err
	}
	if err := json.Unmarshal(data, &res); err != nil {
		return res, fmt.Errorf("the daemon's workflow answer is malformed: %w", err)
	}
	return res, nil
}

func (c *Client) call(ctx context.Context, path string, body any) (json.RawMessage, error) {
	var r Reply
	if err := c.do(ctx, http.MethodPost, path, body, &r); err != nil {
		return nil, err
	}
	if !r.OK {
		if r.Error == nil {
			return nil, Errorf("internal_error", "the daemon answered neither data nor an error")
		}
		return nil, r.Error
	}
	return r.Data, nil
}

func (c *Client) do(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		// Without HTML escaping: it would grow <, > and & sixfold, in raw JSON such as
		// linear_graphql's variables too, past the bounds the daemon checks.
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(body); err != nil {
			return err
		}
		rd = &b
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://sortie"+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("reaching the sortie daemon: %w", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return fmt.Errorf("reading the daemon's answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		var r Reply
		if json.Unmarshal(data, &r) == nil && r.Error != nil {
			return r.Error
		}
		return fmt.Errorf("the daemon answered %s", resp.Status)
	}
	return json.Unmarshal(data, out)
}
