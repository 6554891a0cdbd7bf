package copilot

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"

	"sortie/internal/agent"
)

// Limits on what an event carries.
const (
	maxMalformed = 500  // characters of an unparseable line kept (spec)
	maxSummary   = 300  // characters of assistant text or a CLI message in a notification
	maxMessage   = 1000 // characters of any event message, whatever the CLI sent
)

// wireLine is the part of a --output-format json line the adapter reads. Every event
// has a type; all but result wrap their payload in data. Fields the adapter does not use
// (ids, parent ids, timestamps, the CLI's telemetry) are skipped by the decoder.
type wireLine struct {
	Type string          `json:"type"`
	Data json.RawMessage `json:"data"`

	// result only: turn-level fields at the top level.
	SessionID string       `json:"sessionId"`
	ExitCode  *int         `json:"exitCode"`
	Usage     *wireResultU `json:"usage"`
}

// wireResultU is the result's usage. The CLI's figures are cumulative over the CLI
// session's life, across invocations that resume it (observed on 1.0.102).
type wireResultU struct {
	TotalAPIDurationMS int64 `json:"totalApiDurationMs"`
}

// wireData is the union of the data fields of the events the adapter maps.
type wireData struct {
	// assistant.message
	Content      string            `json:"content"`
	ToolRequests []wireToolRequest `json:"toolRequests"`
	OutputTokens int64             `json:"outputTokens"`
	Model        string            `json:"model"`

	// assistant.turn_start, assistant.turn_end
	TurnID string `json:"turnId"`

	// tool.execution_start, tool.execution_complete
	ToolCallID string `json:"toolCallId"`
	ToolName   string `json:"toolName"`
	Success    *bool  `json:"success"`
	// ShellExecution is on a shell tool's completion: the command's exit code.
	ShellExecution *struct {
		ExitCode *int `json:"exitCode"`
	} `json:"shellExecution"`

	// session.warning, session.info, session.error, session.task_complete,
	// session.autopilot_stopped, assistant.turn_retry
	Message     string `json:"message"`
	WarningType string `json:"warningType"`
	InfoType    string `json:"infoType"`
	ErrorType   string `json:"errorType"`
	StatusCode  int    `json:"statusCode"`
	Summary     string `json:"summary"`
	Reason      string `json:"reason"`

	// session.mcp_server_status_changed
	ServerName string          `json:"serverName"`
	Status     string          `json:"status"`
	Error      json.RawMessage `json:"error"` // a string here; an object on tool.execution_complete
}

type wireToolRequest struct {
	ToolCallID string `json:"toolCallId"`
	Name       string `json:"name"`
}

// debugOnly are the events the spec keeps out of the event stream: the CLI's own
// bookkeeping and the echo of our prompt, which carry nothing the orchestrator uses.
// (session.mcp_server_status_changed is one too, except when a server failed; see line.)
var debugOnly = map[string]bool{
	"session.mcp_servers_loaded": true,
	"session.tools_updated":      true,
	"user.message":               true,
}

// mapped are the event types line translates; any other type is other_message.
var mapped = map[string]bool{
	"assistant.message_delta": true, "assistant.message": true,
	"assistant.turn_start": true, "assistant.turn_end": true,
	"tool.execution_start": true, "tool.execution_complete": true,
	"session.warning": true, "session.info": true, "session.task_complete": true,
	"session.error": true, "assistant.turn_retry": true, "session.autopilot_stopped": true,
	"session.mcp_server_status_changed": true,
}

// inflightTool is a tool.execution_start waiting for its tool.execution_complete.
type inflightTool struct {
	name  string
	start time.Time
}

// translator turns the JSONL lines of one turn into normalised events. It is used by
// one goroutine only.
//
// Token accounting follows the spec: output tokens are summed from assistant.message,
// input tokens are 0, total = output. The pinned CLI (1.0.102) no longer puts
// outputTokens on assistant.message, so the turn's figures may be raised at its end
// from the CLI's usage file (see turn.settle); cumulative figures never go down.
type translator struct {
	now  func() time.Time
	emit func(agent.Event) // fills in time, pid and session id; use send

	base     agent.Usage // the session's usage before this turn
	output   int64       // output tokens this turn
	model    string      // last model an assistant.message named
	inflight map[string]inflightTool

	sessionID string    // from the result event, "" if none
	result    *wireLine // the result event, nil if none
	lastError string    // message of the last session.error
}

