package fakemodel

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// echoLastResult is an InputFrom that passes the newest tool result's text on, and
// records the request it was given.
func echoLastResult(seen *[]Request) func(Request) (any, error) {
	return func(r Request) (any, error) {
		*seen = append(*seen, r)
		last, ok := r.LastToolResult()
		if !ok {
			return nil, errors.New("no tool result yet")
		}
		return map[string]any{"previous": last.Text, "failed": last.IsError}, nil
	}
}

func TestToolUse_InputFromBuildsTheInputFromTheRequestItAnswers(t *testing.T) {
	for _, stream := range []bool{true, false} {
		t.Run("stream="+strconv.FormatBool(stream), func(t *testing.T) {
			var seen []Request
			s := Start(t, Reply{Text: "Next.", ToolUses: []ToolUse{
				{Name: "Fixed", Input: map[string]any{"n": 1}},
				{ID: "toolu_built", Name: "Built", Input: map[string]any{"ignored": true}, InputFrom: echoLastResult(&seen)},
			}})
			body := strings.Replace(conversationBody, `"stream":true`, `"stream":`+strconv.FormatBool(stream), 1)
			resp := mustDo(t, http.MethodPost, s.URL+"/v1/messages", body)
			raw, err := io.ReadAll(resp.Body)
			if err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d (%s), err %v, want 200", resp.StatusCode, raw, err)
			}
			var msg apiMessage
			if stream {
				events, err := readEvents(bytes.NewReader(raw))
				if err != nil {
					t.Fatalf("reading events: %v", err)
				}
				if msg, err = accumulate(events); err != nil {
					t.Fatal(err)
				}
			} else if err := json.Unmarshal(raw, &msg); err != nil {
				t.Fatalf("body %s: %v", raw, err)
			}

			if len(msg.Content) != 3 || msg.Content[1].Name != "Fixed" || msg.Content[2].Name != "Built" || msg.Content[2].ID != "toolu_built" {
				t.Fatalf("content = %+v, want text, Fixed and Built (id toolu_built)", msg.Content)
			}
			if !sameJSON(msg.Content[1].Input, []byte(`{"n":1}`)) {
				t.Errorf("Fixed input = %s, want its scripted Input", msg.Content[1].Input)
			}
			// The last tool_result of conversationBody is toolu_b's "FAIL\nexit 1", an error.
			if want := `{"previous":"FAIL\nexit 1","failed":true}`; !sameJSON(msg.Content[2].Input, []byte(want)) {
				t.Errorf("Built input = %s, want %s (built from the request, Input ignored)", msg.Content[2].Input, want)
			}
			if len(seen) != 1 || seen[0].Model != "claude-sonnet-4-5" || seen[0].Reply != 0 || len(seen[0].Messages) != 3 {
				t.Errorf("InputFrom saw %d requests (%+v), want the parsed request answered by reply 0", len(seen), seen)
			}
			if got := s.Messages(); len(got) != 1 || got[0].ScriptError != "" {
				t.Errorf("recorded = %+v, want one request without a ScriptError", got)
			}
		})
	}
}

func TestToolUse_InputFromFailureAnswers400AndIsRecorded(t *testing.T) {
	tests := []struct {
		name      string
		inputFrom func(Request) (any, error)
		want      string // in the error message and ScriptError
	}{
		{"error", echoLastResult(new([]Request)), "tool_use Built: building its input: no tool result yet"},
		{"not JSON", func(Request) (any, error) { return map[string]any{"c": make(chan int)}, nil }, "tool_use Built: its built input is not JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Start(t, Reply{ToolUses: []ToolUse{{Name: "Built", InputFrom: tt.inputFrom}}})
			resp := mustDo(t, http.MethodPost, s.URL+"/v1/messages", messagesBody("m", true))
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("X-Should-Retry") != "false" {
				t.Errorf("status %d, X-Should-Retry %q, want 400 and false", resp.StatusCode, resp.Header.Get("X-Should-Retry"))
			}
			var e apiError
			if err := json.Unmarshal(body, &e); err != nil || e.Error.Type != "invalid_request_error" || !strings.Contains(e.Error.Message, tt.want) {
				t.Errorf("body = %s, want an invalid_request_error saying %q", body, tt.want)
			}
			msgs := s.Messages()
			if len(msgs) != 1 || msgs[0].Reply != 0 || !strings.Contains(msgs[0].ScriptError, tt.want) {
				t.Errorf("recorded = %+v, want the request answered by reply 0 with ScriptError %q", msgs, tt.want)
			}
			if s.Remaining() != 0 {
				t.Errorf("Remaining() = %d, want 0 (the failed reply is used up)", s.Remaining())
			}
			if msg, _ := jsonMessage(t, s, "m"); replyText(msg) != "done" {
				t.Errorf("next request: text = %q, want the default reply", replyText(msg))
			}
		})
	}
}

func TestRequest_LastToolResultIsTheNewest(t *testing.T) {
	s := Start(t)
	mustDo(t, http.MethodPost, s.URL+"/v1/messages", conversationBody)
	mustDo(t, http.MethodPost, s.URL+"/v1/messages", messagesBody("m", false))
	msgs := s.Messages()
	if len(msgs) != 2 {
		t.Fatalf("Messages() = %d requests, want 2", len(msgs))
	}
	if b, ok := msgs[0].LastToolResult(); !ok || b.ToolUseID != "toolu_b" || b.Text != "FAIL\nexit 1" {
		t.Errorf("LastToolResult() = %+v, %t, want toolu_b's result", b, ok)
	}
	if b, ok := msgs[1].LastToolResult(); ok {
		t.Errorf("LastToolResult() of a request without results = %+v, true; want false", b)
	}
}
