package fakemodel

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// patience bounds how long a test waits for something that is already under way (a
// stall to be announced, Close to return) before it fails. It is never a wait for a
// condition to become true.
const patience = 10 * time.Second

// --- a Messages API client, as the CLIs speak it -------------------------------------

// messagesBody is a minimal valid Messages API request.
func messagesBody(model string, stream bool) string {
	return fmt.Sprintf(`{"model":%q,"max_tokens":1024,"stream":%t,"messages":[{"role":"user","content":"hi"}]}`, model, stream)
}

func sendRequest(ctx context.Context, method, url, body string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Api-Key", "sk-ant-test")
	req.Header.Set("Anthropic-Version", "2023-06-01")
	return http.DefaultClient.Do(req)
}

func mustDo(t *testing.T, method, url, body string) *http.Response {
	t.Helper()
	resp, err := sendRequest(t.Context(), method, url, body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// apiMessage is a Messages API message as a client assembles it.
type apiMessage struct {
	ID           string     `json:"id"`
	Type         string     `json:"type"`
	Role         string     `json:"role"`
	Model        string     `json:"model"`
	Content      []apiBlock `json:"content"`
	StopReason   *string    `json:"stop_reason"`
	StopSequence *string    `json:"stop_sequence"`
	Usage        apiUsage   `json:"usage"`
}

type apiBlock struct {
	Type  string          `json:"type"`
	Text  string          `json:"text,omitempty"`
	ID    string          `json:"id,omitempty"`
	Name  string          `json:"name,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`
}

type apiUsage struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
}

type apiError struct {
	Type  string `json:"type"`
	Error struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

// sseEvent is one server-sent event: its name and its data lines joined.
type sseEvent struct {
	Event string
	Data  string
}

// sseReader parses a text/event-stream as the WHATWG HTML spec says (9.2.6): fields
// up to a blank line make an event, one space after the colon is dropped, data lines
// join with newlines, lines starting with a colon are comments, and an event the
// stream ends before dispatching is discarded.
type sseReader struct{ r *bufio.Reader }

func newSSEReader(r io.Reader) *sseReader { return &sseReader{r: bufio.NewReader(r)} }

// Next returns the next event, io.EOF at a clean end, or the read error.
func (s *sseReader) Next() (sseEvent, error) {
	var ev sseEvent
	var data []string
	seen := false
	for {
		line, err := s.r.ReadString('\n')
		if err != nil {
			if errors.Is(err, io.EOF) && line == "" {
				return sseEvent{}, io.EOF
			}
			if errors.Is(err, io.EOF) {
				return sseEvent{}, fmt.Errorf("stream ended inside an event (%q)", line)
			}
			return sseEvent{}, err
		}
		line = strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
		if line == "" {
			if !seen {
				continue
			}
			ev.Data = strings.Join(data, "\n")
			if ev.Event == "" {
				ev.Event = "message"
			}
			return ev, nil
		}
		if strings.HasPrefix(line, ":") {
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "event":
			ev.Event, seen = value, true
		case "data":
			data, seen = append(data, value), true
		}
	}
}

// readEvents reads a whole stream.
func readEvents(r io.Reader) ([]sseEvent, error) {
	sr := newSSEReader(r)
	var out []sseEvent
	for {
		ev, err := sr.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, ev)
	}
}

func eventNames(events []sseEvent) []string {
	var out []string
	for _, ev := range events {
		out = append(out, ev.Event)
	}
	return out
}

// streamEvent is the data of any Messages stream event.
type streamEvent struct {
	Type         string          `json:"type"`
	Index        *int            `json:"index"`
	Message      json.RawMessage `json:"message"`
	ContentBlock json.RawMessage `json:"content_block"`
	Delta        json.RawMessage `json:"delta"`
	Usage        json.RawMessage `json:"usage"`
}

// accumulate builds the message a stream carries, the way the SDKs do, and fails on
// anything the real API would never send: an event whose name is not its data's type,
// events out of order, a delta for a block that is not open, a tool_use whose
// partial_json does not add up to JSON.
func accumulate(events []sseEvent) (apiMessage, error) {
	var msg apiMessage
	var partial []string // partial_json per block
	open := -1
	started, delta, stopped := false, false, false
	for i, ev := range events {
		var se streamEvent
		if err := json.Unmarshal([]byte(ev.Data), &se); err != nil {
			return msg, fmt.Errorf("event %d (%s): data is not JSON: %v", i, ev.Event, err)
		}
		if se.Type != ev.Event {
			return msg, fmt.Errorf("event %d is named %q but its data has type %q", i, ev.Event, se.Type)
		}
		if stopped {
			return msg, fmt.Errorf("event %d (%s) after message_stop", i, ev.Event)
		}
		if !started && se.Type != "message_start" {
			return msg, fmt.Errorf("event %d is %s, want message_start first", i, se.Type)
		}
		index := func() (int, error) {
			if se.Index == nil {
				return 0, fmt.Errorf("event %d (%s) has no index", i, se.Type)
			}
			return *se.Index, nil
		}
		switch se.Type {
		case "message_start":
			if started {
				return msg, fmt.Errorf("event %d: a second message_start", i)
			}
			started = true
			if err := requireKeys(se.Message, "id", "type", "role", "model", "content", "stop_reason", "stop_sequence", "usage"); err != nil {
				return msg, fmt.Errorf("message_start.message: %v", err)
			}
			if err := json.Unmarshal(se.Message, &msg); err != nil {
				return msg, fmt.Errorf("message_start.message: %v", err)
			}
			if len(msg.Content) != 0 || msg.Content == nil || msg.StopReason != nil || msg.StopSequence != nil {
				return msg, fmt.Errorf("message_start.message = %s, want content [] and null stop_reason and stop_sequence", se.Message)
			}
		case "ping":
		case "content_block_start":
			n, err := index()
			if err != nil {
				return msg, err
			}
			if open != -1 || delta || n != len(msg.Content) {
				return msg, fmt.Errorf("event %d: content_block_start index %d with block %d open and %d blocks", i, n, open, len(msg.Content))
			}
			var b apiBlock
			if err := json.Unmarshal(se.ContentBlock, &b); err != nil {
				return msg, fmt.Errorf("event %d: content_block: %v", i, err)
			}
			switch b.Type {
			case "text":
				if err := requireKeys(se.ContentBlock, "text"); err != nil || b.Text != "" {
					return msg, fmt.Errorf("event %d: text block starts as %s, want text \"\"", i, se.ContentBlock)
				}
			case "tool_use":
				if b.ID == "" || b.Name == "" || string(b.Input) != "{}" {
					return msg, fmt.Errorf("event %d: tool_use block starts as %s, want an id, a name and input {}", i, se.ContentBlock)
				}
				b.Input = nil
			}
			msg.Content = append(msg.Content, b)
			partial = append(partial, "")
			open = n
		case "content_block_delta":
			n, err := index()
			if err != nil {
				return msg, err
			}
			if n != open {
				return msg, fmt.Errorf("event %d: delta for block %d, open block is %d", i, n, open)
			}
			var d struct {
				Type        string  `json:"type"`
				Text        *string `json:"text"`
				PartialJSON *string `json:"partial_json"`
			}
			if err := json.Unmarshal(se.Delta, &d); err != nil {
				return msg, fmt.Errorf("event %d: delta: %v", i, err)
			}
			b := &msg.Content[n]
			switch {
			case d.Type == "text_delta" && b.Type == "text" && d.Text != nil:
				b.Text += *d.Text
			case d.Type == "input_json_delta" && b.Type == "tool_use" && d.PartialJSON != nil:
				partial[n] += *d.PartialJSON
			default:
				return msg, fmt.Errorf("event %d: delta %s for a %s block", i, se.Delta, b.Type)
			}
		case "content_block_stop":
			n, err := index()
			if err != nil {
				return msg, err
			}
			if n != open {
				return msg, fmt.Errorf("event %d: stop for block %d, open block is %d", i, n, open)
			}
			if b := &msg.Content[n]; b.Type == "tool_use" {
				in := partial[n]
				if in == "" {
					in = "{}"
				}
				if !json.Valid([]byte(in)) {
					return msg, fmt.Errorf("event %d: tool_use input %q is not JSON", i, in)
				}
				b.Input = json.RawMessage(in)
			}
			open = -1
		case "message_delta":
			if open != -1 || delta {
				return msg, fmt.Errorf("event %d: message_delta with block %d open or after another message_delta", i, open)
			}
			delta = true
			var d struct {
				StopReason   *string `json:"stop_reason"`
				StopSequence *string `json:"stop_sequence"`
			}
			if err := requireKeys(se.Delta, "stop_reason", "stop_sequence"); err != nil {
				return msg, fmt.Errorf("message_delta.delta: %v", err)
			}
			if err := json.Unmarshal(se.Delta, &d); err != nil {
				return msg, fmt.Errorf("message_delta.delta: %v", err)
			}
			var u struct {
				OutputTokens *int64 `json:"output_tokens"`
			}
			if err := json.Unmarshal(se.Usage, &u); err != nil || u.OutputTokens == nil {
				return msg, fmt.Errorf("message_delta.usage = %s, want output_tokens", se.Usage)
			}
			msg.StopReason, msg.StopSequence, msg.Usage.OutputTokens = d.StopReason, d.StopSequence, *u.OutputTokens
		case "message_stop":
			if !delta {
				return msg, fmt.Errorf("event %d: message_stop before message_delta", i)
			}
			stopped = true
		default:
			return msg, fmt.Errorf("event %d: unknown event %q", i, se.Type)
		}
	}
	if !stopped {
		return msg, fmt.Errorf("stream ended without message_stop (events %v)", eventNames(events))
	}
	return msg, nil
}

// requireKeys fails unless the JSON object has every key (null counts as present).
func requireKeys(raw json.RawMessage, keys ...string) error {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return err
	}
	for _, k := range keys {
		if _, ok := obj[k]; !ok {
			return fmt.Errorf("no %q in %s", k, raw)
		}
	}
	return nil
}

