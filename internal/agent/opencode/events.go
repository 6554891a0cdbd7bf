package opencode

import (
	"fmt"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"sortie/internal/agent"
)

// decodeOpts are lenient where the CLI's output may be: a lone surrogate in a tool's
// output, or a repeated key, must not turn a whole event into a malformed line.
var decodeOpts = json.JoinOptions(jsontext.AllowInvalidUTF8(true), jsontext.AllowDuplicateNames(true))

// Limits on what an event carries.
const (
	maxMalformed = 500  // characters of an unparseable line kept
	maxSummary   = 300  // characters of assistant text in a notification
	maxToolError = 2048 // bytes of tool error text
)

// wireLine is one line of `opencode run --format json` (observed on 1.18.33): every
// line has type, timestamp (ms) and sessionID; step_start, text, reasoning, tool_use and
// step_finish carry the message part, error the session's error.
type wireLine struct {
	Type      string     `json:"type"`
	Timestamp int64      `json:"timestamp"`
	SessionID string     `json:"sessionID"`
	Part      *wirePart  `json:"part"`
	Error     *wireError `json:"error"`
}

type wirePart struct {
	Type   string      `json:"type"`
	Text   string      `json:"text"`
	Tool   string      `json:"tool"`
	CallID string      `json:"callID"`
	State  *wireState  `json:"state"`
	Reason string      `json:"reason"`
	Tokens *wireTokens `json:"tokens"`
	Cost   float64     `json:"cost"`
}

type wireState struct {
	Status   string `json:"status"`
	Error    string `json:"error"`
	Metadata struct {
		Exit *int64 `json:"exit"`
	} `json:"metadata"`
	Time struct {
		Start int64 `json:"start"`
		End   int64 `json:"end"`
	} `json:"time"`
}

// wireTokens is one step's usage. input excludes cache reads and writes (Anthropic's
// input_tokens); output excludes reasoning, which is billed as output.
type wireTokens struct {
	Input     int64 `json:"input"`
	Output    int64 `json:"output"`
	Reasoning int64 `json:"reasoning"`
	Cache     struct {
		Read  int64 `json:"read"`
		Write int64 `json:"write"`
	} `json:"cache"`
}

type wireError struct {
	Name string `json:"name"`
	Data struct {
		Message    string `json:"message"`
		StatusCode int    `json:"statusCode"`
	} `json:"data"`
}

// rejectedPermission is how the CLI words a tool call it refused because a permission
// asked for a human's approval, which a headless run answers with a rejection.
const rejectedPermission = "rejected permission"

// translator turns the lines of one turn into normalised events. It is used by one
// goroutine only. Every step_finish line reports that step's tokens and cost (one
// model request); the translator adds them to the session's totals, so the cumulative
// figures only grow.
type translator struct {
	emit func(agent.Event) // fills in time, pid and session id

	usage agent.Usage // the session's, this turn included so far
	cost  float64     // the session's, this turn included so far
	model string

	sessionID string // the id the CLI reported, "" if none yet
	lines     int    // lines read, malformed ones included
	events    int    // lines that were OpenCode events
	errors    []string
	lastText  string
	// lastReason is the finish reason of the last step; "tool-calls" at the end of a
	// turn means the loop stopped before the model had answered the tool results.
	lastReason string
	rejected   string // the tool whose permission request was rejected, "" if none
}

func newTranslator(emit func(agent.Event), usage agent.Usage, cost float64, model string) *translator {
	return &translator{emit: emit, usage: usage, cost: cost, model: model}
}

