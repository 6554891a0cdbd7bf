package claude

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"sortie/internal/agent"
	"sortie/internal/agent/agenttest"
)

// sharedTestdata holds sortie 1.9's transcripts of older CLI versions, third-party
// data beside the repository (/work/shared/testdata/README.md): read in place when
// present, as in CI, never copied. The package's own transcripts, captured from the
// pinned CLI, are in testdata/ (transcripts_test.go records them).
const sharedTestdata = "../../../../shared/testdata/sortie-1.9/internal/agent/claude/testdata"

// ownLines returns the lines of one of the package's own transcripts.
func ownLines(t *testing.T, name string) []string {
	t.Helper()
	return readLines(t, filepath.Join("testdata", name))
}

// referenceLines returns the lines of a reference transcript, skipping the test, and
// saying what was skipped, when the shared data is not beside the repository.
func referenceLines(t *testing.T, name string) []string {
	t.Helper()
	p := filepath.Join(sharedTestdata, name)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("skipped: ../shared/testdata/sortie-1.9/internal/agent/claude/testdata/%s not present (third-party transcripts of older claude CLIs, run in CI)", name)
	}
	return readLines(t, p)
}

// referenceLine returns the first line of a reference transcript (see referenceLines).
func referenceLine(name string) func(*testing.T) string {
	return func(t *testing.T) string { return referenceLines(t, name)[0] }
}

// lineWith returns the first line that contains every one of subs.
func lineWith(t *testing.T, lines []string, subs ...string) string {
	t.Helper()
	for _, l := range lines {
		ok := true
		for _, s := range subs {
			ok = ok && strings.Contains(l, s)
		}
		if ok {
			return l
		}
	}
	t.Fatalf("no line contains all of %q", subs)
	return ""
}

// step is the fake time between two lines of a transcript.
const step = 100 * time.Millisecond

// run feeds lines to a fresh translator whose clock moves one step before each line
// and returns the events and the translator.
func run(t *testing.T, lines ...string) ([]agent.Event, *translator) {
	t.Helper()
	var events []agent.Event
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tr := newTranslator(func() time.Time { return clock }, func(e agent.Event) { events = append(events, e) },
		agent.Usage{}, 0, 0)
	for _, l := range lines {
		clock = clock.Add(step)
		tr.line([]byte(l))
	}
	return events, tr
}

// readLines returns the non-empty lines of a JSONL file, or the compacted object of a
// pretty-printed .json file.
func readLines(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasSuffix(path, ".json") {
		var buf bytes.Buffer
		if err := json.Compact(&buf, data); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		return []string{buf.String()}
	}
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) != "" {
			out = append(out, sc.Text())
		}
	}
	return out
}

// TestTranslate_CapturedSession reads a session of the pinned CLI with a Read and a
// Bash call (testdata/session_tools.jsonl, see transcripts_test.go): one token_usage per
// request with the input accumulated, the result raising the turn to its totals, both
// tools answered in user events.
func TestTranslate_CapturedSession(t *testing.T) {
	events, tr := run(t, ownLines(t, "session_tools.jsonl")...)

	if tr.sessionID != "00000000-0000-4000-8000-000000000002" {
		t.Errorf("session id = %q", tr.sessionID)
	}
	if got := agenttest.OfType(events, agent.EventSessionStarted); len(got) != 1 {
		t.Fatalf("session_started events = %d, want 1", len(got))
	}
	usage := agenttest.OfType(events, agent.EventTokenUsage)
	if len(usage) != 4 {
		t.Fatalf("token_usage events = %d, want one per request and one for the result: %v", len(usage), agenttest.Types(events))
	}
	// The model reported 1000, 2000 and 3000 input tokens for its three requests.
	for i, want := range []int64{1000, 3000, 6000} {
		if usage[i].Usage.Input != want {
			t.Errorf("token_usage[%d].Input = %d, want %d", i, usage[i].Usage.Input, want)
		}
		if usage[i].Model != model {
			t.Errorf("token_usage[%d].Model = %q, want %q", i, usage[i].Model, model)
		}
		// Each request is timed from what preceded it: system/init, then the tool results.
		if usage[i].APIDurationMS != step.Milliseconds() {
			t.Errorf("token_usage[%d].APIDurationMS = %d, want %d", i, usage[i].APIDurationMS, step.Milliseconds())
		}
	}
	// The result's totals: 40+60+80 output tokens, 200+300+500 cache reads.
	want := agent.Usage{Input: 6000, Output: 180, Total: 6180, CacheRead: 1000}
	if tr.usage() != want {
		t.Errorf("final usage = %+v, want %+v", tr.usage(), want)
	}
	if last := usage[len(usage)-1]; last.Usage != want || last.CostUSD != 0.021 {
		t.Errorf("last token_usage = %+v, want usage %+v and cost 0.021", last, want)
	}
	if tr.result == nil || tr.result.Subtype != "success" || tr.result.IsError {
		t.Fatalf("result = %+v, want success", tr.result)
	}
	if tr.pendingAPI != 0 {
		t.Errorf("pendingAPI = %d, want 0 when requests were timed", tr.pendingAPI)
	}
	if len(tr.inflight) != 0 {
		t.Errorf("tools without a result: %v", tr.inflight)
	}
}

