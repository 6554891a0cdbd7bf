package copilot

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"sortie/internal/agent"
	"sortie/internal/agent/agenttest"
)

// legacy is where sortie 1.9's transcripts of an older CLI lie, third-party data beside
// the repository (/work/shared/testdata/README.md), read in place when present, as in
// CI; the parser must still read them. The package's own transcripts are in testdata/.
const legacy = "../../../../shared/testdata/sortie-1.9/internal/agent/copilot/testdata"

// legacyLines returns the lines of one of legacy's transcripts, skipping the test, and
// saying what was skipped, when the shared data is not beside the repository.
func legacyLines(t *testing.T, name string) []string {
	t.Helper()
	p := filepath.Join(legacy, name)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("skipped: ../shared/testdata/sortie-1.9/internal/agent/copilot/testdata/%s not present (third-party transcripts of an older copilot CLI, run in CI)", name)
	}
	return readLines(t, p)
}

// brief is an event reduced to what a mapping test compares.
type brief struct {
	Type    agent.EventType
	Message string
	Output  int64
	Tool    string
	ToolErr bool
}

func briefs(events []agent.Event) []brief {
	out := make([]brief, len(events))
	for i, e := range events {
		out[i] = brief{e.Type, e.Message, e.Usage.Output, e.ToolName, e.ToolError}
	}
	return out
}