func newTranslator(now func() time.Time, emit func(agent.Event), base agent.Usage) *translator {
	return &translator{now: now, emit: emit, base: base, inflight: map[string]inflightTool{}}
}

// send emits e with its message bounded.
func (t *translator) send(e agent.Event) {
	e.Message = agent.Truncate(e.Message, maxMessage)
	t.emit(e)
}

// usage is the session's cumulative usage including this turn so far.
func (t *translator) usage() agent.Usage {
	u := t.base
	u.Output = addCapped(u.Output, t.output)
	u.Input, u.CacheRead = 0, 0
	u.Total = u.Output
	return u
}

// raiseOutput makes the turn's output tokens at least n and reports whether that
// changed them.
func (t *translator) raiseOutput(n int64) bool {
	if n <= t.output {
		return false
	}
	t.output = n
	return true
}

// line handles one stdout line. It never fails: what it cannot read becomes a
// malformed event, and types it does not know become other_message.
func (t *translator) line(b []byte) {
	var l wireLine
	if err := json.Unmarshal(b, &l); err != nil || l.Type == "" {
		t.send(agent.Event{Type: agent.EventMalformed, Message: agent.Excerpt(b, maxMalformed)})
		return
	}
	if debugOnly[l.Type] {
		return
	}
	if l.Type == "result" {
		t.resultLine(&l)
		return
	}
	if !mapped[l.Type] {
		t.send(agent.Event{Type: agent.EventOtherMessage, Message: agent.Truncate(l.Type, maxSummary)})
		return
	}
	var d wireData
	if len(l.Data) > 0 && string(l.Data) != "null" {
		if err := json.Unmarshal(l.Data, &d); err != nil {
			// A known type whose payload has the wrong shape: say what could not be
			// read rather than guess.
			t.send(agent.Event{Type: agent.EventMalformed, Message: agent.Excerpt(b, maxMalformed)})
			return
		}
	}
	switch l.Type {
	case "assistant.message_delta":
		t.send(agent.Event{Type: agent.EventNotification})
	case "assistant.message":
		t.assistantMessage(&d)
	case "assistant.turn_start":
		t.send(agent.Event{Type: agent.EventNotification, Message: "assistant turn " + d.TurnID + " started"})
	case "assistant.turn_end":
		t.send(agent.Event{Type: agent.EventNotification, Message: "assistant turn " + d.TurnID + " ended"})
	case "tool.execution_start":
		t.toolStart(&d)
	case "tool.execution_complete":
		t.toolComplete(&d)
	case "session.warning":
		t.send(agent.Event{Type: agent.EventNotification, Message: "warning: " + labelled(d.WarningType, d.Message)})
	case "session.info":
		t.send(agent.Event{Type: agent.EventNotification, Message: labelled(d.InfoType, d.Message)})
	case "session.task_complete":
		t.send(agent.Event{Type: agent.EventNotification, Message: "task complete: " + agent.Truncate(strings.TrimSpace(d.Summary), maxSummary)})

	// Events of the pinned CLI that the spec's table predates and that an operator
	// needs to see: why a turn failed, why the model call is being retried, why
	// autopilot stopped (cap_reached means max_autopilot_continues ran out).
	case "session.error":
		t.lastError = labelled(agent.Truncate(d.ErrorType, maxSummary), d.Message)
		if d.StatusCode != 0 {
			t.lastError += fmt.Sprintf(" (status %d)", d.StatusCode)
		}
		t.send(agent.Event{Type: agent.EventNotification, Message: "error: " + t.lastError})
	case "assistant.turn_retry":
		t.send(agent.Event{Type: agent.EventNotification, Message: "model call retried: " + nonEmpty(d.Reason, "unknown reason")})
	case "session.autopilot_stopped":
		t.send(agent.Event{Type: agent.EventNotification, Message: "autopilot stopped: " + nonEmpty(d.Reason, "unknown reason")})
	case "session.mcp_server_status_changed":
		// Debug-only in the spec, but a server that failed to start (sortie-tools
		// among them) leaves the agent without its tools: say so.
		if d.Status == "failed" {
			t.send(agent.Event{Type: agent.EventNotification, Message: labelled(
				"MCP server "+nonEmpty(agent.Truncate(d.ServerName, maxSummary), "(unnamed)")+" failed", rawText(d.Error))})
		}
	}
}