func TestTranslate_ReferenceFullSession(t *testing.T) {
	events, tr := run(t, referenceLines(t, "full_session.jsonl")...)

	if tr.sessionID != "full-session-id-001" {
		t.Errorf("session id = %q", tr.sessionID)
	}
	if got := agenttest.OfType(events, agent.EventSessionStarted); len(got) != 1 {
		t.Fatalf("session_started events = %d, want 1", len(got))
	}
	usage := agenttest.OfType(events, agent.EventTokenUsage)
	if len(usage) < 3 {
		t.Fatalf("token_usage events = %d, want one per assistant message at least: %v", len(usage), agenttest.Types(events))
	}
	// Per-message usage is cumulative: 1000, 3000, 6000 input.
	for i, want := range []int64{1000, 3000, 6000} {
		if usage[i].Usage.Input != want {
			t.Errorf("token_usage[%d].Input = %d, want %d", i, usage[i].Usage.Input, want)
		}
		if usage[i].Model != "claude-sonnet-4-20250514" {
			t.Errorf("token_usage[%d].Model = %q", i, usage[i].Model)
		}
	}
	// The first request is timed from system/init to the first assistant message.
	if usage[0].APIDurationMS != step.Milliseconds() {
		t.Errorf("APIDurationMS = %d, want %d", usage[0].APIDurationMS, step.Milliseconds())
	}
	// The result raises the turn to its totals: cache reads only appear there.
	final := tr.usage()
	want := agent.Usage{Input: 6000, Output: 300, Total: 6300, CacheRead: 4000}
	if final != want {
		t.Errorf("final usage = %+v, want %+v", final, want)
	}
	if last := usage[len(usage)-1]; last.Usage != want || last.CostUSD != 0.01 {
		t.Errorf("last token_usage = %+v, want usage %+v and cost 0.01", last, want)
	}
	if tr.result == nil || tr.result.Subtype != "success" {
		t.Fatalf("result not captured: %+v", tr.result)
	}
	// Timed per request, so the result's duration_api_ms is not added again.
	if tr.pendingAPI != 0 {
		t.Errorf("pendingAPI = %d, want 0 when requests were timed", tr.pendingAPI)
	}
	// Two tool_use blocks never got a tool_result line in this transcript.
	tr.openTools()
}

func TestTranslate_ToolResultsInUserEvents(t *testing.T) {
	cases := []struct {
		name  string
		lines func(*testing.T) []string
		tools []string
	}{
		{"own", func(t *testing.T) []string { return ownLines(t, "session_tools.jsonl") }, []string{"Read", "Bash"}},
		{"reference", func(t *testing.T) []string { return referenceLines(t, "tool_use_result_user_event.jsonl") }, []string{"Read"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			events, _ := run(t, c.lines(t)...)
			checkToolResults(t, events, c.tools)
		})
	}
}

// checkToolResults wants one successful tool_result per name, in order, each timed one
// step (its result is on the line after its tool_use).
func checkToolResults(t *testing.T, events []agent.Event, names []string) {
	t.Helper()
	tools := agenttest.OfType(events, agent.EventToolResult)
	var got []string
	for _, tool := range tools {
		got = append(got, tool.ToolName)
		if tool.ToolError || tool.ToolDurationMS != step.Milliseconds() {
			t.Errorf("%s: error=%v duration=%d, want no error and %d ms", tool.ToolName, tool.ToolError, tool.ToolDurationMS, step.Milliseconds())
		}
	}
	if !slices.Equal(got, names) {
		t.Fatalf("tool_result events for %q, want %q: %v", got, names, agenttest.Types(events))
	}
}

