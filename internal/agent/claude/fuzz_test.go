package claude

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"
	"unicode/utf8"

	"sortie/internal/agent"
)

// FuzzTranslate feeds arbitrary stream-json lines to the translator: it must never
// panic, cumulative usage must never go down, and every message must be valid UTF-8.
func FuzzTranslate(f *testing.F) {
	// Seeds are single lines of the captured transcripts, short enough for the fuzzer
	// to minimise quickly, plus pairs that exercise correlation across lines.
	for _, dir := range []string{"testdata", sharedTestdata} {
		files, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
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
	}
	f.Add([]byte(`{"type":"assistant","message":{"id":"a","usage":{"input_tokens":-5,"output_tokens":9e18}}}`))
	f.Add([]byte(`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"x","is_error":true,"content":[{"type":"text","text":"\u001b[1mboom"}]}]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var last agent.Usage
		tr := newTranslator(time.Now, func(e agent.Event) {
			if !utf8.ValidString(e.Message) {
				t.Errorf("%s message is not UTF-8: %q", e.Type, e.Message)
			}
			if e.Type == agent.EventTokenUsage {
				if e.Usage.Input < last.Input || e.Usage.Output < last.Output || e.Usage.CacheRead < last.CacheRead {
					t.Fatalf("usage went down: %+v after %+v", e.Usage, last)
				}
				last = e.Usage
			}
		}, agent.Usage{}, 0, 0)
		start := 0
		for i := 0; i <= len(data); i++ {
			if i == len(data) || data[i] == '\n' {
				tr.line(data[start:i])
				start = i + 1
			}
		}
		tr.openTools()
		if tr.result != nil {
			_ = resultError(tr.result)
		}
	})
}