// TestTranslate_MappingTable pins the translation of each event type (spec, "Event
// type mapping", and the events of the pinned CLI the table predates).
func TestTranslate_MappingTable(t *testing.T) {
	N, T, U, O, M := agent.EventNotification, agent.EventToolResult, agent.EventTokenUsage, agent.EventOtherMessage, agent.EventMalformed
	cases := []struct {
		name string
		line string
		want []brief
	}{
		{"assistant.message_delta resets the stall timer",
			`{"type":"assistant.message_delta","data":{"messageId":"m1","deltaContent":"hel"},"ephemeral":true}`,
			[]brief{{Type: N}}},
		{"assistant.message with outputTokens (older CLIs)",
			`{"type":"assistant.message","data":{"messageId":"m1","content":"\n\nhello world","toolRequests":[],"outputTokens":6}}`,
			[]brief{{Type: U, Output: 6}, {Type: N, Message: "hello world"}}},
		{"assistant.message with tool requests and no tokens (1.0.102)",
			`{"type":"assistant.message","data":{"messageId":"m1","model":"claude-sonnet-4-5","content":"Writing.","toolRequests":[{"toolCallId":"t1","name":"bash","arguments":{}},{"toolCallId":"t2","name":"view"}]}}`,
			[]brief{{Type: N, Message: "Writing.; tool request bash; tool request view"}}},
		{"assistant.turn_start", `{"type":"assistant.turn_start","data":{"turnId":"0","interactionId":"i"}}`,
			[]brief{{Type: N, Message: "assistant turn 0 started"}}},
		{"assistant.turn_end", `{"type":"assistant.turn_end","data":{"turnId":"0"}}`,
			[]brief{{Type: N, Message: "assistant turn 0 ended"}}},
		{"tool.execution_start", `{"type":"tool.execution_start","data":{"toolCallId":"t1","toolName":"bash","arguments":{"command":"ls"}}}`,
			[]brief{{Type: N, Message: "tool bash started"}}},
		{"tool.execution_complete without its start",
			`{"type":"tool.execution_complete","data":{"toolCallId":"t9","success":true}}`,
			[]brief{{Type: T, Tool: "unknown"}}},
		{"tool.execution_complete failing, with 1.0.102's error object",
			`{"type":"tool.execution_complete","data":{"toolCallId":"t9","success":false,"error":{"message":"denied","code":"failure"}}}`,
			[]brief{{Type: T, Tool: "unknown", ToolErr: true}}},
		{"tool.execution_complete of a shell command that exited non-zero counts as failed (1.0.102 says success)",
			`{"type":"tool.execution_complete","data":{"toolCallId":"t9","shellExecution":{"exitCode":3},"success":true}}`,
			[]brief{{Type: T, Tool: "unknown", ToolErr: true}}},
		{"tool.execution_complete of a shell command that exited 0",
			`{"type":"tool.execution_complete","data":{"toolCallId":"t9","shellExecution":{"exitCode":0},"success":true}}`,
			[]brief{{Type: T, Tool: "unknown"}}},
		{"tool.execution_complete without success counts as failed",
			`{"type":"tool.execution_complete","data":{"toolCallId":"t9"}}`,
			[]brief{{Type: T, Tool: "unknown", ToolErr: true}}},
		{"session.warning", `{"type":"session.warning","data":{"warningType":"mcp","message":"server slow"}}`,
			[]brief{{Type: N, Message: "warning: mcp: server slow"}}},
		{"session.info", `{"type":"session.info","data":{"infoType":"model_retry","message":"Retrying..."},"ephemeral":true}`,
			[]brief{{Type: N, Message: "model_retry: Retrying..."}}},
		{"session.task_complete", `{"type":"session.task_complete","data":{"summary":"Read and summarized main.go","success":true}}`,
			[]brief{{Type: N, Message: "task complete: Read and summarized main.go"}}},
		{"session.error", `{"type":"session.error","data":{"errorType":"query","message":"500 boom","statusCode":500}}`,
			[]brief{{Type: N, Message: "error: query: 500 boom (status 500)"}}},
		{"assistant.turn_retry", `{"type":"assistant.turn_retry","data":{"turnId":"0","reason":"api_error"},"ephemeral":true}`,
			[]brief{{Type: N, Message: "model call retried: api_error"}}},
		{"session.autopilot_stopped", `{"type":"session.autopilot_stopped","data":{"reason":"cap_reached"},"ephemeral":true}`,
			[]brief{{Type: N, Message: "autopilot stopped: cap_reached"}}},
		{"session.mcp_server_status_changed to failed",
			`{"type":"session.mcp_server_status_changed","data":{"serverName":"sortie-tools","status":"failed","error":"spawn failed"},"ephemeral":true}`,
			[]brief{{Type: N, Message: "MCP server sortie-tools failed: spawn failed"}}},
		{"session.mcp_server_status_changed otherwise is debug only",
			`{"type":"session.mcp_server_status_changed","data":{"serverName":"sortie-tools","status":"connected"},"ephemeral":true}`, nil},
		{"session.mcp_servers_loaded is debug only", `{"type":"session.mcp_servers_loaded","data":{"servers":[]},"ephemeral":true}`, nil},
		{"session.tools_updated is debug only", `{"type":"session.tools_updated","data":{"model":"m"},"ephemeral":true}`, nil},
		{"user.message is debug only", `{"type":"user.message","data":{"content":"the prompt"}}`, nil},
		{"result emits nothing by itself",
			`{"type":"result","sessionId":"s1","exitCode":0,"usage":{"premiumRequests":1,"totalApiDurationMs":10}}`, nil},
		{"unknown type", `{"type":"future.event.type","data":{"something":"unknown"}}`,
			[]brief{{Type: O, Message: "future.event.type"}}},
		{"unknown ephemeral type", `{"type":"model.call_start","data":{"turnId":"0","model":"m"},"ephemeral":true}`,
			[]brief{{Type: O, Message: "model.call_start"}}},
		{"unknown type with any data shape", `{"type":"session.background_tasks_changed","data":[1,2]}`,
			[]brief{{Type: O, Message: "session.background_tasks_changed"}}},
		{"not JSON", `this is not json`, []brief{{Type: M, Message: "this is not json"}}},
		{"JSON without a type", `{"data":{}}`, []brief{{Type: M, Message: `{"data":{}}`}}},
		{"JSON that is not an object", `[1,2,3]`, []brief{{Type: M, Message: "[1,2,3]"}}},
		{"known type with a payload of the wrong shape", `{"type":"assistant.message","data":{"content":7}}`,
			[]brief{{Type: M, Message: `{"type":"assistant.message","data":{"content":7}}`}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			events, _ := run(t, c.line)
			if got := briefs(events); !slices.Equal(got, c.want) {
				t.Errorf("%s\n got %+v\nwant %+v", c.line, got, c.want)
			}
		})
	}
}

func TestTranslate_MalformedLinesAreTruncated(t *testing.T) {
	long := strings.Repeat("é", 2000)
	events, _ := run(t, long, "\xff\xfe not utf-8")
	if len(events) != 2 {
		t.Fatalf("events = %v", agenttest.Types(events))
	}
	if n := utf8.RuneCountInString(events[0].Message); n != maxMalformed+1 || !strings.HasSuffix(events[0].Message, "…") {
		t.Errorf("malformed message has %d characters, want %d and an ellipsis", n, maxMalformed+1)
	}
	if !utf8.ValidString(events[1].Message) {
		t.Errorf("malformed message %q is not valid UTF-8", events[1].Message)
	}
}

