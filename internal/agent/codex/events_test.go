package codex

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sortie/internal/agent"
	"sortie/internal/agent/agenttest"
)

// replayed is what the translator made of a captured transcript.
type replayed struct {
	events  []agent.Event
	replies []*message
	ends    []turnEnd
	tr      *translator
}

// replay feeds a transcript (testdata/*.jsonl, captured from the pinned CLI by the
// contract tests with -update) to one translator the way the driver does: answers to
// our requests name the thread and the turn; everything else goes to the translator.
func replay(t *testing.T, file string) replayed {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	var r replayed
	clock := time.Unix(1700000000, 0)
	r.tr = newTranslator(func() time.Time { return clock }, func(e agent.Event) { r.events = append(r.events, e) }, agent.Usage{}, nil)
	for _, l := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		m, kind, err := parseMessage(l)
		if err == nil && kind == kindResponse {
			var res struct {
				Thread struct{ ID string } `json:"thread"`
				Turn   struct{ ID string } `json:"turn"`
			}
			json.Unmarshal(m.Result, &res)
			if res.Thread.ID != "" {
				r.tr.threadID = res.Thread.ID
			}
			if res.Turn.ID != "" {
				r.tr.end = nil
				r.tr.setTurn(res.Turn.ID)
			}
			continue
		}
		if reply := r.tr.line(l); reply != nil {
			r.replies = append(r.replies, reply)
		}
		if r.tr.end != nil && (len(r.ends) == 0 || &r.ends[len(r.ends)-1] != r.tr.end) {
			r.ends = append(r.ends, *r.tr.end)
			r.tr.end = nil
			r.tr.turnID = "" // the driver's next turn knows no turn id until turn/start answers
		}
	}
	return r
}

func (r replayed) of(typ agent.EventType) []agent.Event { return agenttest.OfType(r.events, typ) }

func TestTranscript_TwoTurnsCountEachUpdateOnce(t *testing.T) {
	r := replay(t, "two_turns.jsonl")
	if len(r.ends) != 2 || r.ends[0].Status != "completed" || r.ends[1].Status != "completed" {
		t.Fatalf("turn ends = %+v, want two completed", r.ends)
	}
	want := agent.Usage{Input: 270, Output: 20, Total: 290, CacheRead: 100}
	if r.tr.usage != want {
		t.Errorf("usage = %+v, want %+v", r.tr.usage, want)
	}
	if u := r.of(agent.EventTokenUsage); len(u) != 2 {
		t.Errorf("token_usage events = %d, want one per model response (2)", len(u))
	}
	var texts []string
	for _, e := range r.of(agent.EventNotification) {
		texts = append(texts, e.Message)
	}
	if !strings.Contains(strings.Join(texts, "\n"), "The word was PAPAYA.") {
		t.Errorf("notifications %q lack the agent's answer", texts)
	}
	if n := len(r.of(agent.EventMalformed)); n != 0 {
		t.Errorf("%d malformed events in a clean transcript", n)
	}
}

func TestTranscript_ShellCommandIsAToolResult(t *testing.T) {
	r := replay(t, "shell_tool.jsonl")
	tools := r.of(agent.EventToolResult)
	if len(tools) != 1 || tools[0].ToolName != "exec_command" || tools[0].ToolError || !strings.Contains(tools[0].Message, "printf sortie > out.txt") {
		t.Fatalf("tool_result = %+v, want one successful exec_command", tools)
	}
	if want := (agent.Usage{Input: 300, Output: 50, Total: 350, CacheRead: 10}); r.tr.usage != want {
		t.Errorf("usage = %+v, want %+v", r.tr.usage, want)
	}
}

func TestTranscript_MCPToolCall(t *testing.T) {
	r := replay(t, "mcp_tool.jsonl")
	tools := r.of(agent.EventToolResult)
	if len(tools) != 1 || tools[0].ToolName != "mcp__sortie-tools__ping" || tools[0].ToolError {
		t.Fatalf("tool_result = %+v, want one successful mcp__sortie-tools__ping", tools)
	}
}

func TestTranscript_ApprovalIsAnsweredAccept(t *testing.T) {
	r := replay(t, "approval.jsonl")
	if ap := r.of(agent.EventApprovalAutoApproved); len(ap) != 1 || !strings.Contains(ap[0].Message, "printf yes > approved.txt") {
		t.Fatalf("approval_auto_approved = %+v", ap)
	}
	if len(r.replies) != 1 || string(r.replies[0].Result) != `{"decision":"accept"}` {
		t.Fatalf("replies = %+v, want one accept", r.replies)
	}
	if len(r.ends) != 1 || r.ends[0].Status != "completed" {
		t.Errorf("turn ends = %+v", r.ends)
	}
}