func sameJSON(a, b []byte) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}

// streamMessage posts a streaming request and returns its events and the message they
// make up.
func streamMessage(t *testing.T, s *Server, model string) (apiMessage, []sseEvent) {
	t.Helper()
	resp := mustDo(t, http.MethodPost, s.URL+"/v1/messages?beta=true", messagesBody(model, true))
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("stream: status %d (%s), want 200", resp.StatusCode, b)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("stream: Content-Type = %q, want text/event-stream", ct)
	}
	events, err := readEvents(resp.Body)
	if err != nil {
		t.Fatalf("stream: reading events: %v", err)
	}
	msg, err := accumulate(events)
	if err != nil {
		t.Fatalf("stream: %v", err)
	}
	return msg, events
}

// jsonMessage posts a non-streaming request and returns the message and its raw body.
func jsonMessage(t *testing.T, s *Server, model string) (apiMessage, []byte) {
	t.Helper()
	resp := mustDo(t, http.MethodPost, s.URL+"/v1/messages", messagesBody(model, false))
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("json: reading body: %v", err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("json: status %d (%s), want 200", resp.StatusCode, body)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("json: Content-Type = %q, want application/json", ct)
	}
	if err := requireKeys(body, "id", "type", "role", "model", "content", "stop_reason", "stop_sequence", "usage"); err != nil {
		t.Fatalf("json: %v", err)
	}
	var msg apiMessage
	if err := json.Unmarshal(body, &msg); err != nil {
		t.Fatalf("json: %v in %s", err, body)
	}
	return msg, body
}

func replyText(m apiMessage) string {
	var parts []string
	for _, b := range m.Content {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "")
}

func orNull(p *string) string {
	if p == nil {
		return "<null>"
	}
	return *p
}

func replies(reqs []Request) []int {
	var out []int
	for _, r := range reqs {
		out = append(out, r.Reply)
	}
	return out
}

// --- streaming ---------------------------------------------------------------------

