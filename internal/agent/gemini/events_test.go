package gemini

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sortie/internal/agent"
	"sortie/internal/agent/agenttest"
	"sortie/internal/agent/cli"
	"sortie/internal/agent/proc"
)

// replayed is a transcript run through a translator.
type replayed struct {
	tr        *translator
	events    []agent.Event
	malformed int
}

func replay(t testing.TB, data []byte) *replayed {
	t.Helper()
	r := &replayed{}
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r.tr = newTranslator(func() time.Time { return clock }, func(e agent.Event) {
		if e.Type == agent.EventMalformed {
			r.malformed++
		}
		r.events = append(r.events, e)
	}, agent.Usage{})
	for _, l := range bytes.Split(data, []byte("\n")) {
		if len(bytes.TrimSpace(l)) > 0 {
			r.tr.line(l)
		}
	}
	return r
}

func (r *replayed) of(typ agent.EventType) []agent.Event { return agenttest.OfType(r.events, typ) }

func TestTranscript_Tools(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "tools.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	r := replay(t, data)
	tools := r.of(agent.EventToolResult)
	if len(tools) != 2 || tools[0].ToolError || !tools[1].ToolError || tools[0].ToolName != "run_shell_command" {
		t.Fatalf("tool_result events = %+v, want a success and a failure (exit 3)", tools)
	}
	if tools[0].ToolDurationMS <= 0 {
		t.Errorf("tool duration = %d, want the span between tool_use and tool_result", tools[0].ToolDurationMS)
	}
	if s := r.of(agent.EventSessionStarted); len(s) != 1 || s[0].Model == "" {
		t.Errorf("session_started events = %+v, want one naming the model", s)
	}
	u := r.of(agent.EventTokenUsage)
	// Three model requests: 1000+1100+1200 input and 20+23+26 output (the fake's defaults
	// of each scripted reply, as captured).
	if len(u) != 1 || u[0].Usage.Total != u[0].Usage.Input+u[0].Usage.Output || u[0].Usage.Input == 0 || u[0].Usage.Output == 0 {
		t.Errorf("token_usage events = %+v, want one with the result's figures", u)
	}
	totals, v := (&turn{translator: r.tr, st: &state{}}).End(&cli.Ending{Name: "gemini", PID: 1})
	if v.Reason != agent.EventTurnCompleted || v.Message != "Both ran." || totals.Usage != u[0].Usage {
		t.Errorf("verdict %+v, totals %+v", v, totals)
	}
}

// An API error ends with a result of status error and the HTTP status as the exit
// (400 is 144): the turn failed, with the API's message, whatever the exit says.
func TestTranscript_APIError(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "api_error.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	r := replay(t, data)
	e := &cli.Ending{Name: "gemini", PID: 1, Exit: proc.Exit{Code: 144}, Kind: agent.ErrPortExit}
	_, v := (&turn{translator: r.tr, st: &state{}}).End(e)
	if v.Reason != agent.EventTurnFailed || v.Kind != agent.ErrTurnFailed || !strings.Contains(v.Message, "invalid argument") {
		t.Errorf("verdict = %+v, want turn_failed with the API's message", v)
	}
}

