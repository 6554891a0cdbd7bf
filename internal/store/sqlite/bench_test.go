package sqlite

import (
	"context"
	"strconv"
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

// BenchmarkOneTurnRun is a store's part of a one-turn run, as the orchestrator writes
// it: the run's start, its process and session at the first event, and its end with
// the turn's other 19 events.
func BenchmarkOneTurnRun(b *testing.B) {
	ctx := context.Background()
	s, _ := openTemp(b)
	defer s.Close()
	events := make([]store.Event, 20)
	for i := range events {
		events[i] = store.Event{Time: time.Now(), Type: "tool_result", Message: strings.Repeat("x", 80)}
	}
	n := 0
	for b.Loop() {
		n++
		id, err := s.StartRun(ctx, storetest.NewRun(strconv.Itoa(n), 1))
		if err != nil {
			b.Fatal(err)
		}
		p := store.Progress{SessionID: "s", Model: "opus"}
		if err := s.RecordProcessAndProgress(ctx, id, store.Process{PID: 10, PGID: 10}, p, events[:1]); err != nil {
			b.Fatal(err)
		}
		p.Turns, p.Tokens = 1, store.Tokens{Input: 100, Output: 10, Total: 110}
		end := store.RunEnd{Status: store.StatusSucceeded, EndedAt: time.Now(), Progress: p, Events: events[1:]}
		if err := s.FinishRun(ctx, id, end); err != nil {
			b.Fatal(err)
		}
	}
}
