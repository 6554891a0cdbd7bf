// Package storetest is the behavioural test suite every store.Store implementation
// runs, so SQLite and PostgreSQL keep one contract. It is imported only by tests.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"sortie/internal/store"
)

// Open returns a new, empty store for one test; the suite closes it.
type Open func(t *testing.T) store.Store

// Test runs the whole suite against stores made by open.
func Test(t *testing.T, open Open) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s store.Store)
	}{
		{"RunLifecycle", testRunLifecycle},
		{"StartRunRejectsIncompleteRun", testStartRunValidation},
		{"FinishRunRejectsNonTerminalStatus", testFinishRunValidation},
		{"EndedRunCannotChange", testEndedRunCannotChange},
		{"UnknownRunIsNotFound", testUnknownRun},
		{"ProgressNeverGoesBackwards", testProgressMonotonic},
		{"RecordProgressWritesBoth", testRecordProgress},
		{"RecordProcessAndProgressWritesAll", testRecordProcessAndProgress},
		{"FinishRunAppendsLastEvents", testFinishRunEvents},
		{"ProcessUpdateKeepsKnownVersion", testProcessUpdate},
		{"RunsInProgressAndMarkInterrupted", testRunsInProgress},
		{"RunListsAreNewestFirst", testRunLists},
		{"ListLimitMustBePositive", testListLimits},
		{"ListRunsFiltersAndPages", testListRuns},
		{"ListRunsRejectsBadFilter", testListRunsValidation},
		{"RunsForIdentifierAreNewestFirst", testRunsForIdentifier},
		{"CountRunsBatches", testCountRuns},
		{"TotalsAreDerivedFromRuns", testTotals},
		{"RetriesRoundTripInDueOrder", testRetries},
		{"SaveRetryRejectsIncompleteEntry", testRetryValidation},
		{"SessionsRoundTrip", testSessions},
		{"HoldsRoundTrip", testHolds},
		{"EventLogIsTrimmedPerRun", testEventTrim},
		{"EventLogTailAndBounds", testEventTail},
		{"TimesRoundTripInUTCMilliseconds", testTimes},
	}
	tests = append(tests, workflowTests...)
	tests = append(tests, reactionTests...)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := open(t)
			t.Cleanup(func() {
				if err := s.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
			})
			tt.fn(t, s)
		})
	}
}

// t0 is a fixed start time; stores keep milliseconds.
var t0 = time.Date(2026, 3, 30, 14, 20, 0, 0, time.UTC)

// NewRun returns a valid run of issueID for StartRun.
func NewRun(issueID string, attempt int) store.Run {
	return store.Run{
		IssueID:      issueID,
		Identifier:   "PROJ-" + issueID,
		Attempt:      attempt,
		AgentKind:    "claude-code",
		Workspace:    "/ws/PROJ-" + issueID,
		SSHHost:      "build-1",
		WorkflowPath: "/srv/WORKFLOW.md",
		StartedAt:    t0,
	}
}

func start(t *testing.T, s store.Store, r store.Run) int64 {
	t.Helper()
	id, err := s.StartRun(context.Background(), r)
	if err != nil {
		t.Fatalf("StartRun(%s): %v", r.IssueID, err)
	}
	return id
}

func onlyRun(t *testing.T, s store.Store, issueID string) store.Run {
	t.Helper()
	runs, err := s.RunsForIssue(context.Background(), issueID, 10)
	if err != nil {
		t.Fatalf("RunsForIssue(%s): %v", issueID, err)
	}
	if len(runs) != 1 {
		t.Fatalf("RunsForIssue(%s) = %d runs, want 1", issueID, len(runs))
	}
	return runs[0]
}

func testRunLifecycle(t *testing.T, s store.Store) {
	ctx := context.Background()
	id := start(t, s, NewRun("1", 2))

	r := onlyRun(t, s, "1")
	want := NewRun("1", 2)
	if r.ID != id || r.Status != store.StatusRunning || r.IssueID != want.IssueID || r.Identifier != want.Identifier ||
		r.Attempt != 2 || r.AgentKind != want.AgentKind || r.Workspace != want.Workspace || r.SSHHost != want.SSHHost ||
		r.WorkflowPath != want.WorkflowPath || !r.StartedAt.Equal(t0) || !r.EndedAt.IsZero() {
		t.Fatalf("after StartRun: got %+v, want running copy of %+v with id %d", r, want, id)
	}
	if r.DaemonPID == 0 {
		t.Errorf("after StartRun: DaemonPID = 0, want the daemon's pid")
	}

	proc := store.Process{PID: 4242, PGID: 4242, CLIVersion: "2.1.3"}
	if err := s.UpdateRunProcess(ctx, id, proc); err != nil {
		t.Fatalf("UpdateRunProcess: %v", err)
	}
	prog := store.Progress{Turns: 1, Tokens: store.Tokens{Input: 100, Output: 20, Total: 120, CacheRead: 50},
		CostUSD: 0.25, Model: "opus", SessionID: "sess-1"}
	if err := s.UpdateRunProgress(ctx, id, prog); err != nil {
		t.Fatalf("UpdateRunProgress: %v", err)
	}
	r = onlyRun(t, s, "1")
	if r.Process != proc || r.Progress != prog {
		t.Fatalf("after updates: process %+v progress %+v, want %+v and %+v", r.Process, r.Progress, proc, prog)
	}

	final := store.Progress{Turns: 3, Tokens: store.Tokens{Input: 300, Output: 60, Total: 360, CacheRead: 90}, CostUSD: 0.75}
	end := store.RunEnd{Status: store.StatusFailed, Error: "turn_failed: boom", EndedAt: t0.Add(90 * time.Second), Progress: final}
	if err := s.FinishRun(ctx, id, end); err != nil {
		t.Fatalf("FinishRun: %v", err)
	}
	r = onlyRun(t, s, "1")
	final.Model, final.SessionID = "opus", "sess-1" // empty ones keep the stored values
	if r.Status != store.StatusFailed || r.Error != end.Error || !r.EndedAt.Equal(end.EndedAt) || r.Progress != final {
		t.Fatalf("after FinishRun: got status %s error %q ended %v progress %+v, want %s %q %v %+v",
			r.Status, r.Error, r.EndedAt, r.Progress, end.Status, end.Error, end.EndedAt, final)
	}
	inProgress, err := s.RunsInProgress(ctx)
	if err != nil || len(inProgress) != 0 {
		t.Fatalf("RunsInProgress after FinishRun = %v, %v; want none", inProgress, err)
	}
}