func TestStream_TextReplyEventsInTheAPIsOrderAndShape(t *testing.T) {
	s := Start(t, Reply{Text: "hello there", Usage: Usage{InputTokens: 120, OutputTokens: 7, CacheReadInputTokens: 30, CacheCreationInputTokens: 4}})
	msg, events := streamMessage(t, s, "claude-sonnet-4-5")

	want := []string{"message_start", "content_block_start", "content_block_delta", "content_block_stop", "message_delta", "message_stop"}
	if got := eventNames(events); !slices.Equal(got, want) {
		t.Fatalf("events = %v, want %v", got, want)
	}
	var start struct {
		Message struct {
			Usage apiUsage `json:"usage"`
		} `json:"message"`
	}
	if err := json.Unmarshal([]byte(events[0].Data), &start); err != nil {
		t.Fatal(err)
	}
	// message_start reports the input figures and a running output count of 1; the
	// final output count comes in message_delta.
	if want := (apiUsage{InputTokens: 120, OutputTokens: 1, CacheReadInputTokens: 30, CacheCreationInputTokens: 4}); start.Message.Usage != want {
		t.Errorf("message_start usage = %+v, want %+v", start.Message.Usage, want)
	}
	if !strings.HasPrefix(msg.ID, "msg_") || msg.Type != "message" || msg.Role != "assistant" || msg.Model != "claude-sonnet-4-5" {
		t.Errorf("message = id %q type %q role %q model %q, want msg_…, message, assistant, the request's model", msg.ID, msg.Type, msg.Role, msg.Model)
	}
	if want := []apiBlock{{Type: "text", Text: "hello there"}}; !reflect.DeepEqual(msg.Content, want) {
		t.Errorf("content = %+v, want %+v", msg.Content, want)
	}
	if orNull(msg.StopReason) != "end_turn" || msg.StopSequence != nil {
		t.Errorf("stop_reason = %s, stop_sequence = %s, want end_turn and null", orNull(msg.StopReason), orNull(msg.StopSequence))
	}
	if want := (apiUsage{InputTokens: 120, OutputTokens: 7, CacheReadInputTokens: 30, CacheCreationInputTokens: 4}); msg.Usage != want {
		t.Errorf("usage = %+v, want %+v", msg.Usage, want)
	}
}

func TestStream_ToolUsesStreamTheirInputAsInputJSONDelta(t *testing.T) {
	s := Start(t, Reply{
		Text: "Let me look.",
		ToolUses: []ToolUse{
			{ID: "toolu_read", Name: "Read", Input: map[string]any{"file_path": "/repo/main.go", "limit": 20}},
			{Name: "Bash", Input: map[string]any{"command": "go test ./..."}},
			{Name: "TodoRead"},
		},
	})
	msg, events := streamMessage(t, s, "m")

	want := []string{"message_start",
		"content_block_start", "content_block_delta", "content_block_stop",
		"content_block_start", "content_block_delta", "content_block_stop",
		"content_block_start", "content_block_delta", "content_block_stop",
		"content_block_start", "content_block_delta", "content_block_stop",
		"message_delta", "message_stop"}
	if got := eventNames(events); !slices.Equal(got, want) {
		t.Fatalf("events = %v, want %v", got, want)
	}
	var delta struct {
		Delta struct {
			Type string `json:"type"`
		} `json:"delta"`
	}
	if err := json.Unmarshal([]byte(events[5].Data), &delta); err != nil || delta.Delta.Type != "input_json_delta" {
		t.Errorf("tool_use delta = %s, want an input_json_delta", events[5].Data)
	}
	if len(msg.Content) != 4 {
		t.Fatalf("content = %+v, want a text block and three tool_use blocks", msg.Content)
	}
	if msg.Content[0].Type != "text" || msg.Content[0].Text != "Let me look." {
		t.Errorf("content[0] = %+v, want the text first", msg.Content[0])
	}
	wantTools := []struct{ id, name, input string }{
		{"toolu_read", "Read", `{"file_path":"/repo/main.go","limit":20}`},
		{"", "Bash", `{"command":"go test ./..."}`},
		{"", "TodoRead", `{}`},
	}
	ids := map[string]bool{}
	for i, w := range wantTools {
		b := msg.Content[i+1]
		if b.Type != "tool_use" || b.Name != w.name || !sameJSON(b.Input, []byte(w.input)) {
			t.Errorf("content[%d] = %s %s %s, want tool_use %s %s", i+1, b.Type, b.Name, b.Input, w.name, w.input)
		}
		if w.id != "" && b.ID != w.id {
			t.Errorf("content[%d].id = %q, want the scripted %q", i+1, b.ID, w.id)
		}
		if !strings.HasPrefix(b.ID, "toolu_") || ids[b.ID] {
			t.Errorf("content[%d].id = %q, want a unique toolu_ id", i+1, b.ID)
		}
		ids[b.ID] = true
	}
	if orNull(msg.StopReason) != "tool_use" {
		t.Errorf("stop_reason = %s, want tool_use", orNull(msg.StopReason))
	}
	if msg.Usage.InputTokens != DefaultUsage.InputTokens || msg.Usage.OutputTokens != DefaultUsage.OutputTokens {
		t.Errorf("usage = %+v, want DefaultUsage %+v for a zero Usage", msg.Usage, DefaultUsage)
	}
}

func TestReply_ContentStopReasonAndModelDefaults(t *testing.T) {
	tests := []struct {
		name       string
		reply      Reply
		wantBlocks []string // type:text or type:name
		wantStop   string
		wantModel  string
	}{
		{"nothing scripted answers ok", Reply{}, []string{"text:ok"}, "end_turn", "claude-req"},
		{"text only ends the turn", Reply{Text: "hi"}, []string{"text:hi"}, "end_turn", "claude-req"},
		{"a tool use alone has no text block", Reply{ToolUses: []ToolUse{{Name: "Bash"}}}, []string{"tool_use:Bash"}, "tool_use", "claude-req"},
		{"explicit stop reason wins", Reply{Text: "cut", StopReason: "max_tokens"}, []string{"text:cut"}, "max_tokens", "claude-req"},
		{"model override", Reply{Text: "hi", Model: "claude-other"}, []string{"text:hi"}, "end_turn", "claude-other"},
	}
	for _, tt := range tests {
		for _, stream := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/stream=%t", tt.name, stream), func(t *testing.T) {
				s := Start(t, tt.reply)
				var msg apiMessage
				if stream {
					msg, _ = streamMessage(t, s, "claude-req")
				} else {
					msg, _ = jsonMessage(t, s, "claude-req")
				}
				var got []string
				for _, b := range msg.Content {
					if b.Type == "text" {
						got = append(got, "text:"+b.Text)
					} else {
						got = append(got, b.Type+":"+b.Name)
					}
				}
				if !slices.Equal(got, tt.wantBlocks) {
					t.Errorf("content = %v, want %v", got, tt.wantBlocks)
				}
				if orNull(msg.StopReason) != tt.wantStop {
					t.Errorf("stop_reason = %s, want %s", orNull(msg.StopReason), tt.wantStop)
				}
				if msg.Model != tt.wantModel {
					t.Errorf("model = %q, want %q", msg.Model, tt.wantModel)
				}
			})
		}
	}
}

