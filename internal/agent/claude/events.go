package claude

import (
	"fmt"
	"strings"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"sortie/internal/agent"
)

// decodeOpts are lenient where the CLI's output may be: a lone surrogate in a tool's
// output, or a repeated key, must not turn a whole event into a malformed line.
var decodeOpts = json.JoinOptions(jsontext.AllowInvalidUTF8(true), jsontext.AllowDuplicateNames(true))

// Limits on what an event carries.
const (
	maxMalformed = 500  // characters of an unparseable line kept (spec)
	maxSummary   = 300  // characters of assistant text in a notification
	maxToolError = 2048 // bytes of tool error text (spec)
)

// syntheticModel is the model name the CLI puts on messages it makes up itself (API
// errors); they cost nothing and name no model.
const syntheticModel = "<synthetic>"

// wireLine is the part of a stream-json line the adapter reads. Everything else (the
// init event's tool lists, tool_use_result payloads, modelUsage...) is skipped by the
// decoder.
type wireLine struct {
	Type      string       `json:"type"`
	Subtype   string       `json:"subtype"`
	SessionID string       `json:"session_id"`
	Model     string       `json:"model"`
	Message   *wireMessage `json:"message"`

	// system/api_retry
	Attempt      int            `json:"attempt"`
	MaxRetries   int            `json:"max_retries"`
	RetryDelayMS float64        `json:"retry_delay_ms"`
	ErrorStatus  *int           `json:"error_status"`
	Error        jsontext.Value `json:"error"`
	Status       string         `json:"status"`

	// result
	Result         string                    `json:"result"`
	IsError        bool                      `json:"is_error"`
	TotalCostUSD   *float64                  `json:"total_cost_usd"`
	DurationMS     int64                     `json:"duration_ms"`
	DurationAPIMS  int64                     `json:"duration_api_ms"`
	NumTurns       int                       `json:"num_turns"`
	Usage          *wireUsage                `json:"usage"`
	Errors         []string                  `json:"errors"`
	APIErrorStatus *int                      `json:"api_error_status"`
	TerminalReason string                    `json:"terminal_reason"`
	SinceLast      map[string]wireModelUsage `json:"model_usage_since_last_result"`
}

type wireMessage struct {
	ID      string      `json:"id"`
	Model   string      `json:"model"`
	Content []wireBlock `json:"content"`
	Usage   *wireUsage  `json:"usage"`
}

type wireBlock struct {
	Type      string         `json:"type"`
	Text      string         `json:"text"`
	ID        string         `json:"id"`
	Name      string         `json:"name"`
	ToolUseID string         `json:"tool_use_id"`
	IsError   bool           `json:"is_error"`
	Content   jsontext.Value `json:"content"`
}

type wireUsage struct {
	InputTokens         int64 `json:"input_tokens"`
	OutputTokens        int64 `json:"output_tokens"`
	CacheReadInputToken int64 `json:"cache_read_input_tokens"`
}

type wireModelUsage struct {
	CostUSD float64 `json:"costUSD"`
}

// turnUsage is one turn's token figures, before they are added to the session's.
type turnUsage struct{ input, output, cacheRead int64 }

func (u turnUsage) add(o turnUsage) turnUsage {
	return turnUsage{u.input + o.input, u.output + o.output, u.cacheRead + o.cacheRead}
}

func (u turnUsage) sub(o turnUsage) turnUsage {
	return turnUsage{u.input - o.input, u.output - o.output, u.cacheRead - o.cacheRead}
}

func (u turnUsage) max(o turnUsage) turnUsage {
	return turnUsage{max(u.input, o.input), max(u.output, o.output), max(u.cacheRead, o.cacheRead)}
}

// inflightTool is a tool_use waiting for its tool_result.
type inflightTool struct {
	name  string
	start time.Time
}