func testStartRunValidation(t *testing.T, s store.Store) {
	tests := []struct {
		name   string
		mutate func(*store.Run)
	}{
		{"empty issue id", func(r *store.Run) { r.IssueID = "" }},
		{"empty identifier", func(r *store.Run) { r.Identifier = "" }},
		{"attempt zero", func(r *store.Run) { r.Attempt = 0 }},
		{"empty agent kind", func(r *store.Run) { r.AgentKind = "" }},
		{"zero start time", func(r *store.Run) { r.StartedAt = time.Time{} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewRun("1", 1)
			tt.mutate(&r)
			if _, err := s.StartRun(context.Background(), r); err == nil {
				t.Fatalf("StartRun(%+v) succeeded, want an error", r)
			}
		})
	}
	if runs, _ := s.RecentRuns(context.Background(), 10); len(runs) != 0 {
		t.Fatalf("rejected runs were stored: %+v", runs)
	}
}

func testFinishRunValidation(t *testing.T, s store.Store) {
	id := start(t, s, NewRun("1", 1))
	for _, st := range []store.RunStatus{"", store.StatusRunning, "done"} {
		err := s.FinishRun(context.Background(), id, store.RunEnd{Status: st, EndedAt: t0})
		if err == nil {
			t.Errorf("FinishRun(status %q) succeeded, want an error", st)
		}
	}
	if err := s.FinishRun(context.Background(), id, store.RunEnd{Status: store.StatusSucceeded}); err == nil {
		t.Errorf("FinishRun without EndedAt succeeded, want an error")
	}
	if r := onlyRun(t, s, "1"); r.Status != store.StatusRunning {
		t.Fatalf("status after rejected FinishRun = %s, want running", r.Status)
	}
}

