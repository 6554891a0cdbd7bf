package storetest

// The workflow records' part of the suite: sessions, trace and checkpoints.

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"sortie/internal/store"
)

// workflowTests are the cases of the suite about store.WorkflowStore.
var workflowTests = []struct {
	name string
	fn   func(t *testing.T, s store.Store)
}{
	{"WorkflowSessionsUpsertLoadDelete", testWorkflowSessions},
	{"EndIssueWorkflowsAbandonsPendingCheckpoints", testEndIssueWorkflows},
	{"TraceEventsRoundTripOrderAndLimits", testTraceEvents},
	{"TraceEventsAgentTextIsBounded", testTraceEventsBounded},
	{"ArmCheckpointsSupersedesAndCarriesAnswers", testArmCheckpoints},
	{"ArmCheckpointsRejectsBadBatchWhole", testArmCheckpointsValidation},
	{"AnswerCheckpoint", testAnswerCheckpoint},
	{"ResolveCheckpoint", testResolveCheckpoint},
	{"CheckpointListsOrderAndLimits", testCheckpointLists},
}

// NewWorkflowSession returns a valid workflow session of issue "i-"+id for
// SaveWorkflowSession.
func NewWorkflowSession(id string, updated time.Time) store.WorkflowSession {
	return store.WorkflowSession{SessionID: id, Workflow: "work-package", IssueID: "i-" + id,
		Identifier: "P-" + id, Token: "tok-" + id, UpdatedAt: updated}
}

// NewTraceEvent returns the n-th valid trace event of a session for AppendTraceEvent:
// its time is n seconds after the suite's start time and its Detail is n.
func NewTraceEvent(session string, runID int64, n int) store.TraceEvent {
	return store.TraceEvent{SessionID: session, SpanID: fmt.Sprint("span-", n), IssueID: "i-" + session, RunID: runID,
		Tool: "next_activity", TS: t0.Add(time.Duration(n) * time.Second), Duration: 12 * time.Millisecond, OK: true,
		Workflow: "work-package", Activity: "plan", AgentID: "worker-1", Detail: fmt.Sprint(n)}
}

// NewCheckpoint returns a valid checkpoint of a session (of issue "i-"+session) for
// ArmCheckpoints, with every field set.
func NewCheckpoint(session, activity, id string, issued time.Time) store.Checkpoint {
	return store.Checkpoint{SessionID: session, IssueID: "i-" + session, Identifier: "P-" + session, RunID: 7,
		Workflow: "work-package", Activity: activity, CheckpointID: id, Name: "Approve " + id, Message: "Proceed?",
		Options:  []store.CheckpointOption{{ID: "approve", Label: "Approve"}, {ID: "revise", Label: "Revise", Description: "ask again"}},
		Blocking: true, DefaultOption: "approve", AutoAdvanceMS: 30_000, Conditional: true, IssuedAt: issued}
}

// Arm arms cps for a session and fails the test unless every one is armed.
func Arm(t testing.TB, s store.Store, session string, cps ...store.Checkpoint) []store.Checkpoint {
	t.Helper()
	got, err := s.ArmCheckpoints(context.Background(), session, cps)
	if err != nil {
		t.Fatalf("ArmCheckpoints(%s): %v", session, err)
	}
	if len(got) != len(cps) {
		t.Fatalf("ArmCheckpoints(%s) returned %d rows, want %d", session, len(got), len(cps))
	}
	return got
}

// NewAnswer returns alice's answer from the dashboard, for AnswerCheckpoint.
func NewAnswer(session, checkpoint, option string, at time.Time) store.CheckpointAnswer {
	return store.CheckpointAnswer{SessionID: session, CheckpointID: checkpoint, Option: option, By: "alice",
		Source: store.AnswerDashboard, At: at}
}

// checkpointSummary names a checkpoint row by what the tests compare.
func checkpointSummary(cps []store.Checkpoint) []string {
	return each(cps, func(cp store.Checkpoint) string {
		return fmt.Sprintf("%s/%s/%s answer=%q resolution=%q", cp.SessionID, cp.Activity, cp.CheckpointID, cp.Answer, cp.Resolution)
	})
}

func traceDetails(es []store.TraceEvent) []string {
	return each(es, func(e store.TraceEvent) string { return e.Detail })
}

