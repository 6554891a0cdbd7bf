package agenttest

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"sortie/internal/agent"
	"sortie/internal/testkit/fakemodel"
)

// post sends body to url as a JSON POST, in the headers the Anthropic clients send
// (ignored by the Responses server), and decodes the JSON answer.
func post(t *testing.T, url, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Api-Key", "sk-ant-test")
	req.Header.Set("Anthropic-Version", "2023-06-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("POST %s answered %d with a body that is not JSON: %v", url, resp.StatusCode, err)
	}
	return resp.StatusCode, out
}

// served is what the first three scripted responses (Reply, Shell, CallMCP) report, and
// nothing else: the Fail after them reports nothing and the Reply after it is never
// served.
var served = agent.Usage{Input: 1000 + 1100 + 1200, Output: 20 + 23 + 26, Total: 3300 + 69}

func TestAnthropic_ScriptAnswersAndAccounting(t *testing.T) {
	m := NewAnthropic(t, AnthropicTools{
		Shell:   "Bash",
		MCPTool: func(server, tool string) string { return "mcp__" + server + "__" + tool },
		Retries: 1,
	})
	m.Reply("hello there")
	m.Shell("ls -la")
	m.CallMCP("sortie-tools", "sortie_status", nil)
	m.Fail(http.StatusBadRequest, "scripted failure")
	m.Reply("never served")
	url := m.Server.URL + "/v1/messages"
	if got := m.Reported(); got != (agent.Usage{}) {
		t.Fatalf("Reported before any request = %+v, want zero: scripted responses are not served ones", got)
	}

	// Reply: text, end_turn, its own usage.
	status, body := post(t, url, `{"model":"m","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`)
	content, _ := body["content"].([]any)
	if status != http.StatusOK || len(content) != 1 || content[0].(map[string]any)["text"] != "hello there" || body["stop_reason"] != "end_turn" {
		t.Fatalf("Reply answered %d %v", status, body)
	}
	if u := body["usage"].(map[string]any); u["input_tokens"] != 1000.0 || u["output_tokens"] != 20.0 {
		t.Errorf("Reply usage = %v, want scriptedUsage(0)", u)
	}

	// Shell: one tool_use of the shell tool with the command.
	status, body = post(t, url, `{"model":"m","max_tokens":64,"messages":[{"role":"user","content":"list"}]}`)
	content, _ = body["content"].([]any)
	if status != http.StatusOK || len(content) != 1 || body["stop_reason"] != "tool_use" {
		t.Fatalf("Shell answered %d %v", status, body)
	}
	use := content[0].(map[string]any)
	in, _ := use["input"].(map[string]any)
	if use["type"] != "tool_use" || use["name"] != "Bash" || in["command"] != "ls -la" || in["description"] != "agenttest" {
		t.Errorf("Shell tool use = %v", use)
	}
	id, _ := use["id"].(string)

	// CallMCP: the tool under the CLI's name, empty input for nil args. The request
	// carries the shell call's result.
	status, body = post(t, url, `{"model":"m","max_tokens":64,"messages":[{"role":"user","content":"list"},
		{"role":"assistant","content":[{"type":"tool_use","id":"`+id+`","name":"Bash","input":{"command":"ls -la"}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"`+id+`","content":"a.txt","is_error":true}]}]}`)
	content, _ = body["content"].([]any)
	if status != http.StatusOK || len(content) != 1 {
		t.Fatalf("CallMCP answered %d %v", status, body)
	}
	use = content[0].(map[string]any)
	if use["name"] != "mcp__sortie-tools__sortie_status" {
		t.Errorf("CallMCP tool use = %v", use)
	}
	if in, ok := use["input"].(map[string]any); !ok || len(in) != 0 {
		t.Errorf("CallMCP input = %v, want {}", use["input"])
	}

	// Fail: the status and message, final, for Retries+1 requests.
	for i := range 2 {
		status, body = post(t, url, `{"model":"m","max_tokens":64,"messages":[{"role":"user","content":"again"}]}`)
		e, _ := body["error"].(map[string]any)
		if status != http.StatusBadRequest || e["message"] != "scripted failure" {
			t.Fatalf("Fail, request %d, answered %d %v", i, status, body)
		}
	}

	got := m.Received()
	if len(got) != 5 {
		t.Fatalf("Received %d requests, want 5", len(got))
	}
	if len(got[0].Messages) != 1 || got[0].Transcript() != "user: hi\n" || !got[0].UserText("hi") {
		t.Errorf("first request = %+v", got[0])
	}
	third := got[2]
	if len(third.Messages) != 3 || third.Messages[1] != (Message{Role: "assistant"}) ||
		len(third.ToolResults) != 1 || third.ToolResults[0] != (ToolResult{Text: "a.txt", IsError: true}) {
		t.Errorf("third request = %+v, want three messages (tool blocks not text) and the shell result", third)
	}
	if got := m.Reported(); got != served {
		t.Errorf("Reported = %+v, want %+v", got, served)
	}
	if m.Server.Remaining() != 1 {
		t.Errorf("script left %d, want the unserved Reply", m.Server.Remaining())
	}
}

