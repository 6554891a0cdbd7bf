// Package tools implements the agent tools of the sortie-tools MCP server
// (spec/agent-extensions.md, spec/agent-tools-tiers.md): sortie_status,
// workspace_history and cost_budget read local state (Tier 1); tracker_api and
// notify_operator ask the daemon over its agent socket (Tier 2), so no credential ever
// reaches the agent. The twelve workflow tools (spec/workflow-tools-api.md) wrap
// package engine's tools: called directly standalone, forwarded over the agent socket
// under the daemon.
//
// A tool here is a pure function from the agent's JSON arguments to a JSON envelope. It
// does not decide whether it is offered (package mcp's gates do) and knows nothing of the
// MCP protocol.
package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
)

// Tier classifies a tool by what it depends on (spec/agent-tools-tiers.md).
type Tier int

const (
	// TierLocal tools read local session state only: the workspace's state file or
	// the daemon's database, opened read-only. They make no network call.
	TierLocal Tier = 1
	// TierExternal tools reach an external service (the tracker, a notification
	// backend) with the daemon's credentials, through the daemon's agent socket.
	TierExternal Tier = 2
	// TierWorkflow tools are the workflow tools API: they read the workflow library
	// and advance a workflow session, in this process (standalone) or in the daemon
	// (over the agent socket). They reach no external service.
	TierWorkflow Tier = 3
)

// Tool names, as the agent calls them.
const (
	NameStatus  = "sortie_status"
	NameHistory = "workspace_history"
	NameBudget  = "cost_budget"
	NameTracker = "tracker_api"
	NameNotify  = "notify_operator"
)

// Error kinds. Tier 2 tools report them in {"success":false,"error":{"kind","message"}};
// Tier 1 tools in {"error":"message","kind":"..."}. The tracker kinds the daemon
// returns (tracker_auth_error, tracker_not_found, project_scope_violation for another
// project's issue, a change to another issue than the session's or, under
// agent.tracker_reads: own, another issue's comments, handoff_refused for a move of
// the session's issue out of the active states while a workflow checkpoint waits for a
// human, ...) are passed through unchanged.
const (
	KindInvalidInput         = "invalid_input"         // arguments do not match the input schema
	KindUnsupportedOperation = "unsupported_operation" // tracker_api: not one of the four operations
	KindTrackerTransport     = "tracker_transport_error"
	KindTransport            = "transport_error" // notify_operator: the daemon could not be reached
	KindUnauthorized         = "unauthorized"    // the daemon refused the session's token
	KindNotify               = "notify_error"
	KindStateUnavailable     = "state_unavailable" // sortie_status: the state file is missing or unreadable
	KindQueryFailed          = "query_failed"      // workspace_history, cost_budget: the database query failed
	KindInternal             = "internal_error"
)

// Spec is what an agent sees of a tool: its name, what it does and its arguments.
type Spec struct {
	Name string
	Tier Tier
	// Description is shown in tools/list and in the first-turn prompt: what the tool
	// answers and when to call it, in a few sentences.
	Description string
	// InputSchema is the JSON Schema of the arguments: an object schema with
	// additionalProperties false. Its properties are exactly the accepted fields.
	InputSchema json.RawMessage
	// ReadOnly tools change nothing anywhere; the others act on the world (a tracker
	// transition, a message to a human).
	ReadOnly bool
}

// Params returns the property names of the input schema, sorted.
func (s Spec) Params() []string {
	var schema struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(s.InputSchema, &schema); err != nil {
		panic(fmt.Sprintf("tools: %s: invalid input schema: %v", s.Name, err))
	}
	names := make([]string, 0, len(schema.Properties))
	for n := range schema.Properties {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Tool is one agent tool.
type Tool interface {
	Spec() Spec
	// Call runs the tool with the agent's raw arguments (a JSON object, or empty).
	// Every failure, bad arguments included, is a Result with IsError set: Call never
	// returns a Go error and never panics on any input.
	Call(ctx context.Context, args json.RawMessage) Result
}

// Result is a tool's answer: Body is marshalled to JSON and shown to the agent; Meta,
// when not nil, is the result's _meta (the workflow tools' session_token, trace_token
// and validation).
type Result struct {
	Body    any
	Meta    map[string]any
	IsError bool
}

// Specs returns the specs of every tool this package implements, in the order the
// sidecar registers them.
func Specs() []Spec {
	return []Spec{StatusSpec, HistorySpec, BudgetSpec, TrackerSpec, LinearGraphQLSpec, NotifySpec}
}

// noArgsSchema is the input schema of a tool that takes no arguments: the agent sends {}.
var noArgsSchema = json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`)

// localError is the Tier 1 error envelope. The flat {"error": message} is
// spec/agent-extensions.md's; kind is spec/agent-tools-tiers.md's machine-readable
// category, which every tool returns.
type localError struct {
	Error string `json:"error"`
	Kind  string `json:"kind"`
}

func localFail(kind, format string, args ...any) Result {
	return Result{Body: localError{Error: fmt.Sprintf(format, args...), Kind: kind}, IsError: true}
}

// envelope is the Tier 2 response envelope of spec/agent-extensions.md.
type envelope struct {
	Success bool            `json:"success"`
	Data    json.RawMessage `json:"data,omitempty"`
	Error   *envelopeError  `json:"error,omitempty"`
}

type envelopeError struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
}

func envelopeOK(data json.RawMessage) Result {
	if len(data) == 0 {
		data = json.RawMessage("null")
	}
	return Result{Body: envelope{Success: true, Data: data}}
}

func envelopeFail(kind, format string, args ...any) Result {
	return Result{Body: envelope{Error: &envelopeError{Kind: kind, Message: fmt.Sprintf(format, args...)}}, IsError: true}
}