// oldCLIToolResults is a transcript in the shape older CLIs wrote, which the pinned one
// no longer does: tool_result blocks in the next assistant message, not a user event.
var oldCLIToolResults = []string{
	`{"type":"system","subtype":"init","session_id":"s-old","model":"claude-x"}`,
	`{"type":"assistant","message":{"id":"msg_a","model":"claude-x","content":[{"type":"tool_use","id":"toolu_r","name":"Read","input":{"file_path":"/workspace/go.mod"}},{"type":"tool_use","id":"toolu_b","name":"Bash","input":{"command":"go vet ./..."}}],"usage":{"input_tokens":50,"output_tokens":12}}}`,
	`{"type":"assistant","message":{"id":"msg_b","model":"claude-x","content":[{"type":"tool_result","tool_use_id":"toolu_r","content":"module example"},{"type":"tool_result","tool_use_id":"toolu_b","content":""},{"type":"text","text":"Both fine."}],"usage":{"input_tokens":80,"output_tokens":3}}}`,
	`{"type":"result","subtype":"success","is_error":false,"result":"Both fine.","usage":{"input_tokens":130,"output_tokens":15}}`,
}

func TestTranslate_ToolResultsInAssistantEvents(t *testing.T) {
	cases := []struct {
		name  string
		lines func(*testing.T) []string
	}{
		{"own", func(*testing.T) []string { return oldCLIToolResults }},
		{"reference", func(t *testing.T) []string { return referenceLines(t, "tool_use_result_separate.jsonl") }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			events, _ := run(t, c.lines(t)...)
			checkToolResults(t, events, []string{"Read", "Bash"})
		})
	}
}

func TestTranslate_ToolErrors(t *testing.T) {
	cases := []struct {
		name, file, tool, message string
		lines                     func(*testing.T, string) []string
	}{
		{"own", "bash_not_found.jsonl", "Bash", "Exit code 127\n/bin/bash: line 1: sortie-no-such-tool: command not found", ownLines},
		// The CLI wraps this refusal in <tool_use_error> tags; the message drops them.
		{"own", "edit_not_unique.jsonl", "Edit", "Found 3 matches of the string to replace, but replace_all is false. To replace all occurrences, set replace_all to true. To replace only one occurrence, please provide more context to uniquely identify the instance.\nString: station ids", ownLines},
		{"reference", "tool_use_error_result.jsonl", "Bash", "bash: command not found: foobar", referenceLines},
		{"reference", "tool_use_error_xml_wrapped.jsonl", "Edit", "Found 3 matches of the string to replace, but replace_all is false. Use the str_replace API with replace_all=true to replace all instances.", referenceLines},
	}
	for _, c := range cases {
		t.Run(c.name+"/"+c.file, func(t *testing.T) {
			events, _ := run(t, c.lines(t, c.file)...)
			var failed []agent.Event
			for _, e := range agenttest.OfType(events, agent.EventToolResult) {
				if e.ToolError {
					failed = append(failed, e)
				}
			}
			if len(failed) != 1 {
				t.Fatalf("failed tool_result events = %+v, want one: %v", failed, agenttest.Types(events))
			}
			if failed[0].ToolName != c.tool || failed[0].Message != c.message {
				t.Errorf("tool_result = %+v\nwant tool %s, error, message %q", failed[0], c.tool, c.message)
			}
		})
	}
}

