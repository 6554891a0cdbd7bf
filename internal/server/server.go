package server

import (
	"sortie/internal/reactions"

	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"sortie/internal/orchestrator"
	"sortie/internal/store"
	"sortie/internal/tracker"
	"sortie/internal/webhook"
)

// Timeouts. Reads are small (no route takes a body bigger than a login form), so the
// read limits are tight; the live feed lifts the write limit for its own connection
// and bounds each write instead (events.go).
const (
	readHeaderTimeout = 10 * time.Second
	readTimeout       = 30 * time.Second
	writeTimeout      = 30 * time.Second
	idleTimeout       = 60 * time.Second
	// shutdownTimeout bounds how long Serve waits for requests in flight once its
	// context ends; live-feed streams end at once.
	shutdownTimeout = 5 * time.Second
	// snapshotTimeout bounds the wait for the scheduler's snapshot (503 after it).
	snapshotTimeout = 2 * time.Second
)

// limits are the server's timeouts; tests shrink them.
type limits struct {
	readHeader, read, write, idle, shutdown, snapshot time.Duration
}

var defaultLimits = limits{readHeaderTimeout, readTimeout, writeTimeout, idleTimeout, shutdownTimeout, snapshotTimeout}

// Options configure a Server. Snapshot is required; every other dependency is optional
// and its routes answer 503 (or 404 for Metrics and Dashboard) when it is missing.
type Options struct {
	// Host and Port are where ListenAndServe listens (server.host, server.port). Host
	// is an IP address or "localhost"; "" means every interface. Port 0 picks a free
	// port: deciding that 0 means "no server" is the caller's business.
	Host string
	Port int
	// AuthToken is the bearer token every route but /livez requires when set. New
	// refuses a Host that is not loopback without one. It is a secret: never logged.
	AuthToken string
	// Version is the daemon's version, shown by /readyz and /api/v1/state.
	Version string
	// WorkflowPath is the WORKFLOW.md in force, shown by /api/v1/state.
	WorkflowPath string

	// Snapshot returns the scheduler's current state (orchestrator.Snapshot). Each call
	// gets a context that ends after 2 s; an error or timeout is a 503
	// snapshot_unavailable.
	Snapshot func(context.Context) (orchestrator.Snapshot, error)
	// Refresh asks the scheduler to poll and reconcile now and reports whether the
	// request was coalesced into a pending one (orchestrator.Refresh).
	Refresh func() (coalesced bool)
	// TokenGenerated says AuthToken is the one the daemon generated, not one the
	// operator chose (server.auth_token): such a token may guard only a loopback
	// address, so that serving other machines stays a deliberate choice.
	TokenGenerated bool
	// StorePing reports whether the daemon's database answers (sqlite.Store.Ping); it
	// gets a context that ends after 2 s. /readyz fails its store check otherwise.
	// Optional: without it the check is not made.
	StorePing func(context.Context) error
	// RateLimits reports the tracker API's budget (tracker.RateLimiter), shown in
	// /api/v1/state. Optional.
	RateLimits func() []tracker.RateLimit
	// Runs is the run history (a store.Reader satisfies it). When it also has the
	// workflow records (WorkflowHistory, which a store.Reader has), the issue detail
	// shows its checkpoint decisions and its runs' activity paths.
	Runs Runs
	// Checkpoints records humans' answers to workflow checkpoints (*checkpoint.Desk
	// satisfies it). Without it POST /api/v1/{identifier}/checkpoints/{checkpoint_id}
	// answers 503 checkpoints_unavailable.
	Checkpoints CheckpointAnswerer
	// Hub is the live feed of GET /api/v1/events; wire Hub.Publish as the
	// orchestrator's Activity hook.
	Hub *Hub
	// Webhooks, when set, receives the trackers' webhook deliveries under /webhooks/
	// (a *webhook.Receiver). It is served without the operator token and whatever the
	// Host header names: a tracker cannot carry the token, and each delivery is checked
	// against the tracker's own signature instead. Its Status is shown in
	// /api/v1/state and on the dashboard.
	Webhooks WebhookReceiver
	// Reactions lists the handed-off issues whose pull requests are watched
	// (reactions.Watcher.Views), for /api/v1/state and the dashboard. Optional.
	Reactions func() []reactions.View
	// Metrics, when set, is served at /metrics (behind the token like the rest).
	Metrics http.Handler
	// Dashboard, when set, is served at / and every path that is not /api/, /livez,
	// /readyz, /login or /metrics.
	Dashboard http.Handler

	// Logger receives start, stop and request errors (default slog.Default()).
	Logger *slog.Logger
	// Now is the clock for uptimes, durations and due times (default time.Now).
	Now func() time.Time
}

