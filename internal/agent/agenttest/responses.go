package agenttest

import (
	"net/http"
	"testing"
	"time"

	"sortie/internal/agent"

	"sortie/internal/testkit/fakemodel"
)

// ResponsesTools says how a CLI that speaks the OpenAI Responses API names and calls
// its tools.
type ResponsesTools struct {
	// Shell is the function of the CLI's shell tool ("exec_command" for codex).
	Shell string
	// ShellArguments builds its arguments for a command; nil means {"cmd": command}.
	ShellArguments func(command string) map[string]any
	// MCPTool is the namespace and function under which the CLI offers tool of MCP
	// server server (codex: namespace "mcp__<server with _ for ->", function tool).
	MCPTool func(server, tool string) (namespace, function string)
	// Retries is how many times the CLI retries a failed request at most; Fail
	// answers that many more requests with the error. 0 means 5.
	Retries int
}

// Responses is a Model over fakemodel's OpenAI Responses API, for codex and any CLI
// that speaks that dialect.
type Responses struct {
	// Server is the fake model API; its URL is what the CLI's provider points at.
	Server *fakemodel.ResponsesServer
	tools  ResponsesTools

	script scripted[fakemodel.ResponsesReply]
}

// push scripts r, reporting usage of its own when it is a response.
func (m *Responses) push(r fakemodel.ResponsesReply) {
	m.script.push(r, func(r *fakemodel.ResponsesReply) *fakemodel.Usage {
		if r.Status == 0 && !r.Stall && !r.Failed {
			return &r.Usage
		}
		return nil
	}, m.Server.Push)
}

// Reported implements Model.
func (m *Responses) Reported() agent.Usage {
	return reported(&m.script, m.Server.Responses, func(req fakemodel.ResponsesRequest) int { return req.Reply },
		func(req fakemodel.ResponsesRequest, r fakemodel.ResponsesReply) (fakemodel.Usage, bool) {
			// A request the server could not read has no input.
			return r.Usage, len(req.Input) > 0 && req.ScriptError == "" && (r.Status == 0 || r.Status == http.StatusOK) && !r.Stall && !r.Failed && !r.Malformed
		})
}

// NewResponses starts a fake Responses API on 127.0.0.1 for one case, closed when t
// ends.
func NewResponses(t testing.TB, tools ResponsesTools) *Responses {
	t.Helper()
	if tools.Shell == "" || tools.MCPTool == nil {
		t.Fatal("agenttest: ResponsesTools needs Shell and MCPTool")
	}
	return &Responses{Server: fakemodel.StartResponses(t), tools: tools}
}

// Reply implements Model.
func (m *Responses) Reply(text string) { m.push(fakemodel.ResponsesReply{Text: text}) }

// Shell implements Model.
func (m *Responses) Shell(command string) {
	args := map[string]any{"cmd": command}
	if m.tools.ShellArguments != nil {
		args = m.tools.ShellArguments(command)
	}
	m.push(fakemodel.ResponsesReply{FunctionCalls: []fakemodel.FunctionCall{{Name: m.tools.Shell, Arguments: args}}})
}

// CallMCP implements Model.
func (m *Responses) CallMCP(server, tool string, args map[string]any) {
	if args == nil {
		args = map[string]any{}
	}
	ns, fn := m.tools.MCPTool(server, tool)
	m.push(fakemodel.ResponsesReply{FunctionCalls: []fakemodel.FunctionCall{{Namespace: ns, Name: fn, Arguments: args}}})
}

// Fail implements Model.
func (m *Responses) Fail(status int, message string) {
	retries := m.tools.Retries
	if retries <= 0 {
		retries = 5
	}
	m.push(fakemodel.ResponsesReply{Status: status, ErrorMessage: message, Times: retries + 1})
}

// Stall implements Model.
func (m *Responses) Stall() { m.push(fakemodel.ResponsesReply{Stall: true}) }

// WaitStall implements Model.
func (m *Responses) WaitStall(t testing.TB, d time.Duration) {
	t.Helper()
	m.Server.WaitStall(t, d)
}

// Received implements Model: every POST /v1/responses. The Responses API has no error
// flag on a function's output, so ToolResult.IsError is always false.
func (m *Responses) Received() []Request {
	var out []Request
	for _, r := range m.Server.Responses() {
		var req Request
		for _, it := range r.Input {
			switch it.Type {
			case "message":
				req.Messages = append(req.Messages, Message{Role: it.Role, Text: it.Text})
			case "function_call_output", "custom_tool_call_output":
				req.ToolResults = append(req.ToolResults, ToolResult{Text: it.Text})
			}
		}
		out = append(out, req)
	}
	return out
}
