package webhook

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"sortie/internal/ttlmap"
)

// Replay memory: how long delivery ids are remembered by default, and how many at most.
const (
	defaultReplayWindow = 24 * time.Hour
	maxRememberedIDs    = 100_000
)

// Options configure a Receiver. Settings and Deliver are required.
type Options struct {
	// Settings returns the settings in force; it is called once per request.
	Settings func() Settings
	// Deliver is handed each accepted delivery. It is called synchronously, before the
	// tracker gets its answer, so it must not block long (a non-blocking send, or a
	// coalescing refresh request).
	Deliver func(Delivery)
	// Count, when set, is called once for every request that ends in a result (every
	// request but a wrong method or path), with the tracker kind and the result. For
	// metrics; it must not block.
	Count func(tracker, result string)
	// Now tells the time (default time.Now): the time of a delivery and of Status, the
	// age of remembered ids and the freshness of Linear's timestamps.
	Now func() time.Time
	// Logger receives one line per counted request (default slog.Default()): accepted
	// at Info, ignored and replayed at Debug, refusals at Warn. It is never given a
	// secret, a signature, a token or a body.
	Logger *slog.Logger
	// ReplayWindow is how long delivery ids are remembered (default 24 h); at most
	// 100,000 are kept, the expired going first.
	ReplayWindow time.Duration
}

// Receiver is the http.Handler for /webhooks/{kind}. It is safe for concurrent use.
type Receiver struct {
	settings func() Settings
	deliver  func(Delivery)
	count    func(tracker, result string)
	now      func() time.Time
	log      *slog.Logger

	// reading holds a token per body being read (MaxReading).
	reading chan struct{}

	// seen holds the delivery ids of authentic, well-formed deliveries, keyed by a
	// hash of kind and id (so a long id costs no more memory than a short one).
	seen *ttlmap.Map[[sha256.Size]byte, struct{}]

	mu sync.Mutex // guards status and refusalLogged, and makes seen's look-up and remembering one step
	// status is by tracker kind.
	status map[string]*Status
	// refusalLogged is when a refusal of each kind and result was last logged, and how
	// many went unlogged since: anyone can send requests that are refused, so they are
	// logged at most once a minute each (the counts and metrics have them all).
	refusalLogged map[[2]string]*quietLog
}

// quietLog is the log throttle of one kind of refusal.
type quietLog struct {
	at         time.Time
	suppressed int
}

// refusalLogEvery is how often one kind of refusal is logged at most.
const refusalLogEvery = time.Minute

// New returns a Receiver. It panics if o.Settings or o.Deliver is nil: that is a wiring
// mistake, not something a request can cause.
func New(o Options) *Receiver {
	if o.Settings == nil || o.Deliver == nil {
		panic("webhook: New: Options.Settings and Options.Deliver are required")
	}
	r := &Receiver{settings: o.Settings, deliver: o.Deliver, count: o.Count, now: o.Now, log: o.Logger, status: map[string]*Status{}, reading: make(chan struct{}, MaxReading),
		refusalLogged: map[[2]string]*quietLog{}}
	if r.now == nil {
		r.now = time.Now
	}
	if r.log == nil {
		r.log = slog.Default()
	}
	window := o.ReplayWindow
	if window <= 0 {
		window = defaultReplayWindow
	}
	r.seen = ttlmap.New[[sha256.Size]byte, struct{}](window, maxRememberedIDs)
	return r
}

// Status is the record of one tracker kind's requests, for the dashboard and
// /api/v1/state.
type Status struct {
	Tracker string `json:"tracker"`
	// LastAt, LastEvent and LastResult describe the last counted request. LastEvent is
	// "" when the request never got as far as an authentic event name.
	LastAt     time.Time `json:"last_at"`
	LastEvent  string    `json:"last_event"`
	LastResult string    `json:"last_result"`
	// LastAcceptedAt is when a delivery was last accepted; zero if none was.
	LastAcceptedAt time.Time `json:"last_accepted_at"`
	// Counts are the requests by result, every result of Results() present.
	Counts map[string]int64 `json:"counts"`
}

// Status returns one Status per tracker kind that has had a counted request, sorted by
// Tracker. The caller owns the result.
func (r *Receiver) Status() []Status {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Status, 0, len(r.status))
	for _, s := range r.status {
		c := *s
		c.Counts = maps.Clone(s.Counts)
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b Status) int { return strings.Compare(a.Tracker, b.Tracker) })
	return out
}

