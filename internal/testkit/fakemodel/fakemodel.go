// Package fakemodel is a model API on 127.0.0.1 for tests that run the real
// coding-agent CLIs without a network, in three dialects: the Anthropic Messages API
// (Server, for claude and copilot in BYOK mode), the OpenAI Responses API
// (ResponsesServer in responses.go, for codex) and Google's Gemini API (GeminiServer in
// gemini.go, for the Gemini CLI). Each plays a script of replies — text,
// tool calls (with fixed inputs or inputs built from the request they answer), usage
// figures, HTTP errors with retry-after, a stream that stalls, a malformed stream — over
// SSE or plain JSON, and records every request so that a test can assert on what the
// CLI sent: the model, the system prompt, the tools offered and the tool results it
// returned. The plumbing both share (script, recording, stalls) is in core.go.
//
// Endpoints of Server: POST /v1/messages (streaming and not), POST
// /v1/messages/count_tokens, GET /v1/models, and HEAD or GET on anything else
// (connectivity probes) answers 200.
package fakemodel

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// Reply is one scripted answer to a POST /v1/messages.
type Reply struct {
	// Text is the reply's text block; empty means none (a text block "ok" is sent when
	// there is neither text nor a tool use, since the API never answers with nothing).
	Text string
	// ToolUses are tool_use blocks after the text. StopReason defaults to "tool_use"
	// when there are any, "end_turn" otherwise.
	ToolUses   []ToolUse
	StopReason string
	// Usage is what the reply reports: input figures in message_start, output tokens in
	// message_delta. A zero Usage reports 10 input and 5 output tokens.
	Usage Usage
	// Model overrides the model named in the reply; default: the request's model.
	Model string

	// Status, when not 0 or 200, answers with this HTTP status and an API error body
	// of ErrorType (default: derived from the status) and ErrorMessage.
	Status       int
	RetryAfter   string // Retry-After header with an error status
	ErrorType    string
	ErrorMessage string
	// NoRetry marks the error as final (X-Should-Retry: false, as the API sends for
	// errors not worth retrying), so that a client that honours the header, such as the
	// Copilot CLI, gives up at once instead of retrying with backoff.
	NoRetry bool

	// Stall, on a stream, sends the headers, message_start and a ping, then nothing
	// more until the client goes away or the server is closed; a non-streaming stall
	// sends nothing at all. Each stall is announced on Server.Stalled.
	Stall bool
	// Malformed sends a stream whose first event's data is not JSON (a non-streaming
	// request gets a 200 with a truncated JSON body).
	Malformed bool

	// Times repeats this reply for that many requests (0 and 1 mean once).
	Times int
}

// ToolUse is a tool_use content block. ID defaults to a unique toolu_ id.
type ToolUse struct {
	ID    string
	Name  string
	Input any
	// InputFrom, when set, builds the input from the request being answered instead of
	// Input: for arguments only known at run time, such as a token a tool returned
	// earlier in the conversation. If it fails, the request is answered 400
	// invalid_request_error (not retried) naming the tool and the error, and the error is
	// recorded in the request's ScriptError.
	InputFrom func(Request) (any, error)
}

// Usage is the token usage a reply reports.
type Usage struct {
	InputTokens              int64
	OutputTokens             int64
	CacheReadInputTokens     int64
	CacheCreationInputTokens int64
}

// DefaultUsage is reported by replies that leave Usage zero.
var DefaultUsage = Usage{InputTokens: 10, OutputTokens: 5}

// Request is one recorded request.
type Request struct {
	Method string
	Path   string
	Header http.Header
	Body   []byte

	// Parsed from a /v1/messages body.
	Model     string
	Stream    bool
	MaxTokens int64
	System    string   // every system text block, joined by newlines
	Tools     []string // names of the tools offered, in order
	Messages  []Message
	// Reply is the index of the script reply that answered (-1 for the default reply
	// and for requests that are not messages).
	Reply int
	// ScriptError is why the scripted reply could not be built (a ToolUse.InputFrom
	// failed); "" when it was.
	ScriptError string
}