// translator turns the stream-json lines of one turn into normalised events. It is
// used by one goroutine only.
//
// Token accounting follows the spec with two corrections measured against the real
// CLI (docs/agents/claude-code.md, "Token accounting"): the CLI prints one assistant
// line per content block, each repeating the message's usage, so usage is counted once
// per message id; and those lines carry the usage of the stream's start (output tokens
// not yet known), so when the result line reports the turn's true totals the turn's
// contribution is raised to them. Cumulative figures never go down.
type translator struct {
	now  func() time.Time
	emit func(agent.Event) // fills in time, pid and session id

	base     agent.Usage // the session's usage before this turn
	costBase float64     // the session's cost before this turn
	lastCost float64     // the CLI's total_cost_usd after the previous turn, 0 if unknown

	// perMessage is the usage of the newest messages by id, at most recentMessages
	// of them (recent): a message's lines come together, so an older one is complete
	// and its usage stays only in sum. A session of hours prints tens of thousands of
	// messages; the translator keeps a window of them, not all.
	perMessage map[string]turnUsage
	recent     []string // perMessage's ids, a ring: next is where the newest goes
	next       int
	sum        turnUsage // Σ of every message's usage, plus messages without an id
	turn       turnUsage // max(sum, the result's totals)
	model      string
	inflight   map[string]inflightTool

	apiStart  time.Time // zero when no API request is being timed
	timedAPI  bool      // a per-request duration was emitted this turn
	reported  bool      // an assistant message's usage was emitted this turn
	sessionID string    // the id the CLI announced, "" if none

	result     *wireLine
	turnCost   float64
	pendingAPI int64 // result's duration_api_ms, for the terminal event when nothing was timed
}

func newTranslator(now func() time.Time, emit func(agent.Event), base agent.Usage, costBase, lastCost float64) *translator {
	return &translator{
		now: now, emit: emit, base: base, costBase: costBase, lastCost: lastCost,
		perMessage: map[string]turnUsage{}, inflight: map[string]inflightTool{},
	}
}

// usage is the session's cumulative usage including this turn so far.
func (t *translator) usage() agent.Usage {
	u := agent.Usage{
		Input:     t.base.Input + t.turn.input,
		Output:    t.base.Output + t.turn.output,
		CacheRead: t.base.CacheRead + t.turn.cacheRead,
	}
	u.Total = u.Input + u.Output
	return u
}

// cost is the session's cumulative cost including this turn, as far as known.
func (t *translator) cost() float64 { return t.costBase + t.turnCost }

// line handles one stdout line. It never fails: what it cannot read becomes a
// malformed event, and types it does not know are ignored.
func (t *translator) line(b []byte) {
	var l wireLine
	if err := json.Unmarshal(b, &l, decodeOpts); err != nil || l.Type == "" {
		t.emit(agent.Event{Type: agent.EventMalformed, Message: agent.Excerpt(b, maxMalformed)})
		return
	}
	if l.SessionID != "" {
		t.sessionID = l.SessionID
	}
	switch l.Type {
	case "system":
		t.system(&l)
	case "assistant":
		t.assistant(&l)
	case "user":
		t.user(&l)
	case "result":
		t.resultLine(&l)
	case "stream_event":
		t.emit(agent.Event{Type: agent.EventNotification})
	}
}

func (t *translator) system(l *wireLine) {
	switch l.Subtype {
	case "init":
		if l.Model != "" {
			t.model = l.Model
		}
		t.apiStart = t.now()
		t.emit(agent.Event{Type: agent.EventSessionStarted, Model: l.Model, Message: "session " + l.SessionID})
	case "api_retry":
		t.emit(agent.Event{Type: agent.EventNotification, Message: retryMessage(l)})
	default:
		msg := "system: " + l.Subtype
		if l.Status != "" {
			msg += " (" + l.Status + ")"
		}
		t.emit(agent.Event{Type: agent.EventNotification, Message: msg})
	}
}

