package server

import (
	"sync"
	"testing"

	"sortie/internal/agent"
	"sortie/internal/orchestrator"
)

func TestHub_PublishWithoutClientsCostsNothing(t *testing.T) {
	h := NewHub()
	ev := &agent.Event{Type: agent.EventNotification}
	a := orchestrator.Activity{Kind: orchestrator.ActivityAgentEvent, Identifier: "PROJ-1", Event: ev}
	if n := testing.AllocsPerRun(1000, func() { h.Publish(a) }); n != 0 {
		t.Errorf("Publish with no clients allocates %v times, want 0", n)
	}
	var nilHub *Hub
	nilHub.Publish(a) // a nil hub is a no-op
}

// Concurrent publishers to a client that never reads: every activity is either in its
// buffer or counted as dropped, exactly once.
func TestHub_DropsAreCountedExactlyOnce(t *testing.T) {
	h := NewHub()
	c := h.subscribe("")
	other := h.subscribe("PROJ-other")
	const workers, each = 8, 500
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				h.Publish(activity("PROJ-1", w*each+i))
			}
		})
	}
	wg.Wait()
	var reported int64
	for len(c.items) > 0 {
		reported += (<-c.items).dropped
	}
	reported += c.dropped.Load()
	if got := clientBuffer + reported; got != workers*each {
		t.Fatalf("buffered %d + dropped %d = %d, want %d", clientBuffer, reported, got, workers*each)
	}
	if len(other.items) != 0 || other.dropped.Load() != 0 {
		t.Fatalf("a client filtered to another issue got %d activities and %d drops", len(other.items), other.dropped.Load())
	}
	h.unsubscribe(c)
	h.unsubscribe(other)
	if h.Clients() != 0 {
		t.Fatalf("Clients() = %d after both left", h.Clients())
	}
}

func BenchmarkHubPublish(b *testing.B) {
	a := activity("PROJ-1", 1)
	b.Run("no clients", func(b *testing.B) {
		h := NewHub()
		for b.Loop() {
			h.Publish(a)
		}
	})
	b.Run("4 clients", func(b *testing.B) {
		h := NewHub()
		var wg sync.WaitGroup
		stop := make(chan struct{})
		for range 4 {
			c := h.subscribe("")
			wg.Go(func() {
				for {
					select {
					case <-c.items:
					case <-stop:
						return
					}
				}
			})
		}
		for b.Loop() {
			h.Publish(a)
		}
		close(stop)
		wg.Wait()
	})
}
