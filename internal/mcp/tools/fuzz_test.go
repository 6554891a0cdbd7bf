package tools

import (
	"context"
	"encoding/json"
	"testing"

	"sortie/internal/agentsock"
)

// acceptingDaemon answers every call with success, so the fuzzer explores argument
// handling without a socket.
type acceptingDaemon struct{}

func (acceptingDaemon) Tracker(context.Context, agentsock.TrackerRequest) (json.RawMessage, error) {
	return json.RawMessage(`{"ok":true}`), nil
}

func (acceptingDaemon) Notify(context.Context, agentsock.NotifyRequest) (json.RawMessage, error) {
	return json.RawMessage(`{"delivered":true}`), nil
}

// FuzzToolArguments feeds arbitrary arguments (MCP arguments are untrusted agent
// output) to every tool that takes some. Whatever the input, a tool answers a JSON
// envelope without panicking, and only a call that passed validation reaches the daemon.
func FuzzToolArguments(f *testing.F) {
	for _, seed := range []string{
		``, `null`, `{}`, `[]`, `"x"`, `1`, `{"operation":"fetch_issue","issue_id":"1"}`,
		`{"operation":"transition_issue","issue_id":"1","target_state":"Done"}`, `{"operation":5}`,
		`{"message":"hi","severity":"critical","title":"t"}`, `{"message":"\u0000"}`, `{"Operation":"x","operation":"y"}`,
		`{"message":"a","message":"b"}`, `{"issue_id":{"a":[1,2,{}]}}`,
	} {
		f.Add([]byte(seed))
	}
	tools := []Tool{NewTracker(acceptingDaemon{}, 0), NewNotify(acceptingDaemon{}, 0), NewStatus(f.TempDir(), 20, nil)}
	f.Fuzz(func(t *testing.T, args []byte) {
		for _, tool := range tools {
			res := tool.Call(context.Background(), json.RawMessage(args))
			b, err := json.Marshal(res.Body)
			if err != nil {
				t.Fatalf("%s(%q): the result does not marshal: %v", tool.Spec().Name, args, err)
			}
			var env struct {
				Success *bool `json:"success"`
				Error   any   `json:"error"`
			}
			if err := json.Unmarshal(b, &env); err != nil {
				t.Fatalf("%s(%q): result %s is not an object: %v", tool.Spec().Name, args, b, err)
			}
			if res.IsError != (env.Error != nil) {
				t.Fatalf("%s(%q): isError %v but the result is %s", tool.Spec().Name, args, res.IsError, b)
			}
			if env.Success != nil && *env.Success == res.IsError {
				t.Fatalf("%s(%q): success %v with isError %v: %s", tool.Spec().Name, args, *env.Success, res.IsError, b)
			}
		}
	})
}