func retryMessage(l *wireLine) string {
	var b strings.Builder
	fmt.Fprintf(&b, "API retry %d", l.Attempt)
	if l.MaxRetries > 0 {
		fmt.Fprintf(&b, "/%d", l.MaxRetries)
	}
	fmt.Fprintf(&b, " in %d ms", int64(l.RetryDelayMS))
	var reason []string
	if l.ErrorStatus != nil {
		reason = append(reason, fmt.Sprintf("status %d", *l.ErrorStatus))
	}
	if e := rawText(l.Error); e != "" {
		reason = append(reason, e)
	}
	if len(reason) > 0 {
		b.WriteString(" (" + strings.Join(reason, ", ") + ")")
	}
	return b.String()
}

func (t *translator) assistant(l *wireLine) {
	m := l.Message
	if m == nil {
		t.emit(agent.Event{Type: agent.EventNotification, Message: "assistant message without content"})
		return
	}
	now := t.now()
	if s := summarize(m.Content); s != "" {
		t.emit(agent.Event{Type: agent.EventNotification, Message: s})
	}
	t.tools(m.Content) // older CLIs put tool results in assistant messages too
	if m.Usage == nil || m.Model == syntheticModel {
		return
	}
	if m.Model != "" {
		t.model = m.Model
	}
	u := turnUsage{max(m.Usage.InputTokens, 0), max(m.Usage.OutputTokens, 0), max(m.Usage.CacheReadInputToken, 0)}
	first := true
	if m.ID == "" {
		t.sum = t.sum.add(u)
	} else {
		prev, seen := t.perMessage[m.ID]
		first = !seen
		next := prev.max(u)
		t.remember(m.ID, next)
		t.sum = t.sum.add(next.sub(prev))
	}
	grown := t.sum.max(t.turn)
	if grown == t.turn && !first {
		return // another content block of a message already counted
	}
	t.turn = grown
	// Another content block of a message already counted only revises that request's
	// figures.
	ev := agent.Event{Type: agent.EventTokenUsage, Usage: t.usage(), Model: t.model, CostUSD: t.cost(), Revision: !first}
	t.reported = true
	if first && !t.apiStart.IsZero() {
		ev.APIDurationMS = now.Sub(t.apiStart).Milliseconds()
		t.apiStart = time.Time{}
		t.timedAPI = true
	}
	t.emit(ev)
}

// recentMessages bounds the messages whose usage the translator keeps by id. The
// CLI prints a message's content blocks one line after another; a subagent's messages
// may come in between, a few at a time. A message that is recentMessages messages old
// is long complete.
const recentMessages = 64

// remember records message id's usage, forgetting the oldest message beyond
// recentMessages.
func (t *translator) remember(id string, u turnUsage) {
	if _, ok := t.perMessage[id]; !ok {
		if len(t.recent) < recentMessages {
			t.recent = append(t.recent, id)
		} else {
			delete(t.perMessage, t.recent[t.next]) // the oldest
			t.recent[t.next] = id
			t.next = (t.next + 1) % recentMessages
		}
	}
	t.perMessage[id] = u
}

// summarize describes an assistant message's content for a notification.
func summarize(blocks []wireBlock) string {
	var parts []string
	for _, c := range blocks {
		switch c.Type {
		case "text":
			if s := strings.TrimSpace(c.Text); s != "" {
				parts = append(parts, agent.Truncate(s, maxSummary))
			}
		case "tool_use":
			parts = append(parts, "tool_use "+c.Name)
		case "thinking", "redacted_thinking":
			parts = append(parts, "thinking")
		}
	}
	return strings.Join(parts, "; ")
}

func (t *translator) user(l *wireLine) {
	t.apiStart = t.now() // the CLI sends the tool results back: the next API call starts
	if l.Message != nil {
		t.tools(l.Message.Content)
	}
}

