package gemini

import (
	"cmp"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"sortie/internal/agent"
)

// decodeOpts are lenient where the CLI's output may be: a lone surrogate in a tool's
// output, or a repeated key, must not turn a whole event into a malformed line.
var decodeOpts = json.JoinOptions(jsontext.AllowInvalidUTF8(true), jsontext.AllowDuplicateNames(true))

// Limits on what an event carries: characters of an unparseable line, of assistant
// text, of an error.
const maxMalformed, maxSummary, maxToolError = 500, 300, 2048

// wireEvent is one line of `gemini --output-format stream-json` (0.61.0): init
// (session_id, model), message (role, content, delta), tool_use (tool_name, tool_id,
// parameters), tool_result (tool_id, status, output, error), error (severity,
// message) and result (status, error, stats). Every line has type and timestamp.
type wireEvent struct {
	Type      string     `json:"type"`
	Timestamp string     `json:"timestamp"`
	SessionID string     `json:"session_id"`
	Model     string     `json:"model"`
	Role      string     `json:"role"`
	Content   string     `json:"content"`
	ToolName  string     `json:"tool_name"`
	ToolID    string     `json:"tool_id"`
	Status    string     `json:"status"`
	Output    string     `json:"output"`
	Error     *wireError `json:"error"`
	Severity  string     `json:"severity"`
	Message   string     `json:"message"`
	Stats     *wireStats `json:"stats"`
}

type wireError struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// wireStats are the result's figures: the invocation's own (every model request of
// this run of the CLI), not the session's. input_tokens is the prompt, cache reads
// included (cached); output_tokens the candidates.
type wireStats struct {
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
	Cached       int64 `json:"cached"`
}

// shellTrailer is a line the CLI's shell tool adds after a command's output (0.61.0,
// with --debug, which makes the stream-json output what the model sees); a failure
// line is the command's Exit Code (non-zero), Signal or Error. Without output and
// without --debug, the output is one line: "Command exited with code: N", "Command
// terminated by signal: S" or "Command failed: ...".
var (
	shellTrailer = regexp.MustCompile(`^(Process Group PGID|Background PIDs): |^</untrusted_context>$`)
	shellFailure = regexp.MustCompile(`^(Exit Code: -?[1-9]\d*|Signal: |Error: |Command exited with code: -?[1-9]|Command terminated by signal|Command failed)`)
)

// shellTool is the CLI's shell tool, the one tool whose output carries its command's
// exit code.
const shellTool = "run_shell_command"

// shellFailed reports whether a shell call's output says its command failed: its last
// lines, read from the end, up to the first that is the command's own output.
func shellFailed(output string) bool {
	rest := strings.TrimSpace(output)
	for rest != "" {
		i := strings.LastIndexByte(rest, '\n')
		l := strings.TrimSpace(rest[i+1:])
		switch {
		case shellFailure.MatchString(l):
			return true
		case !shellTrailer.MatchString(l) && !strings.HasPrefix(l, "Exit Code: "):
			return false
		}
		if i < 0 {
			break
		}
		rest = rest[:i]
	}
	return false
}

// openCall is a tool call the CLI started and has not reported the end of.
type openCall struct {
	name  string
	start time.Time
}

// translator turns the lines of one turn into normalised events. It is used by one
// goroutine only.
type translator struct {
	emit func(agent.Event) // fills in time, pid and session id
	now  func() time.Time

	base      agent.Usage // the session's before this turn
	usage     agent.Usage // the session's, this turn included once its result came
	sessionID string
	model     string
	calls     map[string]openCall
	text      strings.Builder // the start of the assistant's text since its last tool call
	errors    []string        // error events of severity error
	result    *wireEvent
}

func newTranslator(now func() time.Time, emit func(agent.Event), usage agent.Usage) *translator {
	return &translator{emit: emit, now: now, base: usage, usage: usage, calls: map[string]openCall{}}
}

