package storetest

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"sortie/internal/store"
)

// contents is everything Reopen wrote, as the store reads it back.
type contents struct {
	Runs      []store.Run
	Events    []store.Event
	Retries   []store.Retry
	Holds     []store.Hold
	Session   store.Session
	Workflows []store.WorkflowSession
	Trace     []store.TraceEvent
	Pending   []store.Checkpoint
	Watches   []store.ReactionWatch
	Reactions []store.ReactionState
}

func readContents(t *testing.T, s store.Store, runID int64) contents {
	t.Helper()
	ctx := context.Background()
	var c contents
	var errs [10]error
	c.Runs, errs[0] = s.RecentRuns(ctx, 10)
	c.Events, errs[1] = s.RunEvents(ctx, runID, 10)
	c.Retries, errs[2] = s.LoadRetries(ctx)
	c.Holds, errs[3] = s.LoadHolds(ctx)
	c.Session, _, errs[4] = s.LoadSession(ctx, "1")
	c.Workflows, errs[5] = s.LoadWorkflowSessions(ctx)
	c.Trace, errs[6] = s.RunTraceEvents(ctx, runID, 10)
	c.Pending, errs[7] = s.PendingCheckpoints(ctx)
	c.Watches, errs[8] = s.LoadReactionWatches(ctx)
	c.Reactions, errs[9] = s.ReactionStates(ctx, "4")
	if err := errors.Join(errs[:]...); err != nil {
		t.Fatalf("reading the store back: %v", err)
	}
	return c
}

// Reopen checks that every kind of record a store writes is there, unchanged, when its
// database is opened again, and that a checkpoint's answer still counts afterwards.
// open must open the same database each time; Reopen closes what it opens.
func Reopen(t *testing.T, open func(t *testing.T) store.Store) {
	ctx := context.Background()
	s := open(t)
	id := start(t, s, NewRun("1", 1))
	if err := s.UpdateRunProgress(ctx, id, store.Progress{Turns: 2, Tokens: store.Tokens{Input: 10, Total: 10}, CostUSD: 0.5, Model: "opus"}); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendEvents(ctx, id, events(0, 3)); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveRetry(ctx, store.Retry{IssueID: "2", Identifier: "PROJ-2", Attempt: 2, DueAt: t0, Kind: store.RetryFailure, Error: "boom"}); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveHold(ctx, store.Hold{IssueID: "3", Identifier: "PROJ-3", Reason: "blocked", Since: t0}); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveSession(ctx, store.Session{IssueID: "1", SessionID: "s1", AgentKind: "claude-code"}); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveWorkflowSession(ctx, NewWorkflowSession("a", t0)); err != nil {
		t.Fatal(err)
	}
	e := NewTraceEvent("a", id, 1)
	e.Warnings = []string{"w"}
	if _, err := s.AppendTraceEvent(ctx, e); err != nil {
		t.Fatal(err)
	}
	armed := Arm(t, s, "a", NewCheckpoint("a", "plan", "approve", t0))
	if _, err := s.AnswerCheckpoint(ctx, NewAnswer("a", "approve", "approve", t0.Add(time.Second))); err != nil {
		t.Fatal(err)
	}
	// A handed-off run with its review, its issue's watch and reaction states.
	reviewed := start(t, s, NewRun("4", 1))
	if err := s.FinishRun(ctx, reviewed, store.RunEnd{Status: store.StatusHandedOff, EndedAt: t0, ReviewMetadata: `{"verdict":"approve"}`}); err != nil {
		t.Fatal(err)
	}
	w := NewReactionWatch("4", t0)
	w.PRNumber = 7
	if err := s.SaveReactionWatch(ctx, w); err != nil {
		t.Fatal(err)
	}
	observe(t, s, "4", store.ReactionCI, "sha1", t0)
	mark(t, s, "4", store.ReactionCI, "sha1", t0)
	observe(t, s, "4", store.ReactionReview, "c1", t0)
	if err := s.EscalateReaction(ctx, "4", store.ReactionReview, t0); err != nil {
		t.Fatal(err)
	}
	before := readContents(t, s, id)
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	s = open(t)
	defer s.Close()
	if after := readContents(t, s, id); !reflect.DeepEqual(after, before) {
		t.Fatalf("after reopening:\n%+v\nwant what was written:\n%+v", after, before)
	}
	if len(before.Runs) != 2 || before.Runs[0].ReviewMetadata == "" || len(before.Events) != 3 || len(before.Trace) != 1 ||
		len(before.Pending) != 1 || before.Session.SessionID != "s1" || len(before.Watches) != 1 || len(before.Reactions) != 2 {
		t.Fatalf("written before reopening: %+v; want 2 runs (one reviewed), 3 events, a trace event, a pending checkpoint, "+
			"a session, a reaction watch and 2 reaction states", before)
	}
	// The dispatch survives a restart: the same failure is not dispatched again.
	if mark(t, s, "4", store.ReactionCI, "sha1", t0) {
		t.Errorf("MarkReactionDispatched after reopen = true, want false: the failure was dispatched before")
	}
	// The answer survives a restart and still conflicts; the next issuance carries it.
	if _, err := s.AnswerCheckpoint(ctx, NewAnswer("a", "approve", "revise", t0)); !errors.Is(err, store.ErrConflict) {
		t.Errorf("second answer after reopen = %v, want ErrConflict", err)
	}
	if again := Arm(t, s, "a", NewCheckpoint("a", "plan", "approve", t0.Add(time.Minute))); again[0].Answer != "approve" || again[0].ID <= armed[0].ID {
		t.Errorf("re-armed after reopen = %+v, want a new row carrying the answer", again[0])
	}
	// Ids keep increasing across a reopen: they are never reused.
	if next := start(t, s, NewRun("1", 2)); next <= id {
		t.Errorf("StartRun after reopen = id %d, want above %d", next, id)
	}
}
