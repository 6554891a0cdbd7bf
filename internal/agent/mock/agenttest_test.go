package mock

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"syscall"
	"testing"
	"time"

	"sortie/internal/agent"
	"sortie/internal/agent/agenttest"
	"sortie/internal/mcp/mcptest"
)

// The test binary is also the sortie-tools sidecar the agenttest suite's MCP case
// writes into .sortie/mcp.json; this runs before TestMain.
func init() { mcptest.Main() }

// promptsEnv names the directory where the harness's wrapper keeps a copy of each
// turn file, which is how the scripted "model" reads back the prompts it was given.
const promptsEnv = "AGENTTEST_MOCK_PROMPTS"

// TestAgentContract runs the contract suite every adapter passes (internal/agent/agenttest)
// against the mock adapter. The mock has no model: its scriptedModel turns the suite's
// script into the `mock:` block (a reply is a success, an API error a failure, a stall
// a hang, an MCP call an mcp_calls entry the child really makes), so every case the
// mock can express runs against its real child process.
func TestAgentContract(t *testing.T) {
	agenttest.Run(t, agenttest.Harness{
		Command: mockWrapper,
		NewModel: func(t *testing.T) agenttest.Model {
			m := &scriptedModel{prompts: t.TempDir(), fifo: filepath.Join(t.TempDir(), "stalled")}
			if err := syscall.Mkfifo(m.fifo, 0o600); err != nil {
				t.Fatal(err)
			}
			return m
		},
		NewAdapter: func(t *testing.T, command string, m agenttest.Model) (agent.Adapter, error) {
			return New(agent.Config{Kind: Kind, Command: command, Options: m.(*scriptedModel).options()})
		},
		Env: func(t *testing.T, ws string, m agenttest.Model) []string {
			sm := m.(*scriptedModel)
			sm.mu.Lock()
			sm.ws = ws
			sm.mu.Unlock()
			return append(withoutKey(os.Environ(), IssueEnv), promptsEnv+"="+sm.prompts)
		},
		Sidecar:    mcptest.Server(t),
		SessionIDs: agenttest.IDAtStart,
		Unsupported: map[string]string{
			agenttest.CaseShellTool: "the mock's shell steps run commands but emit no tool_result events, and its tool_calls " +
				"are scripted events with no command behind them (docs/agents/mock.md)",
			agenttest.CaseHistory:        "the mock keeps no conversation: each turn plays its script entry, whatever came before",
			agenttest.CaseModelErrorText: "the mock has no model API: its failure outcome carries the mock's own message",
			agenttest.CaseUsageExact:     "the mock has no model API: its token figures are its own script's, not a model's",
			agenttest.CaseUsageExactIn:   "the mock has no model API: its token figures are its own script's, not a model's",
			agenttest.CaseResumeUsage:    "the mock has no model API: its token figures are its own script's, not a model's",
		},
	})
}

// mockWrapper is an agent.command that keeps a copy of the turn file (its last
// argument) in $AGENTTEST_MOCK_PROMPTS, then becomes this test binary, which plays the
// mock's child (TestMain).
func mockWrapper(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "mock-wrapper")
	script := fmt.Sprintf("#!/bin/sh\nfor last; do :; done\n"+
		"if [ -n \"$%[1]s\" ]; then n=$(ls \"$%[1]s\" | wc -l); cp \"$last\" \"$%[1]s/turn-$(printf %%04d \"$n\").json\"; fi\n"+
		"exec '%[2]s' \"$@\"\n", promptsEnv, self)
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// scriptedModel is agenttest.Model for the mock: the script becomes the `mock:` block.
type scriptedModel struct {
	prompts string // where the wrapper copies turn files
	fifo    string // a stalled turn's shell step writes here, which WaitStall reads

	mu      sync.Mutex
	ws      string
	script  []any   // outcomes, one per turn
	groups  [][]any // mcp_calls, one group per turn
	current []any   // the calls of the turn being scripted
	stall   bool
}