// outcome is how a request ended.
type outcome struct {
	result string
	status int
	event  string
	reason error // why, for the log and the error answer; nil when accepted
	// unread says the body was left unread: the connection is closed rather than the
	// server reading the rest to reuse it.
	unread bool
}

// ServeHTTP answers a delivery at /webhooks/{kind}; the package comment gives the order
// of its checks and its answers.
func (r *Receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeError(w, http.StatusMethodNotAllowed, "method_not_allowed", "a webhook receiver takes POST only")
		return
	}
	kind, ok := strings.CutPrefix(req.URL.Path, "/webhooks/")
	rc, known := receivers[kind]
	if !ok || !known {
		writeError(w, http.StatusNotFound, "not_found", "no webhook receiver here; the receivers are /webhooks/"+strings.Join(Kinds(), ", /webhooks/"))
		return
	}
	now := r.now()
	d, o := r.receive(rc, kind, req, w, now)
	if o.result == Accepted {
		r.deliver(d)
	}
	r.record(kind, o, now)
	r.logOutcome(req, kind, d, o, now)
	r.answer(w, o)
}

// receive runs the checks in order and says how the request ends; d is the delivery as
// far as it was parsed.
func (r *Receiver) receive(rc receiver, kind string, req *http.Request, w http.ResponseWriter, now time.Time) (Delivery, outcome) {
	s := r.settings()
	if s.Tracker != kind || s.Secret == "" {
		return Delivery{}, outcome{result: NotConfigured, status: http.StatusNotFound, unread: true,
			reason: errors.New("webhooks for " + kind + " are not configured on this Sortie: tracker.kind is another, or tracker.webhook_secret is unset")}
	}
	if !rc.presented(req.Header) {
		return Delivery{}, outcome{result: Unauthorized, status: http.StatusUnauthorized, unread: true,
			reason: fmt.Errorf("%w: %s: %s", ErrUnauthorized, kind, rc.missing())}
	}
	if req.ContentLength > MaxBody {
		return Delivery{}, outcome{result: TooLarge, status: http.StatusRequestEntityTooLarge, unread: true, reason: errTooLarge}
	}
	select {
	case r.reading <- struct{}{}:
	default:
		return Delivery{}, outcome{result: Busy, status: http.StatusServiceUnavailable, unread: true,
			reason: fmt.Errorf("%d deliveries are being read already; try again", MaxReading)}
	}
	body, err := readBody(w, req)
	<-r.reading
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return Delivery{}, outcome{result: TooLarge, status: http.StatusRequestEntityTooLarge, reason: errTooLarge}
		}
		// Nothing proves who sent a body that stopped short: it counts as unauthorized,
		// not as a tracker's malformed delivery.
		return Delivery{}, outcome{result: Unauthorized, status: http.StatusBadRequest,
			reason: fmt.Errorf("%w: %s: the body ended before its length, so its signature could not be checked", ErrUnauthorized, kind)}
	}
	if err := Verify(kind, s.Secret, req.Header, body); err != nil {
		return Delivery{}, outcome{result: Unauthorized, status: http.StatusUnauthorized, reason: err}
	}

	d, result, err := Parse(kind, req.Header, body, s, now)
	o := outcome{result: result, event: d.Event, reason: err}
	switch result {
	case Accepted:
		o.status = http.StatusAccepted
	case Ignored:
		o.status = http.StatusOK
	case Stale:
		o.status = http.StatusUnauthorized
		return d, o
	default:
		o.status = http.StatusBadRequest
		return d, o
	}
	// Only deliveries that got this far are remembered: a forged one never reaches
	// here, so it can neither fill the memory nor push out a real id.
	if d.ID != "" && r.remembered(kind, d.ID, now) {
		return d, outcome{result: Replayed, status: http.StatusOK, event: d.Event,
			reason: errors.New(kind + ": this delivery id was received before: a retry or a redelivery")}
	}
	return d, o
}

var errTooLarge = errors.New("the body is larger than the 1 MiB a webhook receiver reads")

// readBody reads the whole body, failing with *http.MaxBytesError past MaxBody.
func readBody(w http.ResponseWriter, req *http.Request) ([]byte, error) {
	if req.Body == nil {
		return nil, nil
	}
	return io.ReadAll(http.MaxBytesReader(w, req.Body, MaxBody))
}

