package fakemodel

// The OpenAI Responses API dialect of the fake, for CLIs that speak it (codex with a
// custom model provider whose wire_api is "responses"). It plays a script of replies —
// assistant text, function_call items, usage, HTTP errors, a failed response, a stream
// that stalls, a malformed stream — as the API's server-sent events, and records every
// request. Its scripting API mirrors the Anthropic one: ResponsesReply is Reply,
// FunctionCall is ToolUse, and the usage figures are the same Usage.
//
// Endpoints, below /v1 (ResponsesServer.URL ends in /v1, the form a provider's base_url
// takes): POST /v1/responses (streaming and not), GET /v1/models; HEAD or GET on
// anything else answers 200.

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// ResponsesReply is one scripted answer to a POST /v1/responses.
type ResponsesReply struct {
	// Text is the assistant message's text; empty means none ("ok" is sent when there
	// is neither text nor a function call, since the API never answers with nothing).
	Text string
	// FunctionCalls are function_call output items after the message.
	FunctionCalls []FunctionCall
	// Usage is what response.completed reports; a zero Usage reports DefaultUsage.
	// CacheReadInputTokens is input_tokens_details.cached_tokens.
	Usage Usage
	// Model overrides the model named in the response; default: the request's model.
	Model string

	// Status, when not 0 or 200, answers with this HTTP status and an API error body
	// {"error":{"type","code","message"}} of ErrorType (default: derived from the
	// status) and ErrorMessage.
	Status       int
	RetryAfter   string
	ErrorType    string
	ErrorMessage string
	// Failed answers 200 and streams response.created then response.failed with
	// ErrorType (default "server_error") and ErrorMessage as its error.
	Failed bool

	// Stall, on a stream, sends the headers and response.created, then nothing more
	// until the client goes away or the server is closed; a non-streaming stall sends
	// nothing. Each stall is announced on ResponsesServer.Stalled.
	Stall bool
	// Malformed sends a stream whose first event's data is not JSON (a non-streaming
	// request gets a 200 with a truncated JSON body).
	Malformed bool

	// Times repeats this reply for that many requests (0 and 1 mean once).
	Times int
}

// FunctionCall is a function_call output item. CallID defaults to a unique call_ id.
type FunctionCall struct {
	CallID string
	Name   string
	// Namespace, when set, is the namespace tool the function belongs to (a tool of
	// type "namespace" in the request, such as codex's mcp__<server> for an MCP server).
	Namespace string
	Arguments any // marshalled to the item's arguments string; nil is {}
	// ArgumentsFrom, when set, builds the arguments from the request being answered
	// instead of Arguments. If it fails, the request is answered 400
	// invalid_request_error naming the function, and the error is recorded in the
	// request's ScriptError.
	ArgumentsFrom func(ResponsesRequest) (any, error)
}

// ResponsesRequest is one recorded request to the Responses fake.
type ResponsesRequest struct {
	Method string
	Path   string
	Header http.Header
	Body   []byte

	// Parsed from a /v1/responses body.
	Model        string
	Stream       bool
	Instructions string
	Tools        []string // names of the tools offered, in order (a tool without a name: its type)
	Input        []InputItem
	// Reply is the index of the script reply that answered (-1 for the default reply
	// and for requests that are not responses).
	Reply       int
	ScriptError string
}

// InputItem is one item of a recorded request's input; fields not of its type are empty.
type InputItem struct {
	Type      string // message, function_call, function_call_output, reasoning, ...
	Role      string // message
	Text      string // message: its text parts joined by newlines; function_call_output: its output
	CallID    string // function_call, function_call_output
	Name      string // function_call
	Arguments string // function_call
}

