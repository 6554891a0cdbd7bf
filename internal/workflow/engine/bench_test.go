package engine

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"sortie/internal/store/sqlite"
)

// BenchmarkToolCall measures one workflow tool call as the daemon serves it: token
// check, the tool, a new signed token saved to State and a trace event appended. The
// memory sub-benchmark is the engine alone (standalone mode); sqlite adds the daemon's
// durable writes (two per call), which dominate.
func BenchmarkToolCall(b *testing.B) {
	lib := writeLibrary(b, flowFiles)
	for _, backend := range []string{"memory", "sqlite"} {
		b.Run(backend, func(b *testing.B) {
			var h *harness
			if backend == "memory" {
				h = newHarness(b, lib)
			} else {
				st, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "bench.db"))
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { st.Close() })
				h = newHarness(b, lib, func(o *Options) { o.State = st })
			}
			tok := h.start("flow")["session_token"].(string)
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				args, _ := json.Marshal(obj{"session_token": tok, "summary": true})
				r := h.e.Call(ctx, Caller{}, ToolGetWorkflow, args)
				if r.IsError {
					b.Fatalf("get_workflow: %+v", r.Body)
				}
				tok = r.Meta["session_token"].(string)
			}
		})
	}
}
