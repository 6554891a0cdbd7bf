package server

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"time"
	"unicode/utf8"

	"sortie/internal/agent"
	"sortie/internal/orchestrator"
)

const (
	// feedWriteTimeout bounds each write of the live feed: a client that stops
	// reading is disconnected instead of holding its goroutine forever.
	feedWriteTimeout = 30 * time.Second
	// feedBatch is how many buffered activities are written before a flush.
	feedBatch = 64
	// maxFeedMessageBytes bounds the text of one activity on the feed; agent output
	// can be megabytes. The full text is in the store's event log and the API.
	maxFeedMessageBytes = 2048
	// feedRetryMS is the reconnection delay the feed asks EventSource to use.
	feedRetryMS = 2000
)

// handleEvents is GET /api/v1/events[?issue=<identifier>]: the live feed as
// Server-Sent Events. Each activity is "event: <kind>\ndata: <JSON>\n\n"; a client
// that falls behind gets "event: dropped" with the count it missed; a comment keeps
// idle connections open. It ends when the client leaves or the server stops.
func (s *Server) handleEvents(w http.ResponseWriter, r *http.Request) {
	if s.opts.Hub == nil {
		writeError(w, http.StatusServiceUnavailable, codeEventsUnavailable, "this daemon serves no live feed")
		return
	}
	issue := r.URL.Query().Get("issue")
	if len(issue) > maxIdentifierLen {
		writeError(w, http.StatusBadRequest, codeInvalidQuery,
			"issue: an identifier is at most "+strconv.Itoa(maxIdentifierLen)+" bytes")
		return
	}
	if r.Method == http.MethodHead {
		w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
		return
	}
	rc := http.NewResponseController(w)

	c := s.opts.Hub.subscribe(issue)
	defer s.opts.Hub.unsubscribe(c)

	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no") // tell a reverse proxy (nginx) not to buffer the stream
	w.WriteHeader(http.StatusOK)

	var buf bytes.Buffer
	buf.WriteString("retry: " + strconv.Itoa(feedRetryMS) + "\n\n")
	flush := func() bool {
		// The server's WriteTimeout, counted from the request's start, suits short
		// answers; this one lasts. Each write gets its own deadline instead. (The read
		// deadline is no concern: net/http lifts it once the request is read.) An
		// error means the writer has no deadlines, a test recorder: nothing to move.
		_ = rc.SetWriteDeadline(time.Now().Add(feedWriteTimeout))
		if _, err := w.Write(buf.Bytes()); err != nil {
			return false
		}
		buf.Reset()
		return rc.Flush() == nil
	}
	if !flush() {
		return
	}
	tick, stopTick := s.ticker(s.keepalive)
	defer stopTick()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-s.stopping:
			return
		case <-tick:
			writeDropped(&buf, c.dropped.Swap(0))
			buf.WriteString(": keepalive\n\n")
		case it := <-c.items:
			writeItem(&buf, it)
			// Write what else is waiting in one flush, up to a batch.
		batch:
			for n := 1; n < feedBatch; n++ {
				select {
				case it := <-c.items:
					writeItem(&buf, it)
				default:
					break batch
				}
			}
			if len(c.items) == 0 {
				// Drops after the last delivered activity are reported now, not with
				// the next one, which may be long in coming.
				writeDropped(&buf, c.dropped.Swap(0))
			}
		}
		if !flush() {
			return
		}
	}
}

func writeItem(buf *bytes.Buffer, it feedItem) {
	writeDropped(buf, it.dropped)
	buf.WriteString("event: ")
	buf.WriteString(string(it.a.Kind))
	buf.WriteString("\ndata: ")
	// json.Marshal escapes line breaks, so the data is one line as SSE requires.
	b, err := json.Marshal(activityOf(it.a))
	if err != nil {
		b = []byte(`{"kind":"` + string(it.a.Kind) + `"}`)
	}
	buf.Write(b)
	buf.WriteString("\n\n")
}

func writeDropped(buf *bytes.Buffer, n int64) {
	if n > 0 {
		buf.WriteString("event: dropped\ndata: {\"dropped\":")
		buf.WriteString(strconv.FormatInt(n, 10))
		buf.WriteString("}\n\n")
	}
}

// activityJSON is an orchestrator.Activity on the live feed: the same fields under
// the same names, with the agent event in snake_case, durations in milliseconds and
// long texts cut to maxFeedMessageBytes.
type activityJSON struct {
	Kind       orchestrator.ActivityKind `json:"kind"`
	Time       time.Time                 `json:"time"`
	IssueID    string                    `json:"issue_id,omitempty"`
	Identifier string                    `json:"issue_identifier,omitempty"`
	RunID      int64                     `json:"run_id,omitempty"`
	Event      *agentEventJSON           `json:"event,omitempty"`
	// Delta is what a token_usage event added to the run's tokens.
	Delta      *agent.Usage `json:"delta,omitempty"`
	Result     string       `json:"result,omitempty"`
	DurationMS int64        `json:"duration_ms,omitempty"`
	Message    string       `json:"message,omitempty"`
	Attempt    int          `json:"attempt,omitempty"`
	CostUSD    float64      `json:"cost_usd,omitempty"`
	Model      string       `json:"model,omitempty"`
}

// agentEventJSON is an agent.Event on the live feed.
type agentEventJSON struct {
	Type      agent.EventType `json:"type"`
	Time      *time.Time      `json:"time,omitempty"`
	SessionID string          `json:"session_id,omitempty"`
	PID       int             `json:"pid,omitempty"`
	Message   string          `json:"message,omitempty"`
	Model     string          `json:"model,omitempty"`
	// Usage is the session's cumulative tokens, on token_usage events.
	Usage          *agent.Usage `json:"usage,omitempty"`
	CostUSD        float64      `json:"cost_usd,omitempty"`
	APIDurationMS  int64        `json:"api_duration_ms,omitempty"`
	ToolName       string       `json:"tool_name,omitempty"`
	ToolDurationMS int64        `json:"tool_duration_ms,omitempty"`
	ToolError      bool         `json:"tool_error,omitempty"`
}

func activityOf(a orchestrator.Activity) activityJSON {
	out := activityJSON{
		Kind: a.Kind, Time: a.Time, IssueID: a.IssueID, Identifier: a.Identifier, RunID: a.RunID,
		Result: a.Result, DurationMS: a.Duration.Milliseconds(), Message: cut(a.Message, maxFeedMessageBytes),
		Attempt: a.Attempt, CostUSD: a.CostUSD, Model: a.Model,
	}
	if a.Delta != (agent.Usage{}) {
		d := a.Delta
		out.Delta = &d
	}
	if e := a.Event; e != nil {
		ev := &agentEventJSON{Type: e.Type, Time: optTime(e.Time), SessionID: e.SessionID, PID: e.PID,
			Message: cut(e.Message, maxFeedMessageBytes), Model: e.Model, CostUSD: e.CostUSD,
			APIDurationMS: e.APIDurationMS, ToolName: e.ToolName, ToolDurationMS: e.ToolDurationMS, ToolError: e.ToolError}
		if e.Usage != (agent.Usage{}) {
			u := e.Usage
			ev.Usage = &u
		}
		out.Event = ev
	}
	return out
}

// cut bounds s to n bytes on a rune boundary, marking the cut with "…".
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const mark = "…"
	i := n - len(mark)
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + mark
}
