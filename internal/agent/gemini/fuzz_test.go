package gemini

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"
	"unicode/utf8"

	"sortie/internal/agent"
	"sortie/internal/agent/cli"
)

// FuzzTranslate feeds arbitrary stream-json lines to the translator: it must never
// panic, cumulative usage must never go down, every message must be valid UTF-8, and
// each tool call ends once.
func FuzzTranslate(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.jsonl"))
	for _, p := range files {
		data, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		lines := bytes.Split(data, []byte("\n"))
		for i, l := range lines {
			if len(l) > 0 && len(l) <= 2048 {
				f.Add(l)
				if i+1 < len(lines) && len(l)+len(lines[i+1]) <= 2048 {
					f.Add(bytes.Join(lines[i:i+2], []byte("\n")))
				}
			}
		}
	}
	f.Add([]byte(`{"type":"result","status":"success","stats":{"input_tokens":-5,"output_tokens":9e18}}`))
	f.Add([]byte("{\"type\":\"tool_use\",\"tool_id\":\"x\"}\n{\"type\":\"tool_result\",\"tool_id\":\"x\",\"status\":\"success\",\"output\":\"Command exited with code: \xff\"}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		last := agent.Usage{Input: 7, Output: 3, Total: 10}
		ended := 0
		tr := newTranslator(time.Now, func(e agent.Event) {
			if !utf8.ValidString(e.Message) {
				t.Errorf("%s message is not UTF-8: %q", e.Type, e.Message)
			}
			if e.Type == agent.EventTokenUsage {
				if e.Usage.Input < last.Input || e.Usage.Output < last.Output || e.Usage.CacheRead < last.CacheRead || e.Usage.Total < last.Total {
					t.Fatalf("usage went down: %+v after %+v", e.Usage, last)
				}
				last = e.Usage
			}
			if e.Type == agent.EventToolResult {
				ended++
			}
		}, last)
		for _, l := range bytes.Split(data, []byte("\n")) {
			tr.line(l)
		}
		started := len(tr.calls)
		totals, _ := (&turn{translator: tr, st: &state{}}).End(&cli.Ending{Name: "gemini", PID: 1})
		if len(tr.calls) != 0 || totals.Usage.Total < last.Total {
			t.Fatalf("after End: %d calls open (had %d), totals %+v after %+v", len(tr.calls), started, totals.Usage, last)
		}
	})
}