func TestTranslate_SingleEvents(t *testing.T) {
	// The retry line's figures vary with each capture; its message is built from them.
	retry := lineWith(t, ownLines(t, "api_error_429.jsonl"), `"subtype":"api_retry"`)
	var r struct {
		Attempt, MaxRetries, RetryDelayMS, ErrorStatus int
		Error                                          string
	}
	if err := json.Unmarshal([]byte(retry), &struct {
		Attempt      *int    `json:"attempt"`
		MaxRetries   *int    `json:"max_retries"`
		RetryDelayMS *int    `json:"retry_delay_ms"`
		ErrorStatus  *int    `json:"error_status"`
		Error        *string `json:"error"`
	}{&r.Attempt, &r.MaxRetries, &r.RetryDelayMS, &r.ErrorStatus, &r.Error}); err != nil {
		t.Fatal(err)
	}
	session := func(t *testing.T) []string { return ownLines(t, "session_tools.jsonl") }
	cases := []struct {
		name    string
		line    func(t *testing.T) string
		want    agent.EventType
		message string
	}{
		{"own/init", func(t *testing.T) string { return lineWith(t, session(t), `"subtype":"init"`) }, agent.EventSessionStarted, ""},
		{"own/api_retry", func(*testing.T) string { return retry }, agent.EventNotification,
			fmt.Sprintf("API retry %d/%d in %d ms (status %d, %s)", r.Attempt, r.MaxRetries, r.RetryDelayMS, r.ErrorStatus, r.Error)},
		{"own/stream_event", func(t *testing.T) string {
			return lineWith(t, ownLines(t, "partial_messages.jsonl"), `"type":"stream_event"`)
		}, agent.EventNotification, ""},
		{"own/assistant text", func(t *testing.T) string {
			return lineWith(t, session(t), `"type":"assistant"`, `"type":"text"`)
		}, agent.EventNotification, "Reading the notes first."},
		{"own/assistant tool_use", func(t *testing.T) string {
			return lineWith(t, session(t), `"type":"assistant"`, `"type":"tool_use"`)
		}, agent.EventNotification, "tool_use Read"},
		{"reference/init_event.json", referenceLine("init_event.json"), agent.EventSessionStarted, ""},
		{"reference/api_retry_event.json", referenceLine("api_retry_event.json"), agent.EventNotification, "API retry 1/5 in 1000 ms (status 429, rate_limit)"},
		{"reference/stream_event.json", referenceLine("stream_event.json"), agent.EventNotification, ""},
		{"reference/assistant_message.json", referenceLine("assistant_message.json"), agent.EventNotification, ""},
		{"reference/tool_use_message.json", referenceLine("tool_use_message.json"), agent.EventNotification, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			events, _ := run(t, c.line(t))
			if len(events) == 0 || events[0].Type != c.want {
				t.Fatalf("events = %v, want first %s", agenttest.Types(events), c.want)
			}
			if c.message != "" && events[0].Message != c.message {
				t.Errorf("message = %q, want %q", events[0].Message, c.message)
			}
		})
	}
}

func TestTranslate_ResultEvents(t *testing.T) {
	result := func(file string) func(*testing.T) string {
		return func(t *testing.T) string { return lineWith(t, ownLines(t, file), `"type":"result"`) }
	}
	cases := []struct {
		name    string
		line    func(*testing.T) string
		isError bool
		usage   agent.Usage
		errText string
	}{
		{"own/success", result("session_tools.jsonl"), false, agent.Usage{Input: 6000, Output: 180, Total: 6180, CacheRead: 1000}, ""},
		{"own/error_max_turns", result("max_turns.jsonl"), true, agent.Usage{Input: 700, Output: 30, Total: 730, CacheRead: 100},
			"error_max_turns: Reached maximum number of turns (1)"},
		{"own/error_during_execution", result("resume_unknown.jsonl"), true, agent.Usage{},
			"error_during_execution: No conversation found with session ID: 00000000-0000-4000-8000-00000000dead"},
		{"reference/result_success.json", referenceLine("result_success.json"), false, agent.Usage{}, ""},
		{"reference/result_error_max_turns.json", referenceLine("result_error_max_turns.json"), true, agent.Usage{Input: 50000, Output: 12000, Total: 62000, CacheRead: 30000}, "error_max_turns"},
		{"reference/result_error_execution.json", referenceLine("result_error_execution.json"), true, agent.Usage{}, "error_during_execution"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, tr := run(t, c.line(t))
			if tr.result == nil {
				t.Fatal("result not captured")
			}
			failed := tr.result.IsError || tr.result.Subtype != "success"
			if failed != c.isError {
				t.Errorf("failed = %v, want %v", failed, c.isError)
			}
			if c.usage != (agent.Usage{}) && tr.usage() != c.usage {
				t.Errorf("usage = %+v, want %+v", tr.usage(), c.usage)
			}
			if c.errText != "" && !strings.Contains(resultError(tr.result), c.errText) {
				t.Errorf("resultError = %q, want it to contain %q", resultError(tr.result), c.errText)
			}
			// Nothing was timed per request, so the result's API time is kept for the
			// terminal event.
			if tr.pendingAPI != tr.result.DurationAPIMS {
				t.Errorf("pendingAPI = %d, want %d", tr.pendingAPI, tr.result.DurationAPIMS)
			}
		})
	}
}