// --- plain JSON --------------------------------------------------------------------

func TestJSON_MessageShape(t *testing.T) {
	s := Start(t, Reply{
		Text:     "reading",
		ToolUses: []ToolUse{{ID: "toolu_1", Name: "Read", Input: map[string]any{"file_path": "/a"}}},
		Usage:    Usage{InputTokens: 50, OutputTokens: 9, CacheReadInputTokens: 3, CacheCreationInputTokens: 2},
	})
	msg, body := jsonMessage(t, s, "claude-haiku")

	if !strings.HasPrefix(msg.ID, "msg_") || msg.Type != "message" || msg.Role != "assistant" || msg.Model != "claude-haiku" {
		t.Errorf("message = id %q type %q role %q model %q, want msg_…, message, assistant, claude-haiku", msg.ID, msg.Type, msg.Role, msg.Model)
	}
	if len(msg.Content) != 2 || msg.Content[0].Type != "text" || msg.Content[0].Text != "reading" ||
		msg.Content[1].Type != "tool_use" || msg.Content[1].ID != "toolu_1" || msg.Content[1].Name != "Read" ||
		!sameJSON(msg.Content[1].Input, []byte(`{"file_path":"/a"}`)) {
		t.Errorf("content = %s, want a text block then tool_use toolu_1 Read {\"file_path\":\"/a\"}", body)
	}
	if orNull(msg.StopReason) != "tool_use" || msg.StopSequence != nil {
		t.Errorf("stop_reason = %s, stop_sequence = %s, want tool_use and null", orNull(msg.StopReason), orNull(msg.StopSequence))
	}
	if want := (apiUsage{InputTokens: 50, OutputTokens: 9, CacheReadInputTokens: 3, CacheCreationInputTokens: 2}); msg.Usage != want {
		t.Errorf("usage = %+v, want %+v", msg.Usage, want)
	}
}

func TestStreamAndJSON_CarryTheSameMessage(t *testing.T) {
	s := Start(t, Reply{
		Text:     "editing",
		ToolUses: []ToolUse{{ID: "toolu_e", Name: "Edit", Input: map[string]any{"old_string": "a\n\"b\"", "new_string": "ü"}}},
		Usage:    Usage{InputTokens: 7, OutputTokens: 3},
		Times:    2,
	})
	streamed, _ := streamMessage(t, s, "m")
	plain, _ := jsonMessage(t, s, "m")

	if streamed.ID == plain.ID {
		t.Errorf("both messages have id %q, want a fresh id per message", plain.ID)
	}
	streamed.ID, plain.ID = "", ""
	for i := range streamed.Content {
		if i < len(plain.Content) && sameJSON(streamed.Content[i].Input, plain.Content[i].Input) {
			streamed.Content[i].Input = plain.Content[i].Input
		}
	}
	if !reflect.DeepEqual(streamed, plain) {
		a, _ := json.Marshal(streamed)
		b, _ := json.Marshal(plain)
		t.Errorf("streamed message = %s\nJSON message     = %s\nwant the same", a, b)
	}
}

// --- the script --------------------------------------------------------------------

func TestScript_DefaultReplyOnceExhausted(t *testing.T) {
	s := Start(t, Reply{Text: "first"})
	var got []string
	for range 3 {
		msg, _ := jsonMessage(t, s, "m")
		got = append(got, replyText(msg)+"/"+orNull(msg.StopReason))
	}
	if want := []string{"first/end_turn", "done/end_turn", "done/end_turn"}; !slices.Equal(got, want) {
		t.Errorf("replies = %v, want %v", got, want)
	}
	if got, want := replies(s.Messages()), []int{0, -1, -1}; !slices.Equal(got, want) {
		t.Errorf("Request.Reply = %v, want %v (-1 for the default reply)", got, want)
	}
}

func TestScript_TimesRepeatsAndRemainingCountsDown(t *testing.T) {
	s := Start(t, Reply{Text: "a", Times: 3}, Reply{Text: "b", Times: 1}, Reply{Text: "c"})
	if got := s.Remaining(); got != 5 {
		t.Fatalf("Remaining() before any request = %d, want 5", got)
	}
	wantText := []string{"a", "a", "a", "b", "c", "done"}
	wantRemaining := []int{4, 3, 2, 1, 0, 0}
	for i := range wantText {
		msg, _ := jsonMessage(t, s, "m")
		if got := replyText(msg); got != wantText[i] {
			t.Errorf("request %d: text = %q, want %q", i, got, wantText[i])
		}
		if got := s.Remaining(); got != wantRemaining[i] {
			t.Errorf("after request %d: Remaining() = %d, want %d", i, got, wantRemaining[i])
		}
	}
	if got, want := replies(s.Messages()), []int{0, 0, 0, 1, 2, -1}; !slices.Equal(got, want) {
		t.Errorf("Request.Reply = %v, want %v", got, want)
	}
}

func TestScript_RepeatedToolUsesGetFreshIDs(t *testing.T) {
	s := Start(t, Reply{ToolUses: []ToolUse{{Name: "Bash"}}, Times: 2})
	first, _ := jsonMessage(t, s, "m")
	second, _ := streamMessage(t, s, "m")
	if first.Content[0].ID == second.Content[0].ID {
		t.Errorf("both repetitions used tool id %q, want a fresh id each time (the CLI matches tool_result by id)", first.Content[0].ID)
	}
}