func testWorkflowSessions(t *testing.T, s store.Store) {
	ctx := context.Background()

	if got, err := s.LoadWorkflowSessions(ctx); err != nil || len(got) != 0 {
		t.Fatalf("LoadWorkflowSessions on a new store = %v, %v; want none", got, err)
	}
	a := NewWorkflowSession("a", t0.Add(time.Minute))
	b := NewWorkflowSession("b", t0)
	standalone := store.WorkflowSession{SessionID: "c", Workflow: "meta", Token: "tok-c", UpdatedAt: t0.Add(2 * time.Minute)}
	for _, ws := range []store.WorkflowSession{a, b, standalone} {
		if err := s.SaveWorkflowSession(ctx, ws); err != nil {
			t.Fatal(err)
		}
	}
	// A newer token replaces the record of its session.
	b.Token, b.UpdatedAt = "tok-b2", t0.Add(3*time.Minute)
	if err := s.SaveWorkflowSession(ctx, b); err != nil {
		t.Fatal(err)
	}
	got, err := s.LoadWorkflowSessions(ctx)
	if want := []store.WorkflowSession{a, standalone, b}; err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("LoadWorkflowSessions = %+v, %v; want oldest update first %+v", got, err, want)
	}

	for _, bad := range []store.WorkflowSession{
		{Workflow: "w", Token: "t", UpdatedAt: t0},
		{SessionID: "x", Token: "t", UpdatedAt: t0},
		{SessionID: "x", Workflow: "w", UpdatedAt: t0},
		{SessionID: "x", Workflow: "w", Token: "t"},
	} {
		if err := s.SaveWorkflowSession(ctx, bad); err == nil {
			t.Errorf("SaveWorkflowSession(%+v) succeeded, want a validation error", bad)
		}
	}

	// Deleting a session forgets its pending checkpoints but keeps its resolved ones
	// (the issue's decisions) and its trace; other sessions keep theirs.
	Arm(t, s, "a", NewCheckpoint("a", "plan", "done", t0))
	if _, err := s.ResolveCheckpoint(ctx, "a", "done", store.ResolvedConditionNot, t0.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	Arm(t, s, "a", NewCheckpoint("a", "review", "approve", t0.Add(time.Minute)))
	Arm(t, s, "b", NewCheckpoint("b", "plan", "approve", t0))
	if _, err := s.AppendTraceEvent(ctx, NewTraceEvent("a", 0, 1)); err != nil {
		t.Fatal(err)
	}
	for range 2 { // deleting a missing session is not an error
		if err := s.DeleteWorkflowSession(ctx, "a"); err != nil {
			t.Fatal(err)
		}
	}
	got, _ = s.LoadWorkflowSessions(ctx)
	if len(got) != 2 || got[0].SessionID != "c" || got[1].SessionID != "b" {
		t.Errorf("sessions after DeleteWorkflowSession(a) = %+v, want c and b", got)
	}
	pending, _ := s.PendingCheckpoints(ctx)
	if want := []string{`b/plan/approve answer="" resolution=""`}; !reflect.DeepEqual(checkpointSummary(pending), want) {
		t.Errorf("pending after deleting session a = %q, want %q", checkpointSummary(pending), want)
	}
	history, _ := s.IssueCheckpoints(ctx, "i-a", 10)
	if want := []string{`a/plan/done answer="" resolution="condition_not_met"`}; !reflect.DeepEqual(checkpointSummary(history), want) {
		t.Errorf("checkpoints of issue i-a after deleting its session = %q, want only the resolved one %q", checkpointSummary(history), want)
	}
	if trace, _ := s.TraceEvents(ctx, "a", 10); len(trace) != 1 {
		t.Errorf("trace of deleted session a = %d events, want the 1 recorded", len(trace))
	}
}