// line handles one stdout line. It never fails: what it cannot read becomes a
// malformed event, and types it does not know an other_message.
func (t *translator) line(b []byte) {
	t.lines++
	var l wireLine
	if err := json.Unmarshal(b, &l, decodeOpts); err != nil || l.Type == "" {
		t.emit(agent.Event{Type: agent.EventMalformed, Message: agent.Excerpt(b, maxMalformed)})
		return
	}
	t.events++
	if l.SessionID != "" && l.SessionID != t.sessionID {
		first := t.sessionID == ""
		t.sessionID = l.SessionID
		if first {
			t.emit(agent.Event{Type: agent.EventSessionStarted, Model: t.model, Message: "session " + l.SessionID})
		}
	}
	switch l.Type {
	case "step_start":
		// A model request begins; nothing to report until it ends.
	case "text":
		if l.Part != nil {
			if s := strings.TrimSpace(l.Part.Text); s != "" {
				t.lastText = s
				t.emit(agent.Event{Type: agent.EventNotification, Message: agent.Truncate(s, maxSummary)})
			}
		}
	case "reasoning":
		t.emit(agent.Event{Type: agent.EventNotification, Message: "thinking"})
	case "tool_use":
		t.tool(l.Part)
	case "step_finish":
		t.step(l.Part)
	case "error":
		msg := errorText(l.Error)
		t.errors = append(t.errors, msg)
		t.emit(agent.Event{Type: agent.EventNotification, Message: "error: " + msg})
	default:
		t.emit(agent.Event{Type: agent.EventOtherMessage, Message: agent.Truncate(l.Type, 100)})
	}
}

// tool reports a finished tool call. The CLI prints a tool part once, when it has
// completed or failed, with the call's start and end.
func (t *translator) tool(p *wirePart) {
	if p == nil {
		t.emit(agent.Event{Type: agent.EventOtherMessage, Message: "tool_use without a part"})
		return
	}
	ev := agent.Event{Type: agent.EventToolResult, ToolName: p.Tool}
	if ev.ToolName == "" {
		ev.ToolName = "unknown"
	}
	if s := p.State; s != nil {
		if s.Time.End >= s.Time.Start && s.Time.Start > 0 {
			ev.ToolDurationMS = s.Time.End - s.Time.Start
		}
		switch {
		case s.Status == "error":
			ev.ToolError = true
			ev.Message = agent.Truncate(strings.TrimSpace(s.Error), maxToolError)
			if strings.Contains(s.Error, rejectedPermission) {
				t.rejected = ev.ToolName
			}
		case s.Metadata.Exit != nil && *s.Metadata.Exit != 0:
			// A shell command that failed: the call worked, the command did not.
			ev.ToolError = true
			ev.Message = fmt.Sprintf("exit status %d", *s.Metadata.Exit)
		}
	}
	t.emit(ev)
}

// step adds a finished model request's tokens and cost to the session's totals.
func (t *translator) step(p *wirePart) {
	if p == nil {
		return
	}
	t.lastReason = p.Reason
	if p.Tokens == nil && p.Cost <= 0 {
		return
	}
	if tk := p.Tokens; tk != nil {
		t.usage.Input = agent.AddTokens(t.usage.Input, tk.Input)
		t.usage.Output = agent.AddTokens(agent.AddTokens(t.usage.Output, tk.Output), tk.Reasoning)
		t.usage.CacheRead = agent.AddTokens(t.usage.CacheRead, tk.Cache.Read)
		t.usage.Total = agent.AddTokens(t.usage.Input, t.usage.Output)
	}
	if p.Cost > 0 {
		t.cost += p.Cost
	}
	t.emit(agent.Event{Type: agent.EventTokenUsage, Usage: t.usage, Model: t.model, CostUSD: t.cost})
}

// errorText describes an error line: the provider's message and HTTP status when
// there is one, else the error's name.
func errorText(e *wireError) string {
	if e == nil {
		return "the CLI reported an error"
	}
	var parts []string
	if e.Name != "" {
		parts = append(parts, e.Name)
	}
	if e.Data.StatusCode != 0 {
		parts = append(parts, fmt.Sprintf("status %d", e.Data.StatusCode))
	}
	msg := strings.Join(parts, ", ")
	if m := strings.TrimSpace(e.Data.Message); m != "" {
		if msg != "" {
			msg += ": "
		}
		msg += agent.Truncate(m, maxToolError)
	}
	if msg == "" {
		return "the CLI reported an error"
	}
	return msg
}