func (m *scriptedModel) endTurn(outcome string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.script = append(m.script, outcome)
	m.groups = append(m.groups, m.current)
	m.current = nil
}

func (m *scriptedModel) Reply(string) { m.endTurn("success") }

func (m *scriptedModel) Fail(int, string) { m.endTurn("failure") }

func (m *scriptedModel) Stall() {
	m.mu.Lock()
	if len(m.script) > 0 {
		panic("agenttest mock harness: a stall must be the first turn (its shell step runs on every turn)")
	}
	m.stall = true
	m.mu.Unlock()
	m.endTurn("hang")
}

func (m *scriptedModel) Shell(string) {
	panic("agenttest mock harness: the mock has no shell tool that reports tool results (the case is declared unsupported)")
}

func (m *scriptedModel) CallMCP(server, tool string, args map[string]any) {
	if args == nil {
		args = map[string]any{}
	}
	m.mu.Lock()
	m.current = append(m.current, map[string]any{"server": server, "tool": tool, "arguments": args})
	m.mu.Unlock()
}

// options is the `mock:` block playing the script.
func (m *scriptedModel) options() map[string]any {
	m.mu.Lock()
	defer m.mu.Unlock()
	opts := map[string]any{"script": append([]any(nil), m.script...), "events_per_turn": 1}
	for _, g := range m.groups {
		if len(g) > 0 {
			groups := make([]any, len(m.groups))
			for i, g := range m.groups {
				groups[i] = append([]any{}, g...)
			}
			opts["mcp_calls"] = groups
			break
		}
	}
	if m.stall {
		// The stalled turn announces itself through the fifo, and starts a helper
		// process that the adapter's group kill has to remove too.
		opts["shell"] = []any{map[string]any{"name": "stalled", "run": "printf stalled > '" + m.fifo + "'"}}
		opts["helper_processes"] = 1
	}
	return opts
}

func (m *scriptedModel) WaitStall(t testing.TB, d time.Duration) {
	t.Helper()
	read := make(chan error, 1)
	go func() {
		f, err := os.Open(m.fifo) // blocks until the stalled turn's shell step opens it
		if err == nil {
			_, err = io.ReadAll(f)
			f.Close()
		}
		read <- err
	}()
	select {
	case err := <-read:
		if err != nil {
			t.Fatalf("reading the stall fifo: %v", err)
		}
	case <-time.After(d):
		if w, err := os.OpenFile(m.fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			w.Close() // releases the reader
		}
		t.Fatalf("no mock turn stalled within %s", d)
	}
}

// Reported implements agenttest.Model: no model reports usage to the mock (the cases
// that compare with it are declared unsupported).
func (m *scriptedModel) Reported() agent.Usage { return agent.Usage{} }

// Received returns one request per turn the wrapper saw, with the turn file's prompt;
// the results of the MCP calls the child logged in the workspace go with the last.
func (m *scriptedModel) Received() []agenttest.Request {
	names, _ := filepath.Glob(filepath.Join(m.prompts, "turn-*.json"))
	sort.Strings(names)
	var out []agenttest.Request
	for _, n := range names {
		data, err := os.ReadFile(n)
		if err != nil {
			continue
		}
		var in instructions
		if json.Unmarshal(data, &in) != nil {
			continue
		}
		out = append(out, agenttest.Request{Messages: []agenttest.Message{{Role: "user", Text: in.Prompt}}})
	}
	m.mu.Lock()
	ws := m.ws
	m.mu.Unlock()
	if len(out) == 0 || ws == "" {
		return out
	}
	if f, err := os.Open(filepath.Join(ws, ".sortie", "mock-mcp.log")); err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var call struct {
				Text    string `json:"text"`
				IsError bool   `json:"is_error"`
			}
			if json.Unmarshal(sc.Bytes(), &call) == nil {
				last := &out[len(out)-1]
				last.ToolResults = append(last.ToolResults, agenttest.ToolResult{Text: call.Text, IsError: call.IsError})
			}
		}
	}
	return out
}