// testEndIssueWorkflows: ending an
// issue's workflows resolves its pending checkpoints (answered or not) as abandoned,
// deletes its session records, and keeps its history (resolved checkpoints, answers,
// trace) and every other issue's records.
func testEndIssueWorkflows(t *testing.T, s store.Store) {
	ctx := context.Background()
	// Issue i-a has two sessions: a (a record, a resolved and an answered pending
	// checkpoint, a trace) and a2 (a pending checkpoint, no record); issue i-b has b.
	for _, ws := range []store.WorkflowSession{NewWorkflowSession("a", t0), NewWorkflowSession("b", t0)} {
		if err := s.SaveWorkflowSession(ctx, ws); err != nil {
			t.Fatal(err)
		}
	}
	Arm(t, s, "a", NewCheckpoint("a", "plan", "done", t0))
	if _, err := s.ResolveCheckpoint(ctx, "a", "done", store.ResolvedConditionNot, t0.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	Arm(t, s, "a", NewCheckpoint("a", "review", "approve", t0.Add(2*time.Second)))
	if _, err := s.AnswerCheckpoint(ctx, NewAnswer("a", "approve", "approve", t0.Add(3*time.Second))); err != nil {
		t.Fatal(err)
	}
	a2 := NewCheckpoint("a2", "plan", "approve", t0.Add(4*time.Second))
	a2.IssueID = "i-a"
	Arm(t, s, "a2", a2)
	Arm(t, s, "b", NewCheckpoint("b", "plan", "approve", t0))
	if _, err := s.AppendTraceEvent(ctx, NewTraceEvent("a", 1, 1)); err != nil {
		t.Fatal(err)
	}

	ended, err := s.EndIssueWorkflows(ctx, "i-a", t0.Add(time.Minute))
	if err != nil || !reflect.DeepEqual(ended, []string{"a", "a2"}) {
		t.Fatalf("EndIssueWorkflows(i-a) = %q, %v; want [a a2]", ended, err)
	}
	history, _ := s.IssueCheckpoints(ctx, "i-a", 10)
	want := []string{
		`a/plan/done answer="" resolution="condition_not_met"`,
		`a/review/approve answer="approve" resolution="abandoned"`,
		`a2/plan/approve answer="" resolution="abandoned"`,
	}
	if !reflect.DeepEqual(checkpointSummary(history), want) {
		t.Errorf("checkpoints of i-a = %q, want %q", checkpointSummary(history), want)
	}
	if !history[1].ResolvedAt.Equal(t0.Add(time.Minute)) || history[1].AnsweredBy != "alice" {
		t.Errorf("abandoned checkpoint = %+v, want resolved at +1m with alice's answer kept", history[1])
	}
	pending, _ := s.PendingCheckpoints(ctx)
	if want := []string{`b/plan/approve answer="" resolution=""`}; !reflect.DeepEqual(checkpointSummary(pending), want) {
		t.Errorf("pending after ending i-a = %q, want only issue i-b's %q", checkpointSummary(pending), want)
	}
	sessions, _ := s.LoadWorkflowSessions(ctx)
	if len(sessions) != 1 || sessions[0].SessionID != "b" {
		t.Errorf("sessions after ending i-a = %+v, want only b", sessions)
	}
	if trace, _ := s.TraceEvents(ctx, "a", 10); len(trace) != 1 {
		t.Errorf("trace of ended session a = %d events, want the 1 recorded", len(trace))
	}

	if ended, err := s.EndIssueWorkflows(ctx, "i-a", t0.Add(2*time.Minute)); err != nil || len(ended) != 0 {
		t.Errorf("ending i-a again = %q, %v; want nothing to end", ended, err)
	}
	if _, err := s.EndIssueWorkflows(ctx, "", t0); err == nil {
		t.Error("EndIssueWorkflows with an empty issue id succeeded, want an error")
	}
}

func testTraceEvents(t *testing.T, s store.Store) {
	ctx := context.Background()

	full := store.TraceEvent{SessionID: "a", SpanID: "sp1", IssueID: "i-a", RunID: 3, Tool: "respond_checkpoint",
		TS: time.Date(2026, 1, 2, 3, 4, 5, 678_901_234, time.FixedZone("UTC+5", 5*3600)), Duration: 1500*time.Millisecond + 999*time.Microsecond,
		OK: false, Workflow: "work-package", Activity: "review", AgentID: "worker-2", Error: "checkpoint_not_pending",
		Warnings: []string{"version drift", "slow"}, Detail: "approve-plan: approve (by alice)"}
	id, err := s.AppendTraceEvent(ctx, full)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.TraceEvents(ctx, "a", 10)
	if err != nil || len(got) != 1 {
		t.Fatalf("TraceEvents = %+v, %v; want the one event", got, err)
	}
	want := full
	want.ID = id
	want.TS = full.TS.Truncate(time.Millisecond).UTC()
	want.Duration = 1500 * time.Millisecond // whole milliseconds
	if !reflect.DeepEqual(got[0], want) {
		t.Fatalf("TraceEvents round trip:\n got %+v\nwant %+v", got[0], want)
	}

	// Ids increase; each list is the newest limit, oldest first; a run's trace spans
	// its sessions.
	last := id
	for i := range 5 {
		for _, e := range []store.TraceEvent{NewTraceEvent("b", 9, i), NewTraceEvent("c", 9, 10+i), NewTraceEvent("d", 0, 20+i)} {
			id, err := s.AppendTraceEvent(ctx, e)
			if err != nil {
				t.Fatal(err)
			}
			if id <= last {
				t.Fatalf("AppendTraceEvent id %d after %d, want increasing ids", id, last)
			}
			last = id
		}
	}
	tests := []struct {
		name string
		list func() ([]store.TraceEvent, error)
		want []string
	}{
		{"session tail", func() ([]store.TraceEvent, error) { return s.TraceEvents(ctx, "b", 3) }, []string{"2", "3", "4"}},
		{"session whole", func() ([]store.TraceEvent, error) { return s.TraceEvents(ctx, "c", 100) }, []string{"10", "11", "12", "13", "14"}},
		{"unknown session", func() ([]store.TraceEvent, error) { return s.TraceEvents(ctx, "zz", 10) }, []string{}},
		{"run tail", func() ([]store.TraceEvent, error) { return s.RunTraceEvents(ctx, 9, 4) }, []string{"3", "13", "4", "14"}},
		{"unknown run", func() ([]store.TraceEvent, error) { return s.RunTraceEvents(ctx, 404, 4) }, []string{}},
	}
	for _, tt := range tests {
		got, err := tt.list()
		if err != nil || !reflect.DeepEqual(traceDetails(got), tt.want) {
			t.Errorf("%s = %q, %v; want %q", tt.name, traceDetails(got), err, tt.want)
		}
	}
	if got, _ := s.TraceEvents(ctx, "d", 1); len(got) != 1 || got[0].Warnings != nil || got[0].Error != "" {
		t.Errorf("event without warnings read back as %+v, want nil Warnings", got)
	}

	for _, limit := range []int{0, -1} {
		if _, err := s.TraceEvents(ctx, "b", limit); err == nil {
			t.Errorf("TraceEvents(limit %d) succeeded, want an error", limit)
		}
		if _, err := s.RunTraceEvents(ctx, 9, limit); err == nil {
			t.Errorf("RunTraceEvents(limit %d) succeeded, want an error", limit)
		}
	}
	for _, mutate := range []func(*store.TraceEvent){
		func(e *store.TraceEvent) { e.SessionID = "" },
		func(e *store.TraceEvent) { e.SpanID = "" },
		func(e *store.TraceEvent) { e.Tool = "" },
		func(e *store.TraceEvent) { e.TS = time.Time{} },
	} {
		e := NewTraceEvent("b", 9, 99)
		mutate(&e)
		if _, err := s.AppendTraceEvent(ctx, e); err == nil {
			t.Errorf("AppendTraceEvent(%+v) succeeded, want a validation error", e)
		}
	}
}

func testTraceEventsBounded(t *testing.T, s store.Store) {
	ctx := context.Background()
	e := NewTraceEvent("a", 1, 1)
	e.Error = strings.Repeat("é", store.MaxRunErrorBytes)
	e.Detail = strings.Repeat("x", store.MaxEventMessageBytes+1)
	e.Warnings = []string{strings.Repeat("w", store.MaxEventMessageBytes*2)}
	if _, err := s.AppendTraceEvent(ctx, e); err != nil {
		t.Fatal(err)
	}
	got, _ := s.TraceEvents(ctx, "a", 1)
	if len(got) != 1 {
		t.Fatalf("TraceEvents = %d events, want 1", len(got))
	}
	g := got[0]
	if len(g.Error) > store.MaxRunErrorBytes || len(g.Detail) > store.MaxEventMessageBytes ||
		len(g.Warnings) != 1 || len(g.Warnings[0]) > store.MaxEventMessageBytes || !strings.HasSuffix(g.Detail, "…") {
		t.Fatalf("stored error %d bytes, detail %d bytes, warnings %d; want at most %d, %d (ending in …), one of at most %d",
			len(g.Error), len(g.Detail), len(g.Warnings), store.MaxRunErrorBytes, store.MaxEventMessageBytes, store.MaxEventMessageBytes)
	}
}

func testArmCheckpoints(t *testing.T, s store.Store) {
	ctx := context.Background()
	t1, t2, t3 := t0.Add(time.Minute), t0.Add(2*time.Minute), t0.Add(3*time.Minute)

	first := Arm(t, s, "a", NewCheckpoint("a", "plan", "approve-plan", t0), NewCheckpoint("a", "plan", "pick-scope", t0))
	other := Arm(t, s, "b", NewCheckpoint("b", "plan", "approve-plan", t0))
	want := NewCheckpoint("a", "plan", "approve-plan", t0)
	want.ID = first[0].ID
	if !reflect.DeepEqual(first[0], want) || first[0].ID == 0 || first[1].ID <= first[0].ID {
		t.Fatalf("armed row = %+v (ids %d, %d), want %+v with increasing ids", first[0], first[0].ID, first[1].ID, want)
	}
	if _, err := s.AnswerCheckpoint(ctx, NewAnswer("a", "approve-plan", "approve", t0.Add(10*time.Second))); err != nil {
		t.Fatal(err)
	}

	// Re-entering plan supersedes both pending rows; the answered one carries its answer
	// to the new issuance of the same activity and checkpoint id, the other starts
	// unanswered, and a new checkpoint id starts unanswered.
	second := Arm(t, s, "a", NewCheckpoint("a", "plan", "approve-plan", t1), NewCheckpoint("a", "plan", "pick-scope", t1),
		NewCheckpoint("a", "plan", "extra", t1))
	if c := second[0]; c.Answer != "approve" || c.AnsweredBy != "alice" || c.AnswerSource != store.AnswerDashboard ||
		!c.AnsweredAt.Equal(t0.Add(10*time.Second)) || !c.Pending() {
		t.Errorf("re-armed approve-plan = %+v, want pending with alice's carried answer", c)
	}
	if second[1].Answered() || second[2].Answered() {
		t.Errorf("re-armed unanswered checkpoints = %q, want no answers", checkpointSummary(second[1:]))
	}
	history, _ := s.IssueCheckpoints(ctx, "i-a", 10)
	for _, c := range history[:2] {
		if c.Resolution != store.ResolvedSuperseded || !c.ResolvedAt.Equal(t1) {
			t.Errorf("first issuance %s after re-arming: resolution %q at %v, want superseded at the new issuance %v",
				c.CheckpointID, c.Resolution, c.ResolvedAt, t1)
		}
	}
	if pending, _ := s.PendingCheckpoints(ctx); len(pending) != 4 {
		t.Errorf("pending = %q, want the 3 new rows of a and b's row", checkpointSummary(pending))
	}
	if b, _ := s.IssueCheckpoints(ctx, "i-b", 10); len(b) != 1 || !b[0].Pending() || b[0].ID != other[0].ID {
		t.Errorf("session b's checkpoints after re-arming a = %q, want its one pending row untouched", checkpointSummary(b))
	}

	// The carried answer is resolved; entering another activity with the same checkpoint
	// id does not inherit answers, and neither does a later issuance of plan: only rows
	// this issuance supersedes carry theirs.
	if _, err := s.ResolveCheckpoint(ctx, "a", "approve-plan", store.ResolvedOption, t2); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AnswerCheckpoint(ctx, NewAnswer("a", "pick-scope", "revise", t2)); err != nil {
		t.Fatal(err)
	}
	third := Arm(t, s, "a", NewCheckpoint("a", "implement", "pick-scope", t2), NewCheckpoint("a", "implement", "approve-plan", t2))
	if third[0].Answered() || third[1].Answered() {
		t.Errorf("checkpoints of another activity = %q, want no carried answers", checkpointSummary(third))
	}
	fourth := Arm(t, s, "a", NewCheckpoint("a", "plan", "approve-plan", t3))
	if fourth[0].Answered() {
		t.Errorf("plan's approve-plan issued after its last issuance was resolved = %q, want unanswered", checkpointSummary(fourth))
	}

	// Arming nothing still supersedes what is pending.
	if got, err := s.ArmCheckpoints(ctx, "a", nil); err != nil || len(got) != 0 {
		t.Fatalf("ArmCheckpoints(a, none) = %v, %v", got, err)
	}
	pending, _ := s.PendingCheckpoints(ctx)
	if want := []string{`b/plan/approve-plan answer="" resolution=""`}; !reflect.DeepEqual(checkpointSummary(pending), want) {
		t.Errorf("pending after arming nothing for a = %q, want %q", checkpointSummary(pending), want)
	}
}

func testArmCheckpointsValidation(t *testing.T, s store.Store) {
	ctx := context.Background()
	Arm(t, s, "a", NewCheckpoint("a", "plan", "approve", t0))
	good := NewCheckpoint("a", "plan", "approve", t0.Add(time.Minute))
	tests := []struct {
		name    string
		session string
		cps     []store.Checkpoint
		want    string
	}{
		{"no session", "", nil, "session id is empty"},
		{"another session's checkpoint", "a", []store.Checkpoint{good, NewCheckpoint("b", "plan", "x", t0)}, `belongs to workflow session "b"`},
		{"checkpoint id twice", "a", []store.Checkpoint{good, good}, "armed twice"},
		{"no activity", "a", []store.Checkpoint{good, func() store.Checkpoint { c := good; c.Activity = ""; return c }()}, "activity is empty"},
		{"no checkpoint id", "a", []store.Checkpoint{func() store.Checkpoint { c := good; c.CheckpointID = ""; return c }()}, "checkpoint id is empty"},
		{"no workflow", "a", []store.Checkpoint{func() store.Checkpoint { c := good; c.Workflow = ""; return c }()}, "workflow is empty"},
		{"no issuance time", "a", []store.Checkpoint{func() store.Checkpoint { c := good; c.IssuedAt = time.Time{}; return c }()}, "issued at is zero"},
	}
	for _, tt := range tests {
		_, err := s.ArmCheckpoints(ctx, tt.session, tt.cps)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: ArmCheckpoints = %v, want an error containing %q", tt.name, err, tt.want)
		}
	}
	pending, _ := s.PendingCheckpoints(ctx)
	if len(pending) != 1 || !pending[0].IssuedAt.Equal(t0) {
		t.Fatalf("pending after rejected batches = %q, want the first issuance still pending", checkpointSummary(pending))
	}
}