func TestScript_PushAppendsAndSetDefaultReplacesTheDefault(t *testing.T) {
	s := Start(t)
	s.SetDefault(Reply{Text: "idle"})
	if msg, _ := jsonMessage(t, s, "m"); replyText(msg) != "idle" {
		t.Fatalf("empty script: text = %q, want the new default %q", replyText(msg), "idle")
	}
	s.Push(Reply{Text: "x"}, Reply{Text: "y", Times: 2})
	if got := s.Remaining(); got != 3 {
		t.Fatalf("Remaining() after Push = %d, want 3", got)
	}
	var got []string
	for range 4 {
		msg, _ := jsonMessage(t, s, "m")
		got = append(got, replyText(msg))
	}
	if want := []string{"x", "y", "y", "idle"}; !slices.Equal(got, want) {
		t.Errorf("replies = %v, want %v", got, want)
	}
	s.Push(Reply{Text: "z"})
	if msg, _ := jsonMessage(t, s, "m"); replyText(msg) != "z" {
		t.Errorf("Push after the script ran out: text = %q, want %q", replyText(msg), "z")
	}
	if got, want := replies(s.Messages()), []int{-1, 0, 1, 1, -1, 2}; !slices.Equal(got, want) {
		t.Errorf("Request.Reply = %v, want %v", got, want)
	}
}

func TestScript_ConcurrentRequestsServeEachReplyItsTimesWithDistinctIDs(t *testing.T) {
	const n = 10
	s := Start(t, Reply{Text: "a", Times: n / 2}, Reply{Text: "b", Times: n / 2})
	type result struct {
		text, id string
		err      error
	}
	results := make(chan result, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			resp, err := sendRequest(t.Context(), http.MethodPost, s.URL+"/v1/messages", messagesBody("m", i%2 == 0))
			if err != nil {
				results <- result{err: err}
				return
			}
			defer resp.Body.Close()
			var msg apiMessage
			if i%2 == 0 {
				events, err := readEvents(resp.Body)
				if err == nil {
					msg, err = accumulate(events)
				}
				results <- result{replyText(msg), msg.ID, err}
				return
			}
			err = json.NewDecoder(resp.Body).Decode(&msg)
			results <- result{replyText(msg), msg.ID, err}
		})
	}
	wg.Wait()
	close(results)

	counts := map[string]int{}
	ids := map[string]bool{}
	for r := range results {
		if r.err != nil {
			t.Fatalf("request: %v", r.err)
		}
		counts[r.text]++
		if ids[r.id] {
			t.Errorf("message id %q served twice, want a fresh id per message", r.id)
		}
		ids[r.id] = true
	}
	if counts["a"] != n/2 || counts["b"] != n/2 || len(counts) != 2 {
		t.Errorf("replies served = %v, want a and b %d times each", counts, n/2)
	}
	if got := s.Remaining(); got != 0 {
		t.Errorf("Remaining() = %d, want 0", got)
	}
	if got := len(s.Messages()); got != n {
		t.Errorf("recorded %d messages requests, want %d", got, n)
	}
}

// --- errors ------------------------------------------------------------------------

func TestError_StatusTypeBodyAndRetryHeaders(t *testing.T) {
	tests := []struct {
		name        string
		reply       Reply
		wantType    string
		wantMessage string // "" means any non-empty message
		wantRetry   string // Retry-After; "" means absent
		wantShould  string // X-Should-Retry
	}{
		{"rate limited with retry-after", Reply{Status: 429, RetryAfter: "7"}, "rate_limit_error", "", "7", "true"},
		{"overloaded", Reply{Status: 529, RetryAfter: "1"}, "overloaded_error", "", "1", "true"},
		{"server error", Reply{Status: 500}, "api_error", "", "", "true"},
		{"unlisted 5xx", Reply{Status: 503}, "api_error", "", "", "true"},
		{"bad request", Reply{Status: 400}, "invalid_request_error", "", "", "false"},
		{"bad key", Reply{Status: 401}, "authentication_error", "", "", "false"},
		{"forbidden", Reply{Status: 403}, "permission_error", "", "", "false"},
		{"not found", Reply{Status: 404}, "not_found_error", "", "", "false"},
		{"too large", Reply{Status: 413}, "request_too_large", "", "", "false"},
		{"unlisted 4xx", Reply{Status: 409}, "invalid_request_error", "", "", "false"},
		{"explicit type and message", Reply{Status: 400, ErrorType: "invalid_request_error", ErrorMessage: "prompt is too long: 210000 tokens > 200000 maximum"},
			"invalid_request_error", "prompt is too long: 210000 tokens > 200000 maximum", "", "false"},
	}
	for _, tt := range tests {
		for _, stream := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/stream=%t", tt.name, stream), func(t *testing.T) {
				s := Start(t, tt.reply)
				resp := mustDo(t, http.MethodPost, s.URL+"/v1/messages", messagesBody("m", stream))
				body, _ := io.ReadAll(resp.Body)
				if resp.StatusCode != tt.reply.Status {
					t.Errorf("status = %d, want %d", resp.StatusCode, tt.reply.Status)
				}
				if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
					t.Errorf("Content-Type = %q, want application/json even for a stream request", ct)
				}
				var e apiError
				if err := json.Unmarshal(body, &e); err != nil || e.Type != "error" || e.Error.Type != tt.wantType || e.Error.Message == "" {
					t.Errorf("body = %s, want {\"type\":\"error\",\"error\":{\"type\":%q,\"message\":…}}", body, tt.wantType)
				}
				if tt.wantMessage != "" && e.Error.Message != tt.wantMessage {
					t.Errorf("error.message = %q, want %q", e.Error.Message, tt.wantMessage)
				}
				if got, ok := resp.Header["Retry-After"]; tt.wantRetry == "" && ok || tt.wantRetry != "" && resp.Header.Get("Retry-After") != tt.wantRetry {
					t.Errorf("Retry-After = %q, want %q", got, tt.wantRetry)
				}
				if got := resp.Header.Get("X-Should-Retry"); got != tt.wantShould {
					t.Errorf("X-Should-Retry = %q, want %q", got, tt.wantShould)
				}
				if got := replies(s.Messages()); !slices.Equal(got, []int{0}) || s.Remaining() != 0 {
					t.Errorf("Request.Reply = %v, Remaining() = %d, want [0] and 0 (an error reply uses up its script entry)", got, s.Remaining())
				}
			})
		}
	}
}

// --- stalls ------------------------------------------------------------------------

