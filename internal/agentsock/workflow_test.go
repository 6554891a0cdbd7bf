package agentsock

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// workflowHandler is fakeHandler that serves the workflow tools too: it records each
// call and answers with the tool and the session, as the engine's body would.
type workflowHandler struct {
	fakeHandler
	mu    sync.Mutex
	calls []WorkflowRequest
	sess  []Session
}

func (h *workflowHandler) Workflow(_ context.Context, s Session, tool string, args json.RawMessage) (WorkflowResult, *Error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.calls = append(h.calls, WorkflowRequest{Tool: tool, Arguments: args})
	h.sess = append(h.sess, s)
	if tool == "get_trace" {
		return WorkflowResult{IsError: true, Body: json.RawMessage(`{"error":"no session","kind":"invalid_input"}`)}, nil
	}
	return WorkflowResult{Body: json.RawMessage(`{"session_token":"t1"}`), Meta: map[string]any{"session_token": "t1"}}, nil
}

func TestWorkflow_RoundTripCarriesTheSession(t *testing.T) {
	h := &workflowHandler{}
	s := listenWith(t, h)
	sess := Session{IssueID: "10042", Identifier: "PROJ-42", RunID: 17}
	c := Dial(s.Path(), s.Grant(sess))
	ctx := context.Background()

	res, err := c.Workflow(ctx, "start_session", json.RawMessage(`{"workflow_id":"demo"}`))
	if err != nil || res.IsError || string(res.Body) != `{"session_token":"t1"}` || res.Meta["session_token"] != "t1" {
		t.Fatalf("start_session = %+v, %v", res, err)
	}
	// A tool failure is the tool's answer, not a socket error.
	res, err = c.Workflow(ctx, "get_trace", nil)
	if err != nil || !res.IsError || string(res.Body) != `{"error":"no session","kind":"invalid_input"}` {
		t.Fatalf("get_trace = %+v, %v; want an answer with is_error", res, err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.calls) != 2 || h.calls[0].Tool != "start_session" || string(h.calls[0].Arguments) != `{"workflow_id":"demo"}` ||
		h.sess[0] != sess || h.sess[1] != sess {
		t.Fatalf("the handler saw %+v for sessions %+v; want both calls as %+v", h.calls, h.sess, sess)
	}
}

func TestWorkflow_RequiresAToken(t *testing.T) {
	h := &workflowHandler{}
	s := listenWith(t, h)
	tok := s.Grant(Session{IssueID: "1"})
	s.Revoke(tok)
	var e *Error
	for name, c := range map[string]*Client{"revoked": Dial(s.Path(), tok), "forged": Dial(s.Path(), "guess"), "none": Dial(s.Path(), "")} {
		if _, err := c.Workflow(context.Background(), "discover", nil); !errors.As(err, &e) || e.Kind != "unauthorized" {
			t.Errorf("%s token: %v, want unauthorized", name, err)
		}
	}
	if len(h.calls) != 0 {
		t.Errorf("unauthorized calls reached the handler: %+v", h.calls)
	}
}

func TestWorkflow_StrictBoundedRequests(t *testing.T) {
	h := &workflowHandler{}
	s := listenWith(t, h)
	tok := s.Grant(Session{IssueID: "1"})
	client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", s.Path())
	}}}
	huge := `{"tool":"next_activity","arguments":{"x":"` + strings.Repeat("a", MaxWorkflowBody) + `"}}`
	tests := []struct {
		name, body, want string
	}{
		{"not JSON", `{`, "request body: unexpected EOF"},
		{"unknown field", `{"tool":"discover","session":"x"}`, `request body: json: unknown field "session"`},
		{"no tool", `{"arguments":{}}`, "request body: tool is required"},
		{"trailing data", `{"tool":"discover"} {}`, "request body: trailing data after the JSON object"},
		{"too large", huge, "request body: larger than 69632 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, "http://sortie/v1/workflow", strings.NewReader(tt.body))
			req.Header.Set("Authorization", "Bearer "+tok)
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var r Reply
			if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != http.StatusBadRequest || r.Error == nil || r.Error.Kind != "invalid_input" || r.Error.Message != tt.want {
				t.Fatalf("status %d, reply %+v; want 400 invalid_input %q", resp.StatusCode, r.Error, tt.want)
			}
		})
	}
	if len(h.calls) != 0 {
		t.Errorf("bad requests reached the handler: %+v", h.calls)
	}
}

func TestWorkflow_HandlerWithoutWorkflowsAnswersUnsupported(t *testing.T) {
	s := listenWith(t, &fakeHandler{})
	_, err := Dial(s.Path(), s.Grant(Session{IssueID: "1"})).Workflow(context.Background(), "discover", nil)
	var e *Error
	if !errors.As(err, &e) || e.Kind != "unsupported_operation" {
		t.Fatalf("a workflow call to a daemon without workflows: %v, want unsupported_operation", err)
	}
}
