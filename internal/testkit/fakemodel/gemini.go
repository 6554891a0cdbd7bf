package fakemodel

// The Google Gemini API dialect of the fake (generativelanguage.googleapis.com, v1beta),
// for the Gemini CLI in api-key mode (GOOGLE_GEMINI_BASE_URL pointing at GeminiServer.URL,
// any GEMINI_API_KEY). It plays a script of replies — model text, functionCall parts,
// usage, HTTP errors in the API's error shape, a stream that stalls, a malformed stream —
// as the API's server-sent events, and records every request. Like the real API, it
// rejects with 400 a request whose function calls and function responses do not pair
// up, which is what the CLI's resume sends when it repeats earlier tool results.
//
// Endpoints, below /v1beta (GeminiServer.URL is the bare origin, as the SDK appends
// /v1beta itself):
//
//   - POST /v1beta/models/{model}:streamGenerateContent?alt=sse — the conversation; each
//     request takes the next scripted reply.
//   - POST /v1beta/models/{model}:generateContent — the CLI's helpers (the model
//     router's complexity classifier, next-speaker checks, loop detection, ...). They do
//     not take scripted replies: each is answered by GeminiServer's helper (by default
//     a JSON value fitting the request's responseJsonSchema, or the text "ok"), with no
//     usage, so that a test's usage figures are the scripted replies' alone. A
//     non-streaming request that the script should answer can be sent with
//     ?fakemodel=script (tests only).
//   - POST /v1beta/models/{model}:countTokens — a rough count of the body.
//   - GET /v1beta/models and /v1beta/models/{model} — one model.
//   - HEAD or GET on anything else answers 200.

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
)

// GeminiReply is one scripted answer to a POST …:streamGenerateContent.
type GeminiReply struct {
	// Text is the model's text part; empty means none ("ok" is sent when there is
	// neither text nor a function call, since the API never answers with nothing).
	Text string
	// FunctionCalls are functionCall parts after the text.
	FunctionCalls []GeminiCall
	// FinishReason defaults to "STOP", which the API sends for function calls too.
	FinishReason string
	// Usage is what usageMetadata reports on the last chunk: InputTokens is
	// promptTokenCount, OutputTokens candidatesTokenCount, CacheReadInputTokens
	// cachedContentTokenCount (part of promptTokenCount, as in the API). A zero Usage
	// reports DefaultUsage.
	Usage Usage
	// Model is the modelVersion reported; default: the model of the request's path.
	Model string

	// Status, when not 0 or 200, answers with this HTTP status and the API's error body
	// {"error":{"code","message","status"}}, status being ErrorStatus (default: the
	// gRPC status name of the HTTP status: INVALID_ARGUMENT for 400, ...).
	Status       int
	RetryAfter   string
	ErrorStatus  string
	ErrorMessage string

	// Stall, on a stream, sends the headers and a first chunk with an empty text part,
	// then nothing more until the client goes away or the server is closed; a
	// non-streaming stall sends nothing. Each stall is announced on GeminiServer.Stalled.
	Stall bool
	// Malformed sends a stream whose first event's data is not JSON (a non-streaming
	// request gets a 200 with a truncated JSON body).
	Malformed bool

	// Times repeats this reply for that many requests (0 and 1 mean once).
	Times int
}

func (r GeminiReply) times() int { return max(r.Times, 1) }

// GeminiCall is a functionCall part.
type GeminiCall struct {
	// ID is the call's id; empty sends none, as the Gemini API does (the CLI then
	// makes up its own).
	ID   string
	Name string
	Args any // the call's args object; nil is {}
	// ArgsFrom, when set, builds the args from the request being answered instead of
	// Args. If it fails, the request is answered 400 INVALID_ARGUMENT naming the
	// function, and the error is recorded in the request's ScriptError.
	ArgsFrom func(GeminiRequest) (any, error)
}

