package engine

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"sortie/internal/store"
)

// maxSegment bounds the events one trace token carries; older ones of a long
// segment are dropped (they stay in the stored trace).
const maxSegment = 200

// maxTraceTokenLen bounds a trace token get_trace accepts.
const maxTraceTokenLen = 256 << 10

// traceEvent is the compact event of a trace token and get_trace
// (workflow-server-behaviour.md §7).
type traceEvent struct {
	TraceID string   `json:"traceId"`
	SpanID  string   `json:"spanId"`
	Name    string   `json:"name"`
	TS      int64    `json:"ts"`
	MS      int64    `json:"ms"`
	S       string   `json:"s"`
	WF      string   `json:"wf"`
	Act     string   `json:"act"`
	AID     string   `json:"aid"`
	Err     string   `json:"err,omitempty"`
	VW      []string `json:"vw,omitempty"`
	Detail  string   `json:"detail,omitempty"`
	RunID   int64    `json:"run_id,omitempty"`
}

func compact(e store.TraceEvent) traceEvent {
	s := "ok"
	if !e.OK {
		s = "error"
	}
	return traceEvent{TraceID: e.SessionID, SpanID: e.SpanID, Name: e.Tool, TS: e.TS.Unix(), MS: e.Duration.Milliseconds(), S: s,
		WF: e.Workflow, Act: e.Activity, AID: e.AgentID, Err: e.Error, VW: e.Warnings, Detail: e.Detail, RunID: e.RunID}
}

// trace records a traced call. Calls whose session is unknown (a token that did
// not verify) have no trace to go to and are not recorded.
func (e *Engine) trace(c *call, start time.Time, resp Response) {
	p := c.out
	if p == nil {
		p = c.in
	}
	if p == nil {
		return
	}
	ev := store.TraceEvent{SessionID: p.SessionID, SpanID: newSpanID(), IssueID: c.caller.IssueID, RunID: c.caller.RunID,
		Tool: c.tool, TS: start, Duration: e.o.Now().Sub(start), OK: !resp.IsError, Workflow: p.Workflow,
		Activity: c.activityForLog, AgentID: p.AgentID, Warnings: c.warnings, Detail: c.detail}
	if resp.IsError {
		if b, ok := resp.Body.(errorBody); ok {
			ev.Error = b.Kind + ": " + b.Error
		}
	}
	id, err := e.o.State.AppendTraceEvent(c.ctx, ev)
	if err != nil {
		e.o.Log.Warn("recording a workflow trace event failed", "session_id", p.SessionID, "tool", c.tool, "error", err)
	}
	ev.ID = id
	e.mu.Lock()
	e.appendSegmentLocked(ev)
	e.mu.Unlock()
	if h := e.o.Hooks.Traced; h != nil {
		c.later(func() { h(ev) })
	}
}

// appendSegmentLocked adds ev to its session's current trace segment, which keeps the
// newest maxSegment events. e.mu must be held.
func (e *Engine) appendSegmentLocked(ev store.TraceEvent) {
	seg := append(e.segments[ev.SessionID], compact(ev))
	if len(seg) > maxSegment {
		seg = seg[len(seg)-maxSegment:]
	}
	e.segments[ev.SessionID] = seg
}

// tracePayload is the signed content of a trace token.
type tracePayload struct {
	SID    string       `json:"sid"`
	Act    string       `json:"act"`
	From   string       `json:"from"`
	To     string       `json:"to"`
	N      int          `json:"n"`
	T0     int64        `json:"t0"`
	T1     int64        `json:"t1"`
	TS     int64        `json:"ts"`
	Events []traceEvent `json:"events"`
}

// traceToken closes the session's current trace segment into a signed token for
// next_activity(act). It returns "" when the segment is empty.
func (e *Engine) traceToken(sid, act string, now time.Time) string {
	e.mu.Lock()
	seg := e.segments[sid]
	delete(e.segments, sid)
	e.mu.Unlock()
	if len(seg) == 0 {
		return ""
	}
	p := tracePayload{SID: sid, Act: act, From: seg[0].SpanID, To: seg[len(seg)-1].SpanID, N: len(seg),
		T0: seg[0].TS, T1: seg[len(seg)-1].TS, TS: now.Unix(), Events: seg}
	b, err := json.Marshal(p)
	if err != nil {
		return ""
	}
	body := base64.RawURLEncoding.EncodeToString(b)
	return body + "." + e.traceMAC(body)
}

func (e *Engine) traceMAC(body string) string {
	m := hmac.New(sha256.New, e.traceKey)
	m.Write([]byte(body))
	return hex.EncodeToString(m.Sum(nil))
}

// ParseTraceToken verifies a trace token and returns its payload.
func (e *Engine) parseTraceToken(tok string) (tracePayload, error) {
	if len(tok) > maxTraceTokenLen {
		return tracePayload{}, fmt.Errorf("longer than %d bytes", maxTraceTokenLen)
	}
	body, sig, ok := strings.Cut(tok, ".")
	if !ok || body == "" || len(sig) != 2*sha256.Size {
		return tracePayload{}, fmt.Errorf("not a trace token")
	}
	if !hmac.Equal([]byte(e.traceMAC(body)), []byte(sig)) {
		return tracePayload{}, fmt.Errorf("signature verification failed: the token was altered or not issued by this server")
	}
	raw, err := base64.RawURLEncoding.Strict().DecodeString(body)
	if err != nil {
		return tracePayload{}, fmt.Errorf("payload is not unpadded base64url")
	}
	var p tracePayload
	if err := json.Unmarshal(raw, &p); err != nil {
		return tracePayload{}, fmt.Errorf("payload is not a trace: %v", err)
	}
	return p, nil
}

// maxTraceEvents bounds get_trace's answer from the stored trace.
const maxTraceEvents = 1000

func (c *call) getTrace(args json.RawMessage) (any, error) {
	var a struct {
		SessionToken string    `json:"session_token"`
		TraceTokens  *[]string `json:"trace_tokens"`
	}
	if _, err := c.begin(args, &a, &a.SessionToken, true); err != nil {
		return nil, err
	}
	sid := c.in.SessionID
	body := map[string]any{"traceId": sid}
	events := []traceEvent{}
	if a.TraceTokens != nil {
		var bad []string
		for i, t := range *a.TraceTokens {
			p, err := c.e.parseTraceToken(t)
			switch {
			case err != nil:
				bad = append(bad, fmt.Sprintf("trace_tokens[%d]: %v", i, err))
			case p.SID != sid:
				bad = append(bad, fmt.Sprintf("trace_tokens[%d]: belongs to another session", i))
			default:
				events = append(events, p.Events...)
			}
		}
		body["source"] = "tokens"
		if len(bad) > 0 {
			body["token_errors"] = bad
		}
	} else {
		stored, err := c.e.o.State.TraceEvents(c.ctx, sid, maxTraceEvents)
		if err != nil {
			return nil, fail(KindStateUnavailable, "reading the session's trace failed (%v); retry, or pass trace_tokens", err)
		}
		for _, e := range stored {
			events = append(events, compact(e))
		}
		body["source"] = "store"
		body["tracing_enabled"] = true
	}
	if err := c.issue(*c.in); err != nil {
		return nil, err
	}
	body["event_count"] = len(events)
	body["events"] = events
	return c.withToken(body), nil
}