func testEndedRunCannotChange(t *testing.T, s store.Store) {
	ctx := context.Background()
	id := start(t, s, NewRun("1", 1))
	if err := s.FinishRun(ctx, id, store.RunEnd{Status: store.StatusSucceeded, EndedAt: t0.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	calls := map[string]func() error{
		"FinishRun": func() error { return s.FinishRun(ctx, id, store.RunEnd{Status: store.StatusFailed, EndedAt: t0}) },
		"FinishRun with events": func() error {
			return s.FinishRun(ctx, id, store.RunEnd{Status: store.StatusFailed, EndedAt: t0, Events: []store.Event{{Time: t0, Type: "late"}}})
		},
		"UpdateRunProgress": func() error { return s.UpdateRunProgress(ctx, id, store.Progress{Turns: 9}) },
		"UpdateRunProcess":  func() error { return s.UpdateRunProcess(ctx, id, store.Process{PID: 9}) },
		"RecordProgress": func() error {
			return s.RecordProgress(ctx, id, store.Progress{Turns: 9}, []store.Event{{Time: t0, Type: "late"}})
		},
		"RecordProcessAndProgress": func() error {
			return s.RecordProcessAndProgress(ctx, id, store.Process{PID: 9, PGID: 9}, store.Progress{Turns: 9}, []store.Event{{Time: t0, Type: "late"}})
		},
	}
	for name, call := range calls {
		if err := call(); !errors.Is(err, store.ErrRunNotRunning) {
			t.Errorf("%s on an ended run: err = %v, want ErrRunNotRunning", name, err)
		}
	}
	if r := onlyRun(t, s, "1"); r.Status != store.StatusSucceeded || r.Progress.Turns != 0 || r.Process.PID != 0 {
		t.Fatalf("ended run changed: %+v", r)
	}
	if evs, err := s.RunEvents(ctx, id, 10); err != nil || len(evs) != 0 {
		t.Fatalf("events recorded after the run ended: %v, %v", evs, err)
	}
}

func testUnknownRun(t *testing.T, s store.Store) {
	ctx := context.Background()
	calls := map[string]func() error{
		"FinishRun": func() error { return s.FinishRun(ctx, 999, store.RunEnd{Status: store.StatusFailed, EndedAt: t0}) },
		"FinishRun with events": func() error {
			return s.FinishRun(ctx, 999, store.RunEnd{Status: store.StatusFailed, EndedAt: t0, Events: []store.Event{{Time: t0, Type: "x"}}})
		},
		"UpdateRunProgress": func() error { return s.UpdateRunProgress(ctx, 999, store.Progress{}) },
		"UpdateRunProcess":  func() error { return s.UpdateRunProcess(ctx, 999, store.Process{}) },
		"AppendEvents": func() error {
			return s.AppendEvents(ctx, 999, []store.Event{{Time: t0, Type: "x"}})
		},
		"RecordProgress": func() error {
			return s.RecordProgress(ctx, 999, store.Progress{Turns: 1}, []store.Event{{Time: t0, Type: "x"}})
		},
		"RecordProcessAndProgress": func() error {
			return s.RecordProcessAndProgress(ctx, 999, store.Process{PID: 1}, store.Progress{Turns: 1}, []store.Event{{Time: t0, Type: "x"}})
		},
	}
	for name, call := range calls {
		if err := call(); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s on run 999: err = %v, want ErrNotFound", name, err)
		}
	}
}

// RecordProgress records progress and events together, merges progress like
// UpdateRunProgress, and trims the log like AppendEvents.
func testRecordProgress(t *testing.T, s store.Store) {
	ctx := context.Background()
	id := start(t, s, NewRun("1", 1))
	p := store.Progress{Turns: 1, Tokens: store.Tokens{Input: 10, Output: 2, Total: 12}, CostUSD: 0.25, Model: "opus", SessionID: "s1"}
	if err := s.RecordProgress(ctx, id, p, events(0, 3)); err != nil {
		t.Fatalf("RecordProgress: %v", err)
	}
	if err := s.RecordProgress(ctx, id, store.Progress{Turns: 2}, nil); err != nil { // no events: progress alone
		t.Fatalf("RecordProgress without events: %v", err)
	}
	want := p
	want.Turns = 2
	if got := onlyRun(t, s, "1").Progress; got != want {
		t.Errorf("progress = %+v, want %+v", got, want)
	}
	if err := s.RecordProgress(ctx, id, store.Progress{}, events(3, store.MaxEventsPerRun)); err != nil {
		t.Fatalf("RecordProgress with a full log's worth: %v", err)
	}
	got, err := s.RunEvents(ctx, id, store.MaxEventsPerRun+10)
	if err != nil {
		t.Fatal(err)
	}
	msgs := messages(got)
	if len(msgs) != store.MaxEventsPerRun || first(msgs) != messages(events(3, 1))[0] {
		t.Errorf("log after RecordProgress: %d events from %q, want %d from the fourth", len(msgs), first(msgs), store.MaxEventsPerRun)
	}
}

// RecordProcessAndProgress records the process, the progress and the events in one
// write; the process as UpdateRunProcess does, the progress merged as
// UpdateRunProgress merges it.
func testRecordProcessAndProgress(t *testing.T, s store.Store) {
	ctx := context.Background()
	r := NewRun("1", 1)
	r.Process = store.Process{CLIVersion: "0.9"}
	id := start(t, s, r)
	proc := store.Process{PID: 11, PGID: 11, CLIVersion: "1.0"}
	p := store.Progress{Model: "opus", SessionID: "s1"}
	if err := s.RecordProcessAndProgress(ctx, id, proc, p, events(0, 2)); err != nil {
		t.Fatalf("RecordProcessAndProgress: %v", err)
	}
	got := onlyRun(t, s, "1")
	if got.Process != proc || got.Progress != p {
		t.Errorf("run = process %+v, progress %+v; want %+v, %+v", got.Process, got.Progress, proc, p)
	}
	evs, err := s.RunEvents(ctx, id, 10)
	if err != nil {
		t.Fatal(err)
	}
	if msgs := messages(evs); len(msgs) != 2 || msgs[0] != messages(events(0, 1))[0] {
		t.Errorf("events = %q, want the two recorded", msgs)
	}
	// Without events, and with an empty version: the version is kept, the progress merged.
	next := store.Process{PID: 12, PGID: 12}
	if err := s.RecordProcessAndProgress(ctx, id, next, store.Progress{Turns: 1}, nil); err != nil {
		t.Fatalf("RecordProcessAndProgress without events: %v", err)
	}
	got = onlyRun(t, s, "1")
	want := p
	want.Turns = 1
	if next.CLIVersion = "1.0"; got.Process != next || got.Progress != want {
		t.Errorf("run = process %+v, progress %+v; want %+v, %+v", got.Process, got.Progress, next, want)
	}
}

// FinishRun appends the end's events to the run's log, trimmed like AppendEvents, in
// the same write as the end and the final progress.
func testFinishRunEvents(t *testing.T, s store.Store) {
	ctx := context.Background()
	id := start(t, s, NewRun("1", 1))
	if err := s.AppendEvents(ctx, id, events(0, store.MaxEventsPerRun-1)); err != nil {
		t.Fatal(err)
	}
	end := store.RunEnd{Status: store.StatusSucceeded, EndedAt: t0.Add(time.Minute), Progress: store.Progress{Turns: 1, SessionID: "s1"},
		Events: events(store.MaxEventsPerRun-1, 3)}
	if err := s.FinishRun(ctx, id, end); err != nil {
		t.Fatalf("FinishRun with events: %v", err)
	}
	r := onlyRun(t, s, "1")
	if r.Status != store.StatusSucceeded || r.Progress != end.Progress {
		t.Errorf("run = %s, progress %+v; want succeeded, %+v", r.Status, r.Progress, end.Progress)
	}
	got, err := s.RunEvents(ctx, id, store.MaxEventsPerRun+10)
	if err != nil {
		t.Fatal(err)
	}
	msgs, want := messages(got), messages(events(2, store.MaxEventsPerRun))
	if len(msgs) != len(want) || first(msgs) != first(want) || last(msgs) != last(want) {
		t.Errorf("log after FinishRun: %d events, %q to %q; want %d, %q to %q",
			len(msgs), first(msgs), last(msgs), len(want), first(want), last(want))
	}
}

func testProgressMonotonic(t *testing.T, s store.Store) {
	ctx := context.Background()
	id := start(t, s, NewRun("1", 1))
	high := store.Progress{Turns: 5, Tokens: store.Tokens{Input: 500, Output: 50, Total: 550, CacheRead: 5}, CostUSD: 1.5, Model: "opus", SessionID: "s1"}
	low := store.Progress{Turns: 2, Tokens: store.Tokens{Input: 10, Output: 1, Total: 11}, CostUSD: 0.1, Model: "sonnet", SessionID: "s2"}
	for _, p := range []store.Progress{high, low} {
		if err := s.UpdateRunProgress(ctx, id, p); err != nil {
			t.Fatal(err)
		}
	}
	want := high
	want.Model, want.SessionID = "sonnet", "s2" // the latest seen, not counters
	if got := onlyRun(t, s, "1").Progress; got != want {
		t.Fatalf("progress after a lower update = %+v, want %+v", got, want)
	}
	if err := s.FinishRun(ctx, id, store.RunEnd{Status: store.StatusSucceeded, EndedAt: t0, Progress: store.Progress{}}); err != nil {
		t.Fatal(err)
	}
	if got := onlyRun(t, s, "1").Progress; got != want {
		t.Fatalf("progress after FinishRun with zero progress = %+v, want %+v kept", got, want)
	}
}

func testProcessUpdate(t *testing.T, s store.Store) {
	ctx := context.Background()
	r := NewRun("1", 1)
	r.Process = store.Process{PID: 10, PGID: 10, CLIVersion: "0.9"}
	id := start(t, s, r)
	if got := onlyRun(t, s, "1").Process; got != r.Process {
		t.Fatalf("StartRun process = %+v, want %+v", got, r.Process)
	}
	steps := []struct {
		in, want store.Process
	}{
		{store.Process{PID: 11, PGID: 11, CLIVersion: "1.0"}, store.Process{PID: 11, PGID: 11, CLIVersion: "1.0"}},
		{store.Process{}, store.Process{CLIVersion: "1.0"}}, // between turns
		{store.Process{PID: 12, PGID: 12, CLIVersion: "1.1"}, store.Process{PID: 12, PGID: 12, CLIVersion: "1.1"}},
	}
	for i, st := range steps {
		if err := s.UpdateRunProcess(ctx, id, st.in); err != nil {
			t.Fatal(err)
		}
		if got := onlyRun(t, s, "1").Process; got != st.want {
			t.Fatalf("step %d: UpdateRunProcess(%+v) left %+v, want %+v", i, st.in, got, st.want)
		}
	}
}

func testRunsInProgress(t *testing.T, s store.Store) {
	ctx := context.Background()
	a := start(t, s, NewRun("a", 1))
	b := start(t, s, NewRun("b", 1))
	c := start(t, s, NewRun("c", 1))
	if err := s.UpdateRunProcess(ctx, c, store.Process{PID: 77, PGID: 77}); err != nil {
		t.Fatal(err)
	}
	end := store.RunEnd{Status: store.StatusSucceeded, EndedAt: t0.Add(time.Minute)}
	if err := s.FinishRun(ctx, b, end); err != nil {
		t.Fatal(err)
	}
	runs, err := s.RunsInProgress(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := runIDs(runs); !reflect.DeepEqual(got, []int64{a, c}) {
		t.Fatalf("RunsInProgress = %v, want [%d %d]", got, a, c)
	}
	if runs[1].PGID != 77 {
		t.Fatalf("RunsInProgress lost the PGID: %+v", runs[1].Process)
	}
	for range 2 { // repeating recovery is harmless
		if err := s.MarkInterrupted(ctx, []int64{a, b, c, 9999}); err != nil {
			t.Fatalf("MarkInterrupted: %v", err)
		}
	}
	if runs, _ := s.RunsInProgress(ctx); len(runs) != 0 {
		t.Fatalf("RunsInProgress after MarkInterrupted = %v, want none", runIDs(runs))
	}
	for _, issue := range []string{"a", "c"} {
		r := onlyRun(t, s, issue)
		if r.Status != store.StatusInterrupted || r.EndedAt.IsZero() || r.EndedAt.Before(r.StartedAt) || r.Error == "" {
			t.Errorf("issue %s after MarkInterrupted: status %s ended %v error %q; want interrupted, ended, with a reason",
				issue, r.Status, r.EndedAt, r.Error)
		}
	}
	if r := onlyRun(t, s, "b"); r.Status != store.StatusSucceeded || !r.EndedAt.Equal(end.EndedAt) {
		t.Errorf("MarkInterrupted changed an ended run: %+v", r)
	}
	if err := s.MarkInterrupted(ctx, nil); err != nil {
		t.Errorf("MarkInterrupted(nil): %v", err)
	}
}

func testRunLists(t *testing.T, s store.Store) {
	ctx := context.Background()
	var ids []int64
	for i, issue := range []string{"x", "y", "x", "z", "x"} {
		ids = append(ids, start(t, s, NewRun(issue, i+1)))
	}
	recent, err := s.RecentRuns(ctx, 3)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := runIDs(recent), []int64{ids[4], ids[3], ids[2]}; !reflect.DeepEqual(got, want) {
		t.Errorf("RecentRuns(3) = %v, want %v", got, want)
	}
	forX, err := s.RunsForIssue(ctx, "x", 10)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := runIDs(forX), []int64{ids[4], ids[2], ids[0]}; !reflect.DeepEqual(got, want) {
		t.Errorf("RunsForIssue(x, 10) = %v, want %v", got, want)
	}
	forX, _ = s.RunsForIssue(ctx, "x", 1)
	if got, want := runIDs(forX), []int64{ids[4]}; !reflect.DeepEqual(got, want) {
		t.Errorf("RunsForIssue(x, 1) = %v, want %v", got, want)
	}
	none, err := s.RunsForIssue(ctx, "nope", 10)
	if err != nil || len(none) != 0 {
		t.Errorf("RunsForIssue(nope) = %v, %v; want none", none, err)
	}
}

func testListLimits(t *testing.T, s store.Store) {
	ctx := context.Background()
	for _, limit := range []int{0, -1} {
		if _, err := s.RecentRuns(ctx, limit); err == nil {
			t.Errorf("RecentRuns(%d) succeeded, want an error", limit)
		}
		if _, err := s.RunsForIssue(ctx, "x", limit); err == nil {
			t.Errorf("RunsForIssue(x, %d) succeeded, want an error", limit)
		}
		if _, err := s.RunEvents(ctx, 1, limit); err == nil {
			t.Errorf("RunEvents(1, %d) succeeded, want an error", limit)
		}
	}
}

func testCountRuns(t *testing.T, s store.Store) {
	ctx := context.Background()
	// More ids than fit one query's parameter list, with duplicates and unknowns.
	var ids []string
	want := map[string]int{}
	for i := range 1200 {
		id := fmt.Sprintf("i%04d", i)
		ids = append(ids, id)
		want[id] = 0
	}
	for _, id := range []string{"i0000", "i0000", "i0000", "i0499", "i0500", "i1199", "i1199"} {
		start(t, s, NewRun(id, 1))
		want[id]++
	}
	finished := start(t, s, NewRun("i0700", 1))
	if err := s.FinishRun(ctx, finished, store.RunEnd{Status: store.StatusCancelled, EndedAt: t0}); err != nil {
		t.Fatal(err)
	}
	want["i0700"]++
	start(t, s, NewRun("not-asked", 1))
	ids = append(ids, "i0000", "i1199") // asked twice

	got, err := s.CountRuns(ctx, ids)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		for id, n := range want {
			if got[id] != n {
				t.Errorf("CountRuns[%s] = %d, want %d", id, got[id], n)
			}
		}
		t.Fatalf("CountRuns returned %d entries, want %d", len(got), len(want))
	}
	empty, err := s.CountRuns(ctx, nil)
	if err != nil || len(empty) != 0 {
		t.Fatalf("CountRuns(nil) = %v, %v; want an empty map", empty, err)
	}
}

func testTotals(t *testing.T, s store.Store) {
	ctx := context.Background()
	a1 := start(t, s, NewRun("a", 1))
	a2 := start(t, s, NewRun("a", 2))
	b1 := start(t, s, NewRun("b", 1))
	p := func(in, out, cache int64, cost float64) store.Progress {
		return store.Progress{Turns: 1, Tokens: store.Tokens{Input: in, Output: out, Total: in + out, CacheRead: cache}, CostUSD: cost}
	}
	if err := s.FinishRun(ctx, a1, store.RunEnd{Status: store.StatusSucceeded, EndedAt: t0.Add(90 * time.Second), Progress: p(100, 10, 1, 0.5)}); err != nil {
		t.Fatal(err)
	}
	if err := s.UpdateRunProgress(ctx, a2, p(200, 20, 2, 0.25)); err != nil { // still running: counts
		t.Fatal(err)
	}
	if err := s.FinishRun(ctx, b1, store.RunEnd{Status: store.StatusFailed, EndedAt: t0.Add(30 * time.Second), Progress: p(1000, 100, 10, 2)}); err != nil {
		t.Fatal(err)
	}
	issues, err := s.IssueTotals(ctx, []string{"a", "b", "zzz", "a"})
	if err != nil {
		t.Fatal(err)
	}
	all, err := s.AgentTotals(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		got, want store.Totals
	}{
		{"issue a (one run still running)", issues["a"],
			store.Totals{Runs: 2, Tokens: store.Tokens{Input: 300, Output: 30, Total: 330, CacheRead: 3}, CostUSD: 0.75, RunTime: 90 * time.Second}},
		{"issue b", issues["b"],
			store.Totals{Runs: 1, Tokens: store.Tokens{Input: 1000, Output: 100, Total: 1100, CacheRead: 10}, CostUSD: 2, RunTime: 30 * time.Second}},
		{"unknown issue", issues["zzz"], store.Totals{}},
		{"all", all,
			store.Totals{Runs: 3, Tokens: store.Tokens{Input: 1300, Output: 130, Total: 1430, CacheRead: 13}, CostUSD: 2.75, RunTime: 2 * time.Minute}},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: totals = %+v, want %+v", tt.name, tt.got, tt.want)
		}
	}
	if _, ok := issues["zzz"]; !ok || len(issues) != 3 {
		t.Errorf("IssueTotals returned %d entries (zzz present: %v), want one per distinct id asked", len(issues), ok)
	}
}