// line handles one stdout line. It never fails: what it cannot read becomes a
// malformed event, and types it does not know an other_message.
func (t *translator) line(b []byte) {
	var e wireEvent
	if err := json.Unmarshal(b, &e, decodeOpts); err != nil || e.Type == "" {
		t.emit(agent.Event{Type: agent.EventMalformed, Message: agent.Excerpt(b, maxMalformed)})
		return
	}
	switch e.Type {
	case "init":
		if e.SessionID != "" && t.sessionID == "" {
			t.sessionID = e.SessionID
			t.model = e.Model
			t.emit(agent.Event{Type: agent.EventSessionStarted, Model: e.Model, Message: "session " + e.SessionID})
		}
	case "message":
		if e.Role != "assistant" {
			return // the prompt, echoed
		}
		if t.text.Len() < 4*maxSummary { // the start of the reply is its summary
			t.text.WriteString(e.Content)
		}
		if s := strings.TrimSpace(e.Content); s != "" {
			t.emit(agent.Event{Type: agent.EventNotification, Message: agent.Truncate(s, maxSummary)})
		}
	case "tool_use":
		t.text.Reset()
		if _, dup := t.calls[e.ToolID]; !dup {
			t.calls[e.ToolID] = openCall{name: e.ToolName, start: t.stamp(e.Timestamp)}
		}
	case "tool_result":
		t.toolResult(&e)
	case "error":
		msg := agent.Truncate(strings.TrimSpace(e.Message), maxToolError)
		if e.Severity != "warning" {
			t.errors = append(t.errors, msg)
		}
		t.emit(agent.Event{Type: agent.EventNotification, Message: cmp.Or(e.Severity, "error") + ": " + msg})
	case "result":
		if t.result != nil {
			return // one result per run; a second must not count the usage twice
		}
		t.result = &e
		t.settle(e.Stats)
	default:
		t.emit(agent.Event{Type: agent.EventOtherMessage, Message: agent.Truncate(e.Type, 100)})
	}
}

// toolResult ends a call with its one tool_result event. A shell command that failed
// is an error even though the CLI calls the call a success.
func (t *translator) toolResult(e *wireEvent) {
	c, ok := t.calls[e.ToolID]
	if !ok {
		return // a result for no call of this turn: nothing to count
	}
	delete(t.calls, e.ToolID)
	ev := agent.Event{Type: agent.EventToolResult, ToolName: cmp.Or(c.name, "unknown")}
	if end := t.stamp(e.Timestamp); !c.start.IsZero() && end.After(c.start) {
		ev.ToolDurationMS = end.Sub(c.start).Milliseconds()
	}
	switch {
	case e.Status != "success":
		ev.ToolError = true
		if e.Error != nil {
			ev.Message = agent.Truncate(strings.TrimSpace(e.Error.Message), maxToolError)
		}
	case c.name == shellTool && shellFailed(e.Output):
		ev.ToolError = true
		ev.Message = agent.Truncate(strings.TrimSpace(e.Output), maxToolError)
	}
	t.emit(ev)
}

// settle adds the run's figures to the session's, once.
func (t *translator) settle(s *wireStats) {
	if s == nil {
		return
	}
	u := t.base
	u.Input = agent.AddTokens(u.Input, s.InputTokens)
	u.Output = agent.AddTokens(u.Output, s.OutputTokens)
	u.CacheRead = agent.AddTokens(u.CacheRead, s.Cached)
	u.Total = agent.AddTokens(u.Input, u.Output)
	t.usage = u
	t.emit(agent.Event{Type: agent.EventTokenUsage, Usage: u, Model: t.model})
}

// openTools ends every call still open with a failed tool_result, so that each call
// is counted once.
func (t *translator) openTools() {
	for id, c := range t.calls {
		delete(t.calls, id)
		t.emit(agent.Event{Type: agent.EventToolResult, ToolName: cmp.Or(c.name, "unknown"), ToolError: true,
			Message: "the turn ended before the tool call did"})
	}
}

// failure describes a result of status error: its error, else the error events.
func (t *translator) failure() string {
	var parts []string
	if e := t.result.Error; e != nil {
		parts = append(parts, strings.TrimSpace(strings.TrimSpace(e.Type+": "+e.Message)))
	}
	parts = append(parts, t.errors...)
	if len(parts) == 0 {
		return "the CLI reported a failed turn (result status " + strconv.Quote(t.result.Status) + ")"
	}
	return agent.Truncate(strings.Join(parts, "; "), maxToolError)
}

// stamp is an event's timestamp, or now when it has none that parses.
func (t *translator) stamp(s string) time.Time {
	if ts, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return ts
	}
	return t.now()
}
