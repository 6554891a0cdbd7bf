// Package clock is the source of time for everything in Sortie that schedules: poll
// ticks, retry backoff, stall detection. Production code uses Real; tests use Fake and
// move time forward explicitly, so no test sleeps to wait for a timer.
package clock

import (
	"slices"
	"sort"
	"sync"
	"time"
)

// Clock tells the time and runs functions later.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f in its own goroutine once d has elapsed, unless stopped first.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a pending AfterFunc call.
type Timer interface {
	// Stop prevents the call; it reports whether the call was still pending.
	Stop() bool
}

// Real is the wall clock.
type Real struct{}

// Now returns time.Now().
func (Real) Now() time.Time { return time.Now() }

// AfterFunc wraps time.AfterFunc.
func (Real) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

// Fake is a manually advanced clock. Its zero value is not usable; call NewFake.
type Fake struct {
	mu     sync.Mutex
	now    time.Time
	seq    int
	timers []*fakeTimer
}

type fakeTimer struct {
	c    *Fake
	at   time.Time
	seq  int
	f    func()
	done bool
}

// NewFake returns a Fake clock set to t.
func NewFake(t time.Time) *Fake { return &Fake{now: t} }

// Now returns the fake time.
func (c *Fake) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// AfterFunc schedules f at Now()+d. A non-positive d fires on the next Advance (even
// Advance(0)).
func (c *Fake) AfterFunc(d time.Duration, f func()) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	t := &fakeTimer{c: c, at: c.now.Add(d), seq: c.seq, f: f}
	c.timers = append(c.timers, t)
	return t
}

func (t *fakeTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	if t.done {
		return false
	}
	t.done = true
	return true
}

// Advance moves the clock forward by d and runs, synchronously and in due order, every
// timer that is due. Functions run without the clock's lock held, so they may schedule
// more timers; those fire too if due within the advanced window.
func (c *Fake) Advance(d time.Duration) {
	c.mu.Lock()
	target := c.now.Add(d)
	c.mu.Unlock()
	for {
		c.mu.Lock()
		var next *fakeTimer
		live := c.timers[:0]
		for _, t := range c.timers {
			if !t.done {
				live = append(live, t)
			}
		}
		c.timers = live
		sort.Slice(c.timers, func(i, j int) bool {
			if !c.timers[i].at.Equal(c.timers[j].at) {
				return c.timers[i].at.Before(c.timers[j].at)
			}
			return c.timers[i].seq < c.timers[j].seq
		})
		if len(c.timers) > 0 && !c.timers[0].at.After(target) {
			next = c.timers[0]
			next.done = true
			if next.at.After(c.now) {
				c.now = next.at
			}
		}
		if next == nil {
			c.now = target
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
		next.f()
	}
}

// Pending returns the number of timers not yet fired or stopped.
func (c *Fake) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, t := range c.timers {
		if !t.done {
			n++
		}
	}
	return n
}

// NextDue returns how long until the earliest pending timer, and false if there is none.
func (c *Fake) NextDue() (time.Duration, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var best time.Time
	found := false
	for _, t := range c.timers {
		if !t.done && (!found || t.at.Before(best)) {
			best, found = t.at, true
		}
	}
	if !found {
		return 0, false
	}
	return best.Sub(c.now), true
}

// Due returns how long until each pending timer fires, soonest first: a test can check
// what a component has scheduled without waiting for it.
func (c *Fake) Due() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []time.Duration
	for _, t := range c.timers {
		if !t.done {
			out = append(out, t.at.Sub(c.now))
		}
	}
	slices.Sort(out)
	return out
}