// TestTranslate_LongMessageIsCut: a message of almost 10 MB, which the runner reads
// whole, becomes a notification of maxSummary characters and an ellipsis.
func TestTranslate_LongMessageIsCut(t *testing.T) {
	line := fmt.Sprintf(`{"type":"assistant.message","data":{"messageId":"m","content":%q,"toolRequests":[]}}`, strings.Repeat("y", 10<<20-200))
	events, _ := run(t, line)
	if n := agenttest.OfType(events, agent.EventNotification); len(n) != 1 || utf8.RuneCountInString(n[0].Message) != maxSummary+1 {
		t.Errorf("events %v: want one notification of %d characters", agenttest.Types(events), maxSummary+1)
	}
}

func TestTranslate_OutputTokensAreCumulativeAndInputIsZero(t *testing.T) {
	var events []agent.Event
	c := &clock{t: time.Unix(0, 0)}
	base := agent.Usage{Input: 0, Output: 100, Total: 100}
	tr := newTranslator(c.now, func(e agent.Event) { events = append(events, e) }, base)
	for _, n := range []int{5, 0, 7} {
		tr.line(fmt.Appendf(nil, `{"type":"assistant.message","data":{"messageId":"m","content":"x","outputTokens":%d}}`, n))
	}
	usage := agenttest.OfType(events, agent.EventTokenUsage)
	var got []agent.Usage
	for _, e := range usage {
		got = append(got, e.Usage)
	}
	want := []agent.Usage{{Output: 105, Total: 105}, {Output: 112, Total: 112}}
	if !slices.Equal(got, want) {
		t.Errorf("token_usage = %+v, want %+v (a message without tokens adds none)", got, want)
	}
	if tr.raiseOutput(3) || tr.usage().Output != 112 {
		t.Errorf("raising below the turn's figure must change nothing: %+v", tr.usage())
	}
	if !tr.raiseOutput(20) || tr.usage() != (agent.Usage{Output: 120, Total: 120}) {
		t.Errorf("raised usage = %+v, want 120", tr.usage())
	}
}

func TestTranslate_ToolCallsCorrelateByID(t *testing.T) {
	var events []agent.Event
	c := &clock{t: time.Unix(0, 0)}
	tr := newTranslator(c.now, func(e agent.Event) { events = append(events, e) }, agent.Usage{})
	tr.line([]byte(`{"type":"tool.execution_start","data":{"toolCallId":"a","toolName":"bash"}}`))
	c.t = c.t.Add(100 * time.Millisecond)
	tr.line([]byte(`{"type":"tool.execution_start","data":{"toolCallId":"b","toolName":"view"}}`))
	c.t = c.t.Add(250 * time.Millisecond)
	tr.line([]byte(`{"type":"tool.execution_complete","data":{"toolCallId":"b","success":true}}`))
	c.t = c.t.Add(50 * time.Millisecond)
	tr.line([]byte(`{"type":"tool.execution_complete","data":{"toolCallId":"a","success":false}}`))
	tr.line([]byte(`{"type":"tool.execution_complete","data":{"toolCallId":"a","success":true}}`)) // a second completion
	tr.line([]byte(`{"type":"tool.execution_start","data":{"toolCallId":"c","toolName":"create"}}`))
	c.t = c.t.Add(time.Second)
	tr.openTools()

	var got []string
	for _, e := range agenttest.OfType(events, agent.EventToolResult) {
		got = append(got, fmt.Sprintf("%s %dms error=%t", e.ToolName, e.ToolDurationMS, e.ToolError))
	}
	want := []string{"view 250ms error=false", "bash 400ms error=true", "unknown 0ms error=false", "create 1000ms error=true"}
	if !slices.Equal(got, want) {
		t.Errorf("tool results = %q, want %q", got, want)
	}
}

func TestTranslate_ResultNamesTheSessionAndItsOutcome(t *testing.T) {
	_, tr := run(t, `{"type":"result","timestamp":"t","sessionId":"s-1","exitCode":0,"usage":{"totalApiDurationMs":6866}}`)
	if tr.sessionID != "s-1" || tr.resultFailed() || tr.result.Usage.TotalAPIDurationMS != 6866 {
		t.Errorf("result: session %q failed %t", tr.sessionID, tr.resultFailed())
	}
	_, tr = run(t, `{"type":"result","sessionId":"s-1","exitCode":1}`, `{"type":"result","exitCode":0}`)
	if tr.sessionID != "s-1" || tr.resultFailed() {
		t.Errorf("a later result without an id keeps the id (%q) and its own outcome", tr.sessionID)
	}
	_, tr = run(t, `{"type":"result","sessionId":"s-2","exitCode":2}`)
	if !tr.resultFailed() {
		t.Error("exitCode 2 must read as a failed result")
	}
}

