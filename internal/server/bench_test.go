package server

import (
	"net/http"
	"slices"
	"testing"
	"time"

	"sortie/internal/orchestrator"
)

// BenchmarkState500 serves GET /api/v1/state for a scheduler with 500 running
// sessions (plus 50 retries and 20 holds), through the whole handler chain with a
// bearer token, and reports the median and 99th-percentile latency of the b.N
// requests. The target (issue 7) is p99 < 5 ms. The snapshot itself comes from a fake:
// the orchestrator's own cost of building it is measured in its package.
func BenchmarkState500(b *testing.B) {
	f := newFixture(b, func(o *Options) { o.AuthToken = testToken })
	snap := baseSnapshot()
	snap.MaxAgents = 500
	for i := range 500 {
		v := runningView(i)
		v.LastMessage = "Edited internal/server/state.go: build the running list once and encode it in one pass"
		snap.Running = append(snap.Running, v)
	}
	for i := range 50 {
		snap.Retrying = append(snap.Retrying, orchestrator.RetryView{IssueID: "r", Identifier: "PROJ-R" + itoa(i),
			Attempt: 2, Kind: "failure", DueAt: t0.Add(time.Duration(i) * time.Second), Error: "turn_failed: exit 1"})
	}
	for i := range 20 {
		snap.Held = append(snap.Held, orchestrator.HeldView{IssueID: "h", Identifier: "PROJ-H" + itoa(i),
			Reason: "blocked", Message: "Which of the two migrations should run first?", State: "In Progress", Since: t0})
	}
	f.sched.snap = snap
	h := f.srv.Handler()
	req := request(http.MethodGet, "/api/v1/state", "Authorization", "Bearer "+testToken)

	lat := make([]time.Duration, 0, b.N)
	var size int
	b.ReportAllocs()
	w := &discardWriter{h: http.Header{}}
	for b.Loop() {
		clear(w.h)
		w.code, w.n = 0, 0
		start := time.Now()
		h.ServeHTTP(w, req)
		lat = append(lat, time.Since(start))
		if w.code != http.StatusOK {
			b.Fatalf("status %d", w.code)
		}
		size = w.n
	}
	slices.Sort(lat)
	pct := func(p float64) float64 {
		return float64(lat[min(int(float64(len(lat))*p), len(lat)-1)].Microseconds()) / 1000
	}
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.ReportMetric(float64(size), "bytes/resp")
}

// discardWriter is a ResponseWriter that counts the body and keeps nothing, like a
// connection that sends as fast as the server writes: the benchmark measures the
// server, not a recorder's copy of 300 KB.
type discardWriter struct {
	h    http.Header
	code int
	n    int
}

func (d *discardWriter) Header() http.Header  { return d.h }
func (d *discardWriter) WriteHeader(code int) { d.code = code }
func (d *discardWriter) Write(b []byte) (int, error) {
	if d.code == 0 {
		d.code = http.StatusOK
	}
	d.n += len(b)
	return len(b), nil
}
