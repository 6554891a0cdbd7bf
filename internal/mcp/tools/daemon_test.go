package tools

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"sortie/internal/agentsock"
)

// fakeDaemon is the daemon's side of the agent socket for tests: it answers tracker
// calls from a map of canned replies and records every call it receives.
type fakeDaemon struct {
	mu      sync.Mutex
	tracker []agentsock.TrackerRequest
	notify  []agentsock.NotifyRequest

	// replies by operation; an operation missing here answers tracker_api_error.
	replies map[string]any
	errs    map[string]*agentsock.Error
	// block, when non-nil, holds every call until the caller gives up or it is closed.
	block chan struct{}
	// notifyErr fails notify calls.
	notifyErr *agentsock.Error
}

func (d *fakeDaemon) Tracker(ctx context.Context, _ agentsock.Session, req agentsock.TrackerRequest) (any, *agentsock.Error) {
	d.mu.Lock()
	d.tracker = append(d.tracker, req)
	d.mu.Unlock()
	if d.block != nil {
		select {
		case <-ctx.Done():
			return nil, agentsock.Errorf("tracker_transport_error", "cancelled")
		case <-d.block:
		}
	}
	if e := d.errs[req.Operation]; e != nil {
		return nil, e
	}
	if r, ok := d.replies[req.Operation]; ok {
		return r, nil
	}
	return nil, agentsock.Errorf("tracker_api_error", "no canned reply for %s", req.Operation)
}

func (d *fakeDaemon) Notify(_ context.Context, _ agentsock.Session, req agentsock.NotifyRequest) (agentsock.NotifyResult, *agentsock.Error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.notify = append(d.notify, req)
	if d.notifyErr != nil {
		return agentsock.NotifyResult{}, d.notifyErr
	}
	// The operator's one backend takes warnings and above.
	if req.Severity == "info" {
		return agentsock.NotifyResult{Reason: "no notification backend takes this message (severity info, event agent): ops takes severity warning and above"}, nil
	}
	return agentsock.NotifyResult{Delivered: true, Backends: []string{"ops"}}, nil
}

func (d *fakeDaemon) Info() agentsock.SessionInfo {
	return agentsock.SessionInfo{Capabilities: agentsock.Capabilities{TrackerAPI: true, NotifyOperator: true}, TrackerKind: "file"}
}

func (d *fakeDaemon) calls() ([]agentsock.TrackerRequest, []agentsock.NotifyRequest) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]agentsock.TrackerRequest(nil), d.tracker...), append([]agentsock.NotifyRequest(nil), d.notify...)
}