// TestTranscripts_PinnedCLI checks the transcripts captured from the pinned CLI
// (TestContract_Capture -update writes them).
func TestTranscripts_PinnedCLI(t *testing.T) {
	notes := func(events []agent.Event) []string {
		var out []string
		for _, e := range agenttest.OfType(events, agent.EventNotification) {
			if e.Message != "" {
				out = append(out, e.Message)
			}
		}
		return out
	}
	tools := func(events []agent.Event) []string {
		var out []string
		for _, e := range agenttest.OfType(events, agent.EventToolResult) {
			out = append(out, fmt.Sprintf("%s error=%t", e.ToolName, e.ToolError))
		}
		return out
	}
	cases := []struct {
		file   string
		check  func(t *testing.T, events []agent.Event, tr *translator)
		failed bool
	}{
		{"simple.jsonl", func(t *testing.T, events []agent.Event, tr *translator) {
			if !slices.Contains(notes(events), "hello world; tool request task_complete") {
				t.Errorf("notifications = %q", notes(events))
			}
			if !slices.Contains(notes(events), "task complete: said hello") || !slices.Contains(notes(events), "autopilot stopped: task_complete") {
				t.Errorf("notifications = %q", notes(events))
			}
			if got := tools(events); !slices.Equal(got, []string{"task_complete error=false"}) {
				t.Errorf("tool results = %q", got)
			}
			// The pinned CLI puts no outputTokens on assistant.message: the stream alone
			// counts nothing, and the adapter takes the figures from the usage file.
			if u := agenttest.OfType(events, agent.EventTokenUsage); len(u) != 0 || tr.model != model {
				t.Errorf("token_usage = %+v, model %q; want none from the stream, and the message's model", u, tr.model)
			}
		}, false},
		{"tool_calls.jsonl", func(t *testing.T, events []agent.Event, tr *translator) {
			want := []string{"bash error=false", "no_such_tool error=true", "task_complete error=false"}
			if got := tools(events); !slices.Equal(got, want) {
				t.Errorf("tool results = %q, want %q", got, want)
			}
			if n := len(agenttest.OfType(events, agent.EventOtherMessage)); n < 10 {
				t.Errorf("other_message events = %d; the CLI's bookkeeping events should be there", n)
			}
		}, false},
		{"two_turns.jsonl", func(t *testing.T, events []agent.Event, tr *translator) {
			lines := readLines(t, filepath.Join("testdata", "two_turns.jsonl"))
			var ids []string
			for _, l := range lines {
				if strings.HasPrefix(l, `{"type":"result"`) {
					_, one := run(t, l)
					ids = append(ids, one.sessionID)
				}
			}
			if len(ids) != 2 || ids[0] == "" || ids[0] != ids[1] {
				t.Errorf("result session ids = %q, want the same one twice (--resume continues it)", ids)
			}
		}, false},
		{"model_error.jsonl", func(t *testing.T, events []agent.Event, tr *translator) {
			if tr.lastError != "query: 500 model is down (status 500)" {
				t.Errorf("last error = %q", tr.lastError)
			}
			if !slices.Contains(notes(events), "autopilot stopped: error") {
				t.Errorf("notifications = %q", notes(events))
			}
		}, true},
		{"retry.jsonl", func(t *testing.T, events []agent.Event, tr *translator) {
			n := notes(events)
			if !slices.Contains(n, "model call retried: api_error") ||
				!slices.ContainsFunc(n, func(s string) bool { return strings.HasPrefix(s, "model_retry: ") }) {
				t.Errorf("notifications = %q, want the retry and its info", n)
			}
		}, false},
		{"autopilot_cap.jsonl", func(t *testing.T, events []agent.Event, tr *translator) {
			if !slices.Contains(notes(events), "autopilot stopped: cap_reached") {
				t.Errorf("notifications = %q", notes(events))
			}
		}, false},
		{"mcp_failed.jsonl", func(t *testing.T, events []agent.Event, tr *translator) {
			if !slices.ContainsFunc(notes(events), func(s string) bool {
				return strings.HasPrefix(s, "MCP server broken failed: failed to spawn MCP server process")
			}) {
				t.Errorf("notifications = %q, want the failed MCP server", notes(events))
			}
		}, false},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			events, tr := run(t, readLines(t, filepath.Join("testdata", c.file))...)
			if m := agenttest.OfType(events, agent.EventMalformed); len(m) > 0 {
				t.Fatalf("malformed: %+v", m)
			}
			if tr.result == nil || len(tr.sessionID) != 36 || tr.resultFailed() != c.failed {
				t.Fatalf("result = %+v (failed %t), want a session id and failed=%t", tr.result, tr.resultFailed(), c.failed)
			}
			c.check(t, events, tr)
		})
	}
}

