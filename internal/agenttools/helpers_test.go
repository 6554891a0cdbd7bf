package agenttools

import (
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"sortie/internal/config"
)

// t0 is the fake clocks' start: a whole second, so that retry times are exact.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// testConfig is a daemon's configuration with the memory tracker, Todo and In Progress
// active and Done and Cancelled terminal, changed by mutate.
func testConfig(t *testing.T, mutate func(*config.Config)) *config.Config {
	t.Helper()
	dir := t.TempDir()
	c := &config.Config{Path: filepath.Join(dir, "WORKFLOW.md"), Dir: dir}
	c.Tracker = config.TrackerConfig{
		Kind:           "memory",
		ActiveStates:   []string{"Todo", "In Progress"},
		TerminalStates: []string{"Done", "Cancelled"},
	}
	c.DBPath = filepath.Join(dir, config.DefaultDBName)
	if mutate != nil {
		mutate(c)
	}
	return c
}

// moveLog is an Options.AgentMoving that records, in order, what the service tells it:
// that an agent is moving its issue, then whether the tracker made the move.
type moveLog struct {
	mu  sync.Mutex
	log []string
}

func (m *moveLog) moving(issueID, state string) func(moved bool) {
	m.add(fmt.Sprintf("moving %s to %s", issueID, state))
	return func(moved bool) { m.add(fmt.Sprintf("settled %s to %s: moved %v", issueID, state, moved)) }
}

func (m *moveLog) add(s string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.log = append(m.log, s)
}

// take returns what was recorded since the last take.
func (m *moveLog) take() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	l := m.log
	m.log = nil
	return l
}