func TestTranslate_MalformedLines(t *testing.T) {
	cases := []struct {
		name  string
		first func(*testing.T) string
		want  string
	}{
		{"own", func(*testing.T) string { return "npm WARN config: this line is not JSON {{ <<<" }, "npm WARN config: this line is not JSON {{ <<<"},
		{"reference", referenceLine("malformed_line.txt"), "this is not json {{{ garbage line <<<"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			long := `{"type":"assistant",` + strings.Repeat("é", 2000)
			events, _ := run(t,
				c.first(t),
				long,
				`{"no_type":true}`,
				`[1,2,3]`,
				"\xff\xfe not utf-8",
			)
			if len(events) != 5 {
				t.Fatalf("events = %v, want 5 malformed", agenttest.Types(events))
			}
			for i, e := range events {
				if e.Type != agent.EventMalformed {
					t.Errorf("event %d = %s, want malformed", i, e.Type)
				}
				if n := len([]rune(e.Message)); n > maxMalformed+1 {
					t.Errorf("event %d message has %d characters, want ≤ %d+…", i, n, maxMalformed)
				}
				if !json.Valid([]byte(`"` + jsonEscape(e.Message) + `"`)) {
					t.Errorf("event %d message is not valid text", i)
				}
			}
			if events[0].Message != c.want {
				t.Errorf("malformed message = %q, want %q", events[0].Message, c.want)
			}
			if !strings.HasSuffix(events[1].Message, "…") {
				t.Errorf("long line not marked as truncated: %q", events[1].Message[len(events[1].Message)-10:])
			}
		})
	}
}

func jsonEscape(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}

func TestTranslate_UnknownTypesAreIgnored(t *testing.T) {
	events, tr := run(t,
		`{"type":"system","subtype":"init","session_id":"s1","model":"m"}`,
		`{"type":"rate_limit_event","rate_limit_info":{"status":"allowed"}}`,
		`{"type":"future_thing","payload":[1,2,3]}`,
		`{"type":"result","subtype":"success","is_error":false,"result":"ok","usage":{"input_tokens":1,"output_tokens":2}}`,
	)
	if got := agenttest.Types(events); len(got) != 2 || got[0] != agent.EventSessionStarted || got[1] != agent.EventTokenUsage {
		t.Errorf("events = %v, want session_started, token_usage", got)
	}
	if tr.result == nil {
		t.Error("result after unknown types not captured")
	}
}

// The real CLI prints one assistant line per content block, each with the message's
// usage, and that usage is the stream's start figure; the result has the true totals
// (captured from 2.1.330 in testdata/two_blocks.jsonl).
func TestTranslate_UsageCountedOncePerMessageAndRaisedToResult(t *testing.T) {
	events, tr := run(t,
		`{"type":"system","subtype":"init","session_id":"s","model":"claude-x"}`,
		`{"type":"assistant","message":{"id":"msg_1","model":"claude-x","content":[{"type":"text","text":"I will"}],"usage":{"input_tokens":100,"output_tokens":1,"cache_read_input_tokens":7}}}`,
		`{"type":"assistant","message":{"id":"msg_1","model":"claude-x","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{}}],"usage":{"input_tokens":100,"output_tokens":1,"cache_read_input_tokens":7}}}`,
		`{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"(Bash completed with no output)","is_error":false}]}}`,
		`{"type":"assistant","message":{"id":"msg_2","model":"claude-x","content":[{"type":"text","text":"done"}],"usage":{"input_tokens":200,"output_tokens":1}}}`,
		`{"type":"result","subtype":"success","is_error":false,"result":"done","total_cost_usd":0.5,"duration_api_ms":93,"usage":{"input_tokens":300,"output_tokens":50,"cache_read_input_tokens":7},"model_usage_since_last_result":{"claude-x":{"costUSD":0.2}}}`,
	)
	usage := agenttest.OfType(events, agent.EventTokenUsage)
	if len(usage) != 3 {
		t.Fatalf("token_usage events = %d, want 3 (msg_1 once, msg_2, the result): %v", len(usage), agenttest.Types(events))
	}
	if usage[0].Usage.Input != 100 || usage[1].Usage.Input != 300 {
		t.Errorf("per-message inputs = %d, %d, want 100, 300", usage[0].Usage.Input, usage[1].Usage.Input)
	}
	// msg_2 is timed from the user event (tool results sent back) to its arrival.
	if usage[1].APIDurationMS != step.Milliseconds() {
		t.Errorf("second request APIDurationMS = %d", usage[1].APIDurationMS)
	}
	want := agent.Usage{Input: 300, Output: 50, Total: 350, CacheRead: 7}
	if tr.usage() != want || usage[2].Usage != want {
		t.Errorf("usage = %+v (event %+v), want %+v", tr.usage(), usage[2].Usage, want)
	}
	// The turn's cost is this invocation's, not the CLI session's total.
	if tr.cost() != 0.2 || usage[2].CostUSD != 0.2 {
		t.Errorf("cost = %v, want 0.2", tr.cost())
	}
	for i := 1; i < len(usage); i++ {
		if usage[i].Usage.Input < usage[i-1].Usage.Input || usage[i].Usage.Output < usage[i-1].Usage.Output {
			t.Errorf("usage went down: %+v then %+v", usage[i-1].Usage, usage[i].Usage)
		}
	}
}

