package agenttest

import (
	"cmp"
	"strings"
	"sync"
	"testing"
	"time"

	"sortie/internal/agent"
	"sortie/internal/testkit/fakemodel"
)

// Model is a scripted model API that an agent CLI talks to, in whatever dialect the CLI
// speaks (Anthropic Messages, OpenAI Responses, ...). A case scripts it before the
// adapter is built, one response per call, in the order the CLI will ask for them; a
// turn's script ends with Reply, Fail or Stall. Implementations must be safe for
// concurrent use: Received and WaitStall are called while a turn runs.
type Model interface {
	// Reply answers with text and nothing to do: the turn ends. A dialect whose CLI
	// needs a tool call to end a turn (Copilot's task_complete in autopilot mode) adds
	// it here.
	Reply(text string)
	// Shell answers with one call of the CLI's shell tool running command in the
	// workspace. The CLI sends the result back, which the next scripted response
	// answers.
	Shell(command string)
	// CallMCP answers with one call of tool on the MCP server named server in the
	// session's MCP configuration, with args (nil for none).
	CallMCP(server, tool string, args map[string]any)
	// Fail answers with an HTTP error of status carrying message, marked as not worth
	// retrying, for as many requests as the CLI makes for it (a CLI may retry a few
	// times; it must then give up).
	Fail(status int, message string)
	// Stall answers with a response that starts and then never completes, until the
	// client goes away.
	Stall()
	// WaitStall blocks until a stalled response has begun, and fails t when none has
	// after d.
	WaitStall(t testing.TB, d time.Duration)
	// Received returns the requests the model has answered so far, oldest first.
	Received() []Request
	// Reported is the token usage of every response the model has completed so far,
	// scripted or its default, summed: what a CLI that passes on each response's usage
	// reports in all. Each scripted response reports figures of its own (scriptedUsage),
	// so a figure counted twice shows. Total is Input + Output; an error, a stall or a
	// malformed response reports nothing.
	Reported() agent.Usage
}

// scriptedUsage is what the n-th scripted response (0-based) reports: figures unlike
// any other response's, with no cache tokens, whose meaning differs between dialects.
func scriptedUsage(n int) fakemodel.Usage {
	return fakemodel.Usage{InputTokens: int64(1000 + 100*n), OutputTokens: int64(20 + 3*n)}
}

// addUsage adds u to sum, as Reported counts it.
func addUsage(sum *agent.Usage, u fakemodel.Usage) {
	sum.Input += u.InputTokens
	sum.Output += u.OutputTokens
	sum.CacheRead += u.CacheReadInputTokens
	sum.Total = sum.Input + sum.Output
}

// scripted is what a Model has scripted, in the dialect's reply type R, as pushed, so
// that Reported can tell what each answer reported. The zero value is ready to use.
type scripted[R any] struct {
	mu      sync.Mutex
	replies []R
}

// push scripts r with send. When usage returns where r's usage goes (nil when r is not
// a response: an error or a stall), r reports figures of its own (scriptedUsage).
func (s *scripted[R]) push(r R, usage func(*R) *fakemodel.Usage, send func(...R)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if u := usage(&r); u != nil {
		*u = scriptedUsage(len(s.replies))
	}
	s.replies = append(s.replies, r)
	send(r)
}

// reported implements Reported over s: it sums the usage of every request requests
// returns that was answered with a response, or the default usage when that response
// set none. reply is the index of the scripted reply that answered a request (-1 for the
// server's default reply, R's zero value); served reports whether a request and the
// reply it got make a response, and that response's usage.
func reported[Q, R any](s *scripted[R], requests func() []Q, reply func(Q) int, served func(Q, R) (fakemodel.Usage, bool)) agent.Usage {
	s.mu.Lock()
	defer s.mu.Unlock()
	var sum agent.Usage
	for _, req := range requests() {
		var r R // the default reply
		if i := reply(req); i >= 0 {
			r = s.replies[i]
		}
		if u, ok := served(req, r); ok {
			addUsage(&sum, cmp.Or(u, fakemodel.DefaultUsage))
		}
	}
	return sum
}

// Request is what one model request carried, dialect-neutral.
type Request struct {
	// Messages are the conversation's messages as sent, oldest first.
	Messages []Message
	// ToolResults are the results of tool calls the request carries, oldest first.
	ToolResults []ToolResult
}

// Message is one message of a request: its role ("user", "assistant", ...) and its
// text blocks joined by newlines. Tool calls and results are not text.
type Message struct {
	Role string
	Text string
}

// ToolResult is the result of one tool call as the CLI reported it to the model.
type ToolResult struct {
	Text    string
	IsError bool
}

// Transcript is every message of r as "role: text", one per line.
func (r Request) Transcript() string {
	var b strings.Builder
	for _, m := range r.Messages {
		b.WriteString(m.Role)
		b.WriteString(": ")
		b.WriteString(m.Text)
		b.WriteByte('\n')
	}
	return b.String()
}

// UserText reports whether a user message of r contains s.
func (r Request) UserText(s string) bool {
	for _, m := range r.Messages {
		if m.Role == "user" && strings.Contains(m.Text, s) {
			return true
		}
	}
	return false
}

// Homes hands out one HOME directory per Model, for a harness whose CLI keeps its
// sessions under HOME: every session of a case (a resume included) must share one, as
// they share one on a real machine. The zero value is ready to use.
type Homes struct {
	mu   sync.Mutex
	dirs map[Model]string
}

// Of returns m's HOME, created under t's temporary directory on first use.
func (h *Homes) Of(t testing.TB, m Model) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.dirs == nil {
		h.dirs = map[Model]string{}
	}
	if d, ok := h.dirs[m]; ok {
		return d
	}
	d := t.TempDir()
	h.dirs[m] = d
	return d
}