func (t *translator) assistantMessage(d *wireData) {
	if d.Model != "" {
		t.model = d.Model
	}
	if d.OutputTokens > 0 {
		t.output = addCapped(t.output, d.OutputTokens)
		t.send(agent.Event{Type: agent.EventTokenUsage, Usage: t.usage(), Model: t.model})
	}
	t.send(agent.Event{Type: agent.EventNotification, Message: summarize(d)})
}

// summarize describes an assistant message for a notification: its text, then the
// tools it asks for.
func summarize(d *wireData) string {
	var parts []string
	if s := strings.TrimSpace(d.Content); s != "" {
		parts = append(parts, agent.Truncate(s, maxSummary))
	}
	for _, r := range d.ToolRequests {
		parts = append(parts, "tool request "+agent.Truncate(r.Name, maxSummary))
	}
	return strings.Join(parts, "; ")
}

func (t *translator) toolStart(d *wireData) {
	name := nonEmpty(agent.Truncate(d.ToolName, maxSummary), "unknown")
	if d.ToolCallID != "" {
		t.inflight[d.ToolCallID] = inflightTool{name: name, start: t.now()}
	}
	t.send(agent.Event{Type: agent.EventNotification, Message: "tool " + name + " started"})
}

// toolComplete emits the tool_result of a finished tool call, timed from its start.
// success is the error signal (spec: no error text, unlike claude-code); a missing
// success counts as a failure. A shell command that exits non-zero is a failure too:
// CLI 1.0.102 reports it as success with shellExecution.exitCode set, where claude-code
// reports is_error, and an operator counts it as a failed tool call either way.
func (t *translator) toolComplete(d *wireData) {
	failed := d.Success == nil || !*d.Success
	if se := d.ShellExecution; se != nil && se.ExitCode != nil && *se.ExitCode != 0 {
		failed = true
	}
	ev := agent.Event{Type: agent.EventToolResult, ToolName: "unknown", ToolError: failed}
	if in, ok := t.inflight[d.ToolCallID]; ok {
		delete(t.inflight, d.ToolCallID)
		ev.ToolName = in.name
		ev.ToolDurationMS = max(t.now().Sub(in.start).Milliseconds(), 0)
	}
	t.send(ev)
}

func (t *translator) resultLine(l *wireLine) {
	t.result = l
	if l.SessionID != "" {
		t.sessionID = l.SessionID
	}
}

// resultFailed reports whether the result event says the turn failed.
func (t *translator) resultFailed() bool {
	return t.result != nil && t.result.ExitCode != nil && *t.result.ExitCode != 0
}

// openTools ends the tool calls that never completed (the turn was cut short) as
// failed tool_result events, so that every tool call is counted once.
func (t *translator) openTools() {
	now := t.now()
	for id, in := range t.inflight {
		delete(t.inflight, id)
		t.send(agent.Event{Type: agent.EventToolResult, ToolName: in.name, ToolError: true,
			ToolDurationMS: max(now.Sub(in.start).Milliseconds(), 0), Message: "no completion before the turn ended"})
	}
}

// addCapped is a+b for non-negative counts, saturating instead of overflowing.
func addCapped(a, b int64) int64 {
	if b > math.MaxInt64-a {
		return math.MaxInt64
	}
	return a + b
}

// rawText is a JSON string's contents, or any other JSON value verbatim.
func rawText(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

// labelled is "label: message", or whichever of the two is not empty.
func labelled(label, msg string) string {
	msg = agent.Truncate(strings.TrimSpace(msg), maxSummary)
	switch {
	case label == "":
		return msg
	case msg == "":
		return label
	}
	return label + ": " + msg
}

func nonEmpty(s, otherwise string) string {
	if s == "" {
		return otherwise
	}
	return s
}
