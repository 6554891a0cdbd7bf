package server

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"sortie/internal/orchestrator"
	"sortie/internal/store"
	"sortie/internal/workflow/checkpoint"
)

func TestIssue_StatusFromSchedulerAndHistory(t *testing.T) {
	f := newFixture(t, nil)
	f.sched.snap = stateSnapshot()
	// History: PROJ-1 (running now) has an older failed run; PROJ-9 is known only from
	// history.
	seedRun(t, f.st, "id-1", "PROJ-1", 1, t0.Add(-time.Hour), &store.RunEnd{Status: store.StatusFailed,
		Error: "stalled", EndedAt: t0.Add(-50 * time.Minute)})
	seedRun(t, f.st, "id-9", "PROJ-9", 1, t0.Add(-2*time.Hour), &store.RunEnd{Status: store.StatusHandedOff,
		EndedAt: t0.Add(-time.Hour)})

	tests := []struct {
		identifier, status, issueID string
		running, retry, hold        bool
		workspace, lastError        string
		runs                        int
	}{
		{"PROJ-1", issueRunning, "id-1", true, false, false, "/ws/PROJ-1", "stalled", 1},
		{"PROJ-3", issueRetrying, "id-3", false, true, false, "", "turn_failed: exit 1", 0},
		{"PROJ-5", issueAwaitingInput, "id-5", false, false, true, "", "", 0},
		{"PROJ-6", issueHeld, "id-6", false, false, true, "", "", 0},
		{"PROJ-9", issueIdle, "id-9", false, false, false, "/ws/PROJ-9", "", 1},
	}
	for _, tt := range tests {
		w := f.get(t, "/api/v1/"+tt.identifier)
		if w.Code != http.StatusOK {
			t.Errorf("GET /api/v1/%s = %d (%s)", tt.identifier, w.Code, w.Body)
			continue
		}
		var got issueBody
		decode(t, w, &got)
		if got.Identifier != tt.identifier || got.Status != tt.status || got.IssueID != tt.issueID ||
			(got.Running != nil) != tt.running || (got.Retry != nil) != tt.retry || (got.Hold != nil) != tt.hold ||
			got.Workspace.Path != tt.workspace || got.LastError != tt.lastError || len(got.Runs) != tt.runs {
			t.Errorf("%s: got status %q id %q running %v retry %v hold %v workspace %q last_error %q runs %d;\n"+
				"want %q %q %v %v %v %q %q %d", tt.identifier, got.Status, got.IssueID, got.Running != nil, got.Retry != nil,
				got.Hold != nil, got.Workspace.Path, got.LastError, len(got.Runs),
				tt.status, tt.issueID, tt.running, tt.retry, tt.hold, tt.workspace, tt.lastError, tt.runs)
		}
		if tt.running && got.Running.ElapsedSeconds != 90 {
			t.Errorf("%s: running.elapsed_seconds = %v, want 90", tt.identifier, got.Running.ElapsedSeconds)
		}
		if tt.retry && got.Retry.DueInSeconds != -4 {
			t.Errorf("%s: retry.due_in_seconds = %v, want -4", tt.identifier, got.Retry.DueInSeconds)
		}
	}
}