func testRetries(t *testing.T, s store.Store) {
	ctx := context.Background()
	retry := func(issue string, due time.Duration, kind store.RetryKind) store.Retry {
		return store.Retry{IssueID: issue, Identifier: "PROJ-" + issue, Attempt: 2, DueAt: t0.Add(due), Error: "e-" + issue, Kind: kind}
	}
	saves := []store.Retry{
		retry("c", 3*time.Second, store.RetryFailure),
		retry("b", time.Second, store.RetryContinuation),
		retry("a", 3*time.Second, store.RetryFailure), // same due time as c: ordered by issue id
		retry("d", -time.Hour, store.RetryResume),     // past due
		retry("e", time.Minute, store.RetryFailure),
	}
	for _, r := range saves {
		if err := s.SaveRetry(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	// An upsert replaces every field.
	replaced := retry("b", 2*time.Hour, store.RetryFailure)
	replaced.Attempt, replaced.SessionID, replaced.Identifier, replaced.SSHHost = 3, "sess-b", "PROJ-B", "build-2"
	if err := s.SaveRetry(ctx, replaced); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteRetry(ctx, "e"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteRetry(ctx, "never-saved"); err != nil {
		t.Fatalf("DeleteRetry of a missing entry: %v", err)
	}
	got, err := s.LoadRetries(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []store.Retry{saves[3], saves[2], saves[0], replaced}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("LoadRetries =\n%+v\nwant\n%+v", got, want)
	}
}

func testRetryValidation(t *testing.T, s store.Store) {
	valid := store.Retry{IssueID: "1", Identifier: "P-1", Attempt: 1, DueAt: t0, Kind: store.RetryFailure}
	tests := []struct {
		name   string
		mutate func(*store.Retry)
	}{
		{"empty issue id", func(r *store.Retry) { r.IssueID = "" }},
		{"empty identifier", func(r *store.Retry) { r.Identifier = "" }},
		{"attempt zero", func(r *store.Retry) { r.Attempt = 0 }},
		{"zero due time", func(r *store.Retry) { r.DueAt = time.Time{} }},
		{"unknown kind", func(r *store.Retry) { r.Kind = "stall" }},
	}
	for _, tt := range tests {
		r := valid
		tt.mutate(&r)
		if err := s.SaveRetry(context.Background(), r); err == nil {
			t.Errorf("%s: SaveRetry(%+v) succeeded, want an error", tt.name, r)
		}
	}
}

func testSessions(t *testing.T, s store.Store) {
	ctx := context.Background()
	if _, ok, err := s.LoadSession(ctx, "1"); ok || err != nil {
		t.Fatalf("LoadSession of a missing issue = ok %v, err %v; want false, nil", ok, err)
	}
	first := store.Session{IssueID: "1", SessionID: "s1", AgentKind: "claude-code", Workspace: "/ws/1"}
	second := store.Session{IssueID: "1", SessionID: "s2", AgentKind: "copilot-cli", Workspace: "/ws/1b"}
	for _, se := range []store.Session{first, second} {
		if err := s.SaveSession(ctx, se); err != nil {
			t.Fatal(err)
		}
	}
	got, ok, err := s.LoadSession(ctx, "1")
	if err != nil || !ok {
		t.Fatalf("LoadSession = ok %v, err %v", ok, err)
	}
	if got.UpdatedAt.IsZero() {
		t.Errorf("LoadSession UpdatedAt is zero, want the save time")
	}
	got.UpdatedAt = time.Time{}
	if got != second {
		t.Fatalf("LoadSession = %+v, want the replacement %+v", got, second)
	}
	if err := s.SaveSession(ctx, store.Session{IssueID: "2", AgentKind: "x"}); err == nil {
		t.Errorf("SaveSession without a session id succeeded, want an error")
	}
	for range 2 {
		if err := s.DeleteSession(ctx, "1"); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok, _ := s.LoadSession(ctx, "1"); ok {
		t.Fatalf("LoadSession after DeleteSession found a session")
	}
}

func events(from, n int) []store.Event {
	out := make([]store.Event, n)
	for i := range out {
		out[i] = store.Event{Time: t0.Add(time.Duration(from+i) * time.Millisecond), Type: "notification", Message: fmt.Sprint(from + i)}
	}
	return out
}

// each returns f of every element of xs, for comparing lists by one field.
func each[T, U any](xs []T, f func(T) U) []U {
	out := make([]U, len(xs))
	for i, x := range xs {
		out[i] = f(x)
	}
	return out
}

func messages(es []store.Event) []string {
	return each(es, func(e store.Event) string { return e.Message })
}

func testEventTrim(t *testing.T, s store.Store) {
	ctx := context.Background()
	run := start(t, s, NewRun("1", 1))
	other := start(t, s, NewRun("2", 1))
	if err := s.AppendEvents(ctx, other, events(0, 3)); err != nil {
		t.Fatal(err)
	}
	const batch = 64
	total := 0
	for total < store.MaxEventsPerRun*2 {
		if err := s.AppendEvents(ctx, run, events(total, batch)); err != nil {
			t.Fatal(err)
		}
		total += batch
	}
	if err := s.AppendEvents(ctx, run, nil); err != nil {
		t.Fatalf("AppendEvents(nil): %v", err)
	}
	got, err := s.RunEvents(ctx, run, 1000)
	if err != nil {
		t.Fatal(err)
	}
	want := messages(events(total-store.MaxEventsPerRun, store.MaxEventsPerRun))
	if !reflect.DeepEqual(messages(got), want) {
		t.Fatalf("after %d events, RunEvents kept %d: first %q last %q; want the newest %d, %q..%q",
			total, len(got), first(messages(got)), last(messages(got)), len(want), want[0], want[len(want)-1])
	}
	// Trimming one run leaves the others alone.
	if got, _ := s.RunEvents(ctx, other, 1000); !reflect.DeepEqual(messages(got), []string{"0", "1", "2"}) {
		t.Fatalf("events of the other run = %q, want [0 1 2]", messages(got))
	}
	// A batch larger than the cap keeps only its newest events.
	big := start(t, s, NewRun("3", 1))
	if err := s.AppendEvents(ctx, big, events(0, store.MaxEventsPerRun+50)); err != nil {
		t.Fatal(err)
	}
	got, _ = s.RunEvents(ctx, big, 1000)
	if len(got) != store.MaxEventsPerRun || got[0].Message != "50" {
		t.Fatalf("oversized batch kept %d events starting %q, want %d starting \"50\"", len(got), first(messages(got)), store.MaxEventsPerRun)
	}
}

func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}

func last(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[len(s)-1]
}

func testEventTail(t *testing.T, s store.Store) {
	ctx := context.Background()
	run := start(t, s, NewRun("1", 1))
	long := strings.Repeat("é", store.MaxEventMessageBytes) // 2 bytes per rune
	batch := append(events(0, 5), store.Event{Time: t0, Type: strings.Repeat("t", 500), Message: long})
	if err := s.AppendEvents(ctx, run, batch); err != nil {
		t.Fatal(err)
	}
	got, err := s.RunEvents(ctx, run, 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0].Message != "3" || got[1].Message != "4" {
		t.Fatalf("RunEvents(limit 3) = %q, want the newest three, oldest first: [3 4 <long>]", messages(got))
	}
	if !got[0].Time.Equal(t0.Add(3 * time.Millisecond)) {
		t.Errorf("event time = %v, want %v", got[0].Time, t0.Add(3*time.Millisecond))
	}
	m := got[2].Message
	if len(m) > store.MaxEventMessageBytes || !utf8.ValidString(m) || !strings.HasSuffix(m, "…") {
		t.Errorf("long message stored as %d bytes (valid UTF-8 %v), want at most %d, valid, ending in …",
			len(m), utf8.ValidString(m), store.MaxEventMessageBytes)
	}
	if len(got[2].Type) > store.MaxEventTypeBytes {
		t.Errorf("long type stored as %d bytes, want at most %d", len(got[2].Type), store.MaxEventTypeBytes)
	}
	if none, err := s.RunEvents(ctx, 12345, 10); err != nil || len(none) != 0 {
		t.Errorf("RunEvents of an unknown run = %v, %v; want none", none, err)
	}
}

func testTimes(t *testing.T, s store.Store) {
	ctx := context.Background()
	zone := time.FixedZone("UTC+5", 5*3600)
	startAt := time.Date(2026, 1, 2, 3, 4, 5, 678_901_234, zone)
	r := NewRun("1", 1)
	r.StartedAt = startAt
	id := start(t, s, r)
	endAt := startAt.Add(1500 * time.Millisecond)
	if err := s.FinishRun(ctx, id, store.RunEnd{Status: store.StatusSucceeded, EndedAt: endAt}); err != nil {
		t.Fatal(err)
	}
	got := onlyRun(t, s, "1")
	wantStart := startAt.Truncate(time.Millisecond).UTC()
	if !got.StartedAt.Equal(wantStart) || got.StartedAt.Location() != time.UTC {
		t.Errorf("StartedAt = %v, want %v in UTC", got.StartedAt, wantStart)
	}
	if d := got.EndedAt.Sub(got.StartedAt); d != 1500*time.Millisecond {
		t.Errorf("EndedAt - StartedAt = %v, want 1.5s", d)
	}
}

func runIDs(runs []store.Run) []int64 { return each(runs, func(r store.Run) int64 { return r.ID }) }

func testHolds(t *testing.T, s store.Store) {
	ctx := context.Background()
	older := store.Hold{IssueID: "2", Identifier: "P-2", Reason: "error", Message: "agent_not_found", Since: t0}
	h := store.Hold{IssueID: "1", Identifier: "P-1", Reason: "blocked", Message: "which database?",
		State: "In Progress", IssueUpdatedAt: "2026-03-30T14:00:00Z", Since: t0.Add(time.Minute)}
	for _, x := range []store.Hold{h, older} {
		if err := s.SaveHold(ctx, x); err != nil {
			t.Fatal(err)
		}
	}
	replaced := h
	replaced.Reason, replaced.Message = "needs_human_review", "please review"
	if err := s.SaveHold(ctx, replaced); err != nil {
		t.Fatal(err)
	}
	got, err := s.LoadHolds(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := []store.Hold{older, replaced}; !reflect.DeepEqual(got, want) {
		t.Fatalf("LoadHolds =\n%+v\nwant (oldest first)\n%+v", got, want)
	}
	if err := s.SaveHold(ctx, store.Hold{IssueID: "3", Identifier: "P-3", Since: t0}); err == nil {
		t.Errorf("SaveHold without a reason succeeded, want an error")
	}
	for range 2 {
		if err := s.DeleteHold(ctx, "1"); err != nil {
			t.Fatal(err)
		}
	}
	if got, _ := s.LoadHolds(ctx); len(got) != 1 || got[0].IssueID != "2" {
		t.Fatalf("LoadHolds after DeleteHold = %+v, want only issue 2", got)
	}
}

func testListRuns(t *testing.T, s store.Store) {
	ctx := context.Background()
	// Runs 1..9 of three issues; every third one ends failed, the rest stay running or
	// succeed.
	var ids []int64
	byIssue := map[string][]int64{}
	byStatus := map[store.RunStatus][]int64{}
	for i := range 9 {
		issue := []string{"a", "b", "c"}[i%3]
		id := start(t, s, NewRun(issue, i+1))
		st := store.StatusRunning
		switch i % 4 {
		case 1:
			st = store.StatusFailed
		case 2:
			st = store.StatusSucceeded
		}
		if st != store.StatusRunning {
			if err := s.FinishRun(ctx, id, store.RunEnd{Status: st, EndedAt: t0.Add(time.Minute)}); err != nil {
				t.Fatal(err)
			}
		}
		ids = append(ids, id)
		byIssue["PROJ-"+issue] = append(byIssue["PROJ-"+issue], id)
		byStatus[st] = append(byStatus[st], id)
	}
	newestFirst := func(in []int64) []int64 {
		out := make([]int64, len(in))
		for i, id := range in {
			out[len(in)-1-i] = id
		}
		return out
	}
	below := func(in []int64, before int64) []int64 {
		var out []int64
		for _, id := range in {
			if id < before {
				out = append(out, id)
			}
		}
		return out
	}
	tests := []struct {
		name string
		f    store.RunFilter
		want []int64
	}{
		{"all", store.RunFilter{Limit: 100}, newestFirst(ids)},
		{"limit", store.RunFilter{Limit: 2}, newestFirst(ids)[:2]},
		{"before", store.RunFilter{Limit: 3, Before: ids[5]}, newestFirst(ids[2:5])},
		{"before the first", store.RunFilter{Limit: 3, Before: ids[0]}, nil},
		{"identifier", store.RunFilter{Limit: 100, Identifier: "PROJ-b"}, newestFirst(byIssue["PROJ-b"])},
		{"status", store.RunFilter{Limit: 100, Status: store.StatusFailed}, newestFirst(byStatus[store.StatusFailed])},
		{"status and before", store.RunFilter{Limit: 100, Status: store.StatusRunning, Before: ids[6]},
			newestFirst(below(byStatus[store.StatusRunning], ids[6]))},
		{"identifier and status", store.RunFilter{Limit: 100, Identifier: "PROJ-a", Status: store.StatusRunning},
			newestFirst(intersect(byIssue["PROJ-a"], byStatus[store.StatusRunning]))},
		{"unknown identifier", store.RunFilter{Limit: 100, Identifier: "PROJ-zzz"}, nil},
		{"identifier is exact, not a pattern", store.RunFilter{Limit: 100, Identifier: "PROJ-%"}, nil},
	}
	for _, tt := range tests {
		got, err := s.ListRuns(ctx, tt.f)
		if err != nil {
			t.Errorf("%s: ListRuns(%+v): %v", tt.name, tt.f, err)
			continue
		}
		if g := runIDs(got); !(len(g) == 0 && len(tt.want) == 0) && !reflect.DeepEqual(g, tt.want) {
			t.Errorf("%s: ListRuns(%+v) = %v, want %v", tt.name, tt.f, g, tt.want)
		}
	}

	// Paging by the last id returned visits every run exactly once.
	var paged []int64
	f := store.RunFilter{Limit: 4}
	for page := 0; ; page++ {
		if page > len(ids) {
			t.Fatalf("paging did not end after %d pages: %v", page, paged)
		}
		got, err := s.ListRuns(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == 0 {
			break
		}
		paged = append(paged, runIDs(got)...)
		f.Before = got[len(got)-1].ID
	}
	if !reflect.DeepEqual(paged, newestFirst(ids)) {
		t.Errorf("paging with Limit 4 visited %v, want %v", paged, newestFirst(ids))
	}

	// Rows carry every field, as RunsForIssue returns them.
	got, err := s.ListRuns(ctx, store.RunFilter{Limit: 1, Identifier: "PROJ-a"})
	if err != nil || len(got) != 1 {
		t.Fatalf("ListRuns(PROJ-a, 1) = %v, %v", runIDs(got), err)
	}
	want, _ := s.RunsForIssue(ctx, "a", 1)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ListRuns row = %+v, want the same as RunsForIssue: %+v", got[0], want[0])
	}
}

func intersect(a, b []int64) []int64 {
	var out []int64
	for _, x := range a {
		for _, y := range b {
			if x == y {
				out = append(out, x)
			}
		}
	}
	return out
}

func testListRunsValidation(t *testing.T, s store.Store) {
	start(t, s, NewRun("1", 1))
	for _, f := range []store.RunFilter{
		{Limit: 0},
		{Limit: -1},
		{Limit: 10, Before: -1},
		{Limit: 10, Status: "done"},
	} {
		if runs, err := s.ListRuns(context.Background(), f); err == nil {
			t.Errorf("ListRuns(%+v) = %v, nil; want an error", f, runIDs(runs))
		}
	}
}

func testRunsForIdentifier(t *testing.T, s store.Store) {
	ctx := context.Background()
	var ids []int64
	for i, issue := range []string{"x", "y", "x", "x"} {
		ids = append(ids, start(t, s, NewRun(issue, i+1)))
	}
	got, err := s.RunsForIdentifier(ctx, "PROJ-x", 10)
	if err != nil {
		t.Fatal(err)
	}
	if g, want := runIDs(got), []int64{ids[3], ids[2], ids[0]}; !reflect.DeepEqual(g, want) {
		t.Errorf("RunsForIdentifier(PROJ-x, 10) = %v, want %v", g, want)
	}
	if got[0].IssueID != "x" || got[0].Identifier != "PROJ-x" {
		t.Errorf("RunsForIdentifier row = issue %q identifier %q, want x and PROJ-x", got[0].IssueID, got[0].Identifier)
	}
	got, _ = s.RunsForIdentifier(ctx, "PROJ-x", 2)
	if g, want := runIDs(got), []int64{ids[3], ids[2]}; !reflect.DeepEqual(g, want) {
		t.Errorf("RunsForIdentifier(PROJ-x, 2) = %v, want %v", g, want)
	}
	if none, err := s.RunsForIdentifier(ctx, "x", 10); err != nil || len(none) != 0 {
		t.Errorf("RunsForIdentifier(x) (an issue id, not an identifier) = %v, %v; want none", runIDs(none), err)
	}
	for _, limit := range []int{0, -1} {
		if _, err := s.RunsForIdentifier(ctx, "PROJ-x", limit); err == nil {
			t.Errorf("RunsForIdentifier(PROJ-x, %d) succeeded, want an error", limit)
		}
	}
}