func testAnswerCheckpoint(t *testing.T, s store.Store) {
	ctx := context.Background()
	armed := Arm(t, s, "a", NewCheckpoint("a", "plan", "approve", t0), NewCheckpoint("a", "plan", "done", t0))
	Arm(t, s, "b", NewCheckpoint("b", "plan", "other", t0))
	if _, err := s.ResolveCheckpoint(ctx, "a", "done", store.ResolvedConditionNot, t0); err != nil {
		t.Fatal(err)
	}

	at := time.Date(2026, 3, 30, 15, 0, 0, 123_456_789, time.UTC)
	a := store.CheckpointAnswer{SessionID: "a", CheckpointID: "approve", Option: "revise", By: "bob", Source: store.AnswerTracker, At: at}
	got, err := s.AnswerCheckpoint(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	want := armed[0]
	want.Answer, want.AnsweredBy, want.AnswerSource, want.AnsweredAt = "revise", "bob", store.AnswerTracker, at.Truncate(time.Millisecond)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("AnswerCheckpoint =\n %+v\nwant\n %+v", got, want)
	}
	if pending, _ := s.PendingCheckpoints(ctx); len(pending) != 2 || !reflect.DeepEqual(pending[0], want) {
		t.Fatalf("PendingCheckpoints after answer = %q, want the answered row still pending first", checkpointSummary(pending))
	}

	tests := []struct {
		name string
		a    store.CheckpointAnswer
		is   error
	}{
		{"answered already", NewAnswer("a", "approve", "approve", at), store.ErrConflict},
		{"unknown checkpoint", NewAnswer("a", "nope", "approve", at), store.ErrNotFound},
		{"another session's checkpoint", NewAnswer("a", "other", "approve", at), store.ErrNotFound},
		{"unknown session", NewAnswer("zz", "approve", "approve", at), store.ErrNotFound},
		{"resolved checkpoint", NewAnswer("a", "done", "approve", at), store.ErrNotFound},
	}
	for _, tt := range tests {
		_, err := s.AnswerCheckpoint(ctx, tt.a)
		if !errors.Is(err, tt.is) {
			t.Errorf("%s: AnswerCheckpoint = %v, want %v", tt.name, err, tt.is)
			continue
		}
		for _, name := range []string{tt.a.SessionID, tt.a.CheckpointID} {
			if !strings.Contains(err.Error(), fmt.Sprintf("%q", name)) {
				t.Errorf("%s: error %q does not name %q", tt.name, err, name)
			}
		}
	}
	if _, err := s.AnswerCheckpoint(ctx, NewAnswer("a", "approve", "approve", at)); err == nil || !strings.Contains(err.Error(), `"revise" by bob via tracker`) {
		t.Errorf("conflict error = %v, want it to say who answered what", err)
	}

	for _, mutate := range []func(*store.CheckpointAnswer){
		func(a *store.CheckpointAnswer) { a.SessionID = "" },
		func(a *store.CheckpointAnswer) { a.CheckpointID = "" },
		func(a *store.CheckpointAnswer) { a.Option = "" },
		func(a *store.CheckpointAnswer) { a.Source = "" },
		func(a *store.CheckpointAnswer) { a.Source = "email" },
		func(a *store.CheckpointAnswer) { a.At = time.Time{} },
	} {
		a := NewAnswer("b", "other", "approve", at)
		mutate(&a)
		if _, err := s.AnswerCheckpoint(ctx, a); err == nil || errors.Is(err, store.ErrNotFound) {
			t.Errorf("AnswerCheckpoint(%+v) = %v, want a validation error", a, err)
		}
	}
	// The timer answers with no one's name.
	timer := store.CheckpointAnswer{SessionID: "b", CheckpointID: "other", Option: "approve", Source: store.AnswerAutoAdvance, At: at}
	if got, err := s.AnswerCheckpoint(ctx, timer); err != nil || got.AnswerSource != store.AnswerAutoAdvance || got.AnsweredBy != "" {
		t.Errorf("auto-advance answer = %+v, %v", got, err)
	}
}