func TestIssue_RunsAndRecentEventsOfTheLatestRun(t *testing.T) {
	f := newFixture(t, nil)
	ctx := context.Background()
	var runIDs []int64
	for i := range 25 {
		runIDs = append(runIDs, seedRun(t, f.st, "id-1", "PROJ-1", i+1, t0.Add(time.Duration(i-30)*time.Minute),
			&store.RunEnd{Status: store.StatusSucceeded, EndedAt: t0.Add(time.Duration(i-30)*time.Minute + time.Second)}))
	}
	older, latest := runIDs[23], runIDs[24]
	if err := f.st.AppendEvents(ctx, older, []store.Event{{Time: t0, Type: "notification", Message: "older run"}}); err != nil {
		t.Fatal(err)
	}
	var events []store.Event
	for i := range 150 {
		events = append(events, store.Event{Time: t0.Add(time.Duration(i) * time.Millisecond), Type: "tool_result", Message: fmt.Sprint(i)})
	}
	if err := f.st.AppendEvents(ctx, latest, events); err != nil {
		t.Fatal(err)
	}
	var got issueBody
	decode(t, f.get(t, "/api/v1/PROJ-1"), &got)
	if got.Status != issueIdle || len(got.Runs) != issueRuns || got.Runs[0].ID != latest {
		t.Fatalf("status %q, %d runs starting %d; want idle, %d runs, newest (%d) first", got.Status, len(got.Runs),
			got.Runs[0].ID, issueRuns, latest)
	}
	if got.RecentEventsRunID == nil || *got.RecentEventsRunID != latest {
		t.Errorf("recent_events_run_id = %v, want %d", got.RecentEventsRunID, latest)
	}
	if len(got.RecentEvents) != issueEvents {
		t.Fatalf("%d recent events, want %d", len(got.RecentEvents), issueEvents)
	}
	first, last := got.RecentEvents[0], got.RecentEvents[issueEvents-1]
	if first.Message != "50" || last.Message != "149" || last.Type != "tool_result" || !last.Time.Equal(t0.Add(149*time.Millisecond)) {
		t.Errorf("recent events run %q..%q (last %+v), want the newest 100 of the latest run, oldest first: 50..149", first.Message, last.Message, last)
	}
}

func TestIssue_UnknownIs404(t *testing.T) {
	f := newFixture(t, nil)
	f.sched.snap = stateSnapshot()
	for _, id := range []string{"PROJ-404", strings.Repeat("x", maxIdentifierLen+1)} {
		wantError(t, f.get(t, "/api/v1/"+id), http.StatusNotFound, codeIssueNotFound)
	}
}

// Identifiers may hold characters that need escaping in a path (GitHub's owner/repo#12).
func TestIssue_EscapedIdentifier(t *testing.T) {
	f := newFixture(t, nil)
	const id = "acme/api#12"
	f.sched.set(func(s *orchestrator.Snapshot) {
		v := runningView(1)
		v.Identifier = id
		s.Running = []orchestrator.RunningView{v}
	})
	w := f.get(t, "/api/v1/"+url.PathEscape(id))
	var got issueBody
	decode(t, w, &got)
	if w.Code != http.StatusOK || got.Identifier != id || got.Status != issueRunning {
		t.Fatalf("GET /api/v1/%s = %d %+v, want 200 running %q", url.PathEscape(id), w.Code, got, id)
	}
}

func TestIssue_WithoutHistoryUsesTheSchedulerOnly(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.Runs = nil })
	f.sched.snap = stateSnapshot()
	var got issueBody
	decode(t, f.get(t, "/api/v1/PROJ-1"), &got)
	if got.Status != issueRunning || got.Runs == nil || got.RecentEvents == nil {
		t.Errorf("got %+v, want running with empty (not null) runs and events", got)
	}
	wantError(t, f.get(t, "/api/v1/PROJ-9"), http.StatusNotFound, codeIssueNotFound)
}

func TestIssue_SnapshotUnavailableIs503(t *testing.T) {
	f := newFixture(t, nil)
	f.sched.err = errNotRunning
	wantError(t, f.get(t, "/api/v1/PROJ-1"), http.StatusServiceUnavailable, codeSnapshotUnavailable)
}

