package claude

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"sortie/internal/agent"
	"sortie/internal/agent/proc"
)

// transcript20k builds a 20,000-line session from the lines captured from the real CLI
// (testdata/two_blocks_tool_call.jsonl): its init line once, then its assistant, user
// and assistant lines repeated with fresh message and tool ids, as a long agentic turn
// would print them, and its result line last.
func transcript20k(b *testing.B) []byte {
	b.Helper()
	lines := readLines(&testing.T{}, "testdata/two_blocks_tool_call.jsonl")
	var init, result string
	var body []string
	for _, l := range lines {
		switch {
		case strings.Contains(l, `"subtype":"init"`):
			init = l
		case strings.Contains(l, `"type":"result"`):
			result = l
		case strings.Contains(l, `"type":"assistant"`), strings.Contains(l, `"type":"user"`):
			body = append(body, l)
		}
	}
	if init == "" || result == "" || len(body) == 0 {
		b.Fatalf("capture lacks init, body or result lines")
	}
	var buf bytes.Buffer
	buf.WriteString(init + "\n")
	n := 1
	for i := 0; n < 19999; i++ {
		for _, l := range body {
			if n == 19999 {
				break
			}
			l = strings.ReplaceAll(l, "msg_fake000", fmt.Sprintf("msg_%d_", i))
			l = strings.ReplaceAll(l, "toolu_fake000", fmt.Sprintf("toolu_%d_", i))
			buf.WriteString(l + "\n")
			n++
		}
	}
	buf.WriteString(result + "\n")
	return buf.Bytes()
}

// BenchmarkPipeline measures the JSONL → event path of a turn: the line reader over
// the CLI's stdout and the translator, 20,000 lines per op. Reports events/s and
// allocations per event (docs/performance.md).
func BenchmarkPipeline(b *testing.B) {
	data := transcript20k(b)
	events := 0
	emit := func(agent.Event) { events++ }
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		tr := newTranslator(time.Now, emit, agent.Usage{}, 0, 0)
		lr := proc.NewLineReader(bytes.NewReader(data), proc.DefaultMaxLine)
		for lr.Next() {
			tr.line(lr.Line())
		}
		if lr.Err() != nil {
			b.Fatal(lr.Err())
		}
	}
	elapsed := time.Since(start)
	b.ReportMetric(float64(events)/elapsed.Seconds(), "events/s")
	b.ReportMetric(float64(b.N*20000)/elapsed.Seconds(), "lines/s")
	b.ReportMetric(float64(testing.AllocsPerRun(1, func() {
		tr := newTranslator(time.Now, emit, agent.Usage{}, 0, 0)
		lr := proc.NewLineReader(bytes.NewReader(data), proc.DefaultMaxLine)
		for lr.Next() {
			tr.line(lr.Line())
		}
	}))/float64(max(events/b.N, 1)), "allocs/event")
}