func testResolveCheckpoint(t *testing.T, s store.Store) {
	ctx := context.Background()
	armed := Arm(t, s, "a", NewCheckpoint("a", "plan", "approve", t0))
	at := t0.Add(5 * time.Second)

	got, err := s.ResolveCheckpoint(ctx, "a", "approve", store.ResolvedAutoAdvance, at)
	if err != nil {
		t.Fatal(err)
	}
	want := armed[0]
	want.Resolution, want.ResolvedAt = store.ResolvedAutoAdvance, at
	if !reflect.DeepEqual(got, want) || got.Pending() {
		t.Fatalf("ResolveCheckpoint = %+v, want %+v", got, want)
	}
	if pending, _ := s.PendingCheckpoints(ctx); len(pending) != 0 {
		t.Fatalf("pending after resolve = %q, want none", checkpointSummary(pending))
	}
	for _, tt := range []struct{ session, checkpoint string }{{"a", "approve"}, {"a", "nope"}, {"zz", "approve"}} {
		_, err := s.ResolveCheckpoint(ctx, tt.session, tt.checkpoint, store.ResolvedOption, at)
		if !errors.Is(err, store.ErrNotFound) || !strings.Contains(err.Error(), fmt.Sprintf("%q", tt.checkpoint)) ||
			!strings.Contains(err.Error(), fmt.Sprintf("%q", tt.session)) {
			t.Errorf("ResolveCheckpoint(%s, %s) = %v, want ErrNotFound naming both", tt.session, tt.checkpoint, err)
		}
	}
	Arm(t, s, "a", NewCheckpoint("a", "plan", "approve", t0.Add(time.Minute)))
	for _, tt := range []struct {
		session, checkpoint, resolution string
		at                              time.Time
	}{
		{"", "approve", store.ResolvedOption, at},
		{"a", "", store.ResolvedOption, at},
		{"a", "approve", "", at},
		{"a", "approve", "done", at},
		{"a", "approve", store.ResolvedOption, time.Time{}},
	} {
		if _, err := s.ResolveCheckpoint(ctx, tt.session, tt.checkpoint, tt.resolution, tt.at); err == nil || errors.Is(err, store.ErrNotFound) {
			t.Errorf("ResolveCheckpoint(%q, %q, %q, %v) = %v, want a validation error", tt.session, tt.checkpoint, tt.resolution, tt.at, err)
		}
	}
	if pending, _ := s.PendingCheckpoints(ctx); len(pending) != 1 {
		t.Fatalf("pending after rejected resolutions = %q, want the re-armed row", checkpointSummary(pending))
	}
}