// tools follows a message's blocks in order: a tool_use starts a tool call, a
// tool_result ends one with a tool_result event timed from its tool_use.
func (t *translator) tools(content []wireBlock) {
	for _, c := range content {
		if c.Type == "tool_use" && c.ID != "" {
			t.inflight[c.ID] = inflightTool{name: c.Name, start: t.now()}
		}
		if c.Type != "tool_result" {
			continue
		}
		ev := agent.Event{Type: agent.EventToolResult, ToolError: c.IsError}
		if in, ok := t.inflight[c.ToolUseID]; ok {
			delete(t.inflight, c.ToolUseID)
			ev.ToolName = in.name
			ev.ToolDurationMS = t.now().Sub(in.start).Milliseconds()
		} else {
			ev.ToolName = "unknown"
		}
		if c.IsError {
			ev.Message = formatToolError(contentText(c.Content))
		}
		t.emit(ev)
	}
}

func (t *translator) resultLine(l *wireLine) {
	t.result = l
	if l.Usage != nil {
		final := t.turn.max(turnUsage{l.Usage.InputTokens, l.Usage.OutputTokens, l.Usage.CacheReadInputToken})
		changed := final != t.turn
		t.turn = final
		t.turnCost = t.costOf(l)
		if changed || t.turnCost > 0 {
			// The result's usage is the fallback for a turn whose requests reported
			// none (spec: claude-code-adapter, token accounting), and only then a
			// request of its own. Otherwise it revises the figures already reported
			// (their output tokens were those known when streaming began), so the
			// API request counter is not one high per turn.
			t.emit(agent.Event{Type: agent.EventTokenUsage, Usage: t.usage(), Model: t.model, CostUSD: t.cost(),
				Message: "turn totals from the result", Revision: t.reported})
		}
	} else {
		t.turnCost = t.costOf(l)
	}
	if !t.timedAPI {
		t.pendingAPI = l.DurationAPIMS
	}
}

// costOf is the cost of this turn alone. The CLI's total_cost_usd covers the whole
// CLI session, earlier invocations included; model_usage_since_last_result is this
// invocation's, when the CLI reports it.
func (t *translator) costOf(l *wireLine) float64 {
	if len(l.SinceLast) > 0 {
		var c float64
		for _, m := range l.SinceLast {
			c += m.CostUSD
		}
		return c
	}
	if l.TotalCostUSD == nil {
		return 0
	}
	if total := *l.TotalCostUSD; total >= t.lastCost {
		return total - t.lastCost
	}
	return *l.TotalCostUSD
}

// openTools ends the tool calls that never got a result (the turn was cut short) as
// failed tool_result events, so that every tool call is counted once.
func (t *translator) openTools() {
	now := t.now()
	for id, in := range t.inflight {
		delete(t.inflight, id)
		t.emit(agent.Event{Type: agent.EventToolResult, ToolName: in.name, ToolError: true,
			ToolDurationMS: now.Sub(in.start).Milliseconds(), Message: "no result before the turn ended"})
	}
}

// resultError describes a result line that reports a failure.
func resultError(l *wireLine) string {
	var parts []string
	if l.Subtype != "" && l.Subtype != "success" {
		parts = append(parts, l.Subtype)
	}
	if l.APIErrorStatus != nil {
		parts = append(parts, fmt.Sprintf("API status %d", *l.APIErrorStatus))
	}
	text := strings.TrimSpace(l.Result)
	if text == "" && len(l.Errors) > 0 {
		text = strings.Join(l.Errors, "; ")
	}
	if text != "" {
		parts = append(parts, agent.Truncate(agent.StripANSI(text), maxToolError))
	}
	if len(parts) == 0 {
		return "the CLI reported an error"
	}
	return strings.Join(parts, ": ")
}

// contentText is the text of a tool_result's content: a string, or text blocks.
func contentText(raw jsontext.Value) string {
	if len(raw) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s, decodeOpts) == nil {
		return s
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &blocks, decodeOpts) == nil {
		var parts []string
		for _, b := range blocks {
			if b.Text != "" {
				parts = append(parts, b.Text)
			}
		}
		return strings.Join(parts, "\n")
	}
	return string(raw)
}

// rawText is a JSON value as text: a string's contents, anything else verbatim.
func rawText(raw jsontext.Value) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s, decodeOpts) == nil {
		return s
	}
	return string(raw)
}