// listen serves d on a fresh socket and returns the server and a client holding a
// token granted for issue 42.
func listen(t *testing.T, d *fakeDaemon) (*agentsock.Server, *agentsock.Client, string) {
	t.Helper()
	// Socket paths are limited to 107 bytes; t.TempDir's can be longer.
	dir, err := os.MkdirTemp("", "sock")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	srv, err := agentsock.Listen(filepath.Join(dir, "agent.sock"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	srv.Start(d)
	tok := srv.Grant(agentsock.Session{IssueID: "42", Identifier: "PROJ-42", RunID: 7})
	return srv, agentsock.Dial(srv.Path(), tok), tok
}

func TestTracker_Operations(t *testing.T) {
	issue := map[string]any{"id": "42", "identifier": "PROJ-42", "title": "Add retry", "state": "In Progress", "labels": []string{}}
	d := &fakeDaemon{replies: map[string]any{
		OpFetchIssue:      issue,
		OpFetchComments:   []map[string]string{{"id": "c1", "author": "bob", "body": "ok", "created_at": "2026-03-25T10:00:00Z"}},
		OpSearchIssues:    []any{issue},
		OpTransitionIssue: map[string]bool{"transitioned": true},
	}, errs: map[string]*agentsock.Error{}}
	_, client, _ := listen(t, d)
	tool := NewTracker(client, 0)

	tests := []struct {
		args, want string
		isErr      bool
		reaches    bool // the call reaches the daemon
	}{
		{args: `{"operation":"fetch_issue","issue_id":"42"}`, reaches: true,
			want: `{"success":true,"data":{"id":"42","identifier":"PROJ-42","labels":[],"state":"In Progress","title":"Add retry"}}`},
		{args: `{"operation":"fetch_comments","issue_id":"42"}`, reaches: true,
			want: `{"success":true,"data":[{"author":"bob","body":"ok","created_at":"2026-03-25T10:00:00Z","id":"c1"}]}`},
		{args: `{"operation":"search_issues"}`, reaches: true,
			want: `{"success":true,"data":[{"id":"42","identifier":"PROJ-42","labels":[],"state":"In Progress","title":"Add retry"}]}`},
		{args: `{"operation":"transition_issue","issue_id":"42","target_state":"In Review"}`, reaches: true,
			want: `{"success":true,"data":{"transitioned":true}}`},
		{args: `{"operation":"fetch_issue"}`, isErr: true,
			want: `{"success":false,"error":{"kind":"invalid_input","message":"issue_id: is required for fetch_issue"}}`},
		{args: `{"operation":"transition_issue","issue_id":"42"}`, isErr: true,
			want: `{"success":false,"error":{"kind":"invalid_input","message":"target_state: is required for transition_issue"}}`},
		{args: `{"operation":"fetch_issue","issue_id":"42","target_state":"Done"}`, isErr: true,
			want: `{"success":false,"error":{"kind":"invalid_input","message":"target_state: is only accepted by transition_issue (got operation fetch_issue)"}}`},
		{args: `{"operation":"search_issues","issue_id":"42"}`, isErr: true,
			want: `{"success":false,"error":{"kind":"invalid_input","message":"issue_id: is not accepted by search_issues, which lists the project's active issues"}}`},
		{args: `{}`, isErr: true,
			want: `{"success":false,"error":{"kind":"invalid_input","message":"operation: is required; one of fetch_issue, fetch_comments, search_issues, transition_issue"}}`},
		{args: `{"operation":"comment_issue","issue_id":"42"}`, isErr: true,
			want: `{"success":false,"error":{"kind":"unsupported_operation","message":"operation \"comment_issue\" is not supported; use one of fetch_issue, fetch_comments, search_issues, transition_issue"}}`},
		{args: `{"operation":"fetch_issue","issue_id":42}`, isErr: true,
			want: `{"success":false,"error":{"kind":"invalid_input","message":"field \"issue_id\" must be a string (got number)"}}`},
		{args: `{"operation":"fetch_issue","issue_id":"42","project":"OTHER"}`, isErr: true,
			want: `{"success":false,"error":{"kind":"invalid_input","message":"unknown field \"project\": tracker_api accepts only issue_id, operation, target_state"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.args, func(t *testing.T) {
			before, _ := d.calls()
			got, isErr := callTool(t, tool, tt.args)
			if got != tt.want || isErr != tt.isErr {
				t.Fatalf("tracker_api(%s) =\n%s (isError %v)\nwant\n%s (isError %v)", tt.args, got, isErr, tt.want, tt.isErr)
			}
			after, _ := d.calls()
			if reached := len(after) > len(before); reached != tt.reaches {
				t.Errorf("tracker_api(%s) reached the daemon: %v, want %v", tt.args, reached, tt.reaches)
			}
		})
	}
}

func TestTracker_DaemonErrors(t *testing.T) {
	t.Run("a tracker error kind passes through", func(t *testing.T) {
		d := &fakeDaemon{errs: map[string]*agentsock.Error{
			OpFetchIssue: agentsock.Errorf("project_scope_violation", "issue OTHER-1 is not in project PROJ"),
		}}
		_, client, _ := listen(t, d)
		got, isErr := callTool(t, NewTracker(client, 0), `{"operation":"fetch_issue","issue_id":"OTHER-1"}`)
		want := `{"success":false,"error":{"kind":"project_scope_violation","message":"issue OTHER-1 is not in project PROJ"}}`
		if !isErr || got != want {
			t.Fatalf("got %s (isError %v), want %s", got, isErr, want)
		}
	})
	t.Run("a revoked token is unauthorized", func(t *testing.T) {
		srv, client, tok := listen(t, &fakeDaemon{})
		srv.Revoke(tok)
		got, isErr := callTool(t, NewTracker(client, 0), `{"operation":"search_issues"}`)
		if e := envelopeOf(t, got); !isErr || e.Kind != KindUnauthorized || e.Message == "" {
			t.Fatalf("got %s (isError %v), want an unauthorized error", got, isErr)
		}
	})
	t.Run("a daemon that is gone is a transport error", func(t *testing.T) {
		srv, client, _ := listen(t, &fakeDaemon{})
		srv.Close()
		got, isErr := callTool(t, NewTracker(client, 0), `{"operation":"search_issues"}`)
		if e := envelopeOf(t, got); !isErr || e.Kind != KindTrackerTransport {
			t.Fatalf("got %s (isError %v), want tracker_transport_error", got, isErr)
		}
	})
	t.Run("a daemon that does not answer in time is a transport error", func(t *testing.T) {
		d := &fakeDaemon{block: make(chan struct{})}
		defer close(d.block)
		_, client, _ := listen(t, d)
		got, isErr := callTool(t, NewTracker(client, 20*time.Millisecond), `{"operation":"search_issues"}`)
		want := `{"success":false,"error":{"kind":"tracker_transport_error","message":"no answer from the sortie daemon within 20ms (SORTIE_TOOL_TIMEOUT_MS); try again later"}}`
		if !isErr || got != want {
			t.Fatalf("got %s (isError %v), want %s", got, isErr, want)
		}
	})
}

func TestNotify(t *testing.T) {
	d := &fakeDaemon{}
	_, client, _ := listen(t, d)
	tool := NewNotify(client, 0)

	long := make([]rune, MaxNotifyMessage+1)
	for i := range long {
		long[i] = 'é' // characters, not bytes, are counted
	}
	tests := []struct {
		args, want string
		isErr      bool
		sent       *agentsock.NotifyRequest
	}{
		{args: `{"message":"need a decision on the schema"}`,
			want: `{"success":true,"data":{"delivered":false,"reason":"no notification backend takes this message (severity info, event agent): ops takes severity warning and above"}}`,
			sent: &agentsock.NotifyRequest{Message: "need a decision on the schema", Severity: "info"}},
		{args: `{"message":"prod is down","severity":"critical","title":"Outage"}`, want: `{"success":true,"data":{"delivered":true,"backends":["ops"]}}`,
			sent: &agentsock.NotifyRequest{Message: "prod is down", Severity: "critical", Title: "Outage"}},
		{args: `{"message":"   "}`, isErr: true,
			want: `{"success":false,"error":{"kind":"invalid_input","message":"message: is required and must not be blank"}}`},
		{args: `{}`, isErr: true,
			want: `{"success":false,"error":{"kind":"invalid_input","message":"message: is required and must not be blank"}}`},
		{args: `{"message":"` + string(long) + `"}`, isErr: true,
			want: `{"success":false,"error":{"kind":"invalid_input","message":"message: is 4001 characters, more than 4000; shorten it"}}`},
		{args: `{"message":"hi","severity":"urgent"}`, isErr: true,
			want: `{"success":false,"error":{"kind":"invalid_input","message":"severity: must be one of info, warning, critical (got \"urgent\")"}}`},
		{args: `{"message":"hi","channel":"#ops"}`, isErr: true,
			want: `{"success":false,"error":{"kind":"invalid_input","message":"unknown field \"channel\": notify_operator accepts only message, severity, title"}}`},
		{args: `{"message":true}`, isErr: true,
			want: `{"success":false,"error":{"kind":"invalid_input","message":"field \"message\" must be a string (got bool)"}}`},
	}
	for _, tt := range tests {
		name := tt.args
		if len(name) > 60 {
			name = name[:60]
		}
		t.Run(name, func(t *testing.T) {
			_, before := d.calls()
			got, isErr := callTool(t, tool, tt.args)
			if got != tt.want || isErr != tt.isErr {
				t.Fatalf("notify_operator(%s) =\n%s (isError %v)\nwant\n%s (isError %v)", name, got, isErr, tt.want, tt.isErr)
			}
			_, after := d.calls()
			switch {
			case tt.sent == nil && len(after) != len(before):
				t.Errorf("an invalid call reached the daemon: %+v", after[len(after)-1])
			case tt.sent != nil && (len(after) != len(before)+1 || after[len(after)-1] != *tt.sent):
				t.Errorf("the daemon received %+v, want %+v", after[len(before):], *tt.sent)
			}
		})
	}
}

func TestNotify_DaemonErrors(t *testing.T) {
	d := &fakeDaemon{notifyErr: agentsock.Errorf("notify_error", "slack: 500 Internal Server Error after 3 attempts")}
	srv, client, tok := listen(t, d)
	tool := NewNotify(client, 0)
	got, isErr := callTool(t, tool, `{"message":"hi"}`)
	if want := `{"success":false,"error":{"kind":"notify_error","message":"slack: 500 Internal Server Error after 3 attempts"}}`; !isErr || got != want {
		t.Errorf("got %s (isError %v), want %s", got, isErr, want)
	}
	srv.Revoke(tok)
	if got, isErr = callTool(t, tool, `{"message":"hi"}`); !isErr || envelopeOf(t, got).Kind != KindUnauthorized {
		t.Errorf("after revocation: got %s (isError %v), want unauthorized", got, isErr)
	}
	srv.Close()
	if got, isErr = callTool(t, tool, `{"message":"hi"}`); !isErr || envelopeOf(t, got).Kind != KindTransport {
		t.Errorf("daemon gone: got %s (isError %v), want transport_error", got, isErr)
	}
}

func envelopeOf(t *testing.T, s string) envelopeError {
	t.Helper()
	var e envelope
	if err := json.Unmarshal([]byte(s), &e); err != nil || e.Error == nil || e.Success {
		t.Fatalf("%s is not a failure envelope (%v)", s, err)
	}
	return *e.Error
}