// requireHandlersReturned closes only the HTTP server, not the fake, so nothing
// releases a stall: the listener's Close waits for every outstanding request, and it
// returns only if each stalled handler has already been let go by its client.
func requireHandlersReturned(t *testing.T, s *Server) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		s.srv.Close()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(patience):
		t.Fatalf("a stalled handler is still running %s after its client went away", patience)
	}
}

func TestStall_StreamSendsMessageStartThenHoldsUntilTheClientCancels(t *testing.T) {
	tests := []struct {
		name    string
		script  []Reply
		def     *Reply
		wantIdx int
	}{
		{"scripted", []Reply{{Text: "before"}, {Stall: true}}, nil, 1},
		{"default reply", []Reply{{Text: "before"}}, &Reply{Stall: true}, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Start(t, tt.script...)
			if tt.def != nil {
				s.SetDefault(*tt.def)
			}
			jsonMessage(t, s, "m")

			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			resp, err := sendRequest(ctx, http.MethodPost, s.URL+"/v1/messages", messagesBody("m", true))
			if err != nil {
				t.Fatalf("stalled stream: %v (the headers should arrive before the stall)", err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
				t.Fatalf("stalled stream: status %d, Content-Type %q, want 200 text/event-stream", resp.StatusCode, resp.Header.Get("Content-Type"))
			}
			sr := newSSEReader(resp.Body)
			first, err := sr.Next()
			if err != nil || first.Event != "message_start" || !json.Valid([]byte(first.Data)) {
				t.Fatalf("first event = %+v (err %v), want message_start with JSON data", first, err)
			}
			if got := s.WaitStall(t, patience); got != tt.wantIdx {
				t.Errorf("Stalled announced %d, want %d", got, tt.wantIdx)
			}

			cancel()
			for {
				ev, err := sr.Next()
				if err != nil {
					if !errors.Is(err, context.Canceled) {
						t.Errorf("after cancel: read error %v, want context.Canceled", err)
					}
					break
				}
				if ev.Event != "ping" {
					t.Errorf("stalled stream sent %s, want nothing after message_start but a ping", ev.Event)
				}
			}
			requireHandlersReturned(t, s)
		})
	}
}

func TestStall_NonStreamingHoldsTheResponseUntilTheClientCancels(t *testing.T) {
	s := Start(t, Reply{Stall: true})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		resp, err := sendRequest(ctx, http.MethodPost, s.URL+"/v1/messages", messagesBody("m", false))
		if err == nil {
			resp.Body.Close()
			err = fmt.Errorf("got a response (status %d), want none while stalled", resp.StatusCode)
		}
		errc <- err
	}()
	if got := s.WaitStall(t, patience); got != 0 {
		t.Errorf("Stalled announced %d, want 0", got)
	}
	cancel()
	select {
	case err := <-errc:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("stalled request: %v, want context.Canceled", err)
		}
	case <-time.After(patience):
		t.Fatal("the client's request did not end after cancel")
	}
	requireHandlersReturned(t, s)
	if got := len(s.Messages()); got != 1 {
		t.Errorf("recorded %d messages requests, want the stalled one", got)
	}
}

func TestClose_ReleasesStalledRequestsAndReturns(t *testing.T) {
	s := New(Reply{Stall: true, Times: 2})
	t.Cleanup(s.Close)

	resp, err := sendRequest(t.Context(), http.MethodPost, s.URL+"/v1/messages", messagesBody("m", true))
	if err != nil {
		t.Fatalf("stalled stream: %v", err)
	}
	defer resp.Body.Close()
	streamDone := make(chan []sseEvent, 1)
	go func() {
		events, _ := readEvents(resp.Body) // ends with an error or EOF once the server goes
		streamDone <- events
	}()
	jsonErr := make(chan error, 1)
	go func() {
		resp, err := sendRequest(t.Context(), http.MethodPost, s.URL+"/v1/messages", messagesBody("m", false))
		if err == nil {
			resp.Body.Close()
			err = fmt.Errorf("got a response (status %d), want the connection closed", resp.StatusCode)
		}
		jsonErr <- err
	}()
	s.WaitStall(t, patience)
	s.WaitStall(t, patience)

	closed := make(chan struct{})
	go func() {
		s.Close()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(patience):
		t.Fatalf("Close did not return within %s with two stalled requests", patience)
	}
	select {
	case events := <-streamDone:
		if slices.Contains(eventNames(events), "message_stop") {
			t.Errorf("stalled stream events = %v, want it cut off without message_stop", eventNames(events))
		}
	case <-time.After(patience):
		t.Fatal("the stalled stream did not end after Close")
	}
	select {
	case err := <-jsonErr:
		if err == nil {
			t.Error("stalled JSON request succeeded, want a transport error")
		}
	case <-time.After(patience):
		t.Fatal("the stalled JSON request did not end after Close")
	}
	s.Close() // a second Close is harmless
}

// --- malformed ---------------------------------------------------------------------

func TestMalformed_StreamFirstEventDataIsNotJSON(t *testing.T) {
	s := Start(t, Reply{Malformed: true})
	resp := mustDo(t, http.MethodPost, s.URL+"/v1/messages", messagesBody("m", true))
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d, Content-Type %q, want 200 text/event-stream", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	events, err := readEvents(resp.Body)
	if err != nil {
		t.Fatalf("reading events: %v", err)
	}
	if len(events) != 1 || events[0].Event != "message_start" || json.Valid([]byte(events[0].Data)) {
		t.Fatalf("events = %+v, want one message_start whose data is not JSON", events)
	}
	if _, err := accumulate(events); err == nil {
		t.Error("accumulate accepted the malformed stream")
	}
}

