package codex

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

// FuzzCodexMessages feeds arbitrary app-server output to the translator: it must never
// panic, the session's usage must never go down, every message must be valid UTF-8, and
// every server request must get exactly one answer carrying its id.
func FuzzCodexMessages(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.jsonl"))
	for _, p := range files {
		data, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		lines := bytes.Split(data, []byte("\n"))
		for i, l := range lines {
			if len(l) > 0 && len(l) <= 4096 {
				f.Add(l)
				if i+1 < len(lines) && len(l)+len(lines[i+1]) <= 4096 {
					f.Add(bytes.Join(lines[i:i+2], []byte("\n")))
				}
			}
		}
	}
	f.Add([]byte(`{"method":"thread/tokenUsage/updated","params":{"threadId":"th","turnId":"tu","tokenUsage":{"total":{"inputTokens":9e18,"outputTokens":-1}}}}`))
	f.Add([]byte(`{"id":null,"method":"item/tool/requestUserInput","params":{"questions":[{"question":"\xff"}]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var last agent.Usage
		tr := newTranslator(func() time.Time { return time.Unix(0, 0) }, func(e agent.Event) {
			if !utf8.ValidString(e.Message) || !utf8.ValidString(e.ToolName) {
				t.Fatalf("%s event with invalid UTF-8: %q", e.Type, e.Message)
			}
			if e.Usage.Input < last.Input || e.Usage.Output < last.Output || e.Usage.Total < last.Total || e.Usage.CacheRead < last.CacheRead {
				if e.Type == agent.EventTokenUsage {
					t.Fatalf("usage went down: %+v → %+v", last, e.Usage)
				}
			}
			if e.Type == agent.EventTokenUsage {
				last = e.Usage
			}
		}, agent.Usage{}, nil)
		tr.threadID, tr.turnID = "th", "tu"
		for _, l := range bytes.Split(data, []byte("\n")) {
			m, kind, err := parseMessage(l)
			reply := tr.line(l)
			if err == nil && kind == kindRequest {
				if reply == nil || !bytes.Equal(reply.ID, m.ID) {
					t.Fatalf("request %q got reply %+v", l, reply)
				}
				if _, err := json.Marshal(reply); err != nil {
					t.Fatalf("reply does not marshal: %v", err)
				}
			} else if reply != nil {
				t.Fatalf("a non-request %q got a reply", l)
			}
		}
	})
}
