package agenttest

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"sortie/internal/agent"

	"sortie/internal/testkit/fakemodel"
)

// GeminiShellTool is the Gemini CLI's shell tool, offered only with --approval-mode
// yolo; its args are {"command": ...}.
const GeminiShellTool = "run_shell_command"

// GeminiMCPTool is the name under which the Gemini CLI offers tool of MCP server
// server: mcp_<server>_<tool> (the server must be trusted in settings.json's
// mcpServers, "trust": true, or its tools are not offered at all).
func GeminiMCPTool(server, tool string) string { return "mcp_" + server + "_" + tool }

// Gemini is a Model over fakemodel's Gemini API (GeminiServer), for the Gemini CLI.
//
// What the CLI (@google/gemini-cli 0.61.0) needs to reach it, offline:
//
//   - GOOGLE_GEMINI_BASE_URL=<Server.URL> (the bare origin; the SDK appends
//     /v1beta/models/...), and GEMINI_API_KEY set to anything;
//   - $GEMINI_CLI_HOME/.gemini/settings.json with security.auth.selectedType
//     "gemini-api-key" (without it the CLI does not use the key headless) and
//     privacy.usageStatisticsEnabled false (else it also calls Google's telemetry);
//     MCP servers go in its mcpServers with "trust": true;
//   - a pinned model (--model, as the adapter passes gemini.model; the tests pin
//     clis.GeminiModel): with the default
//     "auto" the CLI first asks a helper model (…:generateContent) to route the prompt,
//     which the fake answers without taking a scripted reply;
//   - headless flags: the prompt on stdin (an explicit -p is appended to it), --output-format stream-json,
//     --approval-mode yolo (the shell tool is offered only then), --skip-trust (an
//     untrusted folder is fatal headless, exit 55).
//
// The CLI does not retry a 4xx other than 429 (nor 499); it retries 429 and 5xx with
// backoff from 5 seconds, so a harness should make Fail's status a 4xx
// (Harness.ModelErrorStatus 400).
type Gemini struct {
	// Server is the fake model API; its URL is GOOGLE_GEMINI_BASE_URL.
	Server *fakemodel.GeminiServer
	// Retries is how many more requests Fail answers with its error (0: none, as the
	// CLI does not retry a 4xx).
	Retries int

	script scripted[fakemodel.GeminiReply]
}

// NewGeminiModel starts a fake Gemini API on 127.0.0.1 for one case, closed when t
// ends, and returns the Model and the URL to put in GOOGLE_GEMINI_BASE_URL.
func NewGeminiModel(t testing.TB) (*Gemini, string) {
	t.Helper()
	m := &Gemini{Server: fakemodel.StartGemini(t)}
	return m, m.Server.URL
}

// push scripts r, reporting usage of its own when it is a response.
func (m *Gemini) push(r fakemodel.GeminiReply) {
	m.script.push(r, func(r *fakemodel.GeminiReply) *fakemodel.Usage {
		if r.Status == 0 && !r.Stall {
			return &r.Usage
		}
		return nil
	}, m.Server.Push)
}

// Reported implements Model. Helper requests (…:generateContent) report no usage.
func (m *Gemini) Reported() agent.Usage {
	return reported(&m.script, m.Server.Turns, func(req fakemodel.GeminiRequest) int { return req.Reply },
		func(req fakemodel.GeminiRequest, r fakemodel.GeminiReply) (fakemodel.Usage, bool) {
			// A request the server could not read or refused has no reply.
			return r.Usage, len(req.Contents) > 0 && req.Rejected == "" && req.ScriptError == "" &&
				(r.Status == 0 || r.Status == http.StatusOK) && !r.Stall && !r.Malformed
		})
}

// Reply implements Model.
func (m *Gemini) Reply(text string) { m.push(fakemodel.GeminiReply{Text: text}) }

// Shell implements Model: a run_shell_command call.
func (m *Gemini) Shell(command string) {
	m.push(fakemodel.GeminiReply{FunctionCalls: []fakemodel.GeminiCall{{Name: GeminiShellTool,
		Args: map[string]any{"command": command}}}})
}

// CallMCP implements Model: a call of mcp_<server>_<tool>.
func (m *Gemini) CallMCP(server, tool string, args map[string]any) {
	if args == nil {
		args = map[string]any{}
	}
	m.push(fakemodel.GeminiReply{FunctionCalls: []fakemodel.GeminiCall{{Name: GeminiMCPTool(server, tool), Args: args}}})
}

// Fail implements Model. The Gemini API has no header marking an error final; the CLI
// gives up at once on a 4xx other than 429.
func (m *Gemini) Fail(status int, message string) {
	m.push(fakemodel.GeminiReply{Status: status, ErrorMessage: message, Times: max(m.Retries, 0) + 1})
}

// Stall implements Model.
func (m *Gemini) Stall() { m.push(fakemodel.GeminiReply{Stall: true}) }

// WaitStall implements Model.
func (m *Gemini) WaitStall(t testing.TB, d time.Duration) {
	t.Helper()
	m.Server.WaitStall(t, d)
}

// Received implements Model: every conversation request (…:streamGenerateContent),
// rejected ones included, with its contents' roles as sent ("user", "model"). A user
// content of function responses only is not a message; the CLI's <session_context>
// preamble is one, as it is a text part of the first user content.
func (m *Gemini) Received() []Request {
	var out []Request
	for _, r := range m.Server.Turns() {
		var req Request
		for _, c := range r.Contents {
			hasText := false
			for _, p := range c.Parts {
				switch p.Kind {
				case "text":
					hasText = true
				case "functionResponse":
					req.ToolResults = append(req.ToolResults, ToolResult{Text: p.Text, IsError: p.IsError || geminiFailed(p.Text)})
				}
			}
			if hasText {
				req.Messages = append(req.Messages, Message{Role: c.Role, Text: c.Text()})
			}
		}
		out = append(out, req)
	}
	return out
}

// geminiFailed reports whether a run_shell_command output says the command failed: the
// CLI reports a failing command as an ordinary output naming its exit code, not as an
// error response.
func geminiFailed(output string) bool {
	return strings.Contains(output, "Exit Code: ") && !strings.Contains(output, "Exit Code: 0")
}