func TestTranslate_SessionTotalsCarryAcrossTurns(t *testing.T) {
	var events []agent.Event
	now := time.Now()
	base := agent.Usage{Input: 1000, Output: 100, Total: 1100, CacheRead: 5}
	tr := newTranslator(func() time.Time { return now }, func(e agent.Event) { events = append(events, e) }, base, 1.5, 2.0)
	tr.line([]byte(`{"type":"assistant","message":{"id":"m","model":"x","content":[],"usage":{"input_tokens":10,"output_tokens":3}}}`))
	tr.line([]byte(`{"type":"result","subtype":"success","is_error":false,"total_cost_usd":2.25,"usage":{"input_tokens":10,"output_tokens":3}}`))
	want := agent.Usage{Input: 1010, Output: 103, Total: 1113, CacheRead: 5}
	if tr.usage() != want {
		t.Errorf("usage = %+v, want %+v", tr.usage(), want)
	}
	// Without per-invocation figures, the cost is the growth of the CLI's total.
	if tr.cost() != 1.75 {
		t.Errorf("cost = %v, want 1.5 + (2.25 - 2.0)", tr.cost())
	}
}

func TestTranslate_SyntheticErrorMessagesAreNotifications(t *testing.T) {
	// Captured from 2.1.330 against a model answering 429.
	events, tr := run(t,
		`{"type":"system","subtype":"api_retry","attempt":1,"max_retries":1,"retry_delay_ms":1161,"error_status":429,"error":"rate_limit","session_id":"s"}`,
		`{"type":"assistant","message":{"id":"x","model":"<synthetic>","role":"assistant","usage":{"input_tokens":0,"output_tokens":0},"content":[{"type":"text","text":"API Error: Request rejected (429) · rate limited"}]},"error":"rate_limit"}`,
		`{"type":"result","subtype":"success","is_error":true,"api_error_status":429,"result":"API Error: Request rejected (429) · rate limited","total_cost_usd":0,"usage":{"input_tokens":0,"output_tokens":0}}`,
	)
	if got := agenttest.Types(events); len(got) != 2 || got[0] != agent.EventNotification || got[1] != agent.EventNotification {
		t.Fatalf("events = %v, want two notifications", got)
	}
	if !strings.Contains(events[0].Message, "status 429") || !strings.Contains(events[1].Message, "API Error") {
		t.Errorf("messages = %q, %q", events[0].Message, events[1].Message)
	}
	if tr.model != "" {
		t.Errorf("model = %q, want none from a synthetic message", tr.model)
	}
	if got := resultError(tr.result); got != "API status 429: API Error: Request rejected (429) · rate limited" {
		t.Errorf("resultError = %q", got)
	}
}

func TestTranslate_OpenToolsEndAsFailed(t *testing.T) {
	_, tr := run(t,
		`{"type":"assistant","message":{"id":"m","model":"x","content":[{"type":"tool_use","id":"t9","name":"Bash","input":{}}],"usage":{"input_tokens":1,"output_tokens":1}}}`,
	)
	var got []agent.Event
	tr.emit = func(e agent.Event) { got = append(got, e) }
	tr.openTools()
	if len(got) != 1 || got[0].Type != agent.EventToolResult || got[0].ToolName != "Bash" || !got[0].ToolError {
		t.Errorf("open tool events = %+v, want one failed Bash tool_result", got)
	}
	if len(tr.inflight) != 0 {
		t.Errorf("inflight not emptied: %v", tr.inflight)
	}
}