// GeminiRequest is one recorded request to the Gemini fake.
type GeminiRequest struct {
	Method string
	Path   string // the URL's path, "/v1beta/models/m:streamGenerateContent"
	Query  string // the URL's raw query, "alt=sse"
	Header http.Header
	Body   []byte

	// Model and Method of a /v1beta/models/{model}:{method} path: "gemini-2.5-pro" and
	// "streamGenerateContent", "generateContent" or "countTokens".
	Model  string
	Action string
	// Parsed from a generateContent or streamGenerateContent body.
	System   string   // systemInstruction's text parts, joined by newlines
	Tools    []string // names of the function declarations offered, in order
	Contents []GeminiContent
	// JSONSchema is generationConfig's responseJsonSchema (or responseSchema), when
	// the request asks for JSON: a helper's request.
	JSONSchema json.RawMessage
	// Reply is the index of the script reply that answered (-1 for the default reply,
	// for helpers and for requests that are not conversation turns).
	Reply int
	// ScriptError is why the scripted reply could not be built (an ArgsFrom failed).
	ScriptError string
	// Rejected is why the fake refused the request as the real API would, with 400
	// INVALID_ARGUMENT and this message (function calls and responses that do not
	// pair up); "" when it did not. A rejected request takes no scripted reply.
	Rejected string
}

// Streaming reports whether r is a conversation turn (…:streamGenerateContent).
func (r GeminiRequest) Streaming() bool { return r.Action == "streamGenerateContent" }

// Conversation reports whether r is for the script: a …:streamGenerateContent, or a
// …:generateContent?fakemodel=script.
func (r GeminiRequest) Conversation() bool {
	return r.Method == http.MethodPost && (r.Streaming() ||
		r.Action == "generateContent" && strings.Contains("&"+r.Query+"&", "&fakemodel=script&"))
}

// GeminiContent is one content of a recorded request: a turn of role "user" or "model".
type GeminiContent struct {
	Role  string
	Parts []GeminiPart
}

// GeminiPart is one part of a content; fields not of its kind are empty.
type GeminiPart struct {
	// Kind is "text", "thought" (a text part marked thought), "functionCall",
	// "functionResponse", or the part's first field name for anything else.
	Kind string
	Text string // text, thought; functionResponse: its response's output (or error) as text
	// Name and ID of a functionCall or functionResponse.
	Name string
	ID   string
	// Args of a functionCall; Response of a functionResponse.
	Args     json.RawMessage
	Response json.RawMessage
	// IsError: a functionResponse whose response has an "error" field.
	IsError bool
}

