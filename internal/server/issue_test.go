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
	f.sched.err = orchestrator.ErrNotRunning
	wantError(t, f.get(t, "/api/v1/PROJ-1"), http.StatusServiceUnavailable, codeSnapshotUnavailable)
}