func TestMalformed_JSONBodyIsTruncated(t *testing.T) {
	s := Start(t, Reply{Malformed: true})
	resp := mustDo(t, http.MethodPost, s.URL+"/v1/messages", messagesBody("m", false))
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
		t.Errorf("status %d, Content-Type %q, want 200 application/json", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if json.Valid(body) {
		t.Errorf("body = %s, want invalid JSON", body)
	}
}

// --- the other endpoints -----------------------------------------------------------

func TestCountTokens_AnswersInputTokensWithoutUsingTheScript(t *testing.T) {
	s := Start(t, Reply{Text: "scripted"})
	body := messagesBody("m", false)
	resp := mustDo(t, http.MethodPost, s.URL+"/v1/messages/count_tokens?beta=true", body)
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("status %d, Content-Type %q, want 200 application/json", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var got map[string]int64
	if err := json.Unmarshal(raw, &got); err != nil || len(got) != 1 || got["input_tokens"] < 1 {
		t.Errorf("body = %s, want {\"input_tokens\": n} with n ≥ 1", raw)
	}
	if s.Remaining() != 1 || len(s.Messages()) != 0 {
		t.Errorf("Remaining() = %d, Messages() = %d, want 1 and 0 (count_tokens is not a message)", s.Remaining(), len(s.Messages()))
	}
	reqs := s.Requests()
	if len(reqs) != 1 || reqs[0].Path != "/v1/messages/count_tokens" || string(reqs[0].Body) != body || reqs[0].Reply != -1 {
		t.Errorf("recorded %+v, want the count_tokens request with its body", reqs)
	}
}

func TestModels_ListsAModelInTheAPIsShape(t *testing.T) {
	s := Start(t)
	resp := mustDo(t, http.MethodGet, s.URL+"/v1/models", "")
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("status %d, Content-Type %q, want 200 application/json", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var list struct {
		Data []struct {
			Type        string `json:"type"`
			ID          string `json:"id"`
			DisplayName string `json:"display_name"`
			CreatedAt   string `json:"created_at"`
		} `json:"data"`
		HasMore *bool  `json:"has_more"`
		FirstID string `json:"first_id"`
		LastID  string `json:"last_id"`
	}
	if err := json.Unmarshal(raw, &list); err != nil || len(list.Data) == 0 || list.HasMore == nil || *list.HasMore {
		t.Fatalf("body = %s, want a page of models with has_more false", raw)
	}
	for _, m := range list.Data {
		if _, err := time.Parse(time.RFC3339, m.CreatedAt); m.Type != "model" || m.ID == "" || m.DisplayName == "" || err != nil {
			t.Errorf("model = %+v, want type model, an id, a display_name and an RFC 3339 created_at", m)
		}
	}
	if list.FirstID != list.Data[0].ID || list.LastID != list.Data[len(list.Data)-1].ID {
		t.Errorf("first_id %q, last_id %q, want the first and last ids of data", list.FirstID, list.LastID)
	}
	if reqs := s.Requests(); len(reqs) != 1 || reqs[0].Method != http.MethodGet || reqs[0].Path != "/v1/models" {
		t.Errorf("recorded %+v, want the GET /v1/models", reqs)
	}
}

func TestProbes_HeadAndGetAnswer200AndOtherRoutes404(t *testing.T) {
	tests := []struct {
		method, path string
		wantStatus   int
	}{
		{http.MethodHead, "/", 200},
		{http.MethodGet, "/", 200},
		{http.MethodHead, "/v1/messages", 200},
		{http.MethodGet, "/v1/messages", 200},
		{http.MethodHead, "/v1/models", 200},
		{http.MethodGet, "/health/anything", 200},
		{http.MethodPost, "/v1/complete", 404},
		{http.MethodDelete, "/v1/messages", 404},
		{http.MethodPut, "/", 404},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			s := Start(t, Reply{Text: "scripted"})
			resp := mustDo(t, tt.method, s.URL+tt.path, "")
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tt.wantStatus {
				t.Errorf("status = %d, want %d", resp.StatusCode, tt.wantStatus)
			}
			if tt.wantStatus == http.StatusNotFound {
				var e apiError
				if err := json.Unmarshal(body, &e); err != nil || e.Type != "error" || e.Error.Type != "not_found_error" {
					t.Errorf("body = %s, want a not_found_error", body)
				}
			}
			reqs := s.Requests()
			if len(reqs) != 1 || reqs[0].Method != tt.method || reqs[0].Path != tt.path || reqs[0].Reply != -1 {
				t.Errorf("recorded %+v, want this %s %s", reqs, tt.method, tt.path)
			}
			if s.Remaining() != 1 || len(s.Messages()) != 0 {
				t.Errorf("Remaining() = %d, Messages() = %d, want 1 and 0", s.Remaining(), len(s.Messages()))
			}
		})
	}
}

// --- recording ---------------------------------------------------------------------

// conversationBody is a third turn as claude sends it: a cached system prompt in
// blocks, two tools, and tool results as a string and as blocks.
const conversationBody = `{"model":"claude-sonnet-4-5","max_tokens":2048,"stream":true,` +
	`"system":[{"type":"text","text":"You are Claude Code.","cache_control":{"type":"ephemeral"}},{"type":"text","text":"Work in /repo."}],` +
	`"tools":[{"name":"Read","description":"read a file","input_schema":{"type":"object"}},{"name":"Bash","input_schema":{"type":"object"}}],` +
	`"messages":[` +
	`{"role":"user","content":"fix the bug"},` +
	`{"role":"assistant","content":[{"type":"text","text":"Looking."},{"type":"tool_use","id":"toolu_a","name":"Read","input":{"file_path":"/repo/main.go"}},{"type":"tool_use","id":"toolu_b","name":"Bash","input":{"command":"go test"}}]},` +
	`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_a","content":"package main"},` +
	`{"type":"tool_result","tool_use_id":"toolu_b","is_error":true,"content":[{"type":"text","text":"FAIL"},{"type":"text","text":"exit 1"}]},` +
	`{"type":"text","text":"keep going"}]}]}`

func TestRecord_MessagesRequestIsParsed(t *testing.T) {
	s := Start(t)
	resp := mustDo(t, http.MethodPost, s.URL+"/v1/messages?beta=true", conversationBody)
	if _, err := io.Copy(io.Discard, resp.Body); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d, err %v, want 200", resp.StatusCode, err)
	}
	msgs := s.Messages()
	if len(msgs) != 1 {
		t.Fatalf("Messages() = %d requests, want 1", len(msgs))
	}
	r := msgs[0]
	if r.Method != http.MethodPost || r.Path != "/v1/messages" || string(r.Body) != conversationBody {
		t.Errorf("recorded %s %s body %q, want POST /v1/messages (query dropped) and the body as sent", r.Method, r.Path, r.Body)
	}
	if r.Header.Get("X-Api-Key") != "sk-ant-test" || r.Header.Get("Anthropic-Version") != "2023-06-01" {
		t.Errorf("Header = %v, want the client's headers", r.Header)
	}
	if r.Model != "claude-sonnet-4-5" || !r.Stream || r.MaxTokens != 2048 {
		t.Errorf("model %q stream %t max_tokens %d, want claude-sonnet-4-5 true 2048", r.Model, r.Stream, r.MaxTokens)
	}
	if want := "You are Claude Code.\nWork in /repo."; r.System != want {
		t.Errorf("System = %q, want %q", r.System, want)
	}
	if want := []string{"Read", "Bash"}; !slices.Equal(r.Tools, want) {
		t.Errorf("Tools = %v, want %v", r.Tools, want)
	}
	want := []Message{
		{Role: "user", Content: []Block{{Type: "text", Text: "fix the bug"}}},
		{Role: "assistant", Content: []Block{
			{Type: "text", Text: "Looking."},
			{Type: "tool_use", ID: "toolu_a", Name: "Read", Input: json.RawMessage(`{"file_path":"/repo/main.go"}`)},
			{Type: "tool_use", ID: "toolu_b", Name: "Bash", Input: json.RawMessage(`{"command":"go test"}`)},
		}},
		{Role: "user", Content: []Block{
			{Type: "tool_result", ToolUseID: "toolu_a", Text: "package main"},
			{Type: "tool_result", ToolUseID: "toolu_b", IsError: true, Text: "FAIL\nexit 1"},
			{Type: "text", Text: "keep going"},
		}},
	}
	if !reflect.DeepEqual(r.Messages, want) {
		got, _ := json.Marshal(r.Messages)
		exp, _ := json.Marshal(want)
		t.Errorf("Messages =\n%s\nwant\n%s", got, exp)
	}
	if want := "user: fix the bug\nassistant: Looking.\nuser: package main\nFAIL\nexit 1\nkeep going"; r.Transcript() != want {
		t.Errorf("Transcript() = %q, want %q", r.Transcript(), want)
	}
	if got := r.ToolResults(); len(got) != 2 || got[0].ToolUseID != "toolu_a" || got[0].Text != "package main" || got[0].IsError ||
		got[1].ToolUseID != "toolu_b" || got[1].Text != "FAIL\nexit 1" || !got[1].IsError {
		t.Errorf("ToolResults() = %+v, want toolu_a \"package main\" and toolu_b \"FAIL\\nexit 1\" is_error", got)
	}
}