// Text is the content's text parts (not thoughts), joined by newlines.
func (c GeminiContent) Text() string {
	var texts []string
	for _, p := range c.Parts {
		if p.Kind == "text" && p.Text != "" {
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, "\n")
}

// Transcript is every content's text, one "role: text" line each.
func (r GeminiRequest) Transcript() string {
	var parts []string
	for _, c := range r.Contents {
		parts = append(parts, c.Role+": "+c.Text())
	}
	return strings.Join(parts, "\n")
}

// FunctionResponses returns the functionResponse parts of the request, oldest first.
func (r GeminiRequest) FunctionResponses() []GeminiPart { return r.parts("functionResponse") }

// FunctionCalls returns the functionCall parts of the request's model turns.
func (r GeminiRequest) FunctionCalls() []GeminiPart { return r.parts("functionCall") }

func (r GeminiRequest) parts(kind string) []GeminiPart {
	var out []GeminiPart
	for _, c := range r.Contents {
		for _, p := range c.Parts {
			if p.Kind == kind {
				out = append(out, p)
			}
		}
	}
	return out
}

// LastFunctionResponse returns the newest functionResponse; false when there is none.
func (r GeminiRequest) LastFunctionResponse() (GeminiPart, bool) {
	out := r.FunctionResponses()
	if len(out) == 0 {
		return GeminiPart{}, false
	}
	return out[len(out)-1], true
}

// GeminiServer is a running Gemini fake. Its methods are safe for concurrent use.
type GeminiServer struct {
	// URL is the origin (http://127.0.0.1:port), for GOOGLE_GEMINI_BASE_URL.
	URL string
	// Stalled receives the index of each stalling reply when its stall begins.
	Stalled chan int

	core[GeminiRequest, GeminiReply]
	ids counter

	mu     sync.Mutex
	helper func(GeminiRequest) string
}

// NewGemini starts a fake serving script, then the default reply ("done") once the
// script is used up. Close it when done; StartGemini does that for a test.
func NewGemini(script ...GeminiReply) *GeminiServer {
	s := &GeminiServer{Stalled: make(chan int, 16)}
	s.script = queue[GeminiReply]{script: script, def: GeminiReply{Text: "done"}}
	s.start(s.serve, s.Stalled, "reply")
	s.URL = s.srv.URL
	return s
}

// StartGemini is NewGemini with Close registered on t.
func StartGemini(t testing.TB, script ...GeminiReply) *GeminiServer {
	t.Helper()
	s := NewGemini(script...)
	t.Cleanup(s.Close)
	return s
}

// SetHelper replaces how helper requests (…:generateContent) are answered: h returns
// the text of the reply. nil restores the default (HelperText).
func (s *GeminiServer) SetHelper(h func(GeminiRequest) string) {
	s.mu.Lock()
	s.helper = h
	s.mu.Unlock()
}

// Turns returns the recorded conversation requests (Conversation), the rejected ones
// included.
func (s *GeminiServer) Turns() []GeminiRequest {
	return s.where(func(r GeminiRequest) bool { return r.Conversation() })
}

// Helpers returns the recorded helper requests (…:generateContent).
func (s *GeminiServer) Helpers() []GeminiRequest {
	return s.where(func(r GeminiRequest) bool {
		return r.Method == http.MethodPost && r.Action == "generateContent" && !r.Conversation()
	})
}

// Rejected returns the recorded requests the fake refused as the real API would.
func (s *GeminiServer) Rejected() []GeminiRequest {
	return s.where(func(r GeminiRequest) bool { return r.Rejected != "" })
}

// Messages the real API answers with 400 INVALID_ARGUMENT when function calls and
// responses do not pair up.
const (
	GeminiMismatchedResponses = "Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn."
	GeminiOrphanResponse      = "Please ensure that function response turn comes immediately after a function call turn."
)

func (s *GeminiServer) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	req := GeminiRequest{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Header: r.Header.Clone(), Body: body, Reply: -1}
	rest, isModels := strings.CutPrefix(r.URL.Path, "/v1beta/models")
	if isModels {
		rest = strings.TrimPrefix(rest, "/")
		req.Model, req.Action, _ = strings.Cut(rest, ":")
	}
	switch {
	case r.Method == http.MethodPost && isModels && (req.Action == "streamGenerateContent" || req.Action == "generateContent"):
		if err := parseGeminiRequest(body, &req); err != nil {
			s.requests.record(req)
			writeGeminiError(w, http.StatusBadRequest, "", "fakemodel: "+err.Error(), "")
			return
		}
		if msg := geminiPairing(req.Contents); msg != "" {
			req.Rejected = msg
			s.requests.record(req)
			writeGeminiError(w, http.StatusBadRequest, "", msg, "")
			return
		}
		stream := req.Streaming()
		if !req.Conversation() {
			s.mu.Lock()
			h := s.helper
			s.mu.Unlock()
			s.requests.record(req)
			text := HelperText(req)
			if h != nil {
				text = h(req)
			}
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(s.chunk(req.Model, []any{map[string]any{"text": text}}, "STOP", nil))
			return
		}
		idx, reply := s.script.take()
		req.Reply = idx
		var parts []any
		if reply.Status == 0 || reply.Status == http.StatusOK {
			var err error
			if parts, err = s.parts(reply, req); err != nil {
				req.ScriptError = err.Error()
				s.requests.record(req)
				writeGeminiError(w, http.StatusBadRequest, "", "fakemodel: "+err.Error(), "")
				return
			}
		}
		s.requests.record(req)
		s.answer(w, r.Context(), req, stream, idx, reply, parts)
	case r.Method == http.MethodPost && isModels && req.Action == "countTokens":
		s.requests.record(req)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"totalTokens":%d}`, max(len(body)/4, 1))
	case r.Method == http.MethodGet && isModels:
		s.requests.record(req)
		w.Header().Set("Content-Type", "application/json")
		model := map[string]any{"name": "models/" + cmp.Or(req.Model, "gemini-2.5-pro"), "version": "001",
			"displayName": "Gemini (fakemodel)", "inputTokenLimit": 1048576, "outputTokenLimit": 65536,
			"supportedGenerationMethods": []string{"generateContent", "countTokens"}}
		if req.Model != "" {
			json.NewEncoder(w).Encode(model)
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"models": []any{model}})
	case r.Method == http.MethodHead || r.Method == http.MethodGet:
		s.requests.record(req)
		w.WriteHeader(http.StatusOK)
	default:
		s.requests.record(req)
		writeGeminiError(w, http.StatusNotFound, "", "fakemodel: no route for "+r.Method+" "+r.URL.Path, "")
	}
}

// parts builds the parts of reply r to req.
func (s *GeminiServer) parts(r GeminiReply, req GeminiRequest) ([]any, error) {
	var out []any
	if r.Text != "" || len(r.FunctionCalls) == 0 {
		out = append(out, map[string]any{"text": cmp.Or(r.Text, "ok")})
	}
	for i, fc := range r.FunctionCalls {
		args := fc.Args
		if fc.ArgsFrom != nil {
			var err error
			if args, err = fc.ArgsFrom(req); err != nil {
				return nil, fmt.Errorf("functionCall %s: building its args: %w", fc.Name, err)
			}
		}
		if args == nil {
			args = map[string]any{}
		}
		raw, err := json.Marshal(args)
		if err != nil {
			return nil, fmt.Errorf("functionCall %s: its args are not JSON: %w", fc.Name, err)
		}
		call := map[string]any{"name": fc.Name, "args": json.RawMessage(raw)}
		if fc.ID != "" {
			call["id"] = fc.ID
		}
		part := map[string]any{"functionCall": call}
		if i == 0 {
			// Gemini 3 models sign the first function call of a turn; a client sends the
			// signature back with the call in later requests.
			part["thoughtSignature"] = "ZmFrZW1vZGVs" + strings.TrimPrefix(s.ids.id("sig"), "sig")
		}
		out = append(out, part)
	}
	return out, nil
}

// chunk is one GenerateContentResponse: a candidate of parts, with finishReason and
// usage when not empty.
func (s *GeminiServer) chunk(model string, parts []any, finish string, usage *Usage) map[string]any {
	cand := map[string]any{"content": map[string]any{"role": "model", "parts": parts}, "index": 0}
	if finish != "" {
		cand["finishReason"] = finish
	}
	m := map[string]any{"candidates": []any{cand}, "modelVersion": model}
	if usage != nil {
		m["usageMetadata"] = geminiUsage(*usage)
	}
	return m
}

func geminiUsage(u Usage) map[string]any {
	m := map[string]any{
		"promptTokenCount":     u.InputTokens,
		"candidatesTokenCount": u.OutputTokens,
		"totalTokenCount":      u.InputTokens + u.OutputTokens,
		"promptTokensDetails":  []any{map[string]any{"modality": "TEXT", "tokenCount": u.InputTokens}},
	}
	if u.CacheReadInputTokens > 0 {
		m["cachedContentTokenCount"] = u.CacheReadInputTokens
	}
	return m
}

// answer writes reply r (built into parts unless it is an error status) to req.
func (s *GeminiServer) answer(w http.ResponseWriter, ctx context.Context, req GeminiRequest, stream bool, idx int, r GeminiReply, parts []any) {
	if r.Status != 0 && r.Status != http.StatusOK {
		writeGeminiError(w, r.Status, r.ErrorStatus, cmp.Or(r.ErrorMessage, fmt.Sprintf("fakemodel: scripted %d", r.Status)), r.RetryAfter)
		return
	}
	model := cmp.Or(r.Model, req.Model)
	usage := cmp.Or(r.Usage, DefaultUsage)
	finish := cmp.Or(r.FinishReason, "STOP")
	respID := s.ids.id("resp")
	withID := func(m map[string]any) map[string]any { m["responseId"] = respID; return m }

	if !stream {
		switch {
		case r.Stall:
			s.stall(ctx, idx)
		case r.Malformed:
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"candidates": [{"content": {"parts": [`)
		default:
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(withID(s.chunk(model, parts, finish, &usage)))
		}
		return
	}

	events := startEvents(w)
	send := func(m map[string]any) {
		b, _ := json.Marshal(withID(m))
		events.raw("data: " + string(b) + "\r\n\r\n")
	}
	switch {
	case r.Malformed:
		events.raw("data: {\"candidates\": [{\"content\": {not json\r\n\r\n")
		return
	case r.Stall:
		send(s.chunk(model, []any{map[string]any{"text": ""}}, "", nil))
		s.stall(ctx, idx)
		return
	}
	// Text first, on its own chunk when function calls follow (as the API streams a
	// turn that says something and then calls); the last chunk carries finishReason
	// and usage.
	if len(parts) > 1 {
		if _, isText := parts[0].(map[string]any)["text"]; isText {
			send(s.chunk(model, parts[:1], "", nil))
			parts = parts[1:]
		}
	}
	send(s.chunk(model, parts, finish, &usage))
}