// Runs is the run history the API reads: the part of store.Reader it needs.
type Runs interface {
	// ListRuns returns one page of run history, newest first (GET /api/v1/runs).
	ListRuns(ctx context.Context, f store.RunFilter) ([]store.Run, error)
	// RunsForIdentifier returns an issue's newest runs (GET /api/v1/{identifier}).
	RunsForIdentifier(ctx context.Context, identifier string, limit int) ([]store.Run, error)
	// RunEvents returns the newest events of a run, oldest of them first.
	RunEvents(ctx context.Context, runID int64, limit int) ([]store.Event, error)
}

var _ Runs = store.Reader(nil)

// WebhookReceiver is what the server needs from the webhook receiver.
type WebhookReceiver interface {
	http.Handler
	// Status is the last delivery per tracker kind.
	Status() []webhook.Status
}

// Server is the HTTP server. Create it with New; serve it with Serve or ListenAndServe,
// or mount Handler in a server of your own.
type Server struct {
	opts    Options
	log     *slog.Logger
	now     func() time.Time
	started time.Time
	handler http.Handler
	auth    *authenticator // nil when no token is set

	// stopping is closed when Serve's context ends, so live-feed streams, which would
	// otherwise never finish, end and let the graceful shutdown complete.
	stopping  chan struct{}
	stopOnce  sync.Once
	limits    limits
	keepalive time.Duration
	// ticker makes the live feed's keepalive ticker; tests replace it.
	ticker func(time.Duration) (<-chan time.Time, func())
}

// New checks o and builds a Server. It fails when o.Snapshot is nil, and when o.Host
// is not a loopback address and o.AuthToken is empty: the API shows what agents are
// doing in which repository, so it is never served to a network without a token.
func New(o Options) (*Server, error) {
	if o.Snapshot == nil {
		return nil, errors.New("server: Options.Snapshot is required")
	}
	if o.Port < 0 || o.Port > 65535 {
		return nil, fmt.Errorf("server: server.port must be between 0 and 65535 (got %d)", o.Port)
	}
	o.AuthToken = strings.TrimSpace(o.AuthToken)
	if (o.AuthToken == "" || o.TokenGenerated) && !isLoopbackHost(o.Host) {
		shown := o.Host
		if shown == "" {
			shown = `"" (every interface)`
		}
		return nil, fmt.Errorf("server: refusing to serve the API on %s without a token: server.host is not a loopback address, "+
			"so set server.auth_token (e.g. auth_token: $SORTIE_SERVER_AUTH_TOKEN, or the SORTIE_SERVER_AUTH_TOKEN variable), "+
			"or listen on 127.0.0.1", shown)
	}
	s := &Server{
		opts: o, log: o.Logger, now: o.Now, stopping: make(chan struct{}),
		limits: defaultLimits, keepalive: 15 * time.Second, ticker: realTicker,
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.now == nil {
		s.now = time.Now
	}
	s.started = s.now()
	if o.AuthToken != "" {
		s.auth = newAuthenticator(o.AuthToken)
		if len(o.AuthToken) < minTokenLen {
			s.log.Warn("server.auth_token is short; use at least 32 random characters (e.g. openssl rand -hex 32)",
				"length", len(o.AuthToken))
		}
	}
	s.handler = s.routes()
	return s, nil
}

// Handler returns the server's routes, with authentication, for tests and for
// mounting in another server.
func (s *Server) Handler() http.Handler { return s.handler }

// ListenAndServe listens on Options.Host and Options.Port and serves until ctx ends,
// like Serve.
func (s *Server) ListenAndServe(ctx context.Context) error {
	addr := net.JoinHostPort(s.opts.Host, strconv.Itoa(s.opts.Port))
	var lc net.ListenConfig
	l, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("server: listen on %s: %w (is another sortie or program using the port? set server.port or --port)", addr, err)
	}
	return s.Serve(ctx, l)
}

// Serve serves HTTP on l until ctx ends, then shuts down gracefully: it stops
// accepting, ends live-feed streams, lets other requests in flight finish for up to
// 5 s, and closes l. It returns nil after a shutdown caused by ctx, or the error that
// stopped the server.
func (s *Server) Serve(ctx context.Context, l net.Listener) error {
	srv := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: s.limits.readHeader,
		ReadTimeout:       s.limits.read,
		WriteTimeout:      s.limits.write,
		IdleTimeout:       s.limits.idle,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	s.log.Debug("http server listening", "addr", l.Addr().String(), "auth", s.auth != nil)

	select {
	case err := <-served:
		s.stop()
		return fmt.Errorf("server: serve on %s: %w", l.Addr(), err)
	case <-ctx.Done():
	}
	s.stop()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.limits.shutdown)
	defer cancel()
	err := srv.Shutdown(sctx)
	if err != nil {
		s.log.Warn("http server: requests still running after the shutdown timeout were cut", "timeout", s.limits.shutdown)
		err = srv.Close()
	}
	<-served // http.ErrServerClosed
	s.log.Debug("http server stopped")
	if err != nil {
		return fmt.Errorf("server: shut down: %w", err)
	}
	return nil
}