func testCheckpointLists(t *testing.T, s store.Store) {
	ctx := context.Background()
	// Issued out of id order across sessions: pending is by issuance time.
	Arm(t, s, "a", NewCheckpoint("a", "plan", "late", t0.Add(time.Hour)))
	Arm(t, s, "b", NewCheckpoint("b", "plan", "early", t0))
	Arm(t, s, "c", NewCheckpoint("c", "plan", "middle", t0.Add(time.Minute)))
	pending, err := s.PendingCheckpoints(ctx)
	want := []string{`b/plan/early answer="" resolution=""`, `c/plan/middle answer="" resolution=""`, `a/plan/late answer="" resolution=""`}
	if err != nil || !reflect.DeepEqual(checkpointSummary(pending), want) {
		t.Fatalf("PendingCheckpoints = %q, %v; want oldest issuance first %q", checkpointSummary(pending), err, want)
	}

	// Five issuances for issue i-a: the newest limit, oldest of them first.
	for i := range 4 {
		Arm(t, s, "a", NewCheckpoint("a", fmt.Sprint("act", i), "cp", t0.Add(time.Duration(i)*time.Second)))
	}
	got, err := s.IssueCheckpoints(ctx, "i-a", 3)
	if err != nil {
		t.Fatal(err)
	}
	var acts []string
	for _, c := range got {
		acts = append(acts, c.Activity)
	}
	if !reflect.DeepEqual(acts, []string{"act1", "act2", "act3"}) || !got[2].Pending() || got[1].Pending() {
		t.Fatalf("IssueCheckpoints(i-a, 3) = %q, want act1 and act2 superseded, act3 pending", checkpointSummary(got))
	}
	if none, err := s.IssueCheckpoints(ctx, "unknown", 3); err != nil || len(none) != 0 {
		t.Errorf("IssueCheckpoints of an unknown issue = %v, %v; want none", none, err)
	}
	for _, limit := range []int{0, -1} {
		if _, err := s.IssueCheckpoints(ctx, "i-a", limit); err == nil {
			t.Errorf("IssueCheckpoints(limit %d) succeeded, want an error", limit)
		}
	}
}

