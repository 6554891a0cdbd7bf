package opencode

import (
	"strings"
	"testing"

	"sortie/internal/agent"
	"sortie/internal/agent/agenttest"
)

func TestTranslator_UnreadableLinesAreMalformedAndUnknownTypesOther(t *testing.T) {
	events, tr := replay(
		[]byte(`not json`),
		[]byte(`{"no":"type"}`),
		[]byte(`{"type":"something_new","sessionID":"ses_1"}`),
		[]byte(`{"type":"tool_use","sessionID":"ses_1"}`),
	)
	got := types(events)
	want := []agent.EventType{agent.EventMalformed, agent.EventMalformed, agent.EventSessionStarted, agent.EventOtherMessage, agent.EventOtherMessage}
	if strings.Join(got, ",") != strings.Join(typeNames(want), ",") {
		t.Errorf("events = %v, want %v", got, want)
	}
	if tr.events != 2 || tr.lines != 4 {
		t.Errorf("events %d of %d lines, want 2 of 4", tr.events, tr.lines)
	}
}

func TestTranslator_UsageOnlyGrows(t *testing.T) {
	var events []agent.Event
	tr := newTranslator(func(e agent.Event) { events = append(events, e) }, agent.Usage{Input: 1000, Output: 100, Total: 1100}, 0.5, "m")
	tr.line([]byte(`{"type":"step_finish","sessionID":"ses_1","part":{"reason":"tool-calls","tokens":{"input":-50,"output":-5,"reasoning":3,"cache":{"read":-1}},"cost":-1}}`))
	tr.line([]byte(`{"type":"step_finish","sessionID":"ses_1","part":{"reason":"stop","tokens":{"input":10,"output":2,"reasoning":1,"cache":{"read":4,"write":9}},"cost":0.25}}`))
	usage := agenttest.OfType(events, agent.EventTokenUsage)
	want := []agent.Usage{{Input: 1000, Output: 103, Total: 1103}, {Input: 1010, Output: 106, Total: 1116, CacheRead: 4}}
	if len(usage) != 2 || usage[0].Usage != want[0] || usage[1].Usage != want[1] {
		t.Fatalf("token_usage = %+v, want %+v", usage, want)
	}
	if usage[0].CostUSD != 0.5 || usage[1].CostUSD != 0.75 || usage[1].Model != "m" {
		t.Errorf("costs %v, %v (model %q), want 0.5 then 0.75 for m", usage[0].CostUSD, usage[1].CostUSD, usage[1].Model)
	}
}

func TestTranslator_ToolResults(t *testing.T) {
	events, tr := replay(
		[]byte(`{"type":"tool_use","sessionID":"s","part":{"tool":"bash","state":{"status":"completed","metadata":{"exit":0},"time":{"start":1000,"end":1250}}}}`),
		[]byte(`{"type":"tool_use","sessionID":"s","part":{"tool":"bash","state":{"status":"completed","metadata":{"exit":2},"time":{"start":1000,"end":1001}}}}`),
		[]byte(`{"type":"tool_use","sessionID":"s","part":{"tool":"edit","state":{"status":"error","error":"oldString not found","time":{"start":5,"end":3}}}}`),
		[]byte(`{"type":"tool_use","sessionID":"s","part":{"state":{"status":"error","error":"The user rejected permission to use this specific tool call."}}}`),
	)
	tools := agenttest.OfType(events, agent.EventToolResult)
	want := []struct {
		name string
		err  bool
		ms   int64
		msg  string
	}{{"bash", false, 250, ""}, {"bash", true, 1, "exit status 2"}, {"edit", true, 0, "oldString not found"}, {"unknown", true, 0, "rejected permission"}}
	if len(tools) != len(want) {
		t.Fatalf("tool_result events = %v", describe(tools))
	}
	for i, w := range want {
		e := tools[i]
		if e.ToolName != w.name || e.ToolError != w.err || e.ToolDurationMS != w.ms || !strings.Contains(e.Message, w.msg) {
			t.Errorf("tool_result %d = %+v, want %+v", i, e, w)
		}
	}
	if tr.rejected != "unknown" {
		t.Errorf("rejected = %q", tr.rejected)
	}
}

func TestTranslator_TextAndErrors(t *testing.T) {
	events, tr := replay(
		[]byte(`{"type":"text","sessionID":"s","part":{"type":"text","text":"  first  "}}`),
		[]byte(`{"type":"text","sessionID":"s","part":{"type":"text","text":"   "}}`),
		[]byte(`{"type":"reasoning","sessionID":"s","part":{"text":"hmm"}}`),
		[]byte(`{"type":"error","sessionID":"s","error":{"name":"UnknownError","data":{"message":"boom"}}}`),
		[]byte(`{"type":"error","sessionID":"s"}`),
	)
	notes := agenttest.OfType(events, agent.EventNotification)
	got := make([]string, len(notes))
	for i, n := range notes {
		got[i] = n.Message
	}
	want := "first|thinking|error: UnknownError: boom|error: the CLI reported an error"
	if strings.Join(got, "|") != want {
		t.Errorf("notifications = %q, want %q", got, want)
	}
	if tr.lastText != "first" || len(tr.errors) != 2 {
		t.Errorf("last text %q, errors %q", tr.lastText, tr.errors)
	}
}

func types(events []agent.Event) []string {
	out := make([]string, len(events))
	for i, e := range events {
		out[i] = string(e.Type)
	}
	return out
}

func typeNames(ts []agent.EventType) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = string(t)
	}
	return out
}