func TestTranscript_UserInputIsDeclinedAndNeedsInput(t *testing.T) {
	r := replay(t, "user_input.jsonl")
	if r.tr.input == nil || r.tr.input.Method != "item/tool/requestUserInput" || !strings.Contains(r.tr.input.Message, "Which branch?") {
		t.Fatalf("input request = %+v", r.tr.input)
	}
	if len(r.replies) != 1 || string(r.replies[0].Result) != `{"answers":{}}` || string(r.replies[0].ID) != "0" {
		t.Fatalf("replies = %+v, want empty answers to request 0", r.replies)
	}
	// The adapter interrupted the turn; the next one completed.
	if len(r.ends) != 2 || r.ends[0].Status != "interrupted" || r.ends[1].Status != "completed" {
		t.Errorf("turn ends = %+v, want interrupted then completed", r.ends)
	}
}

func TestTranscript_ElicitationIsCancelledAndNeedsInput(t *testing.T) {
	r := replay(t, "elicitation.jsonl")
	if r.tr.input == nil || r.tr.input.Method != "mcpServer/elicitation/request" || !strings.Contains(r.tr.input.Message, "Which branch? (deploy)") {
		t.Fatalf("input request = %+v", r.tr.input)
	}
	if len(r.replies) != 1 || !strings.Contains(string(r.replies[0].Result), `"action":"cancel"`) {
		t.Fatalf("replies = %+v, want a cancel", r.replies)
	}
}

func TestTranscript_ModelErrorFailsTheTurn(t *testing.T) {
	r := replay(t, "model_error_500.jsonl")
	if len(r.ends) != 1 || r.ends[0].Status != "failed" || !strings.Contains(r.ends[0].Message, "internalServerError") {
		t.Fatalf("turn ends = %+v, want failed with codex's classification", r.ends)
	}
	if r.tr.lastError == "" {
		t.Error("the final error notification was not kept")
	}
}

func TestTranscript_ResumeRestatesTotalsWithoutCounting(t *testing.T) {
	// One translator over both app-servers, as one session would see them: the
	// restated 110 after the resume is not counted again.
	r := replay(t, "resume.jsonl")
	if want := (agent.Usage{Input: 300, Output: 30, Total: 330}); r.tr.usage != want {
		t.Errorf("usage = %+v, want %+v", r.tr.usage, want)
	}
}

// feed is a translator fed synthetic lines, for the cases no transcript shows.
func feed(t *testing.T, tr *translator, lines ...string) []*message {
	t.Helper()
	var replies []*message
	for _, l := range lines {
		if reply := tr.line([]byte(l)); reply != nil {
			replies = append(replies, reply)
		}
	}
	return replies
}

func newTestTranslator(events *[]agent.Event) *translator {
	tr := newTranslator(func() time.Time { return time.Unix(0, 0) }, func(e agent.Event) { *events = append(*events, e) }, agent.Usage{}, nil)
	tr.threadID, tr.turnID = "th", "tu"
	return tr
}

func usageLine(turn string, in, out, total int64) string {
	b, _ := json.Marshal(map[string]any{"method": "thread/tokenUsage/updated", "params": map[string]any{
		"threadId": "th", "turnId": turn, "tokenUsage": map[string]any{"total": map[string]any{
			"inputTokens": in, "outputTokens": out, "totalTokens": total, "cachedInputTokens": 0}}}})
	return string(b)
}

func subUsageLine(thread, turn string, in, out, total int64) string {
	return strings.Replace(usageLine(turn, in, out, total), `"threadId":"th"`, `"threadId":"`+thread+`"`, 1)
}

