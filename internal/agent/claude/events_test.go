package claude

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sortie/internal/agent"
)

// sharedTestdata holds transcripts captured by the reference system from older CLI
// versions (read in place, never copied: ../shared/testdata/README.md).
const sharedTestdata = "../../../../shared/testdata/sortie-1.9/internal/agent/claude/testdata"

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

func ofType(events []agent.Event, typ agent.EventType) []agent.Event {
	var out []agent.Event
	for _, e := range events {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

func types(events []agent.Event) []agent.EventType {
	out := make([]agent.EventType, len(events))
	for i, e := range events {
		out[i] = e.Type
	}
	return out
}

func TestTranslate_ReferenceFullSession(t *testing.T) {
	events, tr := run(t, readLines(t, filepath.Join(sharedTestdata, "full_session.jsonl"))...)

	if tr.sessionID != "full-session-id-001" {
		t.Errorf("session id = %q", tr.sessionID)
	}
	if got := ofType(events, agent.EventSessionStarted); len(got) != 1 {
		t.Fatalf("session_started events = %d, want 1", len(got))
	}
	usage := ofType(events, agent.EventTokenUsage)
	if len(usage) < 3 {
		t.Fatalf("token_usage events = %d, want one per assistant message at least: %v", len(usage), types(events))
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
	events, _ := run(t, readLines(t, filepath.Join(sharedTestdata, "tool_use_result_user_event.jsonl"))...)
	tools := ofType(events, agent.EventToolResult)
	if len(tools) != 1 {
		t.Fatalf("tool_result events = %d, want 1: %v", len(tools), types(events))
	}
	if tools[0].ToolName != "Read" || tools[0].ToolError || tools[0].ToolDurationMS != step.Milliseconds() {
		t.Errorf("tool_result = %+v, want Read, no error, %d ms", tools[0], step.Milliseconds())
	}
}

func TestTranslate_ToolResultsInAssistantEvents(t *testing.T) {
	// Older CLIs put tool_result blocks in the next assistant message.
	events, _ := run(t, readLines(t, filepath.Join(sharedTestdata, "tool_use_result_separate.jsonl"))...)
	tools := ofType(events, agent.EventToolResult)
	if len(tools) != 2 || tools[0].ToolName != "Read" || tools[1].ToolName != "Bash" {
		t.Fatalf("tool_result events = %+v", tools)
	}
	for _, tool := range tools {
		if tool.ToolError || tool.ToolDurationMS != step.Milliseconds() {
			t.Errorf("%s: error=%v duration=%d", tool.ToolName, tool.ToolError, tool.ToolDurationMS)
		}
	}
}

func TestTranslate_ToolErrors(t *testing.T) {
	cases := []struct {
		file, tool, message string
	}{
		{"tool_use_error_result.jsonl", "Bash", "bash: command not found: foobar"},
		{"tool_use_error_xml_wrapped.jsonl", "Edit", "Found 3 matches of the string to replace, but replace_all is false. Use the str_replace API with replace_all=true to replace all instances."},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			events, _ := run(t, readLines(t, filepath.Join(sharedTestdata, c.file))...)
			tools := ofType(events, agent.EventToolResult)
			if len(tools) != 1 {
				t.Fatalf("tool_result events = %d: %v", len(tools), types(events))
			}
			if !tools[0].ToolError || tools[0].ToolName != c.tool || tools[0].Message != c.message {
				t.Errorf("tool_result = %+v\nwant tool %s, error, message %q", tools[0], c.tool, c.message)
			}
		})
	}
}

func TestTranslate_SingleEvents(t *testing.T) {
	cases := []struct {
		file    string
		want    agent.EventType
		message string
	}{
		{"init_event.json", agent.EventSessionStarted, ""},
		{"api_retry_event.json", agent.EventNotification, "API retry 1/5 in 1000 ms (status 429, rate_limit)"},
		{"stream_event.json", agent.EventNotification, ""},
		{"assistant_message.json", agent.EventNotification, ""},
		{"tool_use_message.json", agent.EventNotification, ""},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			events, _ := run(t, readLines(t, filepath.Join(sharedTestdata, c.file))...)
			if len(events) == 0 || events[0].Type != c.want {
				t.Fatalf("events = %v, want first %s", types(events), c.want)
			}
			if c.message != "" && events[0].Message != c.message {
				t.Errorf("message = %q, want %q", events[0].Message, c.message)
			}
		})
	}
}

