package copilot

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"
	"unicode/utf8"

	"sortie/internal/agent"
)

// FuzzTranslateLines feeds arbitrary JSONL to the translator: it must never panic,
// cumulative usage must never go down and never count input tokens, every tool call
// must end in one tool_result with a non-negative duration, and what it quotes of a
// line must stay bounded and valid UTF-8.
func FuzzTranslateLines(f *testing.F) {
	// Seeds: the short lines of the real transcripts, one per event type, and a few
	// short sequences. Whole transcripts are KBs long, and the fuzzer would spend its
	// time minimising them instead of exploring.
	seen := map[string]bool{}
	for _, dir := range []string{"testdata", legacy} {
		files, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
		for _, p := range files {
			b, err := os.ReadFile(p)
			if err != nil {
				continue
			}
			for _, line := range bytes.Split(b, []byte("\n")) {
				var l wireLine
				if len(line) > 2048 || json.Unmarshal(line, &l) != nil || seen[l.Type] {
					continue
				}
				seen[l.Type] = true
				f.Add(line)
			}
		}
	}
	f.Add([]byte(`{"type":"tool.execution_start","data":{"toolCallId":"t","toolName":"view"}}` + "\n" +
		`{"type":"assistant.message","data":{"content":"x","outputTokens":3}}` + "\n" +
		`{"type":"tool.execution_complete","data":{"toolCallId":"t","success":true}}` + "\n" +
		`{"type":"result","sessionId":"s","exitCode":0,"usage":{"totalApiDurationMs":5}}`))
	f.Add([]byte(`{"type":"assistant.message","data":{"outputTokens":9223372036854775807}}` + "\n" +
		`{"type":"assistant.message","data":{"outputTokens":1}}`))
	f.Add([]byte(`{"type":"assistant.message","data":{"outputTokens":-5}}`))
	f.Add([]byte(`{"type":"tool.execution_start","data":{"toolCallId":"a","toolName":"x"}}` + "\n" +
		`{"type":"tool.execution_start","data":{"toolCallId":"a","toolName":"y"}}`))
	f.Add([]byte(`{"type":"result","sessionId":"s","exitCode":null,"usage":null}`))
	f.Add([]byte("{\"type\":\"session.error\",\"data\":{\"message\":\"\xff\xfe\"}}"))

	f.Fuzz(func(t *testing.T, data []byte) {
		var last agent.Usage
		c := &clock{t: time.Unix(0, 0)}
		tr := newTranslator(c.now, func(e agent.Event) {
			u := e.Usage
			if e.Type == agent.EventTokenUsage {
				if u.Output < last.Output || u.Total < last.Total {
					t.Fatalf("usage went down: %+v after %+v", u, last)
				}
				if u.Input != 0 || u.CacheRead != 0 || u.Total != u.Output {
					t.Fatalf("usage %+v: want output tokens only", u)
				}
				last = u
			}
			if e.Type == agent.EventToolResult && (e.ToolDurationMS < 0 || e.ToolName == "") {
				t.Fatalf("tool_result %+v", e)
			}
			bound := maxMessage
			if e.Type == agent.EventMalformed {
				bound = maxMalformed
			}
			if n := utf8.RuneCountInString(e.Message); n > bound+1 || !utf8.ValidString(e.Message) {
				t.Fatalf("%s message of %d characters (valid UTF-8: %t)", e.Type, n, utf8.ValidString(e.Message))
			}
		}, agent.Usage{})
		for _, line := range bytes.Split(data, []byte("\n")) {
			if len(line) == 0 {
				continue
			}
			tr.line(line)
			c.t = c.t.Add(time.Millisecond)
		}
		tr.openTools()
		if len(tr.inflight) != 0 {
			t.Fatalf("%d tool calls still open after openTools", len(tr.inflight))
		}
		if u := tr.usage(); u.Output < last.Output {
			t.Fatalf("final usage %+v below the last reported %+v", u, last)
		}
	})
}