// TestTranslate_Usage plays short transcripts of thread/tokenUsage/updated to one turn's
// translator: before lines arrive before turn/start answers with the turn "tu", after
// lines after it; marks are the session's baselines from its earlier turns.
func TestTranslate_Usage(t *testing.T) {
	cases := []struct {
		name          string
		marks         map[string]tokenTotals
		before, after []string
		want          agent.Usage
		n             int // token_usage events
	}{
		{"absolute totals", nil, nil, []string{usageLine("tu", 10, 1, 11), usageLine("tu", 30, 4, 34)}, agent.Usage{Input: 30, Output: 4, Total: 34}, 2},
		{"a repeated total is no new usage", nil, nil, []string{usageLine("tu", 10, 1, 11), usageLine("tu", 10, 1, 11)}, agent.Usage{Input: 10, Output: 1, Total: 11}, 1},
		{"another turn's total only sets the mark", nil, nil, []string{usageLine("old", 100, 10, 110), usageLine("tu", 150, 12, 162)}, agent.Usage{Input: 50, Output: 2, Total: 52}, 1},
		{"a counter that started over counts whole", nil, nil, []string{usageLine("tu", 100, 10, 110), usageLine("tu", 5, 1, 6)}, agent.Usage{Input: 105, Output: 11, Total: 116}, 2},
		{"negative counts are malformed", nil, nil, []string{usageLine("tu", -5, 1, 1)}, agent.Usage{}, 0},
		{"a sub-agent's growth counts, once", nil, nil, []string{
			usageLine("tu", 10, 1, 11), subUsageLine("sub", "st", 5, 1, 6), subUsageLine("sub", "st", 8, 2, 10), usageLine("tu", 20, 2, 22)},
			agent.Usage{Input: 28, Output: 4, Total: 32}, 4},
		{"a sub-agent of an earlier turn counts on from its mark", map[string]tokenTotals{"sub": {Input: 8, Output: 2, Total: 10}},
			nil, []string{subUsageLine("sub", "st", 9, 2, 11)}, agent.Usage{Input: 1, Total: 1}, 1},
		{"the running turn's update before turn/start answered counts", map[string]tokenTotals{"th": {}},
			[]string{usageLine("tu", 10, 1, 11)}, []string{usageLine("tu", 30, 4, 34)}, agent.Usage{Input: 30, Output: 4, Total: 34}, 2},
		{"a resumed thread's restatement before turn/start answered does not count", nil,
			[]string{usageLine("old", 100, 10, 110)}, []string{usageLine("tu", 150, 12, 162)}, agent.Usage{Input: 50, Output: 2, Total: 52}, 1},
		{"a restatement below the session's mark (a re-spawn) counts nothing, and growth counts from it",
			map[string]tokenTotals{"th": {Input: 500, Output: 50, Total: 550}},
			[]string{usageLine("old", 400, 40, 440)}, []string{usageLine("tu", 450, 45, 495)}, agent.Usage{Input: 50, Output: 5, Total: 55}, 1},
		{"a restatement equal to the session's mark counts nothing", map[string]tokenTotals{"th": {Input: 100, Output: 10, Total: 110}},
			[]string{usageLine("old", 100, 10, 110)}, []string{usageLine("tu", 120, 11, 131)}, agent.Usage{Input: 20, Output: 1, Total: 21}, 1},
		{"late growth of an earlier turn of the session counts", map[string]tokenTotals{"th": {Input: 100, Output: 10, Total: 110}},
			nil, []string{usageLine("old", 120, 10, 130)}, agent.Usage{Input: 20, Total: 20}, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var events []agent.Event
			tr := newTestTranslator(&events)
			for k, v := range c.marks {
				tr.marks[k] = v
			}
			tr.turnID = ""
			feed(t, tr, c.before...)
			tr.setTurn("tu")
			feed(t, tr, c.after...)
			if tr.usage != c.want || len(agenttest.OfType(events, agent.EventTokenUsage)) != c.n {
				t.Errorf("usage = %+v with %d events, want %+v with %d", tr.usage, len(agenttest.OfType(events, agent.EventTokenUsage)), c.want, c.n)
			}
		})
	}
}