func TestTranslate_ResultEvents(t *testing.T) {
	cases := []struct {
		file    string
		isError bool
		usage   agent.Usage
		errText string
	}{
		{"result_success.json", false, agent.Usage{}, ""},
		{"result_error_max_turns.json", true, agent.Usage{Input: 50000, Output: 12000, Total: 62000, CacheRead: 30000}, "error_max_turns"},
		{"result_error_execution.json", true, agent.Usage{}, "error_during_execution"},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			_, tr := run(t, readLines(t, filepath.Join(sharedTestdata, c.file))...)
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
	long := `{"type":"assistant",` + strings.Repeat("é", 2000)
	events, _ := run(t,
		readLines(t, filepath.Join(sharedTestdata, "malformed_line.txt"))[0],
		long,
		`{"no_type":true}`,
		`[1,2,3]`,
		"\xff\xfe not utf-8",
	)
	if len(events) != 5 {
		t.Fatalf("events = %v, want 5 malformed", types(events))
	}
	for i, e := range events {
		if e.Type != agent.EventMalformed {
			t.Errorf("event %d = %s, want malformed", i, e.Type)
		}
		if n := len([]rune(e.Message)); n > maxMalformed+1 {
			t.Errorf("event %d message has %d characters, want ≤ %d+…", i, n, maxMalformed)
		}
		if !strings.Contains(e.Message, "") || !json.Valid([]byte(`"`+jsonEscape(e.Message)+`"`)) {
			t.Errorf("event %d message is not valid text", i)
		}
	}
	if events[0].Message != "this is not json {{{ garbage line <<<" {
		t.Errorf("malformed message = %q", events[0].Message)
	}
	if !strings.HasSuffix(events[1].Message, "…") {
		t.Errorf("long line not marked as truncated: %q", events[1].Message[len(events[1].Message)-10:])
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
	if got := types(events); len(got) != 2 || got[0] != agent.EventSessionStarted || got[1] != agent.EventTokenUsage {
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
	usage := ofType(events, agent.EventTokenUsage)
	if len(usage) != 3 {
		t.Fatalf("token_usage events = %d, want 3 (msg_1 once, msg_2, the result): %v", len(usage), types(events))
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
	if got := types(events); len(got) != 2 || got[0] != agent.EventNotification || got[1] != agent.EventNotification {
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
// `go test -run TestContract_Capture -args -update`; the fake model's script for each
// is in contract_test.go, so the expected figures here are the ones it reported.
func TestTranslate_CapturedToolCall(t *testing.T) {
	events, tr := run(t, readLines(t, "testdata/two_blocks_tool_call.jsonl")...)
	want := agent.Usage{Input: 300, Output: 50, Total: 350, CacheRead: 7}
	if tr.usage() != want {
		t.Errorf("usage = %+v, want %+v (what the fake model reported)", tr.usage(), want)
	}
	// One event for the first message (two lines, one per block), one for the
	// second, one raising the turn to the result's totals.
	if n := len(ofType(events, agent.EventTokenUsage)); n != 3 {
		t.Errorf("token_usage events = %d, want 3: %v", n, types(events))
	}
	tools := ofType(events, agent.EventToolResult)
	if len(tools) != 1 || tools[0].ToolName != "Bash" || tools[0].ToolError {
		t.Errorf("tool_result events = %+v", tools)
	}
	if tr.model != "claude-sonnet-4-5" || tr.cost() <= 0 {
		t.Errorf("model %q cost %v", tr.model, tr.cost())
	}
}

func TestTranslate_CapturedToolError(t *testing.T) {
	events, _ := run(t, readLines(t, "testdata/tool_error.jsonl")...)
	tools := ofType(events, agent.EventToolResult)
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
	for _, e := range ofType(events, agent.EventNotification) {
		retry = retry || strings.Contains(e.Message, "status 429")
	}
	if !retry {
		t.Errorf("no retry notification: %+v", events)
	}
	if tr.usage() != (agent.Usage{}) {
		t.Errorf("usage = %+v, want none for a rejected request", tr.usage())
	}
}
