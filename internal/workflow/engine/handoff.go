package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"sortie/internal/store"
	"sortie/internal/workflow"
)

// The hand-off gate (docs/workflows.md, "Hand-off waits for the checkpoints"): the
// daemon does not hand an issue to humans as done while one of its workflow sessions
// has a gate (workflow.Gate: a blocking checkpoint every path to the workflow's end
// passes through) that no human answered. next_activity already refuses to walk around
// an activity; this catches the session that stops before reaching it.

// KindHandoffRefused is the trace's error kind of a hand-off the daemon refused.
const KindHandoffRefused = "handoff_refused"

// TraceHandoff is the tool name of the trace event of a refused hand-off: not a tool
// the agent calls, but the daemon's decision about the session.
const TraceHandoff = "handoff"

// maxHistory bounds the checkpoint history read for one issue's hand-off.
const maxHistory = 5000

// Blocker is a gate of an issue's workflow session that no human answered.
type Blocker struct {
	// SessionID is the session's id; "" when the issue has no session of the workflow
	// the daemon asked for (workflows.workflow).
	SessionID  string
	Workflow   string
	Activity   string
	Checkpoint string
	// Reached: the session entered the activity and was issued the checkpoint.
	Reached bool
}

func (b Blocker) String() string {
	switch {
	case b.SessionID == "":
		return fmt.Sprintf("%s/%s (no session of workflow %s was started)", b.Activity, b.Checkpoint, b.Workflow)
	case b.Reached:
		return fmt.Sprintf("%s/%s (issued, never answered by a human)", b.Activity, b.Checkpoint)
	}
	return fmt.Sprintf("%s/%s (activity %s never entered)", b.Activity, b.Checkpoint, b.Activity)
}

// checkpointHistory is the State's record of every checkpoint of an issue, resolved
// ones included (store.WorkflowReader has it, and MemoryState).
type checkpointHistory interface {
	IssueCheckpoints(ctx context.Context, issueID string, limit int) ([]store.Checkpoint, error)
}

// HandoffBlockers returns the gates of issueID's workflow sessions that no human
// answered, in session then gate order: none means the issue may be handed off. A gate
// is answered when a checkpoint of its activity and id issued to the session has a
// human's answer (dashboard, API or tracker), or was dismissed with condition_not_met
// (the condition is the agent's to evaluate). With want set (workflows.workflow), an
// issue with no session of that workflow has every gate of it as a blocker. An error
// (the state unreadable, a session's workflow gone from the library) means the caller
// cannot tell, and must not hand off.
func (e *Engine) HandoffBlockers(ctx context.Context, issueID, want string) ([]Blocker, error) {
	if issueID == "" {
		return nil, errors.New("engine: hand-off check: no issue id")
	}
	hist, ok := e.o.State.(checkpointHistory)
	if !ok {
		return nil, errors.New("engine: hand-off check: the workflow state keeps no checkpoint history")
	}
	lib := e.o.Library()
	if lib == nil {
		return nil, errors.New("no workflow library is loaded")
	}
	all, err := e.o.State.LoadWorkflowSessions(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the issue's workflow sessions: %w", err)
	}
	sessions := slices.DeleteFunc(all, func(s store.WorkflowSession) bool { return s.IssueID != issueID })
	if len(sessions) == 0 && want == "" {
		return nil, nil // no workflow of the issue's, none required: nothing gates it
	}
	rows, err := hist.IssueCheckpoints(ctx, issueID, maxHistory)
	if err != nil {
		return nil, fmt.Errorf("reading the issue's checkpoints: %w", err)
	}
	var out []Blocker
	started := false
	for _, s := range sessions {
		started = started || s.Workflow == want
		w, ok := lib.Workflow(s.Workflow)
		if !ok {
			return nil, fmt.Errorf("workflow session %s is of workflow %q, which is no longer in the library", s.SessionID, s.Workflow)
		}
		out = append(out, blockers(w, s.SessionID, rows)...)
	}
	if want != "" && !started {
		w, ok := lib.Workflow(want)
		if !ok {
			return nil, fmt.Errorf("workflows.workflow %q is not in the library", want)
		}
		out = append(out, blockers(w, "", nil)...)
	}
	return out, nil
}

// blockers returns the gates of w that session sid's checkpoints do not answer.
func blockers(w *workflow.Workflow, sid string, rows []store.Checkpoint) []Blocker {
	var out []Blocker
	for _, g := range w.Gates() {
		b := Blocker{SessionID: sid, Workflow: w.ID, Activity: g.Activity, Checkpoint: g.Checkpoint}
		answered := slices.ContainsFunc(rows, func(r store.Checkpoint) bool {
			if sid == "" || r.SessionID != sid || r.Activity != g.Activity || r.CheckpointID != g.Checkpoint {
				return false
			}
			b.Reached = true
			human := r.Answered() && r.AnswerSource != store.AnswerAutoAdvance
			return human || r.Resolution == store.ResolvedConditionNot
		})
		if !answered {
			out = append(out, b)
		}
	}
	return out
}

// DescribeBlockers is the reason a hand-off was refused, for the hold, the log and the
// trace: which checkpoints wait, and what a human can do.
func DescribeBlockers(bs []Blocker) string {
	return "not handed off: no human has answered the workflow's blocking checkpoint(s) " + ListBlockers(bs) +
		". Review the work; to accept it, move the issue on in the tracker yourself; to have the agent go through the checkpoint, move it back to an active state"
}

// TraceHandoffRefused records, in the trace of each session bs names, that the daemon
// refused to hand the issue off (how: "the run ended", "transition_issue to In
// Review"...). A store failure is logged.
func (e *Engine) TraceHandoffRefused(ctx context.Context, c Caller, bs []Blocker, how string) {
	bySession := map[string][]Blocker{}
	var sids []string
	for _, b := range bs {
		if b.SessionID == "" {
			continue
		}
		if _, ok := bySession[b.SessionID]; !ok {
			sids = append(sids, b.SessionID)
		}
		bySession[b.SessionID] = append(bySession[b.SessionID], b)
	}
	now := e.o.Now()
	for _, sid := range sids {
		list := bySession[sid]
		ev := store.TraceEvent{SessionID: sid, SpanID: newSpanID(), IssueID: c.IssueID, RunID: c.RunID, Tool: TraceHandoff,
			TS: now, OK: false, Workflow: list[0].Workflow, Activity: list[0].Activity,
			Error:  KindHandoffRefused + ": " + how + ": " + DescribeBlockers(list),
			Detail: "hand-off refused: " + how}
		id, err := e.o.State.AppendTraceEvent(ctx, ev.Bounded())
		if err != nil {
			e.o.Log.Warn("recording a refused hand-off in the workflow trace failed", "session_id", sid, "error", err)
			continue
		}
		ev.ID = id
		e.mu.Lock()
		if _, live := e.bindings[sid]; live {
			e.appendSegmentLocked(ev)
		}
		e.mu.Unlock()
		if h := e.o.Hooks.Traced; h != nil {
			e.runHook(TraceHandoff, func() { h(ev) })
		}
	}
}

// ListBlockers names the blockers, comma-separated.
func ListBlockers(bs []Blocker) string {
	parts := make([]string, len(bs))
	for i, b := range bs {
		parts[i] = b.String()
	}
	return strings.Join(parts, ", ")
}