func TestTranslator_Lines(t *testing.T) {
	lines := strings.Join([]string{
		`{"type":"init","timestamp":"2026-01-01T00:00:00Z","session_id":"s-1","model":"m"}`,
		`not json`,
		`{"type":"tool_use","timestamp":"2026-01-01T00:00:01Z","tool_name":"run_shell_command","tool_id":"a","parameters":{}}`,
		`{"type":"tool_use","timestamp":"2026-01-01T00:00:01Z","tool_name":"read_file","tool_id":"b","parameters":{}}`,
		`{"type":"tool_result","timestamp":"2026-01-01T00:00:03Z","tool_id":"a","status":"success","output":"Command terminated by signal: SIGKILL"}`,
		`{"type":"error","timestamp":"2026-01-01T00:00:04Z","severity":"error","message":"Invalid stream"}`,
		`{"type":"result","timestamp":"2026-01-01T00:00:05Z","status":"error","stats":{"input_tokens":10,"output_tokens":2,"cached":4}}`,
		`{"type":"result","timestamp":"2026-01-01T00:00:05Z","status":"success","stats":{"input_tokens":10,"output_tokens":2}}`,
		`{"type":"surprise"}`,
	}, "\n")
	r := replay(t, []byte(lines))
	if r.malformed != 1 {
		t.Errorf("malformed = %d, want 1", r.malformed)
	}
	tools := r.of(agent.EventToolResult)
	if len(tools) != 1 || !tools[0].ToolError || tools[0].ToolDurationMS != 2000 {
		t.Errorf("tool_result events = %+v, want the killed command as an error of 2 s", tools)
	}
	if u := r.of(agent.EventTokenUsage); len(u) != 1 || u[0].Usage != (agent.Usage{Input: 10, Output: 2, CacheRead: 4, Total: 12}) {
		t.Errorf("token_usage events = %+v, want one, the first result's", u)
	}
	_, v := (&turn{translator: r.tr, st: &state{}}).End(&cli.Ending{Name: "gemini", PID: 1})
	if v.Reason != agent.EventTurnFailed || !strings.Contains(v.Message, "Invalid stream") {
		t.Errorf("verdict = %+v, want a failure naming the error event", v)
	}
	if tools := r.of(agent.EventToolResult); len(tools) != 2 || !tools[1].ToolError || tools[1].ToolName != "read_file" {
		t.Errorf("the open read_file call was not ended as failed: %+v", tools)
	}
	if o := r.of(agent.EventOtherMessage); len(o) != 1 {
		t.Errorf("other_message events = %+v, want the unknown type", o)
	}
}

// No result event: a crash is the process's failure, a clean exit without one a
// failed turn, never a completed one.
func TestTranslator_NoResult(t *testing.T) {
	r := replay(t, []byte(`{"type":"init","session_id":"s","model":"m"}`))
	st := &state{}
	_, v := (&turn{translator: r.tr, st: st}).End(&cli.Ending{Name: "gemini", PID: 1, Exit: proc.Exit{Code: 41}, Kind: agent.ErrPortExit})
	if v.Kind != agent.ErrPortExit {
		t.Errorf("crash verdict = %+v", v)
	}
	if !st.created {
		t.Errorf("a run that announced its session did not mark it created")
	}
	r = replay(t, nil)
	_, v = (&turn{translator: r.tr, st: &state{}}).End(&cli.Ending{Name: "gemini", PID: 1})
	if v.Reason != agent.EventTurnFailed {
		t.Errorf("silent exit verdict = %+v, want turn_failed", v)
	}
}

// Only the shell tool's output carries an exit code: a file that happens to end in
// "Error: ..." or "Exit Code: 1", read by read_file, is not a failed call.
func TestTranslator_OnlyTheShellToolFailsByItsOutput(t *testing.T) {
	lines := strings.Join([]string{
		`{"type":"init","session_id":"s-1","model":"m"}`,
		`{"type":"tool_use","tool_name":"read_file","tool_id":"r","parameters":{}}`,
		`{"type":"tool_result","tool_id":"r","status":"success","output":"line one\nError: x\nExit Code: 1"}`,
		`{"type":"tool_use","tool_name":"run_shell_command","tool_id":"s","parameters":{}}`,
		`{"type":"tool_result","tool_id":"s","status":"success","output":"boom\nExit Code: 1\nProcess Group PGID: 7"}`,
	}, "\n")
	tools := replay(t, []byte(lines)).of(agent.EventToolResult)
	if len(tools) != 2 || tools[0].ToolError || !tools[1].ToolError {
		t.Fatalf("tool_result events = %+v, want read_file a success and the shell call a failure", tools)
	}
}
