// Package ttlmap is a map whose entries are trusted for a while and then looked up
// afresh: the daemon's memory of answers that take system calls to find and seldom
// change (how a path resolves through its links), bounded so that keys seen once do
// not pile up.
package ttlmap

import (
	"maps"
	"sync"
	"time"
)

// Map maps K to V for ttl after each Put. It is safe for concurrent use; times are the
// caller's, so a test can drive them.
type Map[K comparable, V any] struct {
	ttl time.Duration
	max int

	mu sync.Mutex
	m  map[K]entry[V]
}

type entry[V any] struct {
	v  V
	at time.Time
}

// New returns an empty Map whose entries are fresh for ttl and which holds at most bound
// (at least 1).
func New[K comparable, V any](ttl time.Duration, bound int) *Map[K, V] {
	return &Map[K, V]{ttl: ttl, max: max(bound, 1), m: map[K]entry[V]{}}
}

// Get is the value put for k, while it is fresh at now: put less than ttl before now,
// and not after it (a clock that went back proves nothing).
func (c *Map[K, V]) Get(k K, now time.Time) (V, bool) {
	c.mu.Lock()
	e, ok := c.m[k]
	c.mu.Unlock()
	if !ok || !c.fresh(e, now) {
		var zero V
		return zero, false
	}
	return e.v, true
}

// Put remembers v for k as of now. A full Map first drops what has expired, or
// everything when nothing has.
func (c *Map[K, V]) Put(k K, v V, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[k]; !ok && len(c.m) >= c.max {
		n := len(c.m)
		maps.DeleteFunc(c.m, func(_ K, e entry[V]) bool { return !c.fresh(e, now) })
		if len(c.m) == n {
			clear(c.m)
		}
	}
	c.m[k] = entry[V]{v: v, at: now}
}

// Len is how many entries the Map holds, fresh or not.
func (c *Map[K, V]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}

// Clear forgets everything.
func (c *Map[K, V]) Clear() {
	c.mu.Lock()
	clear(c.m)
	c.mu.Unlock()
}

func (c *Map[K, V]) fresh(e entry[V], now time.Time) bool {
	return !now.Before(e.at) && now.Sub(e.at) < c.ttl
}