func TestTranslate_ServerRequests(t *testing.T) {
	cases := []struct {
		name   string
		line   string
		result string // the reply's result, "" for an error reply
		event  agent.EventType
		input  bool
	}{
		{"command approval", `{"id":7,"method":"item/commandExecution/requestApproval","params":{"command":"make test"}}`, `{"decision":"accept"}`, agent.EventApprovalAutoApproved, false},
		{"file change approval", `{"id":7,"method":"item/fileChange/requestApproval","params":{"reason":"edit"}}`, `{"decision":"accept"}`, agent.EventApprovalAutoApproved, false},
		{"legacy exec approval", `{"id":"a","method":"execCommandApproval","params":{"command":["ls","-l"]}}`, `{"decision":"approved"}`, agent.EventApprovalAutoApproved, false},
		{"legacy patch approval", `{"id":"a","method":"applyPatchApproval","params":{}}`, `{"decision":"approved"}`, agent.EventApprovalAutoApproved, false},
		{"MCP tool approval elicitation", `{"id":1,"method":"mcpServer/elicitation/request","params":{"serverName":"x","mode":"form","message":"Allow?","_meta":{"codex_approval_kind":"mcp_tool_call_approval"}}}`, `{"_meta":null,"action":"accept","content":{}}`, agent.EventApprovalAutoApproved, false},
		{"user input", `{"id":2,"method":"item/tool/requestUserInput","params":{"questions":[{"question":"Why?"}]}}`, `{"answers":{}}`, "", true},
		{"elicitation", `{"id":3,"method":"mcpServer/elicitation/request","params":{"serverName":"x","mode":"url","message":"Log in","url":"u","elicitationId":"e"}}`, `{"_meta":null,"action":"cancel","content":null}`, "", true},
		{"dynamic tool", `{"id":4,"method":"item/tool/call","params":{"tool":"linear_graphql","arguments":{}}}`, `{"contentItems":[{"text":"sortie: dynamic tool linear_graphql is not supported; use the sortie-tools MCP server","type":"inputText"}],"success":false}`, agent.EventUnsupportedToolCall, false},
		{"anything else", `{"id":5,"method":"account/chatgptAuthTokens/refresh","params":{}}`, "", agent.EventOtherMessage, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var events []agent.Event
			tr := newTestTranslator(&events)
			replies := feed(t, tr, c.line)
			if len(replies) != 1 {
				t.Fatalf("replies = %d, want 1: no request may go unanswered", len(replies))
			}
			var req message
			json.Unmarshal([]byte(c.line), &req)
			if string(replies[0].ID) != string(req.ID) {
				t.Errorf("reply id %s, want %s", replies[0].ID, req.ID)
			}
			if c.result == "" {
				if replies[0].Error == nil {
					t.Errorf("reply = %+v, want a JSON-RPC error", replies[0])
				}
			} else if string(replies[0].Result) != c.result {
				t.Errorf("result = %s, want %s", replies[0].Result, c.result)
			}
			if c.event != "" && len(agenttest.OfType(events, c.event)) != 1 {
				t.Errorf("events = %v, want one %s", agenttest.Types(events), c.event)
			}
			if (tr.input != nil) != c.input {
				t.Errorf("input request = %+v, want %v", tr.input, c.input)
			}
		})
	}
}

func TestTranslate_ToolResults(t *testing.T) {
	var events []agent.Event
	tr := newTestTranslator(&events)
	feed(t, tr,
		`{"method":"item/completed","params":{"item":{"type":"commandExecution","id":"c1","command":"false","status":"failed","exitCode":1,"durationMs":12}}}`,
		`{"method":"item/completed","params":{"item":{"type":"mcpToolCall","id":"m1","server":"s","tool":"t","status":"completed","error":null,"durationMs":3}}}`,
		`{"method":"item/completed","params":{"item":{"type":"fileChange","id":"f1","changes":[{"path":"a.go"}],"status":"completed"}}}`,
	)
	tools := agenttest.OfType(events, agent.EventToolResult)
	if len(tools) != 3 {
		t.Fatalf("tool_result = %+v", tools)
	}
	if !tools[0].ToolError || tools[0].ToolDurationMS != 12 || !strings.Contains(tools[0].Message, "exit 1") {
		t.Errorf("failed command = %+v", tools[0])
	}
	if tools[1].ToolName != "mcp__s__t" || tools[1].ToolError {
		t.Errorf("MCP call = %+v", tools[1])
	}
	if tools[2].ToolName != "apply_patch" || tools[2].Message != "a.go" {
		t.Errorf("file change = %+v", tools[2])
	}
}

func TestTranslate_MalformedLines(t *testing.T) {
	for _, l := range []string{`not json`, `[1,2]`, `{"foo":1}`, `{"method":"item/completed","params":"x"}`} {
		var events []agent.Event
		tr := newTestTranslator(&events)
		feed(t, tr, l)
		if len(agenttest.OfType(events, agent.EventMalformed)) != 1 {
			t.Errorf("%s: events %v, want one malformed", l, agenttest.Types(events))
		}
	}
}