// The transcripts in testdata were captured from the pinned CLI with
// `go test -run TestTranscripts_Capture -args -update`; the fake model's script for each
// is in transcripts_test.go, so the expected figures here are the ones it reported.
func TestTranslate_CapturedToolCall(t *testing.T) {
	events, tr := run(t, readLines(t, "testdata/two_blocks_tool_call.jsonl")...)
	want := agent.Usage{Input: 300, Output: 50, Total: 350, CacheRead: 7}
	if tr.usage() != want {
		t.Errorf("usage = %+v, want %+v (what the fake model reported)", tr.usage(), want)
	}
	// One event for the first message (two lines, one per block), one for the
	// second, one raising the turn to the result's totals.
	if n := len(agenttest.OfType(events, agent.EventTokenUsage)); n != 3 {
		t.Errorf("token_usage events = %d, want 3: %v", n, agenttest.Types(events))
	}
	tools := agenttest.OfType(events, agent.EventToolResult)
	if len(tools) != 1 || tools[0].ToolName != "Bash" || tools[0].ToolError {
		t.Errorf("tool_result events = %+v", tools)
	}
	if tr.model != "claude-sonnet-4-5" || tr.cost() <= 0 {
		t.Errorf("model %q cost %v", tr.model, tr.cost())
	}
}

func TestTranslate_CapturedToolError(t *testing.T) {
	events, _ := run(t, readLines(t, "testdata/tool_error.jsonl")...)
	tools := agenttest.OfType(events, agent.EventToolResult)
	if len(tools) != 1 || !tools[0].ToolError {
		t.Fatalf("tool_result events = %+v", tools)
	}
	if tools[0].Message != "Exit code 3\nboom" {
		t.Errorf("tool error = %q, want the exit line and the output without colour codes", tools[0].Message)
	}
}

func TestTranslate_CapturedAPIError(t *testing.T) {
	events, tr := run(t, readLines(t, "testdata/api_error_429.jsonl")...)
	if tr.result == nil || !tr.result.IsError {
		t.Fatalf("result = %+v, want an error result", tr.result)
	}
	var retry bool
	for _, e := range agenttest.OfType(events, agent.EventNotification) {
		retry = retry || strings.Contains(e.Message, "status 429")
	}
	if !retry {
		t.Errorf("no retry notification: %+v", events)
	}
	if tr.usage() != (agent.Usage{}) {
		t.Errorf("usage = %+v, want none for a rejected request", tr.usage())
	}
}

// TestTranslate_MemoryStaysFlatOverALongTurn: a turn of tens of thousands of messages
// (an agent working for hours) keeps the usage of a window of recent messages by id,
// not of every message, and still counts each message once: a message whose second
// line comes after other messages' (a subagent's, in between) is not counted again.
func TestTranslate_MemoryStaysFlatOverALongTurn(t *testing.T) {
	msg := func(id string, in int) string {
		return fmt.Sprintf(`{"type":"assistant","message":{"id":%q,"model":"claude-x","content":[{"type":"text","text":"x"}],"usage":{"input_tokens":%d,"output_tokens":1}}}`, id, in)
	}
	lines := []string{`{"type":"system","subtype":"init","session_id":"s","model":"claude-x"}`, msg("first", 10)}
	for i := range 20000 {
		lines = append(lines, msg(fmt.Sprintf("msg_%d", i), 1))
		if i == recentMessages-2 {
			lines = append(lines, msg("first", 10)) // first's second block, after 63 others
		}
	}
	_, tr := run(t, lines...)
	if n := len(tr.perMessage); n > recentMessages || len(tr.recent) > recentMessages {
		t.Fatalf("the translator keeps %d messages by id (%d in its window), want at most %d", n, len(tr.recent), recentMessages)
	}
	if got := tr.usage().Input; got != 10+20000 {
		t.Fatalf("input tokens = %d, want %d: every message once", got, 10+20000)
	}
	// The window is the newest messages: the last one is in it, one just older than the
	// window is not.
	if _, ok := tr.perMessage["msg_19999"]; !ok {
		t.Errorf("the newest message is not in the window")
	}
	if _, ok := tr.perMessage[fmt.Sprintf("msg_%d", 20000-recentMessages-1)]; ok {
		t.Errorf("a message older than the window is still kept")
	}
}
