package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"time"

	"sortie/internal/agentsock"
	"sortie/internal/workflow/engine"
)

// Workflow is one of the twelve workflow tools (spec/workflow-tools-api.md). It only
// carries the engine's spec and a way to run it: the engine in this process
// (standalone, LocalWorkflows) or the daemon over the agent socket (DaemonWorkflows).
// Argument checking, the session token, the checkpoint gate and the answer are the
// engine's; the answer's body and _meta go to the agent unchanged.
type Workflow struct {
	spec Spec
	call func(ctx context.Context, args json.RawMessage) engine.Response
}

// NewWorkflow returns the tool described by s, answered by call.
func NewWorkflow(s engine.Spec, call func(ctx context.Context, args json.RawMessage) engine.Response) *Workflow {
	return &Workflow{
		spec: Spec{Name: s.Name, Tier: TierWorkflow, Description: s.Description, InputSchema: s.InputSchema, ReadOnly: s.ReadOnly},
		call: call,
	}
}

// Spec implements Tool.
func (w *Workflow) Spec() Spec { return w.spec }

// Call implements Tool. Arguments larger than MaxArgsSize are refused here, before
// they reach the engine or the socket.
func (w *Workflow) Call(ctx context.Context, args json.RawMessage) Result {
	if n := len(bytes.TrimSpace(args)); n > MaxArgsSize {
		return localFail(KindInvalidInput, "%s: arguments are %d bytes, larger than %d KiB; shorten the manifests or outputs", w.spec.Name, n, MaxArgsSize>>10)
	}
	r := w.call(ctx, args)
	return Result{Body: r.Body, Meta: r.Meta, IsError: r.IsError}
}

// WorkflowEngine runs workflow tools: *engine.Engine.
type WorkflowEngine interface {
	Call(ctx context.Context, c engine.Caller, tool string, args json.RawMessage) engine.Response
}

// LocalWorkflows returns the twelve workflow tools, in the spec's order, answered by e
// in this process with a zero Caller: a standalone server serves one user, so no
// session is bound to an issue.
func LocalWorkflows(e WorkflowEngine) []Tool {
	var out []Tool
	for _, s := range engine.Specs() {
		name := s.Name
		out = append(out, NewWorkflow(s, func(ctx context.Context, args json.RawMessage) engine.Response {
			return e.Call(ctx, engine.Caller{}, name, args)
		}))
	}
	return out
}

// WorkflowDaemon is the daemon's side of the workflow tools: *agentsock.Client. A
// failure the daemon reports (an unknown token, a malformed request) comes back as
// *agentsock.Error; any other error means the daemon could not be asked.
type WorkflowDaemon interface {
	Workflow(ctx context.Context, tool string, args json.RawMessage) (agentsock.WorkflowResult, error)
}

// DaemonWorkflows returns the twelve workflow tools, in the spec's order, forwarded to
// d; each call is bounded by timeout (0 means DefaultCallTimeout). The daemon answers
// as the session its token names.
func DaemonWorkflows(d WorkflowDaemon, timeout time.Duration) []Tool {
	if timeout <= 0 {
		timeout = DefaultCallTimeout
	}
	var out []Tool
	for _, s := range engine.Specs() {
		name := s.Name
		out = append(out, NewWorkflow(s, func(ctx context.Context, args json.RawMessage) engine.Response {
			return forwardWorkflow(ctx, d, timeout, name, args)
		}))
	}
	return out
}

// forwardWorkflow sends one call to the daemon and turns a failure to get an answer
// into the engine's error body, {"error", "kind"}, so the agent reads one shape.
func forwardWorkflow(ctx context.Context, d WorkflowDaemon, timeout time.Duration, tool string, args json.RawMessage) engine.Response {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	r, err := d.Workflow(ctx, tool, args)
	if err == nil {
		body := r.Body
		if len(body) == 0 {
			body = json.RawMessage("null")
		}
		return engine.Response{Body: body, Meta: r.Meta, IsError: r.IsError}
	}
	var e *agentsock.Error
	var fail Result
	switch {
	case errors.As(err, &e) && e.Kind == KindUnauthorized:
		fail = localFail(KindUnauthorized, "the sortie daemon refused this session's token: %s. "+
			"The session has probably ended; the workflow tools cannot be used any more.", e.Message)
	case errors.As(err, &e):
		fail = localFail(e.Kind, "%s", e.Message)
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		fail = localFail(KindTransport, "%s: no answer from the sortie daemon within %v (SORTIE_TOOL_TIMEOUT_MS); try again later", tool, timeout)
	case ctx.Err() != nil:
		fail = localFail(KindTransport, "%s: the call was cancelled: %v", tool, ctx.Err())
	default:
		fail = localFail(KindTransport, "%s: %v", tool, err)
	}
	return engine.Response{Body: fail.Body, IsError: true}
}
