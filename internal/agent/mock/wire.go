package mock

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// The mock child's stdout is JSONL, one wireEvent per line (docs/agents/mock.md):
//
//	{"type":"session_started","session_id":"…","model":"mock-model"}
//	{"type":"notification","message":"…"}
//	{"type":"tool_result","name":"Bash","duration_ms":40,"error":false,"message":"…"}
//	{"type":"usage","input_tokens":1200,"output_tokens":300,"cache_read_tokens":0,"model":"…","api_duration_ms":0}
//	{"type":"result","outcome":"success","message":"…"}
//
// usage carries this turn's tokens, like one API response; the adapter keeps the
// session's running totals. Unknown fields are ignored, unknown types become
// other_message events and lines that do not parse become malformed events.
const (
	wireSessionStarted = "session_started"
	wireNotification   = "notification"
	wireToolResult     = "tool_result"
	wireUsage          = "usage"
	wireResult         = "result"
)

// wireEvent is one line of the child's stdout.
type wireEvent struct {
	Type            string `json:"type"`
	SessionID       string `json:"session_id,omitempty"`
	Model           string `json:"model,omitempty"`
	Message         string `json:"message,omitempty"`
	InputTokens     int64  `json:"input_tokens,omitempty"`
	OutputTokens    int64  `json:"output_tokens,omitempty"`
	CacheReadTokens int64  `json:"cache_read_tokens,omitempty"`
	APIDurationMS   int64  `json:"api_duration_ms,omitempty"`
	Name            string `json:"name,omitempty"`
	DurationMS      int64  `json:"duration_ms,omitempty"`
	Error           bool   `json:"error,omitempty"`
	Outcome         string `json:"outcome,omitempty"`
}

// Limits on what one line may claim, so that agent output can never overflow the
// session's counters or flood the event stream with huge strings.
const (
	maxWireCount   = maxTokens
	maxWireString  = 4096 // bytes kept of message, model, name, session id
	maxMalformed   = 500  // bytes of an unparseable line kept in its malformed event
	maxWireIDBytes = 256
)

var errNoType = errors.New(`missing "type"`)

// parseEventLine decodes one stdout line. It never panics; any error means the line
// is reported as a malformed event. Strings are cut to bounded, valid UTF-8.
func parseEventLine(line []byte) (wireEvent, error) {
	var ev wireEvent
	line = bytes.TrimSpace(line)
	if len(line) == 0 || line[0] != '{' {
		return wireEvent{}, errors.New("not a JSON object")
	}
	if err := json.Unmarshal(line, &ev); err != nil {
		return wireEvent{}, err
	}
	if ev.Type == "" {
		return wireEvent{}, errNoType
	}
	for _, n := range []struct {
		name string
		v    int64
	}{
		{"input_tokens", ev.InputTokens}, {"output_tokens", ev.OutputTokens},
		{"cache_read_tokens", ev.CacheReadTokens}, {"api_duration_ms", ev.APIDurationMS},
		{"duration_ms", ev.DurationMS},
	} {
		if n.v < 0 || n.v > maxWireCount {
			return wireEvent{}, fmt.Errorf("%s out of range (got %d)", n.name, n.v)
		}
	}
	if len(ev.SessionID) > maxWireIDBytes {
		return wireEvent{}, fmt.Errorf("session_id longer than %d bytes", maxWireIDBytes)
	}
	ev.Type = truncate(ev.Type, maxWireIDBytes)
	ev.Model = truncate(ev.Model, maxWireString)
	ev.Message = truncate(ev.Message, maxWireString)
	ev.Name = truncate(ev.Name, maxWireString)
	ev.Outcome = truncate(ev.Outcome, maxWireIDBytes)
	return ev, nil
}

// truncate replaces invalid UTF-8 in s, then cuts it to at most n bytes on a rune
// boundary.
func truncate(s string, n int) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	if len(s) > n {
		cut := n
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut]
	}
	return s
}