// remembered reports whether kind's delivery id was seen within the replay window, and
// remembers it from now if not. The look-up and the remembering are one step, so of two
// concurrent copies of a delivery exactly one is accepted.
func (r *Receiver) remembered(kind, id string, now time.Time) bool {
	key := sha256.Sum256([]byte(kind + "\x00" + id))
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.seen.Get(key, now); ok {
		return true
	}
	r.seen.Put(key, struct{}{}, now)
	return false
}

// record notes the outcome in kind's Status and counts it.
func (r *Receiver) record(kind string, o outcome, now time.Time) {
	r.mu.Lock()
	s := r.status[kind]
	if s == nil {
		s = &Status{Tracker: kind, Counts: make(map[string]int64, len(Results()))}
		for _, res := range Results() {
			s.Counts[res] = 0
		}
		r.status[kind] = s
	}
	s.LastAt, s.LastEvent, s.LastResult = now, o.event, o.result
	if o.result == Accepted {
		s.LastAcceptedAt = now
	}
	s.Counts[o.result]++
	r.mu.Unlock()
	if r.count != nil {
		r.count(kind, o.result)
	}
}

// logOutcome writes the request's log line. Nothing in it comes from the body but the
// event name and identifiers Parse validated; no header is logged but the delivery id,
// and that only once the request proved authentic.
func (r *Receiver) logOutcome(req *http.Request, kind string, d Delivery, o outcome, now time.Time) {
	level, msg := slog.LevelWarn, "webhook delivery refused"
	switch o.result {
	case Accepted:
		level, msg = slog.LevelInfo, "webhook delivery accepted"
	case Ignored, Replayed:
		level, msg = slog.LevelDebug, "webhook delivery "+o.result
	}
	suppressed := 0
	if level == slog.LevelWarn {
		var ok bool
		if suppressed, ok = r.mayLogRefusal(kind, o.result, now); !ok {
			return
		}
	}
	attrs := []slog.Attr{slog.String("tracker", kind), slog.String("result", o.result), slog.String("remote", req.RemoteAddr)}
	if suppressed > 0 {
		attrs = append(attrs, slog.Int("unlogged_since_last", suppressed))
	}
	if o.event != "" {
		attrs = append(attrs, slog.String("event", o.event))
	}
	if d.ID != "" {
		attrs = append(attrs, slog.String("delivery", d.ID))
	}
	if len(d.Issues) > 0 {
		attrs = append(attrs, slog.Any("issues", d.Issues))
	}
	if o.reason != nil {
		attrs = append(attrs, slog.String("reason", o.reason.Error()))
	}
	r.log.LogAttrs(req.Context(), level, msg, attrs...)
}

// mayLogRefusal reports whether a refusal of kind and result may be logged at now,
// and how many were not logged since the last that was.
func (r *Receiver) mayLogRefusal(kind, result string, now time.Time) (int, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	key := [2]string{kind, result}
	q := r.refusalLogged[key]
	if q == nil {
		q = &quietLog{}
		r.refusalLogged[key] = q
	} else if now.Sub(q.at) < refusalLogEvery {
		q.suppressed++
		return 0, false
	}
	n := q.suppressed
	q.at, q.suppressed = now, 0
	return n, true
}

// answer writes the JSON answer: {"result":…} for accepted, ignored and replayed, the
// error envelope for the rest.
func (r *Receiver) answer(w http.ResponseWriter, o outcome) {
	if o.result == Busy {
		w.Header().Set("Retry-After", "1")
	}
	if o.unread {
		// The server would otherwise read what is left of an unauthenticated body to
		// reuse the connection.
		w.Header().Set("Connection", "close")
	}
	switch o.result {
	case Accepted, Ignored, Replayed:
		writeJSON(w, o.status, map[string]string{"result": o.result})
	default:
		msg := o.result
		if o.reason != nil {
			msg = o.reason.Error()
		}
		writeError(w, o.status, o.result, msg)
	}
}

// errorBody is the error envelope, as the daemon's API writes it.
type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func writeError(w http.ResponseWriter, status int, code, message string) {
	writeJSON(w, status, errorBody{errorDetail{code, message}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	var buf bytes.Buffer
	_ = json.NewEncoder(&buf).Encode(v) // strings and maps of strings: cannot fail
	h := w.Header()
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}
