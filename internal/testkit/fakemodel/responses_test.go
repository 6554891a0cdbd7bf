package fakemodel

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

func postResponses(t *testing.T, s *ResponsesServer, body string) *http.Response {
	t.Helper()
	resp, err := http.Post(s.URL+"/responses", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// sseEvents reads a Responses stream into its events' data, in order.
func sseEvents(t *testing.T, r io.Reader) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	var event string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			var d map[string]any
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &d); err != nil {
				t.Fatalf("event %s: data is not JSON: %v", event, err)
			}
			if d["type"] != event {
				t.Fatalf("event %s carries type %v", event, d["type"])
			}
			out = append(out, d)
		}
	}
	return out
}

func TestResponses_StreamsTextFunctionCallsAndUsage(t *testing.T) {
	s := StartResponses(t, ResponsesReply{Text: "Listing.", FunctionCalls: []FunctionCall{
		{Name: "exec_command", Arguments: map[string]any{"cmd": "ls"}},
		{Namespace: "mcp__tools", Name: "ping", CallID: "call_x"},
	}, Usage: Usage{InputTokens: 40, OutputTokens: 7, CacheReadInputTokens: 3}})
	resp := postResponses(t, s, `{"model":"m1","stream":true,"instructions":"be brief","tools":[{"type":"function","name":"exec_command"},{"type":"namespace","name":"mcp__tools"},{"type":"web_search"}],
		"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}]}`)
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	events := sseEvents(t, resp.Body)
	var kinds []string
	for _, e := range events {
		kinds = append(kinds, e["type"].(string))
	}
	got := strings.Join(kinds, " ")
	for _, want := range []string{"response.created", "response.output_item.added", "response.output_text.delta",
		"response.function_call_arguments.done", "response.output_item.done"} {
		if !strings.Contains(got, want) {
			t.Errorf("stream %q lacks %s", got, want)
		}
	}
	last := events[len(events)-1]
	if last["type"] != "response.completed" {
		t.Fatalf("last event %v, want response.completed", last["type"])
	}
	r := last["response"].(map[string]any)
	usage := r["usage"].(map[string]any)
	if usage["input_tokens"] != 40.0 || usage["output_tokens"] != 7.0 || usage["total_tokens"] != 47.0 ||
		usage["input_tokens_details"].(map[string]any)["cached_tokens"] != 3.0 || r["model"] != "m1" {
		t.Errorf("completed response = %v", r)
	}
	out := r["output"].([]any)
	if len(out) != 3 {
		t.Fatalf("output items = %d, want message and two calls", len(out))
	}
	call := out[2].(map[string]any)
	if call["namespace"] != "mcp__tools" || call["call_id"] != "call_x" || call["arguments"] != "{}" {
		t.Errorf("namespaced call = %v", call)
	}
	if args := out[1].(map[string]any)["arguments"]; args != `{"cmd":"ls"}` {
		t.Errorf("arguments = %v", args)
	}
	reqs := s.Responses()
	if len(reqs) != 1 || reqs[0].Model != "m1" || reqs[0].Instructions != "be brief" || reqs[0].Reply != 0 ||
		strings.Join(reqs[0].Tools, ",") != "exec_command,mcp__tools,web_search" || reqs[0].Transcript() != "user: hi" {
		t.Errorf("recorded = %+v", reqs)
	}
}

func TestResponses_RecordsFunctionOutputsAndBuildsArguments(t *testing.T) {
	s := StartResponses(t, ResponsesReply{FunctionCalls: []FunctionCall{{Name: "use", ArgumentsFrom: func(r ResponsesRequest) (any, error) {
		out, ok := r.LastFunctionOutput()
		if !ok {
			return nil, fmt.Errorf("no output yet")
		}
		return map[string]any{"token": out.Text}, nil
	}}}}, ResponsesReply{FunctionCalls: []FunctionCall{{Name: "use", ArgumentsFrom: func(ResponsesRequest) (any, error) {
		return nil, fmt.Errorf("boom")
	}}}})
	resp := postResponses(t, s, `{"model":"m","input":[{"type":"function_call","call_id":"c1","name":"get","arguments":"{}"},
		{"type":"function_call_output","call_id":"c1","output":"tok-123"}]}`)
	var body map[string]any
	json.NewDecoder(resp.Body).Decode(&body)
	call := body["output"].([]any)[0].(map[string]any)
	if call["arguments"] != `{"token":"tok-123"}` {
		t.Errorf("built arguments = %v", call["arguments"])
	}
	resp = postResponses(t, s, `{"model":"m","input":"hi"}`)
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("a failing ArgumentsFrom answered %d, want 400", resp.StatusCode)
	}
	reqs := s.Responses()
	if len(reqs) != 2 || !strings.Contains(reqs[1].ScriptError, "boom") || reqs[1].Input[0].Text != "hi" {
		t.Errorf("recorded = %+v", reqs)
	}
}

func TestResponses_Errors(t *testing.T) {
	s := StartResponses(t,
		ResponsesReply{Status: 500, ErrorMessage: "down", Times: 2},
		ResponsesReply{Status: 429, RetryAfter: "1"},
		ResponsesReply{Failed: true, ErrorMessage: "gave up"},
		ResponsesReply{Malformed: true},
	)
	for i := 0; i < 2; i++ {
		resp := postResponses(t, s, `{"model":"m","stream":true}`)
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 500 || !bytes.Contains(body, []byte(`"message":"down"`)) || !bytes.Contains(body, []byte(`"type":"server_error"`)) {
			t.Errorf("500 #%d = %d %s", i, resp.StatusCode, body)
		}
	}
	if resp := postResponses(t, s, `{"model":"m","stream":true}`); resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "1" {
		t.Errorf("429 = %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	events := sseEvents(t, postResponses(t, s, `{"model":"m","stream":true}`).Body)
	if len(events) != 2 || events[1]["type"] != "response.failed" ||
		events[1]["response"].(map[string]any)["error"].(map[string]any)["message"] != "gave up" {
		t.Errorf("failed stream = %v", events)
	}
	body, _ := io.ReadAll(postResponses(t, s, `{"model":"m","stream":true}`).Body)
	if !bytes.Contains(body, []byte("{not json")) {
		t.Errorf("malformed stream = %s", body)
	}
	if s.Remaining() != 0 {
		t.Errorf("remaining = %d", s.Remaining())
	}
	// The script used up, the default reply answers.
	events = sseEvents(t, postResponses(t, s, `{"model":"m","stream":true}`).Body)
	if events[len(events)-1]["type"] != "response.completed" || s.Responses()[5].Reply != -1 {
		t.Errorf("default reply = %v", events)
	}
}

func TestResponses_StallIsAnnouncedAndReleasedOnClose(t *testing.T) {
	s := NewResponses(ResponsesReply{Stall: true})
	done := make(chan []map[string]any, 1)
	go func() {
		resp, err := http.Post(s.URL+"/responses", "application/json", strings.NewReader(`{"model":"m","stream":true}`))
		if err != nil {
			done <- nil
			return
		}
		defer resp.Body.Close()
		done <- sseEvents(t, resp.Body)
	}()
	if idx := s.WaitStall(t, 30e9); idx != 0 {
		t.Errorf("stalled reply = %d", idx)
	}
	s.Close()
	if events := <-done; len(events) != 1 || events[0]["type"] != "response.created" {
		t.Errorf("stalled stream = %v, want response.created only", events)
	}
}
