package sqlite

import (
	"context"
	"strings"
	"testing"
	"time"

	"sortie/internal/store"
	"sortie/internal/store/storetest"
)

// BenchmarkAppendEvents appends batches of 64 events, as the orchestrator does, to a
// run whose log is already full, so every batch also trims.
func BenchmarkAppendEvents(b *testing.B) {
	ctx := context.Background()
	s, _ := openTemp(b)
	defer s.Close()
	id, err := s.StartRun(ctx, storetest.NewRun("1", 1))
	if err != nil {
		b.Fatal(err)
	}
	batch := make([]store.Event, 64)
	for i := range batch {
		batch[i] = store.Event{Time: time.Now(), Type: "tool_result", Message: strings.Repeat("x", 120)}
	}
	for range store.MaxEventsPerRun/len(batch) + 1 {
		if err := s.AppendEvents(ctx, id, batch); err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		if err := s.AppendEvents(ctx, id, batch); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*len(batch))/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkUpdateRunProgress records progress of one running run.
func BenchmarkUpdateRunProgress(b *testing.B) {
	ctx := context.Background()
	s, _ := openTemp(b)
	defer s.Close()
	id, err := s.StartRun(ctx, storetest.NewRun("1", 1))
	if err != nil {
		b.Fatal(err)
	}
	var n int64
	for b.Loop() {
		n++
		p := store.Progress{Turns: int(n / 100), Tokens: store.Tokens{Input: n, Output: n, Total: 2 * n, CacheRead: n}, CostUSD: float64(n) / 1e6, Model: "opus"}
		if err := s.UpdateRunProgress(ctx, id, p); err != nil {
			b.Fatal(err)
		}
	}
}
