package proc

import "context"

// Trace observes the processes Start starts under a context, as net/http/httptrace
// observes a request: the daemon attaches one to a run's context so that it learns
// each agent process of the run as it starts (a fork-per-turn CLI starts one a turn),
// through every adapter, without the adapters knowing. The agent socket binds the
// run's capability token to these processes. Any field may be nil.
type Trace struct {
	// Starting is called just before a process starts, Started just after, with its
	// pid, or 0 when it did not start. Both run on the goroutine that calls Start.
	Starting func()
	Started  func(pid int)
	// Exited is called once the process has exited, before its pid can be reused:
	// while it is a zombie, or, where waitid is unavailable, right after it is reaped.
	Exited func(pid int)
}

type traceKey struct{}

// WithTrace returns ctx with t attached: every Start under the returned context (a
// context derived from it included) reports to t.
func WithTrace(ctx context.Context, t *Trace) context.Context {
	return context.WithValue(ctx, traceKey{}, t)
}

// traceOf is the Trace attached to ctx, or nil.
func traceOf(ctx context.Context) *Trace {
	t, _ := ctx.Value(traceKey{}).(*Trace)
	return t
}

func (t *Trace) starting() {
	if t != nil && t.Starting != nil {
		t.Starting()
	}
}

func (t *Trace) started(pid int) {
	if t != nil && t.Started != nil {
		t.Started(pid)
	}
}

func (t *Trace) exited(pid int) {
	if t != nil && t.Exited != nil {
		t.Exited(pid)
	}
}