// The workflow block: the issue's checkpoint decisions and, per run, the activities
// its agent entered, read from a real store seeded through its methods.
func TestIssue_WorkflowBlockHasDecisionsAndActivityPaths(t *testing.T) {
	f := newFixture(t, nil)
	ctx := context.Background()
	f.sched.set(func(s *orchestrator.Snapshot) {
		s.Held = []orchestrator.HeldView{{IssueID: "id-8", Identifier: "PROJ-8", Reason: "awaiting_input",
			Message: "waiting for approve-plan", State: "In Progress", Since: t0.Add(-time.Minute)}}
	})
	first := seedRun(t, f.st, "id-8", "PROJ-8", 1, t0.Add(-time.Hour), &store.RunEnd{Status: store.StatusSucceeded, EndedAt: t0.Add(-50 * time.Minute)})
	second := seedRun(t, f.st, "id-8", "PROJ-8", 1, t0.Add(-40*time.Minute), &store.RunEnd{Status: store.StatusSucceeded, EndedAt: t0.Add(-30 * time.Minute)})
	seedRun(t, f.st, "id-8", "PROJ-8", 1, t0.Add(-20*time.Minute), &store.RunEnd{Status: store.StatusSucceeded, EndedAt: t0.Add(-10 * time.Minute)}) // no workflow calls

	const sid = "wf-sess-8"
	if err := f.st.SaveWorkflowSession(ctx, store.WorkflowSession{SessionID: sid, Workflow: "work-package", IssueID: "id-8",
		Identifier: "PROJ-8", Token: "tok", UpdatedAt: t0.Add(-time.Hour)}); err != nil {
		t.Fatal(err)
	}
	span := 0
	trace := func(run int64, tool, activity string, ok bool) {
		t.Helper()
		span++
		_, err := f.st.AppendTraceEvent(ctx, store.TraceEvent{SessionID: sid, SpanID: fmt.Sprint("span-", span), IssueID: "id-8",
			RunID: run, Tool: tool, TS: t0.Add(time.Duration(span-100) * time.Minute), OK: ok, Workflow: "work-package", Activity: activity})
		if err != nil {
			t.Fatal(err)
		}
	}
	trace(first, "start_session", "", true)
	trace(first, "next_activity", "plan", true)
	trace(first, "get_skill", "plan", true)
	trace(first, "next_activity", "implement", false) // refused: the checkpoint was pending
	trace(first, "respond_checkpoint", "plan", true)
	trace(first, "next_activity", "implement", true)
	trace(second, "next_activity", "verify", true)
	trace(second, "next_activity", "implement", true)

	cps, err := f.st.ArmCheckpoints(ctx, sid, []store.Checkpoint{{SessionID: sid, IssueID: "id-8", Identifier: "PROJ-8", RunID: first,
		Workflow: "work-package", Activity: "plan", CheckpointID: "approve-plan", Name: "Approve the plan", Message: "OK?",
		Options: []store.CheckpointOption{{ID: "approve", Label: "Approve"}}, Blocking: true, IssuedAt: t0.Add(-58 * time.Minute)}})
	if err != nil || len(cps) != 1 {
		t.Fatalf("ArmCheckpoints = %v, %v", cps, err)
	}
	if _, err := f.st.AnswerCheckpoint(ctx, store.CheckpointAnswer{SessionID: sid, CheckpointID: "approve-plan", Option: "approve",
		By: "alice", Source: store.AnswerDashboard, At: t0.Add(-55 * time.Minute)}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.st.ResolveCheckpoint(ctx, sid, "approve-plan", store.ResolvedOption, t0.Add(-54*time.Minute)); err != nil {
		t.Fatal(err)
	}

	var got issueBody
	decode(t, f.get(t, "/api/v1/PROJ-8"), &got)
	if got.Status != issueAwaitingInput {
		t.Errorf("status = %q, want awaiting_input for an issue held as awaiting_input", got.Status)
	}
	wf := got.Workflow
	if len(wf.Checkpoints) != 1 {
		t.Fatalf("workflow.checkpoints = %+v, want the one decision", wf.Checkpoints)
	}
	d := wf.Checkpoints[0]
	if d.CheckpointID != "approve-plan" || d.Activity != "plan" || d.Answer != "approve" || d.AnsweredBy != "alice" ||
		d.Source != "dashboard" || d.AnsweredAt == nil || !d.AnsweredAt.Equal(t0.Add(-55*time.Minute)) ||
		d.Resolution != store.ResolvedOption || d.ResolvedAt == nil || d.RunID != first {
		t.Errorf("decision = %+v, want approve-plan answered approve by alice via dashboard, resolved option, in run %d", d, first)
	}
	want := []activityPathJSON{
		{RunID: second, Workflow: "work-package", Activities: []string{"verify", "implement"}},
		{RunID: first, Workflow: "work-package", Activities: []string{"plan", "implement"}},
	}
	if fmt.Sprint(wf.Runs) != fmt.Sprint(want) {
		t.Errorf("workflow.runs = %+v,\nwant %+v (newest run first; runs without workflow calls left out)", wf.Runs, want)
	}
}

func TestIssue_WorkflowBlockIsEmptyListsWithoutWorkflows(t *testing.T) {
	f := newFixture(t, nil)
	f.sched.snap = stateSnapshot()
	body := f.get(t, "/api/v1/PROJ-1").Body.String()
	if !strings.Contains(body, `"workflow":{"checkpoints":[],"runs":[],"refused_answers":[]}`) {
		t.Errorf("body lacks an empty workflow block:\n%s", body)
	}
}

func TestActivityPath_KeepsTheLastActivities(t *testing.T) {
	var events []store.TraceEvent
	for i := range pathActivities + 5 {
		events = append(events, store.TraceEvent{Tool: "next_activity", OK: true, Workflow: "w", Activity: fmt.Sprint("a", i)})
	}
	tests := []struct {
		name      string
		events    []store.TraceEvent
		cut       bool
		wantOK    bool
		wantLen   int
		wantFirst string
		wantTrunc bool
	}{
		{"none entered", []store.TraceEvent{{Tool: "start_session", OK: true}, {Tool: "next_activity", OK: false, Activity: "plan"}}, false, false, 0, "", false},
		{"short", events[:3], false, true, 3, "a0", false},
		{"the read was cut", events[:3], true, true, 3, "a0", true},
		{"too long", events, false, true, pathActivities, "a5", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, ok := activityPath(1, tt.events, tt.cut)
			if ok != tt.wantOK || len(p.Activities) != tt.wantLen || p.Truncated != tt.wantTrunc ||
				(tt.wantLen > 0 && p.Activities[0] != tt.wantFirst) {
				t.Errorf("activityPath = %+v, %v; want ok %v, %d activities from %q, truncated %v", p, ok, tt.wantOK, tt.wantLen, tt.wantFirst, tt.wantTrunc)
			}
		})
	}
}