// TraceTrim checks that AppendTraceEvent keeps only the newest
// store.MaxTraceEventsPerSession events of a session. fill writes n trace events of a
// session straight into s's database, in id order, with Details "0" to n-1: appending
// that many through the store one by one would make the test slow.
func TraceTrim(t *testing.T, s store.Store, fill func(sessionID string, n int)) {
	ctx := context.Background()
	fill("a", store.MaxTraceEventsPerSession)
	if _, err := s.AppendTraceEvent(ctx, NewTraceEvent("b", 0, 0)); err != nil {
		t.Fatal(err)
	}
	const extra = 3
	for i := range extra {
		e := NewTraceEvent("a", 0, 0)
		e.Detail = fmt.Sprint(store.MaxTraceEventsPerSession + i)
		if _, err := s.AppendTraceEvent(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.TraceEvents(ctx, "a", store.MaxTraceEventsPerSession*2)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != store.MaxTraceEventsPerSession || got[0].Detail != fmt.Sprint(extra) ||
		got[len(got)-1].Detail != fmt.Sprint(store.MaxTraceEventsPerSession+extra-1) {
		t.Fatalf("after %d events, session a keeps %d from %q to %q; want the newest %d, %d..%d",
			store.MaxTraceEventsPerSession+extra, len(got), first(traceDetails(got)), last(traceDetails(got)),
			store.MaxTraceEventsPerSession, extra, store.MaxTraceEventsPerSession+extra-1)
	}
	if got, _ := s.TraceEvents(ctx, "b", 10); len(got) != 1 {
		t.Fatalf("trimming session a left session b with %d events, want its 1", len(got))
	}
}
