package agenttest

import (
	"net/http"
	"testing"
	"time"

	"sortie/internal/agent"

	"sortie/internal/testkit/fakemodel"
)

// AnthropicTools says how a CLI that speaks the Anthropic Messages API names and calls
// its tools, which is all that differs between such CLIs for the suite.
type AnthropicTools struct {
	// Shell is the name of the CLI's shell tool ("Bash" for claude, "bash" for copilot).
	Shell string
	// ShellInput builds the shell tool's input for a command; nil means
	// {"command": command, "description": "agenttest"}.
	ShellInput func(command string) map[string]any
	// MCPTool is the name under which the CLI offers tool of MCP server server
	// ("mcp__<server>__<tool>" for claude, "<server>-<tool>" for copilot).
	MCPTool func(server, tool string) string
	// Finish, when set, is a tool call added to every Reply: the call a CLI needs
	// before it ends a turn (copilot's task_complete in autopilot mode).
	Finish func(text string) fakemodel.ToolUse
	// Retries is how many times the CLI retries a failed request at most; Fail
	// answers that many more requests with the error. 0 means 3.
	Retries int
}

// Anthropic is a Model over fakemodel's Anthropic Messages API, for claude, copilot
// (BYOK) and any CLI that speaks that dialect.
type Anthropic struct {
	// Server is the fake model API; its URL is what the CLI's environment points at.
	Server *fakemodel.Server
	tools  AnthropicTools

	script scripted[fakemodel.Reply]
}

// push scripts r, reporting usage of its own when it is a response.
func (m *Anthropic) push(r fakemodel.Reply) {
	m.script.push(r, func(r *fakemodel.Reply) *fakemodel.Usage {
		if r.Status == 0 && !r.Stall {
			return &r.Usage
		}
		return nil
	}, m.Server.Push)
}

// Reported implements Model.
func (m *Anthropic) Reported() agent.Usage {
	return reported(&m.script, m.Server.Messages, func(req fakemodel.Request) int { return req.Reply },
		func(req fakemodel.Request, r fakemodel.Reply) (fakemodel.Usage, bool) {
			// A request the server could not read has no messages.
			return r.Usage, len(req.Messages) > 0 && req.ScriptError == "" && (r.Status == 0 || r.Status == http.StatusOK) && !r.Stall && !r.Malformed
		})
}

// NewAnthropic starts a fake Anthropic API on 127.0.0.1 for one case, closed when t
// ends.
func NewAnthropic(t testing.TB, tools AnthropicTools) *Anthropic {
	t.Helper()
	if tools.Shell == "" || tools.MCPTool == nil {
		t.Fatal("agenttest: AnthropicTools needs Shell and MCPTool")
	}
	return &Anthropic{Server: fakemodel.Start(t), tools: tools}
}

// Reply implements Model.
func (m *Anthropic) Reply(text string) {
	r := fakemodel.Reply{Text: text}
	if m.tools.Finish != nil {
		r.ToolUses = []fakemodel.ToolUse{m.tools.Finish(text)}
	}
	m.push(r)
}

// Shell implements Model.
func (m *Anthropic) Shell(command string) {
	in := map[string]any{"command": command, "description": "agenttest"}
	if m.tools.ShellInput != nil {
		in = m.tools.ShellInput(command)
	}
	m.push(fakemodel.Reply{ToolUses: []fakemodel.ToolUse{{Name: m.tools.Shell, Input: in}}})
}

// CallMCP implements Model.
func (m *Anthropic) CallMCP(server, tool string, args map[string]any) {
	if args == nil {
		args = map[string]any{}
	}
	m.push(fakemodel.Reply{ToolUses: []fakemodel.ToolUse{{Name: m.tools.MCPTool(server, tool), Input: args}}})
}

// Fail implements Model.
func (m *Anthropic) Fail(status int, message string) {
	retries := m.tools.Retries
	if retries <= 0 {
		retries = 3
	}
	m.push(fakemodel.Reply{Status: status, ErrorMessage: message, NoRetry: true, Times: retries + 1})
}

// Stall implements Model.
func (m *Anthropic) Stall() { m.push(fakemodel.Reply{Stall: true}) }

// WaitStall implements Model.
func (m *Anthropic) WaitStall(t testing.TB, d time.Duration) {
	t.Helper()
	m.Server.WaitStall(t, d)
}

// Received implements Model: every POST /v1/messages.
func (m *Anthropic) Received() []Request {
	var out []Request
	for _, r := range m.Server.Messages() {
		var req Request
		for _, msg := range r.Messages {
			var text []fakemodel.Block
			for _, b := range msg.Content {
				if b.Type == "text" {
					text = append(text, b)
				}
			}
			req.Messages = append(req.Messages, Message{Role: msg.Role, Text: fakemodel.Message{Content: text}.Text()})
		}
		for _, b := range r.ToolResults() {
			req.ToolResults = append(req.ToolResults, ToolResult{Text: b.Text, IsError: b.IsError})
		}
		out = append(out, req)
	}
	return out
}