// refusingAnswerer is an answerer that refused a tracker answer for id-8.
type refusingAnswerer struct{ fakeAnswerer }

func (*refusingAnswerer) RefusedAnswers(issueID string) []checkpoint.RefusedAnswer {
	if issueID != "id-8" {
		return nil
	}
	return []checkpoint.RefusedAnswer{{Author: "mallory", Option: "approve", Reason: `"mallory" is NONE on the repository`, At: t0}}
}

// TestIssue_ListsRefusedTrackerAnswers: the issue page shows the tracker answers that
// were refused, and an empty list for an issue without any.
func TestIssue_ListsRefusedTrackerAnswers(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.Checkpoints = &refusingAnswerer{} })
	f.sched.set(func(s *orchestrator.Snapshot) {
		s.Held = []orchestrator.HeldView{{IssueID: "id-8", Identifier: "PROJ-8", Reason: "awaiting_input", State: "Todo", Since: t0},
			{IssueID: "id-9", Identifier: "PROJ-9", Reason: "awaiting_input", State: "Todo", Since: t0}}
	})
	body := f.get(t, "/api/v1/PROJ-8").Body.String()
	if !strings.Contains(body, `"refused_answers":[{"author":"mallory","option":"approve","reason":"\"mallory\" is NONE on the repository"`) {
		t.Errorf("PROJ-8's detail lacks mallory's refused answer:\n%s", body)
	}
	if body := f.get(t, "/api/v1/PROJ-9").Body.String(); !strings.Contains(body, `"refused_answers":[]`) {
		t.Errorf("PROJ-9's detail: want an empty refused_answers list:\n%s", body)
	}
}