// Message is one message of a recorded request.
type Message struct {
	Role    string
	Content []Block
}

// Block is one content block of a recorded message; fields not of its type are empty.
type Block struct {
	Type      string // text, tool_use, tool_result, ...
	Text      string // text; for tool_result, its text content joined
	ID        string // tool_use
	Name      string // tool_use
	Input     json.RawMessage
	ToolUseID string // tool_result
	IsError   bool   // tool_result
}

// Text returns the text of every text block (and tool_result text) of the message.
func (m Message) Text() string {
	var b strings.Builder
	for _, c := range m.Content {
		if c.Text != "" {
			if b.Len() > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(c.Text)
		}
	}
	return b.String()
}

// ToolResults returns the tool_result blocks of every message of the request.
func (r Request) ToolResults() []Block {
	var out []Block
	for _, m := range r.Messages {
		for _, c := range m.Content {
			if c.Type == "tool_result" {
				out = append(out, c)
			}
		}
	}
	return out
}

// LastToolResult returns the last tool_result block of the request, the result of the
// newest tool call; false when there is none.
func (r Request) LastToolResult() (Block, bool) {
	res := r.ToolResults()
	if len(res) == 0 {
		return Block{}, false
	}
	return res[len(res)-1], true
}

// Transcript is every message text of the request, for "does it remember" assertions.
func (r Request) Transcript() string {
	var parts []string
	for _, m := range r.Messages {
		parts = append(parts, m.Role+": "+m.Text())
	}
	return strings.Join(parts, "\n")
}

// Server is a running fake. Its methods are safe for concurrent use.
type Server struct {
	// URL is the base URL (http://127.0.0.1:port), for ANTHROPIC_BASE_URL.
	URL string
	// Stalled receives the index of each stalling reply when its stall begins.
	Stalled chan int

	core[Request, Reply]
	// tools and messages number toolu_ and msg_ ids. A message id is not derived from
	// the number of recorded requests: two concurrent requests would share it, and the
	// CLIs' usage accounting counts each message id once.
	tools, messages counter
}

// New starts a fake serving script, then the default reply ("done", end_turn) once the
// script is used up. Close it when done; Start does that for a test.
func New(script ...Reply) *Server {
	s := &Server{Stalled: make(chan int, 16)}
	s.script = queue[Reply]{script: script, def: Reply{Text: "done"}}
	s.start(s.serve, s.Stalled, "reply")
	s.URL = s.srv.URL
	return s
}

// Start is New with Close registered on t.
func Start(t testing.TB, script ...Reply) *Server {
	t.Helper()
	s := New(script...)
	t.Cleanup(s.Close)
	return s
}

// Messages returns the recorded POST /v1/messages requests.
func (s *Server) Messages() []Request {
	return s.where(func(r Request) bool { return r.Method == http.MethodPost && r.Path == "/v1/messages" })
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	req := Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body, Reply: -1}

	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/v1/messages":
		if err := parseMessages(body, &req); err != nil {
			s.requests.record(req)
			writeError(w, http.StatusBadRequest, "invalid_request_error", "fakemodel: "+err.Error(), "")
			return
		}
		idx, reply := s.script.take()
		req.Reply = idx
		var blocks []map[string]any
		if reply.Status == 0 || reply.Status == http.StatusOK {
			var err error
			if blocks, err = s.blocks(reply, req); err != nil {
				req.ScriptError = err.Error()
				s.requests.record(req)
				writeError(w, http.StatusBadRequest, "invalid_request_error", "fakemodel: "+err.Error(), "")
				return
			}
		}
		s.requests.record(req)
		s.answer(w, r.Context(), req, idx, reply, blocks)
	case r.Method == http.MethodPost && r.URL.Path == "/v1/messages/count_tokens":
		s.requests.record(req)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"input_tokens":%d}`, max(len(body)/4, 1))
	case r.Method == http.MethodGet && r.URL.Path == "/v1/models":
		s.requests.record(req)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"data":[{"type":"model","id":"claude-sonnet-4-5","display_name":"Claude Sonnet 4.5","created_at":"2025-09-29T00:00:00Z"}],"has_more":false,"first_id":"claude-sonnet-4-5","last_id":"claude-sonnet-4-5"}`)
	case r.Method == http.MethodHead || r.Method == http.MethodGet:
		s.requests.record(req)
		w.WriteHeader(http.StatusOK)
	default:
		s.requests.record(req)
		writeError(w, http.StatusNotFound, "not_found_error", "fakemodel: no route for "+r.Method+" "+r.URL.Path, "")
	}
}

