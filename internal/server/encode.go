package server

import (
	"encoding/json"
	"math"
	"strconv"
	"time"
	"unicode/utf8"

	"sortie/internal/agent"
	"sortie/internal/orchestrator"
)

// The running list is nearly all of GET /api/v1/state (about 700 bytes per session),
// and encoding/json spends most of its time there on reflection and on re-validating
// time.Time's output. appendRunning writes an entry directly instead, byte for byte
// what json.Marshal(runningOf(v, now)) writes (TestAppendRunning_MatchesEncodingJSON
// holds it to that), which makes the 500-session state several times cheaper.

// appendState appends the JSON of a stateBody made of head, the running sessions and
// tail, as json.Marshal(stateBody{head, running, tail}) would.
func appendState(dst []byte, head stateHead, running []orchestrator.RunningView, now time.Time, tail stateTail) ([]byte, error) {
	h, err := json.Marshal(head)
	if err != nil {
		return dst, err
	}
	t, err := json.Marshal(tail)
	if err != nil {
		return dst, err
	}
	dst = append(dst, h[:len(h)-1]...) // without its closing brace
	dst = append(dst, `,"running":[`...)
	for i, v := range running {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendRunning(dst, v, now)
	}
	dst = append(dst, "],"...)
	return append(dst, t[1:]...), nil // without its opening brace
}

// appendRunning appends runningOf(v, now) as JSON.
func appendRunning(b []byte, v orchestrator.RunningView, now time.Time) []byte {
	b = append(b, `{"issue_id":`...)
	b = appendString(b, v.IssueID)
	b = append(b, `,"issue_identifier":`...)
	b = appendString(b, v.Identifier)
	b = append(b, `,"title":`...)
	b = appendString(b, v.Title)
	b = append(b, `,"state":`...)
	b = appendString(b, v.State)
	b = append(b, `,"attempt":`...)
	b = strconv.AppendInt(b, int64(v.Attempt), 10)
	b = append(b, `,"turn":`...)
	b = strconv.AppendInt(b, int64(v.Turn), 10)
	b = append(b, `,"max_turns":`...)
	b = strconv.AppendInt(b, int64(v.MaxTurns), 10)
	b = append(b, `,"session_id":`...)
	b = appendString(b, v.SessionID)
	b = append(b, `,"pid":`...)
	b = strconv.AppendInt(b, int64(v.PID), 10)
	b = append(b, `,"host":`...)
	b = appendString(b, v.Host)
	b = append(b, `,"workspace_path":`...)
	b = appendString(b, v.Workspace)
	b = append(b, `,"started_at":`...)
	b = appendTime(b, v.StartedAt)
	b = append(b, `,"elapsed_seconds":`...)
	b = appendFloat(b, seconds(now.Sub(v.StartedAt)))
	b = append(b, `,"last_event_at":`...)
	if v.LastEventAt.IsZero() {
		b = append(b, "null"...)
	} else {
		b = appendTime(b, v.LastEventAt)
	}
	b = append(b, `,"last_event":`...)
	b = appendString(b, v.LastEvent)
	b = append(b, `,"last_message":`...)
	b = appendString(b, v.LastMessage)
	b = append(b, `,"tokens":`...)
	b = appendUsage(b, v.Tokens)
	b = append(b, `,"cost_usd":`...)
	b = appendFloat(b, v.CostUSD)
	b = append(b, `,"model":`...)
	b = appendString(b, v.Model)
	b = append(b, `,"tool_calls":`...)
	b = strconv.AppendInt(b, int64(v.ToolCalls), 10)
	b = append(b, `,"api_requests":`...)
	b = strconv.AppendInt(b, int64(v.APIRequests), 10)
	b = append(b, `,"stopping":`...)
	b = appendString(b, v.Stopping)
	b = append(b, `,"run_id":`...)
	b = strconv.AppendInt(b, v.RunID, 10)
	b = append(b, `,"reaction":`...)
	b = appendString(b, v.Reaction)
	b = append(b, `,"self_review_iteration":`...)
	b = strconv.AppendInt(b, int64(v.SelfReview), 10)
	return append(b, '}')
}

func appendUsage(b []byte, u agent.Usage) []byte {
	b = append(b, `{"input_tokens":`...)
	b = strconv.AppendInt(b, u.Input, 10)
	b = append(b, `,"output_tokens":`...)
	b = strconv.AppendInt(b, u.Output, 10)
	b = append(b, `,"total_tokens":`...)
	b = strconv.AppendInt(b, u.Total, 10)
	b = append(b, `,"cache_read_tokens":`...)
	b = strconv.AppendInt(b, u.CacheRead, 10)
	return append(b, '}')
}

// appendTime appends t as time.Time.MarshalJSON does (RFC 3339 with nanoseconds).
// Years outside 0–9999, which MarshalJSON refuses, cannot come from the scheduler's
// clock; they are written as null rather than failing the response.
func appendTime(b []byte, t time.Time) []byte {
	if y := t.Year(); y < 0 || y > 9999 {
		return append(b, "null"...)
	}
	b = append(b, '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b, '"')
}

// appendFloat appends f as encoding/json writes a float64 (ES6 number formatting).
// NaN and infinities, which JSON cannot hold, are written as 0.
func appendFloat(b []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(b, '0')
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// e-09 → e-9, as encoding/json does.
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string exactly as encoding/json does with its
// default HTML escaping: <, > and & as \u00XX, invalid UTF-8 as \ufffd, and U+2028
// and U+2029 escaped.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