// stop ends the live-feed streams.
func (s *Server) stop() { s.stopOnce.Do(func() { close(s.stopping) }) }

// routes builds the handler tree. Routes are registered without a method so that a
// wrong method gets the API's JSON 405 rather than the mux's plain one, and so that
// GET /api/v1/refresh is a 405, not a lookup of an issue called "refresh".
func (s *Server) routes() http.Handler {
	api := http.NewServeMux()
	api.Handle("/api/v1/state", methods(s.handleState, http.MethodGet))
	api.Handle("/api/v1/runs", methods(s.handleRuns, http.MethodGet))
	api.Handle("/api/v1/events", methods(s.handleEvents, http.MethodGet))
	api.Handle("/api/v1/refresh", methods(s.handleRefresh, http.MethodPost))
	api.Handle("/api/v1/{identifier}", methods(s.handleIssue, http.MethodGet))
	api.Handle("/api/v1/{identifier}/checkpoints/{checkpoint_id}", methods(s.handleAnswer, http.MethodPost))
	api.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, codeNotFound, "no API route "+r.URL.Path+"; see docs/api.md")
	})
	if s.opts.Metrics != nil {
		api.Handle("/metrics", s.opts.Metrics)
	} else {
		api.HandleFunc("/metrics", func(w http.ResponseWriter, r *http.Request) {
			writeError(w, http.StatusNotFound, codeNotFound, "metrics are not served by this daemon")
		})
	}
	if s.opts.Dashboard != nil {
		api.Handle("/", s.opts.Dashboard)
	} else {
		api.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
			writeError(w, http.StatusNotFound, codeNotFound, "no route "+r.URL.Path+"; the API is under /api/v1/ (see docs/api.md)")
		})
	}

	root := http.NewServeMux()
	// /livez answers without a token, without I/O, whatever the Host: a process probe.
	root.Handle("/livez", methods(handleLivez, http.MethodGet))
	// /readyz too needs no token: supervisors and load balancers probe it.
	root.Handle("/readyz", methods(s.handleReadyz, http.MethodGet))
	root.Handle("/login", methods(s.handleLogin, http.MethodGet, http.MethodPost))
	root.Handle("/", s.authenticate(api))

	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusForbidden, codeCrossOrigin,
			"a browser sent "+r.Method+" "+r.URL.Path+" from another site; only the dashboard's own pages may change state")
	}))
	guarded := s.checkHost(cop.Handler(root))
	if s.opts.Webhooks == nil {
		return guarded
	}
	// Deliveries come from the tracker, through whatever proxy the operator runs, with
	// no token, no browser and a public Host: the signature is their only guard.
	outer := http.NewServeMux()
	outer.Handle("/webhooks/", s.opts.Webhooks)
	outer.Handle("/", guarded)
	return outer
}

// isLoopbackHost reports whether host (an IP address or name, no port) is reached
// only from this machine.
func isLoopbackHost(host string) bool {
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// uptime is how long the scheduler (or, before it reports, this server) has run.
func (s *Server) uptime(startedAt time.Time) float64 {
	if startedAt.IsZero() {
		startedAt = s.started
	}
	return seconds(s.now().Sub(startedAt))
}

// snapshot asks the scheduler for its state, giving up after snapshotTimeout.
func (s *Server) snapshot(ctx context.Context) (orchestrator.Snapshot, error) {
	ctx, cancel := context.WithTimeout(ctx, s.limits.snapshot)
	defer cancel()
	return s.opts.Snapshot(ctx)
}

// snapshotFailed writes the 503 for a failed snapshot.
func (s *Server) snapshotFailed(w http.ResponseWriter, r *http.Request, err error) {
	s.log.Warn("http: the scheduler's snapshot is unavailable", "path", r.URL.Path, "error", err)
	msg := "the scheduler did not answer: " + err.Error()
	if errors.Is(err, context.DeadlineExceeded) {
		msg = fmt.Sprintf("the scheduler did not answer within %s; it may be busy or stuck, try again", s.limits.snapshot)
	}
	writeError(w, http.StatusServiceUnavailable, codeSnapshotUnavailable, msg)
}

func realTicker(d time.Duration) (<-chan time.Time, func()) {
	t := time.NewTicker(d)
	return t.C, t.Stop
}