// TestTranscripts_OlderCLI reads sortie 1.9's transcripts of an older CLI, which still
// put outputTokens on assistant.message (TestTranscripts_OutputTokensOnAssistantMessages
// checks the same on the package's own transcripts).
func TestTranscripts_OlderCLI(t *testing.T) {
	cases := []struct {
		file    string
		output  int64
		session string
		tools   []string
		types   map[agent.EventType]int
	}{
		{"simple_session.jsonl", 6, "aa778ea0-6eab-4ce9-b87e-11d6d33dab4f", nil,
			map[agent.EventType]int{agent.EventTokenUsage: 1, agent.EventNotification: 4}},
		{"tool_use_session.jsonl", 122, "bb889fb1-7fbc-5dea-c98f-22e7e44ebc50", []string{"view"},
			map[agent.EventType]int{agent.EventTokenUsage: 2, agent.EventToolResult: 1, agent.EventNotification: 6}},
		{"resume_session.jsonl", 10, "aa778ea0-6eab-4ce9-b87e-11d6d33dab4f", nil,
			map[agent.EventType]int{agent.EventTokenUsage: 1, agent.EventNotification: 3}},
		{"malformed_lines.jsonl", 4, "", nil,
			map[agent.EventType]int{agent.EventMalformed: 1, agent.EventOtherMessage: 1, agent.EventTokenUsage: 1, agent.EventNotification: 1}},
		{"auth_failure.jsonl", 0, "", nil, map[agent.EventType]int{agent.EventMalformed: 1}},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			events, tr := run(t, legacyLines(t, c.file)...)
			got := map[agent.EventType]int{}
			for _, e := range events {
				got[e.Type]++
			}
			if fmt.Sprint(got) != fmt.Sprint(c.types) {
				t.Errorf("event counts = %v, want %v", got, c.types)
			}
			if u := tr.usage(); u != (agent.Usage{Output: c.output, Total: c.output}) {
				t.Errorf("usage = %+v, want %d output tokens and no input", u, c.output)
			}
			if tr.sessionID != c.session {
				t.Errorf("session = %q, want %q", tr.sessionID, c.session)
			}
			var tools []string
			for _, e := range agenttest.OfType(events, agent.EventToolResult) {
				tools = append(tools, e.ToolName)
				if e.ToolError {
					t.Errorf("%s reported an error", e.ToolName)
				}
			}
			if !slices.Equal(tools, c.tools) {
				t.Errorf("tools = %q, want %q", tools, c.tools)
			}
		})
	}
}

func TestReadUsageFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		writeFile(t, p, body)
		return p
	}
	cases := []struct {
		name string
		path string
		want cliUsage
		ok   bool
	}{
		{"as 1.0.102 writes it", write("a.json", `{"totalApiDurationMs":62,"modelMetrics":{"claude-sonnet-4-5":{"requests":{"count":1},"usage":{"inputTokens":10,"outputTokens":5}}},"currentModel":"claude-sonnet-4-5"}`),
			cliUsage{Output: 5, Model: "claude-sonnet-4-5"}, true},
		{"several models add up", write("b.json", `{"modelMetrics":{"a":{"usage":{"outputTokens":5}},"b":{"usage":{"outputTokens":7}}},"currentModel":"b"}`),
			cliUsage{Output: 12, Model: "b"}, true},
		{"no model metrics yet", write("c.json", `{"modelMetrics":{}}`), cliUsage{}, true},
		{"missing", filepath.Join(dir, "none.json"), cliUsage{}, false},
		{"not JSON", write("d.json", `{"modelMetrics":`), cliUsage{}, false},
		{"no metrics at all", write("e.json", `{}`), cliUsage{}, false},
		{"too large", write("f.json", `{"modelMetrics":{}, "pad":"`+strings.Repeat("x", maxUsageFile)+`"}`), cliUsage{}, false},
	}
	for _, c := range cases {
		got, ok := readUsageFile(c.path)
		if ok != c.ok || got != c.want {
			t.Errorf("%s: %+v, %t; want %+v, %t", c.name, got, ok, c.want, c.ok)
		}
	}
}
