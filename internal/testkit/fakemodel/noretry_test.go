package fakemodel

import (
	"encoding/json"
	"io"
	"net/http"
	"testing"
)

func TestError_NoRetryMarksTheErrorFinal(t *testing.T) {
	cases := []struct {
		name  string
		reply Reply
		want  string // X-Should-Retry
	}{
		{"500 retryable by default", Reply{Status: 500}, "true"},
		{"500 with NoRetry", Reply{Status: 500, NoRetry: true}, "false"},
		{"429 with NoRetry keeps Retry-After", Reply{Status: 429, RetryAfter: "7", NoRetry: true}, "false"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := Start(t, c.reply)
			resp := mustDo(t, http.MethodPost, s.URL+"/v1/messages", messagesBody("m", true))
			if resp.StatusCode != c.reply.Status {
				t.Fatalf("status = %d, want %d", resp.StatusCode, c.reply.Status)
			}
			if got := resp.Header.Get("X-Should-Retry"); got != c.want {
				t.Errorf("X-Should-Retry = %q, want %q", got, c.want)
			}
			if got := resp.Header.Get("Retry-After"); got != c.reply.RetryAfter {
				t.Errorf("Retry-After = %q, want %q", got, c.reply.RetryAfter)
			}
			body, _ := io.ReadAll(resp.Body)
			var e struct {
				Type  string `json:"type"`
				Error struct {
					Type    string `json:"type"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if err := json.Unmarshal(body, &e); err != nil || e.Type != "error" || e.Error.Type != errorType(c.reply.Status) || e.Error.Message == "" {
				t.Errorf("body = %s (%v), want an API error of type %s", body, err, errorType(c.reply.Status))
			}
			if got := s.Messages(); len(got) != 1 || got[0].Reply != 0 {
				t.Errorf("recorded = %+v, want the one request answered by reply 0", replies(got))
			}
		})
	}
}
