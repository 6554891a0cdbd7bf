package codex

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"sortie/internal/agent"
)

// The wire format is the app-server's JSON-RPC 2.0 without the "jsonrpc" member, one
// message per line (codex app-server generate-json-schema, 0.169.0: JSONRPCRequest,
// JSONRPCResponse, JSONRPCError, JSONRPCNotification).

// message is one line of the app-server's stdout.
type message struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *rpcError       `json:"error,omitempty"`
}

// rpcError is a JSON-RPC error object.
type rpcError struct {
	Code    int64           `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// messageKind says what a line is.
type messageKind int

const (
	kindResponse     messageKind = iota + 1 // an answer to one of our requests (result or error)
	kindRequest                             // a request of the server's, which we must answer
	kindNotification                        // a notification
)

// maxMessage bounds what the adapter keeps of one message's text for an event.
const (
	maxMessage   = 2000
	maxMalformed = 512
)

// parseMessage decodes one line and classifies it. An error means the line is not a
// JSON-RPC message: not a JSON object, or an object that is none of the three kinds.
func parseMessage(line []byte) (message, messageKind, error) {
	var m message
	line = bytes.TrimSpace(line)
	if len(line) == 0 || line[0] != '{' {
		return m, 0, errors.New("not a JSON object")
	}
	if err := json.Unmarshal(line, &m); err != nil {
		return m, 0, err
	}
	hasID := len(m.ID) > 0 && string(m.ID) != "null"
	switch {
	case m.Method != "" && hasID:
		return m, kindRequest, nil
	case m.Method != "":
		return m, kindNotification, nil
	case hasID && (m.Result != nil || m.Error != nil):
		return m, kindResponse, nil
	}
	return m, 0, errors.New("neither a request, a response nor a notification")
}

// idOf is a response's id as a number; false when it is not one of ours (we number our
// requests from 1).
func idOf(raw json.RawMessage) (int64, bool) {
	var id int64
	if err := json.Unmarshal(raw, &id); err != nil || id <= 0 {
		return 0, false
	}
	return id, true
}

// tokenTotals is a TokenUsageBreakdown of thread/tokenUsage/updated.
type tokenTotals struct {
	Total     int64 `json:"totalTokens"`
	Input     int64 `json:"inputTokens"`
	CacheRead int64 `json:"cachedInputTokens"`
	Output    int64 `json:"outputTokens"`
}

func (t tokenTotals) below(o tokenTotals) bool {
	return t.Total < o.Total || t.Input < o.Input || t.CacheRead < o.CacheRead || t.Output < o.Output
}

// turnEnd is how the app-server said the turn ended (turn/completed).
type turnEnd struct {
	Status  string // completed, interrupted, failed
	Message string // the turn's error message, when it has one
}

// inputRequest is a request of the server's that only a human could answer.
type inputRequest struct {
	Method  string
	Message string
}

// translator turns the app-server's messages into agent events for one turn. It keeps
// the session's cumulative usage; the driver owns the process and the answers' delivery.
// It never blocks and never fails: whatever it cannot read becomes a malformed event.
type translator struct {
	now  func() time.Time
	emit func(agent.Event)

	threadID string // events of other threads (sub-agents) count only for usage
	turnID   string // "" until turn/start answered

	usage agent.Usage // cumulative for the session
	// marks holds, per thread, the app-server's own running total at the last update
	// the session saw: the baseline the next update's growth is counted from. The
	// app-server counts from the start of a thread, across processes that resumed it.
	// A thread without a mark has no known baseline. Owned by the session, which keeps
	// it across turns and app-servers.
	marks   map[string]tokenTotals
	pending []usageUpdate // updates that came before turn/start answered (setTurn)
	model   string

	end       *turnEnd      // set by turn/completed of this turn
	input     *inputRequest // set by a request that needs a human
	lastError string        // the last error notification that will not be retried
	started   map[string]time.Time
	approved  int
}

// usageUpdate is one thread/tokenUsage/updated: a thread's running total.
type usageUpdate struct {
	thread, turn string
	total        tokenTotals
}

// Bounds on what the translator keeps for usage: updates waiting for the turn's id,
// and threads (the session's and its sub-agents') with a baseline.
const (
	maxPending = 64
	maxThreads = 1024
)

// newTranslator starts a turn's translator with the session's usage so far and its
// threads' baselines (marks, which it updates in place; nil for none).
func newTranslator(now func() time.Time, emit func(agent.Event), usage agent.Usage, marks map[string]tokenTotals) *translator {
	if marks == nil {
		marks = map[string]tokenTotals{}
	}
	return &translator{now: now, emit: emit, usage: usage, marks: marks, started: map[string]time.Time{}}
}

// setTurn records the id turn/start answered with and accounts for the updates that
// came before it, now that it is known which of them are of this turn.
func (tr *translator) setTurn(id string) {
	tr.turnID = id
	pending := tr.pending
	tr.pending = nil
	for _, u := range pending {
		tr.tokens(u)
	}
}

// line handles one line that is not a response to one of our requests (the driver
// routes those itself) and returns the answer a server request needs (nil for none).
func (tr *translator) line(b []byte) *message {
	m, kind, err := parseMessage(b)
	if err != nil {
		tr.emit(agent.Event{Type: agent.EventMalformed, Message: agent.Excerpt(b, maxMalformed)})
		return nil
	}
	switch kind {
	case kindRequest:
		return tr.request(m)
	case kindNotification:
		tr.notification(m)
	case kindResponse:
		// A late answer to a request we gave up on: nothing waits for it.
		tr.emit(agent.Event{Type: agent.EventOtherMessage, Message: "response to an abandoned request " + agent.Excerpt(m.ID, 64)})
	}
	return nil
}

// quiet are notifications that carry nothing an operator follows: streaming deltas
// (the adapter opts out of most at initialize) and client-side state.
var quiet = map[string]bool{
	"item/agentMessage/delta": true, "item/commandExecution/outputDelta": true, "item/fileChange/outputDelta": true,
	"item/reasoning/summaryTextDelta": true, "item/reasoning/summaryPartAdded": true, "item/reasoning/textDelta": true,
	"item/plan/delta": true, "item/commandExecution/terminalInteraction": true, "item/fileChange/patchUpdated": true,
	"item/mcpToolCall/progress": true, "turn/diff/updated": true, "turn/plan/updated": true,
	"thread/status/changed": true, "thread/started": true, "turn/started": true, "thread/readState/changed": true,
	"account/rateLimits/updated": true, "remoteControl/status/changed": true, "serverRequest/resolved": true,
	"rawResponseItem/completed": true, "rawResponse/completed": true, "thread/settings/updated": true,
	"thread/name/updated": true, "skills/changed": true, "fs/changed": true, "hook/started": true,
	"thread/environment/connected": true, "account/updated": true, "app/list/updated": true,
}

func (tr *translator) notification(m message) {
	switch m.Method {
	case "thread/tokenUsage/updated":
		var p struct {
			ThreadID   string `json:"threadId"`
			TurnID     string `json:"turnId"`
			TokenUsage struct {
				Total tokenTotals `json:"total"`
			} `json:"tokenUsage"`
		}
		if !tr.decode(m, &p) {
			return
		}
		u := usageUpdate{thread: p.ThreadID, turn: p.TurnID, total: p.TokenUsage.Total}
		if tr.turnID == "" {
			// Before turn/start answers, an update of the new turn and a restatement
			// of an earlier one cannot be told apart: setTurn decides.
			if len(tr.pending) < maxPending {
				tr.pending = append(tr.pending, u)
			}
			return
		}
		tr.tokens(u)
	case "item/started":
		var p struct {
			Item struct {
				Type string `json:"type"`
				ID   string `json:"id"`
			} `json:"item"`
			StartedAtMs int64 `json:"startedAtMs"`
		}
		if tr.decode(m, &p) && p.Item.ID != "" {
			tr.started[p.Item.ID] = tr.now()
		}
	case "item/completed":
		tr.itemCompleted(m)
	case "turn/completed":
		var p struct {
			ThreadID string `json:"threadId"`
			Turn     struct {
				ID     string `json:"id"`
				Status string `json:"status"`
				Error  *struct {
					Message           string          `json:"message"`
					Info              json.RawMessage `json:"codexErrorInfo"`
					AdditionalDetails string          `json:"additionalDetails"`
				} `json:"error"`
			} `json:"turn"`
		}
		if !tr.decode(m, &p) || (tr.threadID != "" && p.ThreadID != tr.threadID) {
			return
		}
		if tr.turnID != "" && p.Turn.ID != tr.turnID {
			return // a turn of another request, such as one we interrupted before
		}
		end := &turnEnd{Status: p.Turn.Status}
		if e := p.Turn.Error; e != nil {
			end.Message = e.Message
			if e.AdditionalDetails != "" {
				end.Message += " (" + e.AdditionalDetails + ")"
			}
			if info := errorInfo(e.Info); info != "" {
				end.Message += " [" + info + "]"
			}
		}
		tr.end = end
	case "error":
		var p struct {
			Error struct {
				Message string          `json:"message"`
				Info    json.RawMessage `json:"codexErrorInfo"`
			} `json:"error"`
			WillRetry bool `json:"willRetry"`
		}
		if !tr.decode(m, &p) {
			return
		}
		msg := "codex error: " + p.Error.Message
		if info := errorInfo(p.Error.Info); info != "" {
			msg += " [" + info + "]"
		}
		if p.WillRetry {
			msg += " (retrying)"
		} else {
			tr.lastError = p.Error.Message
		}
		tr.emit(agent.Event{Type: agent.EventNotification, Message: agent.Truncate(msg, maxMessage)})
	case "warning", "guardianWarning":
		var p struct {
			Message string `json:"message"`
		}
		if tr.decode(m, &p) {
			tr.emit(agent.Event{Type: agent.EventNotification, Message: agent.Truncate("codex warning: "+p.Message, maxMessage)})
		}
	case "configWarning", "deprecationNotice":
		var p struct {
			Summary string `json:"summary"`
			Details string `json:"details"`
		}
		if tr.decode(m, &p) {
			msg := "codex " + m.Method + ": " + p.Summary
			if p.Details != "" {
				msg += " (" + p.Details + ")"
			}
			tr.emit(agent.Event{Type: agent.EventNotification, Message: agent.Truncate(msg, maxMessage)})
		}
	case "mcpServer/startupStatus/updated":
		var p struct {
			Name   string `json:"name"`
			Status string `json:"status"`
			Error  string `json:"error"`
		}
		if tr.decode(m, &p) && p.Error != "" {
			tr.emit(agent.Event{Type: agent.EventNotification,
				Message: agent.Truncate(fmt.Sprintf("MCP server %s: %s: %s", p.Name, p.Status, p.Error), maxMessage)})
		}
	case "model/rerouted":
		tr.emit(agent.Event{Type: agent.EventNotification, Message: "codex model/rerouted: " + agent.Excerpt(m.Params, maxMessage)})
	case "thread/compacted":
		tr.emit(agent.Event{Type: agent.EventNotification, Message: "codex compacted the thread's context"})
	default:
		if !quiet[m.Method] {
			tr.emit(agent.Event{Type: agent.EventOtherMessage, Message: m.Method})
		}
	}
}

// errorInfo is codex's classification of an error (codexErrorInfo: "internalServerError",
// {"httpConnectionFailed":{"httpStatusCode":500}}, ...) in one line, "" when absent.
func errorInfo(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return agent.Truncate(s, 200)
	}
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		return ""
	}
	return agent.Excerpt(buf.Bytes(), 200)
}

// tokens takes a thread's running total: the session's usage moves by what the thread
// counted since its baseline (marks), so that every thread's growth, the session's own
// and its sub-agents', counts exactly once.
//
//   - An update of the session's thread for another turn than the running one is, when
//     the thread has no baseline or the total is below it, a restatement: codex 0.169.0
//     restates a resumed thread's totals, under the turn that last changed them, before
//     the new turn starts (an app-server stopped mid-turn may restate less than the
//     session saw, and counts on from there). It sets the baseline and counts nothing.
//     Above a known baseline it is late growth of an earlier turn, and counts.
//   - Any other update counts from the baseline, or from zero for a thread without one
//     (a new sub-agent) or a total below it (a counter that started over).
func (tr *translator) tokens(u usageUpdate) {
	t := u.total
	if t.Total < 0 || t.Input < 0 || t.CacheRead < 0 || t.Output < 0 {
		tr.emit(agent.Event{Type: agent.EventMalformed, Message: "thread/tokenUsage/updated with a negative count"})
		return
	}
	if u.thread == "" {
		u.thread = tr.threadID
	}
	base, known := tr.marks[u.thread]
	if !known && len(tr.marks) >= maxThreads {
		return
	}
	tr.marks[u.thread] = t
	if u.thread == tr.threadID && u.turn != tr.turnID && (!known || t.below(base)) {
		return
	}
	if t.below(base) {
		base = tokenTotals{}
	}
	if t == base {
		return
	}
	tr.usage.Input += t.Input - base.Input
	tr.usage.Output += t.Output - base.Output
	tr.usage.CacheRead += t.CacheRead - base.CacheRead
	tr.usage.Total += t.Total - base.Total
	tr.emit(agent.Event{Type: agent.EventTokenUsage, Usage: tr.usage, Model: tr.model})
}

// item is the part of a ThreadItem the adapter reads.
type item struct {
	Type       string          `json:"type"`
	ID         string          `json:"id"`
	Text       string          `json:"text"`
	Command    string          `json:"command"`
	Status     string          `json:"status"`
	ExitCode   *int64          `json:"exitCode"`
	DurationMs *int64          `json:"durationMs"`
	Server     string          `json:"server"`
	Tool       string          `json:"tool"`
	Error      json.RawMessage `json:"error"`
	Success    *bool           `json:"success"`
	Changes    []struct {
		Path string `json:"path"`
	} `json:"changes"`
	StartedAtMs   *int64 `json:"startedAtMs"`
	CompletedAtMs *int64 `json:"completedAtMs"`
}

func (tr *translator) itemCompleted(m message) {
	var p struct {
		Item item `json:"item"`
	}
	if !tr.decode(m, &p) {
		return
	}
	it := p.Item
	switch it.Type {
	case "agentMessage":
		if s := strings.TrimSpace(it.Text); s != "" {
			tr.emit(agent.Event{Type: agent.EventNotification, Message: agent.Truncate(s, maxMessage)})
		}
	case "commandExecution":
		failed := it.Status == "failed" || it.Status == "declined" || (it.ExitCode != nil && *it.ExitCode != 0)
		msg := it.Command
		switch {
		case it.Status == "declined":
			msg += " (declined)"
		case it.ExitCode != nil && *it.ExitCode != 0:
			msg += fmt.Sprintf(" (exit %d)", *it.ExitCode)
		}
		tr.tool(it, "exec_command", failed, msg)
	case "mcpToolCall":
		failed := it.Status == "failed" || (len(it.Error) > 0 && string(it.Error) != "null")
		tr.tool(it, "mcp__"+it.Server+"__"+it.Tool, failed, "")
	case "dynamicToolCall":
		failed := it.Status == "failed" || (it.Success != nil && !*it.Success)
		tr.tool(it, it.Tool, failed, "")
	case "fileChange":
		var paths []string
		for _, c := range it.Changes {
			paths = append(paths, c.Path)
		}
		tr.tool(it, "apply_patch", it.Status == "failed" || it.Status == "declined", strings.Join(paths, ", "))
	case "webSearch":
		tr.tool(it, "web_search", false, "")
	}
	delete(tr.started, it.ID)
}

// tool emits the tool_result of a completed item. Its duration is the longest of what
// codex measured (durationMs, which for exec_command 0.169.0 starts after the command
// was spawned and can fall short of it), the item's own start and end, and the time
// since item/started reached us.
func (tr *translator) tool(it item, name string, failed bool, msg string) {
	var d int64
	if it.DurationMs != nil {
		d = max(d, *it.DurationMs)
	}
	if it.StartedAtMs != nil && it.CompletedAtMs != nil {
		d = max(d, *it.CompletedAtMs-*it.StartedAtMs)
	}
	if t, ok := tr.started[it.ID]; ok {
		d = max(d, tr.now().Sub(t).Milliseconds())
	}
	tr.emit(agent.Event{Type: agent.EventToolResult, ToolName: agent.Truncate(name, 200), ToolDurationMS: d,
		ToolError: failed, Message: agent.Truncate(msg, maxMessage)})
}

// request answers a request of the server's under the documented policy: command
// executions and file changes are approved (the thread runs in codex's sandbox); a
// question for the user or an MCP elicitation is declined and marks the turn as needing
// input; a dynamic tool call is refused as unsupported; anything else gets a JSON-RPC
// error, so that codex is never left waiting.
func (tr *translator) request(m message) *message {
	reply := &message{ID: m.ID}
	result := func(v any) *message {
		reply.Result, _ = json.Marshal(v)
		return reply
	}
	var p struct {
		Command   string `json:"command"`
		Reason    string `json:"reason"`
		Questions []struct {
			Question string `json:"question"`
		} `json:"questions"`
		Message string `json:"message"`
		Server  string `json:"serverName"`
		Tool    string `json:"tool"`
	}
	json.Unmarshal(m.Params, &p) // what cannot be read only leaves the message shorter
	switch m.Method {
	case "item/commandExecution/requestApproval":
		tr.approve("command execution", p.Command, p.Reason)
		return result(map[string]any{"decision": "accept"})
	case "item/fileChange/requestApproval":
		tr.approve("file change", "", p.Reason)
		return result(map[string]any{"decision": "accept"})
	case "execCommandApproval":
		var legacy struct {
			Command []string `json:"command"`
		}
		json.Unmarshal(m.Params, &legacy)
		tr.approve("command execution", strings.Join(legacy.Command, " "), p.Reason)
		return result(map[string]any{"decision": "approved"})
	case "applyPatchApproval":
		tr.approve("file change", "", p.Reason)
		return result(map[string]any{"decision": "approved"})
	case "item/tool/requestUserInput":
		var qs []string
		for _, q := range p.Questions {
			qs = append(qs, q.Question)
		}
		tr.needInput(m.Method, "the agent asked the user: "+strings.Join(qs, " / "))
		// No answers: the tool call comes back empty to the model, and the turn is ended.
		return result(map[string]any{"answers": map[string]any{}})
	case "mcpServer/elicitation/request":
		var meta struct {
			Meta struct {
				Kind string `json:"codex_approval_kind"`
			} `json:"_meta"`
		}
		json.Unmarshal(m.Params, &meta)
		if meta.Meta.Kind == "mcp_tool_call_approval" {
			// Codex asking whether an MCP tool may run is an approval, not a question.
			tr.approve("MCP tool call", "", p.Message)
			return result(map[string]any{"action": "accept", "content": map[string]any{}, "_meta": nil})
		}
		tr.needInput(m.Method, fmt.Sprintf("MCP server %s asked for input: %s", p.Server, p.Message))
		return result(map[string]any{"action": "cancel", "content": nil, "_meta": nil})
	case "item/tool/call":
		tr.emit(agent.Event{Type: agent.EventUnsupportedToolCall, ToolName: agent.Truncate(p.Tool, 200),
			Message: "dynamic tool " + p.Tool + " is not supported by sortie"})
		return result(map[string]any{"success": false, "contentItems": []any{
			map[string]any{"type": "inputText", "text": "sortie: dynamic tool " + p.Tool + " is not supported; use the sortie-tools MCP server"}}})
	}
	tr.emit(agent.Event{Type: agent.EventOtherMessage, Message: "declined server request " + agent.Truncate(m.Method, 200)})
	reply.Error = &rpcError{Code: -32601, Message: "sortie does not handle " + m.Method}
	return reply
}

func (tr *translator) approve(what, command, reason string) {
	tr.approved++
	msg := "auto-approved " + what
	if command != "" {
		msg += ": " + command
	}
	if reason != "" {
		msg += " (" + reason + ")"
	}
	tr.emit(agent.Event{Type: agent.EventApprovalAutoApproved, Message: agent.Truncate(msg, maxMessage)})
}

func (tr *translator) needInput(method, msg string) {
	if tr.input == nil {
		tr.input = &inputRequest{Method: method, Message: agent.Truncate(msg, maxMessage)}
	}
}

// decode unmarshals m's params into v; a failure is a malformed event.
func (tr *translator) decode(m message, v any) bool {
	if err := json.Unmarshal(m.Params, v); err != nil {
		tr.emit(agent.Event{Type: agent.EventMalformed, Message: agent.Truncate(m.Method+": "+err.Error(), maxMalformed)})
		return false
	}
	return true
}
