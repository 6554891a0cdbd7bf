package agenttools

import (
	"context"
	"encoding/json"
	"testing"

	"sortie/internal/agentsock"
	"sortie/internal/config"
	"sortie/internal/workflow/engine"
)

// recordingWorkflows answers every call with its caller and tool, and records them.
type recordingWorkflows struct {
	callers []engine.Caller
}

func (r *recordingWorkflows) Call(_ context.Context, c engine.Caller, tool string, args json.RawMessage) engine.Response {
	r.callers = append(r.callers, c)
	return engine.Response{Body: map[string]any{"tool": tool, "args": args}, Meta: map[string]any{"session_token": "tok"}, IsError: tool == "get_trace"}
}

func TestToolService_WorkflowCarriesTheSessionsIdentity(t *testing.T) {
	cfg := &config.Config{}
	rec := &recordingWorkflows{}
	svc := New(Options{Config: func() *config.Config { return cfg }, Workflows: rec})
	if !svc.Info().Capabilities.Workflows {
		t.Fatalf("Info() = %+v; want the workflows capability with an engine", svc.Info())
	}
	sess := agentsock.Session{IssueID: "10042", Identifier: "PROJ-42", RunID: 17}
	res, e := svc.Workflow(context.Background(), sess, "discover", json.RawMessage(`{}`))
	if e != nil || res.IsError || string(res.Body) != `{"args":{},"tool":"discover"}` || res.Meta["session_token"] != "tok" {
		t.Fatalf("Workflow(discover) = %+v, %v", res, e)
	}
	if want := (engine.Caller{IssueID: "10042", Identifier: "PROJ-42", RunID: 17}); len(rec.callers) != 1 || rec.callers[0] != want {
		t.Fatalf("the engine was called as %+v, want %+v", rec.callers, want)
	}
	if res, e := svc.Workflow(context.Background(), sess, "get_trace", nil); e != nil || !res.IsError {
		t.Fatalf("a failed tool = %+v, %v; want a result with IsError, not a socket error", res, e)
	}
}

func TestToolService_NoWorkflowsWithoutAnEngine(t *testing.T) {
	cfg := &config.Config{}
	svc := New(Options{Config: func() *config.Config { return cfg }})
	if svc.Info().Capabilities.Workflows {
		t.Fatalf("Info() = %+v; want no workflows capability without an engine", svc.Info())
	}
	if _, e := svc.Workflow(context.Background(), agentsock.Session{IssueID: "1"}, "discover", nil); e == nil || e.Kind != "unsupported_operation" {
		t.Fatalf("Workflow without an engine: %v, want unsupported_operation", e)
	}
}