// HelperText is how the fake answers a helper request by default: when it asks for
// JSON, a value fitting its schema (the first enum value of a string, "user" for the
// next-speaker check's next_speaker, 10 for a number, false, and every property of an
// object); otherwise "ok".
func HelperText(req GeminiRequest) string {
	if len(req.JSONSchema) == 0 {
		return "ok"
	}
	var schema map[string]any
	if json.Unmarshal(req.JSONSchema, &schema) != nil {
		return "{}"
	}
	b, _ := json.Marshal(schemaValue("", schema))
	return string(b)
}

func schemaValue(name string, schema map[string]any) any {
	if enum, ok := schema["enum"].([]any); ok && len(enum) > 0 {
		if slices.Contains(enum, any("user")) {
			return "user"
		}
		return enum[0]
	}
	typ, _ := schema["type"].(string)
	switch strings.ToLower(typ) {
	case "object":
		out := map[string]any{}
		props, _ := schema["properties"].(map[string]any)
		for k, v := range props {
			if sub, ok := v.(map[string]any); ok {
				out[k] = schemaValue(k, sub)
			}
		}
		return out
	case "array":
		return []any{}
	case "integer", "number":
		return 10
	case "boolean":
		return false
	}
	return "fakemodel " + name
}

// geminiPairing returns why the API refuses contents, "" when it does not: every model
// turn with function calls must be followed by a turn with exactly as many function
// responses, and function responses only follow such a turn.
func geminiPairing(contents []GeminiContent) string {
	count := func(c GeminiContent, kind string) int {
		n := 0
		for _, p := range c.Parts {
			if p.Kind == kind {
				n++
			}
		}
		return n
	}
	for i, c := range contents {
		responses := count(c, "functionResponse")
		calls := 0
		if i > 0 && contents[i-1].Role == "model" {
			calls = count(contents[i-1], "functionCall")
		}
		switch {
		case calls > 0 && responses != calls:
			return GeminiMismatchedResponses
		case calls == 0 && responses > 0:
			return GeminiOrphanResponse
		}
	}
	return ""
}

