package server

import (
	"sync"
	"sync/atomic"

	"sortie/internal/orchestrator"
)

// clientBuffer is how many activities a live-feed client may fall behind before the
// hub drops activities for it (and tells it how many with a dropped notice).
const clientBuffer = 256

// Hub fans the orchestrator's activity out to the clients of the live feed
// (GET /api/v1/events). Publish is called synchronously from the orchestrator's loop
// and workers for every activity, agent events included, so it never blocks and never
// waits for a client: each client has a bounded buffer, and a client whose buffer is
// full misses activities until it catches up, then learns how many it missed. The
// metrics count every activity on their own path; the feed is best effort.
//
// A Hub is safe for concurrent use; the zero value is not, use NewHub. One Hub may feed
// several Servers.
type Hub struct {
	mu      sync.RWMutex
	clients map[*feedClient]struct{}
	n       atomic.Int64  // len(clients), for Publish's lock-free fast path
	changed chan struct{} // closed and replaced when a client joins or leaves; under mu
}

// feedClient is one subscriber of the hub: one SSE connection.
type feedClient struct {
	issue   string // only activity of this issue identifier; "" for all
	items   chan feedItem
	dropped atomic.Int64 // activities dropped and not yet reported
}

// feedItem is an activity and how many activities were dropped just before it.
type feedItem struct {
	a       orchestrator.Activity
	dropped int64
}

// NewHub returns a Hub with no clients.
func NewHub() *Hub {
	return &Hub{clients: map[*feedClient]struct{}{}, changed: make(chan struct{})}
}

// Publish hands a to every client that wants it, without blocking. It costs one atomic
// load when nobody is listening. A nil Hub ignores it, so Publish can be wired as
// orchestrator.Options.Activity unconditionally.
func (h *Hub) Publish(a orchestrator.Activity) {
	if h == nil || h.n.Load() == 0 {
		return
	}
	h.mu.RLock()
	defer h.mu.RUnlock()
	for c := range h.clients {
		if c.issue != "" && c.issue != a.Identifier {
			continue
		}
		// Carry the count of activities dropped so far with the next one delivered, so
		// the client sees the gap where it happened. The count is taken and, if this
		// one is dropped too, put back: every drop is reported exactly once even when
		// workers publish concurrently.
		var d int64
		if c.dropped.Load() > 0 {
			d = c.dropped.Swap(0)
		}
		select {
		case c.items <- feedItem{a: a, dropped: d}:
		default:
			c.dropped.Add(d + 1)
		}
	}
}

// Clients reports how many live-feed clients are connected.
func (h *Hub) Clients() int { return int(h.n.Load()) }

// subscribe adds a client that wants the activity of issue ("" for all).
func (h *Hub) subscribe(issue string) *feedClient {
	c := &feedClient{issue: issue, items: make(chan feedItem, clientBuffer)}
	h.mu.Lock()
	h.clients[c] = struct{}{}
	h.n.Store(int64(len(h.clients)))
	h.notifyLocked()
	h.mu.Unlock()
	return c
}

// unsubscribe removes c. Its channel is never closed: a Publish that read the client
// set before the removal may still send to it, into its buffer, and the garbage
// collector takes both.
func (h *Hub) unsubscribe(c *feedClient) {
	h.mu.Lock()
	delete(h.clients, c)
	h.n.Store(int64(len(h.clients)))
	h.notifyLocked()
	h.mu.Unlock()
}

func (h *Hub) notifyLocked() {
	close(h.changed)
	h.changed = make(chan struct{})
}

// clientsChanged returns a channel closed at the next join or leave (for tests, which
// wait on it instead of sleeping) and the number of clients now.
func (h *Hub) clientsChanged() (<-chan struct{}, int) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.changed, len(h.clients)
}
