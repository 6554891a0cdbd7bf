package github

import (
	"sync"
	"testing"
	"time"

	"sortie/internal/testkit/fakegithub"
	"sortie/internal/tracker"
)

// testClock is a settable clock shared by the fake and the tracker.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func newTestClock() *testClock {
	return &testClock{now: time.Date(2026, 4, 1, 12, 0, 0, 0, time.UTC)}
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// newTestTracker builds a tracker against f through the registry, as the daemon does,
// with the shared clock.
func newTestTracker(t testing.TB, f *fakegithub.Server, clock *testClock, mutate ...func(*tracker.Config)) *Tracker {
	t.Helper()
	cfg := tracker.Config{
		Kind: "github", Endpoint: f.URL(), APIKey: fakegithub.Token, Project: f.Project(),
		ActiveStates: []string{"Todo", "In Progress"}, TerminalStates: []string{"Done", "Cancelled"},
		HandoffState: "Human Review", UserAgent: "sortie/test",
	}
	for _, m := range mutate {
		m(&cfg)
	}
	tr, err := tracker.New(cfg)
	if err != nil {
		t.Fatalf("tracker.New: %v", err)
	}
	g := tr.(*Tracker)
	g.now = clock.Now
	c := f.Client()
	c.CheckRedirect = g.client.CheckRedirect // the adapter's own redirect policy
	g.client = c
	return g
}