// Transcript is every message's text, one "role: text" line each.
func (r ResponsesRequest) Transcript() string {
	var parts []string
	for _, it := range r.Input {
		if it.Type == "message" {
			parts = append(parts, it.Role+": "+it.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// FunctionOutputs returns the function_call_output items of the request.
func (r ResponsesRequest) FunctionOutputs() []InputItem {
	var out []InputItem
	for _, it := range r.Input {
		if it.Type == "function_call_output" || it.Type == "custom_tool_call_output" {
			out = append(out, it)
		}
	}
	return out
}

// LastFunctionOutput returns the newest function_call_output; false when there is none.
func (r ResponsesRequest) LastFunctionOutput() (InputItem, bool) {
	out := r.FunctionOutputs()
	if len(out) == 0 {
		return InputItem{}, false
	}
	return out[len(out)-1], true
}

// ResponsesServer is a running Responses fake. Its methods are safe for concurrent use.
type ResponsesServer struct {
	// URL is the base URL including /v1 (http://127.0.0.1:port/v1), for a provider's
	// base_url.
	URL string
	// Stalled receives the index of each stalling reply when its stall begins.
	Stalled chan int

	core[ResponsesRequest, ResponsesReply]
	ids counter // every id the server makes, whatever its prefix
}

// NewResponses starts a fake serving script, then the default reply ("done") once the
// script is used up. Close it when done; StartResponses does that for a test.
func NewResponses(script ...ResponsesReply) *ResponsesServer {
	s := &ResponsesServer{Stalled: make(chan int, 16)}
	s.script = queue[ResponsesReply]{script: script, def: ResponsesReply{Text: "done"}}
	s.start(s.serve, s.Stalled, "response")
	s.URL = s.srv.URL + "/v1"
	return s
}

// StartResponses is NewResponses with Close registered on t.
func StartResponses(t testing.TB, script ...ResponsesReply) *ResponsesServer {
	t.Helper()
	s := NewResponses(script...)
	t.Cleanup(s.Close)
	return s
}

// Responses returns the recorded POST /v1/responses requests.
func (s *ResponsesServer) Responses() []ResponsesRequest {
	return s.where(func(r ResponsesRequest) bool { return r.Method == http.MethodPost && r.Path == "/v1/responses" })
}

func (s *ResponsesServer) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	req := ResponsesRequest{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body, Reply: -1}
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/v1/responses":
		if err := parseResponsesRequest(body, &req); err != nil {
			s.requests.record(req)
			writeResponsesError(w, http.StatusBadRequest, "invalid_request_error", "fakemodel: "+err.Error(), "")
			return
		}
		idx, reply := s.script.take()
		req.Reply = idx
		var items []map[string]any
		if reply.Status == 0 || reply.Status == http.StatusOK {
			var err error
			if items, err = s.items(reply, req); err != nil {
				req.ScriptError = err.Error()
				s.requests.record(req)
				writeResponsesError(w, http.StatusBadRequest, "invalid_request_error", "fakemodel: "+err.Error(), "")
				return
			}
		}
		s.requests.record(req)
		s.answer(w, r.Context(), req, idx, reply, items)
	case r.Method == http.MethodGet && r.URL.Path == "/v1/models":
		s.requests.record(req)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"object":"list","data":[{"id":"gpt-5-codex","object":"model","created":1757000000,"owned_by":"openai"}]}`)
	case r.Method == http.MethodHead || r.Method == http.MethodGet:
		s.requests.record(req)
		w.WriteHeader(http.StatusOK)
	default:
		s.requests.record(req)
		writeResponsesError(w, http.StatusNotFound, "not_found_error", "fakemodel: no route for "+r.Method+" "+r.URL.Path, "")
	}
}

// items builds the output items of reply r to req.
func (s *ResponsesServer) items(r ResponsesReply, req ResponsesRequest) ([]map[string]any, error) {
	var out []map[string]any
	if r.Text != "" || len(r.FunctionCalls) == 0 {
		out = append(out, map[string]any{
			"type": "message", "id": s.ids.id("msg"), "role": "assistant", "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": cmp.Or(r.Text, "ok"), "annotations": []any{}}},
		})
	}
	for _, fc := range r.FunctionCalls {
		id := fc.CallID
		if id == "" {
			id = s.ids.id("call")
		}
		args := fc.Arguments
		if fc.ArgumentsFrom != nil {
			var err error
			if args, err = fc.ArgumentsFrom(req); err != nil {
				return nil, fmt.Errorf("function_call %s: building its arguments: %w", fc.Name, err)
			}
		}
		if args == nil {
			args = map[string]any{}
		}
		raw, err := json.Marshal(args)
		if err != nil {
			return nil, fmt.Errorf("function_call %s: its arguments are not JSON: %w", fc.Name, err)
		}
		call := map[string]any{
			"type": "function_call", "id": s.ids.id("fc"), "call_id": id, "name": fc.Name,
			"arguments": string(raw), "status": "completed",
		}
		if fc.Namespace != "" {
			call["namespace"] = fc.Namespace
		}
		out = append(out, call)
	}
	return out, nil
}

// answer writes reply r (built into items unless it is an error status) to req.
func (s *ResponsesServer) answer(w http.ResponseWriter, ctx context.Context, req ResponsesRequest, idx int, r ResponsesReply, items []map[string]any) {
	if r.Status != 0 && r.Status != http.StatusOK {
		writeResponsesError(w, r.Status, cmp.Or(r.ErrorType, responsesErrorType(r.Status)),
			cmp.Or(r.ErrorMessage, fmt.Sprintf("fakemodel: scripted %d", r.Status)), r.RetryAfter)
		return
	}
	model := cmp.Or(r.Model, req.Model)
	usage := cmp.Or(r.Usage, DefaultUsage)
	respID := s.ids.id("resp")
	response := func(status string, output []map[string]any) map[string]any {
		m := map[string]any{"id": respID, "object": "response", "created_at": 1757000000, "status": status,
			"model": model, "output": output}
		if output == nil {
			m["output"] = []any{}
		}
		return m
	}
	completed := response("completed", items)
	completed["usage"] = map[string]any{
		"input_tokens":          usage.InputTokens,
		"input_tokens_details":  map[string]any{"cached_tokens": usage.CacheReadInputTokens},
		"output_tokens":         usage.OutputTokens,
		"output_tokens_details": map[string]any{"reasoning_tokens": 0},
		"total_tokens":          usage.InputTokens + usage.OutputTokens,
	}

	if !req.Stream {
		switch {
		case r.Stall:
			s.stall(ctx, idx)
		case r.Malformed:
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"id": "resp_broken", "output": [`)
		default:
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(completed)
		}
		return
	}

	events := startEvents(w)
	seq := 0
	send := func(event string, data map[string]any) {
		data["type"] = event
		data["sequence_number"] = seq
		seq++
		events.send(event, data)
	}
	if r.Malformed {
		events.raw("event: response.created\ndata: {\"type\": \"response.created\", \"response\": {not json\n\n")
		return
	}
	send("response.created", map[string]any{"response": response("in_progress", nil)})
	if r.Stall {
		s.stall(ctx, idx)
		return
	}
	if r.Failed {
		failed := response("failed", nil)
		failed["error"] = map[string]any{"code": cmp.Or(r.ErrorType, "server_error"),
			"message": cmp.Or(r.ErrorMessage, "fakemodel: scripted failed response")}
		send("response.failed", map[string]any{"response": failed})
		return
	}
	for i, it := range items {
		added := map[string]any{}
		for k, v := range it {
			added[k] = v
		}
		added["status"] = "in_progress"
		switch it["type"] {
		case "message":
			added["content"] = []any{}
			send("response.output_item.added", map[string]any{"output_index": i, "item": added})
			text := it["content"].([]any)[0].(map[string]any)["text"].(string)
			send("response.content_part.added", map[string]any{"output_index": i, "item_id": it["id"], "content_index": 0,
				"part": map[string]any{"type": "output_text", "text": "", "annotations": []any{}}})
			send("response.output_text.delta", map[string]any{"output_index": i, "item_id": it["id"], "content_index": 0, "delta": text})
			send("response.output_text.done", map[string]any{"output_index": i, "item_id": it["id"], "content_index": 0, "text": text})
			send("response.content_part.done", map[string]any{"output_index": i, "item_id": it["id"], "content_index": 0,
				"part": map[string]any{"type": "output_text", "text": text, "annotations": []any{}}})
		case "function_call":
			added["arguments"] = ""
			send("response.output_item.added", map[string]any{"output_index": i, "item": added})
			send("response.function_call_arguments.delta", map[string]any{"output_index": i, "item_id": it["id"], "delta": it["arguments"]})
			send("response.function_call_arguments.done", map[string]any{"output_index": i, "item_id": it["id"], "arguments": it["arguments"]})
		}
		send("response.output_item.done", map[string]any{"output_index": i, "item": it})
	}
	send("response.completed", map[string]any{"response": completed})
}

