package proc

import (
	"context"
	"sync"

	"sortie/internal/agent"
)

// Guard keeps one agent session to one process at a time and lets StopSession reach
// that process from another goroutine. The zero Guard is ready to use; it must not be
// copied after first use.
type Guard struct {
	mu       sync.Mutex
	running  *Process // nil between Finish and the next Start
	reserved bool     // a turn holds the session before its process starts (Reserve)
	stopped  bool
}

// Reserve claims the session for a turn before its process starts, so that what the
// turn prepares (a reset of the CLI's state) never runs beside another turn's process
// or after StopSession. It fails as Start does, also while another reservation holds.
// Start then starts the reserving turn's process; release, called once the turn is
// over, ends the reservation.
func (g *Guard) Reserve(name string) (release func(), err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case g.stopped:
		return nil, agent.Errorf(agent.ErrTurnCancelled, "%s: session already stopped", name)
	case g.running != nil || g.reserved:
		return nil, agent.Errorf(agent.ErrResponse, "%s: a turn of this session is already running", name)
	}
	g.reserved = true
	return func() {
		g.mu.Lock()
		g.reserved = false
		g.mu.Unlock()
	}, nil
}

// Start starts c unless the session is stopped (a turn_cancelled error, "<name>:
// session already stopped") or its last process is not finished (a response_error,
// "<name>: a turn of this session is already running"). A program that cannot start
// is an error of ClassifyStart's kind, "<name>: starting <c.Path>: <cause>". name is the
// adapter's, e.g. "claude-code". Call Finish once the process has been waited for.
//
// The lock is held across Start so that a concurrent Stop either prevents the start
// or sees the process and stops it.
func (g *Guard) Start(ctx context.Context, c Command, name string) (*Process, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case g.stopped:
		return nil, agent.Errorf(agent.ErrTurnCancelled, "%s: session already stopped", name)
	case g.running != nil:
		return nil, agent.Errorf(agent.ErrResponse, "%s: a turn of this session is already running", name)
	}
	p, err := Start(ctx, c)
	if err != nil {
		return nil, &agent.Error{Kind: ClassifyStart(err), Message: name + ": starting " + c.Path, Err: err}
	}
	g.running = p
	return p, nil
}

// Finish ends the turn of the process Start returned, so that the next Start may run.
func (g *Guard) Finish() {
	g.mu.Lock()
	g.running = nil
	g.mu.Unlock()
}

// Stop makes every later Start fail and stops the running process, if any, gracefully
// (see Process.Stop), returning once it is reaped. It is safe to call more than once.
func (g *Guard) Stop() {
	g.mu.Lock()
	g.stopped = true
	running := g.running
	g.mu.Unlock()
	if running != nil {
		running.Stop()
	}
}
