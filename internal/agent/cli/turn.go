package cli

import (
	"context"
	"strings"

	"sortie/internal/agent"
	"sortie/internal/agent/proc"
	"sortie/internal/agent/remote"
)

// RunTurn runs the CLI once and translates its stdout into events, delivered in order
// through p.OnEvent before it returns. The last event is always the turn's terminal
// one, sent after the process has exited; nothing of the turn outlives RunTurn.
func (r *Runner[S]) RunTurn(ctx context.Context, as *agent.Session, p agent.TurnParams) (agent.TurnResult, error) {
	s, err := r.session(as)
	if err != nil {
		return agent.TurnResult{}, err
	}
	t := &turn[S]{r: r, s: s, onEvent: p.OnEvent, name: r.Name}
	if s.target != nil {
		t.name = "ssh to " + s.target.Host
	}
	// The turn is the session's before the dialect touches its state (a reset of the
	// CLI's directory under a running CLI, say): a second turn, or one after
	// StopSession, fails here.
	release, err := s.guard.Reserve(r.Kind)
	if err != nil {
		return t.fail(startFailure(err), err)
	}
	defer release()
	inv, err := r.Dialect.Turn(ctx, s, p, t.emit)
	if err != nil {
		return t.fail(agent.EventStartupFailed, err)
	}
	t.tr = inv.Translator
	c := proc.Command{Path: s.Exe, Args: s.Argv(inv.Args), Dir: s.Workspace, Env: s.Env,
		Grace: r.Grace, Wrap: s.launch.Wrap, Confine: s.launch.Confine, SweepCgroup: s.launch.SweepCgroup,
		Credential: s.cred, CgroupFD: s.cgroup}
	if inv.Stdin != "" {
		c.Stdin = strings.NewReader(inv.Stdin)
	}
	pr, err := s.guard.Start(ctx, c, r.Kind)
	if err != nil {
		return t.fail(startFailure(err), err)
	}
	defer s.guard.Finish()
	s.Turns++
	s.Prepared = false
	t.pid, as.PID = pr.PID(), pr.PID()
	defer func() { as.PID = 0 }()
	waited, remoteStopped := false, false
	defer func() { // whatever happens below (a translator's panic too), nothing of the turn outlives RunTurn
		if !waited {
			pr.Stop()
			pr.Wait()
		}
		if s.target != nil && !remoteStopped {
			remote.StopAnnounced(s.Exe, s.Env, *s.target, s.strict, pr.Stderr().String(), r.Grace)
		}
	}()

	if inv.Started != "" {
		t.emit(agent.Event{Type: agent.EventSessionStarted, Message: inv.Started})
	}
	if s.Turns == 1 {
		for _, n := range s.Notes {
			t.emit(agent.Event{Type: agent.EventNotification, Message: n})
		}
	}
	lr := proc.NewLineReader(pr.Stdout(), proc.DefaultMaxLine)
	defer lr.Release() // after the turn has handled its last line
	pgidRead := false
	for lr.Next() {
		if s.target != nil && !pgidRead {
			pgidRead = true
			// The remote shell names its group on stderr before the CLI starts.
			t.remotePGID = remote.AwaitPGID(pr.Stderr())
		}
		t.tr.Line(lr.Line())
	}
	readErr := lr.Err()
	if readErr != nil {
		pr.Stop() // on a reader failure, stop the group, then wait
	}
	exit := pr.Wait()
	waited = true
	if s.target != nil {
		// Whatever the turn's end, nothing of it may go on running on the host: without
		// a terminal the remote group gets no hangup when ssh ends, and the agent would
		// go on changing the workspace while the issue is retried.
		remoteStopped = true
		remote.StopAnnounced(s.Exe, s.Env, *s.target, s.strict, pr.Stderr().String(), r.Grace)
	}
	return t.end(exit, readErr, pr.Stderr().String())
}

// turn is one RunTurn.
type turn[S any] struct {
	r       *Runner[S]
	s       *Session[S]
	tr      Translator // nil until the dialect prepared the turn
	onEvent func(agent.Event)
	pid     int
	// remotePGID is the remote process group over SSH, once announced; 0 otherwise.
	remotePGID int
	name       string // what ran: the CLI's name, or "ssh to <host>" (whose pid is the local ssh's)
	apiMS      int64  // the turn's API time, once the translator settled it
}

// emit sends e with the turn's time, process and session filled in.
func (t *turn[S]) emit(e agent.Event) {
	e.Time = t.r.Now()
	e.PID = t.pid
	e.RemotePGID = t.remotePGID
	e.SessionID = t.s.ID
	if t.tr != nil {
		if id := t.tr.SessionID(); id != "" {
			e.SessionID = id
		}
	}
	if t.onEvent != nil {
		t.onEvent(e)
	}
}

// end lets the translator settle and judge the turn, keeps the session's figures and
// sends the terminal event.
func (t *turn[S]) end(exit proc.Exit, readErr error, stderr string) (agent.TurnResult, error) {
	e := &Ending{Exit: exit, ReadErr: readErr, Kind: proc.Classify(exit, readErr), Name: t.name, PID: t.pid, Host: t.s.SSHHost,
		Stderr: agent.Tail(agent.StripANSI(remote.StripPGID(stderr)), 1024)}
	if e.Kind == "" && exit.Stopped {
		e.Kind = agent.ErrTurnCancelled
	}
	totals, v := t.tr.End(e)
	if totals.SessionID != "" {
		t.s.ID = totals.SessionID
	}
	t.s.Usage, t.s.CostUSD, t.apiMS = totals.Usage, totals.CostUSD, totals.APIDurationMS
	switch {
	case e.Kind == agent.ErrTurnCancelled:
		return t.fail(agent.EventTurnCancelled, agent.Errorf(e.Kind, "%s (pid %d): turn cancelled (%s)", t.name, t.pid, exit))
	case v.Reason == agent.EventTurnCompleted:
		t.emit(agent.Event{Type: agent.EventTurnCompleted, Usage: t.s.Usage, CostUSD: t.s.CostUSD, APIDurationMS: t.apiMS,
			Model: v.Model, Message: v.Message})
		return t.resultOf(agent.EventTurnCompleted), nil
	}
	return t.fail(v.Reason, agent.Errorf(v.Kind, "%s", v.Message))
}

// fail sends the terminal event of type reason carrying err's text and returns err.
func (t *turn[S]) fail(reason agent.EventType, err error) (agent.TurnResult, error) {
	t.emit(agent.Event{Type: reason, Usage: t.s.Usage, CostUSD: t.s.CostUSD, APIDurationMS: t.apiMS, Message: err.Error()})
	return t.resultOf(reason), err
}

func (t *turn[S]) resultOf(reason agent.EventType) agent.TurnResult {
	return agent.TurnResult{SessionID: t.s.ID, ExitReason: reason, Usage: t.s.Usage, CostUSD: t.s.CostUSD, PID: t.pid}
}

// startFailure is the terminal event of a turn whose process did not start:
// turn_cancelled for a stopped session or a cancelled context, startup_failed else.
func startFailure(err error) agent.EventType {
	if agent.KindOf(err) == agent.ErrTurnCancelled {
		return agent.EventTurnCancelled
	}
	return agent.EventStartupFailed
}