func TestAnthropic_ReplyAddsFinishAndDefaultsCount(t *testing.T) {
	m := NewAnthropic(t, AnthropicTools{
		Shell:      "bash",
		ShellInput: func(c string) map[string]any { return map[string]any{"cmd": c} },
		MCPTool:    func(server, tool string) string { return server + "-" + tool },
	})
	m.Reply("done")
	url := m.Server.URL + "/v1/messages"
	post(t, url, `{"model":"m","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`)
	// Past the script the server answers with its default, which reports DefaultUsage.
	post(t, url, `{"model":"m","max_tokens":64,"messages":[{"role":"user","content":"more"}]}`)
	want := agent.Usage{Input: 1000 + 10, Output: 20 + 5, Total: 1035}
	if got := m.Reported(); got != want {
		t.Errorf("Reported = %+v, want the scripted reply and one default: %+v", got, want)
	}

	f := NewAnthropic(t, AnthropicTools{
		Shell:      "bash",
		ShellInput: func(c string) map[string]any { return map[string]any{"cmd": c} },
		MCPTool:    func(server, tool string) string { return server + "-" + tool },
		Finish: func(text string) fakemodel.ToolUse {
			return fakemodel.ToolUse{Name: "task_complete", Input: map[string]any{"summary": text}}
		},
	})
	f.Reply("all done")
	f.Shell("pwd")
	url = f.Server.URL + "/v1/messages"
	_, body := post(t, url, `{"model":"m","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`)
	content, _ := body["content"].([]any)
	if len(content) != 2 || content[0].(map[string]any)["text"] != "all done" || content[1].(map[string]any)["name"] != "task_complete" {
		t.Errorf("Reply with Finish = %v, want the text then task_complete", body)
	}
	_, body = post(t, url, `{"model":"m","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`)
	content, _ = body["content"].([]any)
	if len(content) != 1 || content[0].(map[string]any)["name"] != "bash" ||
		content[0].(map[string]any)["input"].(map[string]any)["cmd"] != "pwd" {
		t.Errorf("Shell with ShellInput = %v", body)
	}
}

func TestResponses_ScriptAnswersAndAccounting(t *testing.T) {
	m := NewResponses(t, ResponsesTools{
		Shell: "exec_command",
		MCPTool: func(server, tool string) (string, string) {
			return "mcp__" + strings.ReplaceAll(server, "-", "_"), tool
		},
		Retries: 1,
	})
	m.Reply("hello there")
	m.Shell("ls -la")
	m.CallMCP("sortie-tools", "sortie_status", map[string]any{"verbose": true})
	m.Fail(http.StatusBadRequest, "scripted failure")
	m.Reply("never served")
	url := m.Server.URL + "/responses"
	if got := m.Reported(); got != (agent.Usage{}) {
		t.Fatalf("Reported before any request = %+v, want zero", got)
	}

	item := func(body map[string]any) map[string]any {
		t.Helper()
		out, _ := body["output"].([]any)
		if len(out) != 1 {
			t.Fatalf("output = %v, want one item", body["output"])
		}
		return out[0].(map[string]any)
	}

	status, body := post(t, url, `{"model":"m","input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}]}`)
	msg := item(body)
	parts, _ := msg["content"].([]any)
	if status != http.StatusOK || msg["type"] != "message" || len(parts) != 1 || parts[0].(map[string]any)["text"] != "hello there" {
		t.Fatalf("Reply answered %d %v", status, body)
	}
	if u := body["usage"].(map[string]any); u["input_tokens"] != 1000.0 || u["output_tokens"] != 20.0 {
		t.Errorf("Reply usage = %v, want scriptedUsage(0)", u)
	}

	status, body = post(t, url, `{"model":"m","input":"list"}`)
	call := item(body)
	if status != http.StatusOK || call["type"] != "function_call" || call["name"] != "exec_command" || call["arguments"] != `{"cmd":"ls -la"}` {
		t.Fatalf("Shell answered %d %v", status, body)
	}
	callID, _ := call["call_id"].(string)

	status, body = post(t, url, `{"model":"m","input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"list"}]},
		{"type":"function_call","call_id":"`+callID+`","name":"exec_command","arguments":"{\"cmd\":\"ls -la\"}"},
		{"type":"function_call_output","call_id":"`+callID+`","output":"a.txt"}]}`)
	call = item(body)
	if status != http.StatusOK || call["namespace"] != "mcp__sortie_tools" || call["name"] != "sortie_status" || call["arguments"] != `{"verbose":true}` {
		t.Fatalf("CallMCP answered %d %v", status, body)
	}

	for i := range 2 {
		status, body = post(t, url, `{"model":"m","input":"again"}`)
		e, _ := body["error"].(map[string]any)
		if status != http.StatusBadRequest || e["message"] != "scripted failure" {
			t.Fatalf("Fail, request %d, answered %d %v", i, status, body)
		}
	}

	got := m.Received()
	if len(got) != 5 {
		t.Fatalf("Received %d requests, want 5", len(got))
	}
	if got[0].Transcript() != "user: hi\n" {
		t.Errorf("first request = %+v", got[0])
	}
	third := got[2]
	if len(third.Messages) != 1 || third.Messages[0] != (Message{Role: "user", Text: "list"}) ||
		len(third.ToolResults) != 1 || third.ToolResults[0] != (ToolResult{Text: "a.txt"}) {
		t.Errorf("third request = %+v, want the user message and the shell output", third)
	}
	if got := m.Reported(); got != served {
		t.Errorf("Reported = %+v, want %+v", got, served)
	}
	if m.Server.Remaining() != 1 {
		t.Errorf("script left %d, want the unserved Reply", m.Server.Remaining())
	}
}