// responsesErrorType is the error type the API names for an HTTP status.
func responsesErrorType(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "invalid_request_error"
	case http.StatusUnauthorized:
		return "invalid_api_key"
	case http.StatusForbidden:
		return "permission_denied"
	case http.StatusNotFound:
		return "not_found_error"
	case http.StatusTooManyRequests:
		return "rate_limit_exceeded"
	}
	if status >= 400 && status < 500 {
		return "invalid_request_error"
	}
	return "server_error"
}

func writeResponsesError(w http.ResponseWriter, status int, typ, msg, retryAfter string) {
	writeJSONError(w, status, retryAfter, map[string]any{
		"error": map[string]any{"type": typ, "code": typ, "message": msg, "param": nil},
	})
}

// parseResponsesRequest fills req from a Responses API body. A message's content may be
// a string or parts; a function_call_output's output may be a string or parts.
func parseResponsesRequest(body []byte, req *ResponsesRequest) error {
	var raw struct {
		Model        string            `json:"model"`
		Stream       bool              `json:"stream"`
		Instructions string            `json:"instructions"`
		Tools        []json.RawMessage `json:"tools"`
		Input        json.RawMessage   `json:"input"`
	}
	if err := json.Unmarshal(body, &raw); err != nil {
		return fmt.Errorf("request body: %w", err)
	}
	req.Model, req.Stream, req.Instructions = raw.Model, raw.Stream, raw.Instructions
	for _, t := range raw.Tools {
		var tool struct {
			Type string `json:"type"`
			Name string `json:"name"`
		}
		json.Unmarshal(t, &tool)
		name := tool.Name
		if name == "" {
			name = tool.Type
		}
		req.Tools = append(req.Tools, name)
	}
	var items []struct {
		Type      string          `json:"type"`
		Role      string          `json:"role"`
		Content   json.RawMessage `json:"content"`
		CallID    string          `json:"call_id"`
		Name      string          `json:"name"`
		Arguments string          `json:"arguments"`
		Input     string          `json:"input"`
		Output    json.RawMessage `json:"output"`
	}
	text, isString, err := stringOrList(raw.Input, &items)
	if err != nil {
		return fmt.Errorf("input: %w", err)
	}
	if isString {
		req.Input = []InputItem{{Type: "message", Role: "user", Text: text}}
		return nil
	}
	for i, it := range items {
		item := InputItem{Type: it.Type, Role: it.Role, CallID: it.CallID, Name: it.Name, Arguments: it.Arguments}
		if item.Type == "" && it.Role != "" {
			item.Type = "message"
		}
		if item.Type == "custom_tool_call" {
			item.Arguments = it.Input
		}
		var err error
		switch item.Type {
		case "message":
			item.Text, err = partsText(it.Content)
		case "function_call_output", "custom_tool_call_output":
			item.Text, err = partsText(it.Output)
		}
		if err != nil {
			return fmt.Errorf("input[%d]: %w", i, err)
		}
		req.Input = append(req.Input, item)
	}
	return nil
}

// partsText is the text of a string or of a list of parts with a text field, joined by
// newlines.
func partsText(raw json.RawMessage) (string, error) {
	var parts []struct {
		Text string `json:"text"`
	}
	text, isString, err := stringOrList(raw, &parts)
	if err != nil || isString {
		return text, err
	}
	var texts []string
	for _, p := range parts {
		if p.Text != "" {
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, "\n"), nil
}