// geminiErrorStatus is the status name the API gives an HTTP status.
func geminiErrorStatus(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "INVALID_ARGUMENT"
	case http.StatusUnauthorized:
		return "UNAUTHENTICATED"
	case http.StatusForbidden:
		return "PERMISSION_DENIED"
	case http.StatusNotFound:
		return "NOT_FOUND"
	case http.StatusConflict:
		return "ABORTED"
	case http.StatusTooManyRequests:
		return "RESOURCE_EXHAUSTED"
	case 499:
		return "CANCELLED"
	case http.StatusNotImplemented:
		return "UNIMPLEMENTED"
	case http.StatusServiceUnavailable:
		return "UNAVAILABLE"
	case http.StatusGatewayTimeout:
		return "DEADLINE_EXCEEDED"
	}
	if status >= 400 && status < 500 {
		return "FAILED_PRECONDITION"
	}
	return "INTERNAL"
}

func writeGeminiError(w http.ResponseWriter, status int, name, msg, retryAfter string) {
	writeJSONError(w, status, retryAfter, map[string]any{
		"error": map[string]any{"code": status, "message": msg, "status": cmp.Or(name, geminiErrorStatus(status))},
	})
}

// parseGeminiRequest fills req from a generateContent body.
func parseGeminiRequest(body []byte, req *GeminiRequest) error {
	type part struct {
		Text         *string `json:"text"`
		Thought      bool    `json:"thought"`
		FunctionCall *struct {
			Name string          `json:"name"`
			ID   string          `json:"id"`
			Args json.RawMessage `json:"args"`
		} `json:"functionCall"`
		FunctionResponse *struct {
			Name     string          `json:"name"`
			ID       string          `json:"id"`
			Response json.RawMessage `json:"response"`
		} `json:"functionResponse"`
	}
	type content struct {
		Role  string            `json:"role"`
		Parts []json.RawMessage `json:"parts"`
	}
	var raw struct {
		Contents          json.RawMessage `json:"contents"`
		SystemInstruction json.RawMessage `json:"systemInstruction"`
		Tools             []struct {
			FunctionDeclarations []struct {
				Name string `json:"name"`
			} `json:"functionDeclarations"`
		} `json:"tools"`
		GenerationConfig struct {
			ResponseJSONSchema json.RawMessage `json:"responseJsonSchema"`
			ResponseSchema     json.RawMessage `json:"responseSchema"`
		} `json:"generationConfig"`
	}
	if err := json.Unmarshal(body, &raw); err != nil {
		return fmt.Errorf("request body: %w", err)
	}
	req.JSONSchema = raw.GenerationConfig.ResponseJSONSchema
	if len(req.JSONSchema) == 0 {
		req.JSONSchema = raw.GenerationConfig.ResponseSchema
	}
	for _, t := range raw.Tools {
		for _, f := range t.FunctionDeclarations {
			req.Tools = append(req.Tools, f.Name)
		}
	}
	decodePart := func(rawPart json.RawMessage) (GeminiPart, error) {
		var p part
		if err := json.Unmarshal(rawPart, &p); err != nil {
			return GeminiPart{}, err
		}
		switch {
		case p.FunctionCall != nil:
			return GeminiPart{Kind: "functionCall", Name: p.FunctionCall.Name, ID: p.FunctionCall.ID, Args: p.FunctionCall.Args}, nil
		case p.FunctionResponse != nil:
			fr := GeminiPart{Kind: "functionResponse", Name: p.FunctionResponse.Name, ID: p.FunctionResponse.ID, Response: p.FunctionResponse.Response}
			fr.Text, fr.IsError = responseText(p.FunctionResponse.Response)
			return fr, nil
		case p.Text != nil && p.Thought:
			return GeminiPart{Kind: "thought", Text: *p.Text}, nil
		case p.Text != nil:
			return GeminiPart{Kind: "text", Text: *p.Text}, nil
		}
		var fields map[string]json.RawMessage
		json.Unmarshal(rawPart, &fields)
		keys := make([]string, 0, len(fields))
		for k := range fields {
			if k != "thoughtSignature" {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		return GeminiPart{Kind: strings.Join(keys, ",")}, nil
	}
	decodeContent := func(rawContent json.RawMessage) (GeminiContent, error) {
		var c content
		// The API takes a bare string as a user content of one text part.
		text, isString, err := stringOrList(rawContent, new([]any))
		if isString {
			return GeminiContent{Role: "user", Parts: []GeminiPart{{Kind: "text", Text: text}}}, err
		}
		if err := json.Unmarshal(rawContent, &c); err != nil {
			return GeminiContent{}, err
		}
		out := GeminiContent{Role: c.Role}
		for j, rp := range c.Parts {
			p, err := decodePart(rp)
			if err != nil {
				return GeminiContent{}, fmt.Errorf("parts[%d]: %w", j, err)
			}
			out.Parts = append(out.Parts, p)
		}
		return out, nil
	}
	if len(raw.SystemInstruction) > 0 && string(raw.SystemInstruction) != "null" {
		c, err := decodeContent(raw.SystemInstruction)
		if err != nil {
			return fmt.Errorf("systemInstruction: %w", err)
		}
		req.System = c.Text()
	}
	var contents []json.RawMessage
	if len(raw.Contents) > 0 {
		if err := json.Unmarshal(raw.Contents, &contents); err != nil {
			return fmt.Errorf("contents: %w", err)
		}
	}
	for i, rc := range contents {
		c, err := decodeContent(rc)
		if err != nil {
			return fmt.Errorf("contents[%d]: %w", i, err)
		}
		req.Contents = append(req.Contents, c)
	}
	return nil
}

// responseText is a functionResponse's response as text — its "output" (or "content",
// or "result") when a string, its "error" when there is one — and whether it is an error.
// Anything else is the response's JSON.
func responseText(raw json.RawMessage) (string, bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return string(raw), false
	}
	str := func(v json.RawMessage) (string, bool) {
		var s string
		if json.Unmarshal(v, &s) == nil {
			return s, true
		}
		return string(v), len(v) > 0
	}
	if v, ok := m["error"]; ok {
		s, _ := str(v)
		return s, true
	}
	for _, k := range []string{"output", "content", "result"} {
		if v, ok := m[k]; ok {
			if s, ok := str(v); ok {
				return s, false
			}
		}
	}
	return string(raw), false
}