func TestRecord_SystemPromptAsStringOrBlocks(t *testing.T) {
	tests := []struct {
		name, system, want string
	}{
		{"absent", ``, ""},
		{"null", `,"system":null`, ""},
		{"string", `,"system":"Be brief."`, "Be brief."},
		{"blocks", `,"system":[{"type":"text","text":"One."},{"type":"text","text":"Two."}]`, "One.\nTwo."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Start(t)
			body := `{"model":"m","max_tokens":10` + tt.system + `,"messages":[{"role":"user","content":"hi"}]}`
			resp := mustDo(t, http.MethodPost, s.URL+"/v1/messages", body)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status = %d, want 200", resp.StatusCode)
			}
			if got := s.Messages()[0].System; got != tt.want {
				t.Errorf("System = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestRecord_MessagesFiltersOutOtherRequests(t *testing.T) {
	s := Start(t, Reply{Text: "one"}, Reply{Text: "two"})
	mustDo(t, http.MethodHead, s.URL+"/", "")
	jsonMessage(t, s, "first")
	mustDo(t, http.MethodPost, s.URL+"/v1/messages/count_tokens", messagesBody("m", false))
	mustDo(t, http.MethodGet, s.URL+"/v1/models", "")
	streamMessage(t, s, "second")

	all := s.Requests()
	var paths []string
	for _, r := range all {
		paths = append(paths, r.Method+" "+r.Path)
	}
	if want := []string{"HEAD /", "POST /v1/messages", "POST /v1/messages/count_tokens", "GET /v1/models", "POST /v1/messages"}; !slices.Equal(paths, want) {
		t.Errorf("Requests() = %v, want %v", paths, want)
	}
	msgs := s.Messages()
	if len(msgs) != 2 || msgs[0].Model != "first" || msgs[1].Model != "second" || msgs[0].Stream || !msgs[1].Stream {
		t.Errorf("Messages() = %d requests, want the two messages requests in order", len(msgs))
	}
	all[1].Model = "changed"
	if s.Requests()[1].Model != "first" {
		t.Error("changing the slice Requests returned changed the record, want a copy")
	}
}

func TestRecord_BadBodyAnswers400AndIsRecordedWithoutUsingTheScript(t *testing.T) {
	tests := []struct{ name, body string }{
		{"not JSON", `{"model":`},
		{"content of the wrong type", `{"model":"m","messages":[{"role":"user","content":42}]}`},
		{"system of the wrong type", `{"model":"m","system":7,"messages":[]}`},
		{"tool_result content of the wrong type", `{"model":"m","messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":{}}]}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Start(t, Reply{Text: "scripted"})
			resp := mustDo(t, http.MethodPost, s.URL+"/v1/messages", tt.body)
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusBadRequest {
				t.Errorf("status = %d, want 400", resp.StatusCode)
			}
			var e apiError
			if err := json.Unmarshal(body, &e); err != nil || e.Type != "error" || e.Error.Type != "invalid_request_error" || e.Error.Message == "" {
				t.Errorf("body = %s, want an invalid_request_error with a message", body)
			}
			msgs := s.Messages()
			if len(msgs) != 1 || !bytes.Equal(msgs[0].Body, []byte(tt.body)) || msgs[0].Reply != -1 {
				t.Errorf("Messages() = %+v, want the bad request recorded with its body and Reply -1", msgs)
			}
			if s.Remaining() != 1 {
				t.Fatalf("Remaining() = %d, want 1 (a rejected request uses no reply)", s.Remaining())
			}
			if msg, _ := jsonMessage(t, s, "m"); replyText(msg) != "scripted" {
				t.Errorf("next good request: text = %q, want the scripted reply", replyText(msg))
			}
		})
	}
}