// answer writes reply r (built into blocks unless it is an error status) to req.
func (s *Server) answer(w http.ResponseWriter, ctx context.Context, req Request, idx int, r Reply, blocks []map[string]any) {
	if r.Status != 0 && r.Status != http.StatusOK {
		if r.NoRetry {
			w = finalError{w}
		}
		writeError(w, r.Status, cmp.Or(r.ErrorType, errorType(r.Status)),
			cmp.Or(r.ErrorMessage, fmt.Sprintf("fakemodel: scripted %d", r.Status)), r.RetryAfter)
		return
	}
	model := cmp.Or(r.Model, req.Model)
	usage := cmp.Or(r.Usage, DefaultUsage)
	stop := r.StopReason
	if stop == "" {
		stop = "end_turn"
		if len(r.ToolUses) > 0 {
			stop = "tool_use"
		}
	}
	msgID := s.messages.id("msg")

	if !req.Stream {
		if r.Stall {
			s.stall(ctx, idx)
			return
		}
		if r.Malformed {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"id": "msg_broken", "content": [`)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{
			"id": msgID, "type": "message", "role": "assistant", "model": model,
			"content": blocks, "stop_reason": stop, "stop_sequence": nil,
			"usage": usageJSON(usage, usage.OutputTokens),
		})
		return
	}

	events := startEvents(w)
	if r.Malformed {
		events.raw("event: message_start\ndata: {\"type\": \"message_start\", \"message\": {not json\n\n")
		return
	}
	events.send("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": msgID, "type": "message", "role": "assistant", "model": model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": usageJSON(usage, 1),
	}})
	if r.Stall {
		events.send("ping", map[string]any{"type": "ping"})
		s.stall(ctx, idx)
		return
	}
	for i, b := range blocks {
		switch b["type"] {
		case "text":
			events.send("content_block_start", map[string]any{"type": "content_block_start", "index": i,
				"content_block": map[string]any{"type": "text", "text": ""}})
			events.send("content_block_delta", map[string]any{"type": "content_block_delta", "index": i,
				"delta": map[string]any{"type": "text_delta", "text": b["text"]}})
		case "tool_use":
			events.send("content_block_start", map[string]any{"type": "content_block_start", "index": i,
				"content_block": map[string]any{"type": "tool_use", "id": b["id"], "name": b["name"], "input": map[string]any{}}})
			in, _ := json.Marshal(b["input"])
			events.send("content_block_delta", map[string]any{"type": "content_block_delta", "index": i,
				"delta": map[string]any{"type": "input_json_delta", "partial_json": string(in)}})
		}
		events.send("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
	}
	events.send("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": usage.OutputTokens}})
	events.send("message_stop", map[string]any{"type": "message_stop"})
}

// blocks builds the content blocks of reply r to req.
func (s *Server) blocks(r Reply, req Request) ([]map[string]any, error) {
	var out []map[string]any
	if r.Text != "" || len(r.ToolUses) == 0 {
		out = append(out, map[string]any{"type": "text", "text": cmp.Or(r.Text, "ok")})
	}
	for _, tu := range r.ToolUses {
		id := tu.ID
		if id == "" {
			id = s.tools.id("toolu")
		}
		in := tu.Input
		if tu.InputFrom != nil {
			var err error
			if in, err = tu.InputFrom(req); err != nil {
				return nil, fmt.Errorf("tool_use %s: building its input: %w", tu.Name, err)
			}
			raw, err := json.Marshal(in)
			if err != nil {
				return nil, fmt.Errorf("tool_use %s: its built input is not JSON: %w", tu.Name, err)
			}
			in = json.RawMessage(raw)
		}
		if in == nil {
			in = map[string]any{}
		}
		out = append(out, map[string]any{"type": "tool_use", "id": id, "name": tu.Name, "input": in})
	}
	return out, nil
}

func usageJSON(u Usage, output int64) map[string]any {
	return map[string]any{
		"input_tokens":                u.InputTokens,
		"output_tokens":               output,
		"cache_read_input_tokens":     u.CacheReadInputTokens,
		"cache_creation_input_tokens": u.CacheCreationInputTokens,
	}
}

func errorType(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "invalid_request_error"
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusForbidden:
		return "permission_error"
	case http.StatusNotFound:
		return "not_found_error"
	case http.StatusRequestEntityTooLarge:
		return "request_too_large"
	case http.StatusTooManyRequests:
		return "rate_limit_error"
	case 529:
		return "overloaded_error"
	}
	// The API documents invalid_request_error for the 4xx codes it does not list.
	if status >= 400 && status < 500 {
		return "invalid_request_error"
	}
	return "api_error"
}

func writeError(w http.ResponseWriter, status int, typ, msg, retryAfter string) {
	w.Header().Set("X-Should-Retry", strconv.FormatBool(status == http.StatusTooManyRequests || status >= 500))
	writeJSONError(w, status, retryAfter, map[string]any{
		"type": "error", "error": map[string]any{"type": typ, "message": msg},
	})
}

// parseMessages fills req from a Messages API body. Content may be a string or blocks;
// system may be a string or text blocks; a tool_result's content may be a string or
// blocks.
func parseMessages(body []byte, req *Request) error {
	var raw struct {
		Model     string          `json:"model"`
		Stream    bool            `json:"stream"`
		MaxTokens int64           `json:"max_tokens"`
		System    json.RawMessage `json:"system"`
		Tools     []struct {
			Name string `json:"name"`
		} `json:"tools"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &raw); err != nil {
		return fmt.Errorf("request body: %w", err)
	}
	req.Model, req.Stream, req.MaxTokens = raw.Model, raw.Stream, raw.MaxTokens
	sys, err := blocksOf(raw.System)
	if err != nil {
		return fmt.Errorf("system: %w", err)
	}
	req.System = Message{Content: sys}.Text()
	for _, t := range raw.Tools {
		req.Tools = append(req.Tools, t.Name)
	}
	for i, m := range raw.Messages {
		content, err := blocksOf(m.Content)
		if err != nil {
			return fmt.Errorf("messages[%d]: %w", i, err)
		}
		req.Messages = append(req.Messages, Message{Role: m.Role, Content: content})
	}
	return nil
}

func blocksOf(raw json.RawMessage) ([]Block, error) {
	var items []struct {
		Type      string          `json:"type"`
		Text      string          `json:"text"`
		ID        string          `json:"id"`
		Name      string          `json:"name"`
		Input     json.RawMessage `json:"input"`
		ToolUseID string          `json:"tool_use_id"`
		IsError   bool            `json:"is_error"`
		Content   json.RawMessage `json:"content"`
	}
	text, isString, err := stringOrList(raw, &items)
	switch {
	case err != nil:
		return nil, err
	case isString:
		return []Block{{Type: "text", Text: text}}, nil
	case items == nil: // absent or null
		return nil, nil
	}
	out := make([]Block, 0, len(items))
	for _, it := range items {
		b := Block{Type: it.Type, Text: it.Text, ID: it.ID, Name: it.Name, Input: it.Input, ToolUseID: it.ToolUseID, IsError: it.IsError}
		if it.Type == "tool_result" {
			inner, err := blocksOf(it.Content)
			if err != nil {
				return nil, fmt.Errorf("tool_result content: %w", err)
			}
			b.Text = Message{Content: inner}.Text()
		}
		out = append(out, b)
	}
	return out, nil
}
