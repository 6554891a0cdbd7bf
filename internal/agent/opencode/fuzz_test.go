package opencode

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"sortie/internal/agent"
)

// FuzzTranslator feeds arbitrary stdout to the event parser: it must never panic, every
// line yields at most one event besides session_started, and cumulative usage and cost
// never go down.
func FuzzTranslator(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.jsonl"))
	for _, file := range files {
		if b, err := os.ReadFile(file); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"type":"step_finish","part":{"tokens":{"input":-9223372036854775808,"output":9223372036854775807}}}`))
	f.Add([]byte("{\"type\":\"tool_use\",\"part\":{\"tool\":\"\\ud800\",\"state\":{\"status\":\"error\",\"time\":{\"start\":-1,\"end\":9}}}}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var last agent.Usage
		var cost float64
		n := 0
		tr := newTranslator(func(e agent.Event) {
			n++
			if e.Type == agent.EventTokenUsage {
				u := e.Usage
				if u.Input < last.Input || u.Output < last.Output || u.CacheRead < last.CacheRead || e.CostUSD < cost {
					t.Fatalf("usage went down: %+v after %+v", u, last)
				}
				last, cost = u, e.CostUSD
			}
			if e.ToolDurationMS < 0 {
				t.Fatalf("negative tool duration %d", e.ToolDurationMS)
			}
		}, agent.Usage{}, 0, "")
		lines := 0
		for _, l := range bytes.Split(data, []byte("\n")) {
			if len(l) == 0 {
				continue
			}
			lines++
			tr.line(l)
		}
		if n > 2*lines {
			t.Fatalf("%d events from %d lines", n, lines)
		}
	})
}
