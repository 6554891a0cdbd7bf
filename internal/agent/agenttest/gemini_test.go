package agenttest

import (
	"net/http"
	"testing"
)

var _ Model = (*Gemini)(nil)

func TestGemini_ScriptAnswersAndAccounting(t *testing.T) {
	m, url := NewGeminiModel(t)
	if url != m.Server.URL {
		t.Fatalf("URL %q, server %q", url, m.Server.URL)
	}
	m.Retries = 1
	m.Reply("hello there")
	m.Shell("ls -la")
	m.CallMCP("sortie-tools", "sortie_status", map[string]any{"verbose": true})
	m.Fail(http.StatusBadRequest, "scripted failure")
	m.Reply("never served")
	if got := m.Reported(); got.Total != 0 {
		t.Fatalf("Reported before any request = %+v, want zero", got)
	}
	// Non-streaming requests marked for the script, so that post can decode them.
	endpoint := url + "/v1beta/models/gemini-2.5-pro:generateContent?fakemodel=script"
	part := func(body map[string]any) map[string]any {
		t.Helper()
		cands, _ := body["candidates"].([]any)
		if len(cands) != 1 {
			t.Fatalf("candidates = %v", body)
		}
		parts := cands[0].(map[string]any)["content"].(map[string]any)["parts"].([]any)
		if len(parts) != 1 {
			t.Fatalf("parts = %v, want one", parts)
		}
		return parts[0].(map[string]any)
	}

	status, body := post(t, endpoint, `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`)
	if p := part(body); status != http.StatusOK || p["text"] != "hello there" {
		t.Fatalf("Reply answered %d %v", status, body)
	}
	if u := body["usageMetadata"].(map[string]any); u["promptTokenCount"] != 1000.0 || u["candidatesTokenCount"] != 20.0 {
		t.Errorf("Reply usage = %v, want scriptedUsage(0)", u)
	}

	status, body = post(t, endpoint, `{"contents":[{"role":"user","parts":[{"text":"list"}]}]}`)
	fc, _ := part(body)["functionCall"].(map[string]any)
	if status != http.StatusOK || fc["name"] != "run_shell_command" || fc["args"].(map[string]any)["command"] != "ls -la" {
		t.Fatalf("Shell answered %d %v", status, body)
	}

	status, body = post(t, endpoint, `{"contents":[{"role":"user","parts":[{"text":"list"}]},
		{"role":"model","parts":[{"functionCall":{"name":"run_shell_command","args":{"command":"ls -la"}}}]},
		{"role":"user","parts":[{"functionResponse":{"name":"run_shell_command","response":{"output":"a.txt"}}}]}]}`)
	fc, _ = part(body)["functionCall"].(map[string]any)
	if status != http.StatusOK || fc["name"] != "mcp_sortie-tools_sortie_status" || fc["args"].(map[string]any)["verbose"] != true {
		t.Fatalf("CallMCP answered %d %v", status, body)
	}

	for i := range 2 {
		status, body = post(t, endpoint, `{"contents":[{"role":"user","parts":[{"text":"again"}]}]}`)
		e, _ := body["error"].(map[string]any)
		if status != http.StatusBadRequest || e["message"] != "scripted failure" || e["status"] != "INVALID_ARGUMENT" {
			t.Fatalf("Fail, request %d, answered %d %v", i, status, body)
		}
	}
	// The CLI's resume bug: the function response twice. Refused; takes no reply.
	status, _ = post(t, endpoint, `{"contents":[{"role":"user","parts":[{"text":"list"}]},
		{"role":"model","parts":[{"functionCall":{"name":"run_shell_command","args":{"command":"ls -la"}}}]},
		{"role":"user","parts":[{"functionResponse":{"name":"run_shell_command","response":{"output":"a.txt"}}},
			{"functionResponse":{"name":"run_shell_command","response":{"output":"a.txt"}}}]}]}`)
	if status != http.StatusBadRequest || len(m.Server.Rejected()) != 1 {
		t.Fatalf("duplicated function responses answered %d", status)
	}

	// A helper's request is neither received nor reported.
	post(t, url+"/v1beta/models/gemini-2.5-flash-lite:generateContent", `{"contents":[{"role":"user","parts":[{"text":"route"}]}]}`)

	got := m.Received()
	if len(got) != 6 {
		t.Fatalf("Received %d requests, want 6", len(got))
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
