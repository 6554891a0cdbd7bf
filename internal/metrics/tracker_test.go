package metrics

import (
	"context"
	"errors"
	"slices"
	"testing"

	"sortie/internal/testkit/faketracker"
	"sortie/internal/tracker"
)

func TestTracker_CountsEveryOperationBySuccessAndError(t *testing.T) {
	calls := []struct {
		op        faketracker.Op
		operation string
		call      func(ctx context.Context, t tracker.Tracker) error
	}{
		{faketracker.OpFetchCandidates, "fetch_candidates", func(ctx context.Context, t tracker.Tracker) error {
			_, err := t.FetchCandidateIssues(ctx)
			return err
		}},
		{faketracker.OpFetchIssue, "fetch_issue", func(ctx context.Context, t tracker.Tracker) error {
			_, err := t.FetchIssueByID(ctx, "1")
			return err
		}},
		{faketracker.OpFetchStates, "fetch_states_by_ids", func(ctx context.Context, t tracker.Tracker) error {
			_, err := t.FetchIssueStatesByIDs(ctx, []string{"1"})
			return err
		}},
		{faketracker.OpFetchStatesByIdentifiers, "fetch_states_by_identifiers", func(ctx context.Context, t tracker.Tracker) error {
			_, err := t.FetchIssueStatesByIdentifiers(ctx, []string{"T-1"})
			return err
		}},
		{faketracker.OpFetchComments, "fetch_comments", func(ctx context.Context, t tracker.Tracker) error {
			_, err := t.FetchIssueComments(ctx, "1")
			return err
		}},
		{faketracker.OpTransition, "transition", func(ctx context.Context, t tracker.Tracker) error {
			return t.TransitionIssue(ctx, "1", "Done")
		}},
		{faketracker.OpComment, "comment", func(ctx context.Context, t tracker.Tracker) error {
			return t.CommentIssue(ctx, "1", "hello")
		}},
	}
	if len(calls) != int(opCount) {
		t.Fatalf("test covers %d operations, the wrapper has %d", len(calls), opCount)
	}
	m := New("1.2.3")
	fake := faketracker.New("Todo")
	fake.Put(tracker.Issue{ID: "1", Identifier: "T-1", State: "Todo"})
	wrapped := m.Tracker(fake)
	boom := errors.New("boom")
	for _, c := range calls {
		fake.FailNext(c.op, 1, boom)
		if err := c.call(t.Context(), wrapped); !errors.Is(err, boom) {
			t.Errorf("%s: first call returned %v, want the tracker's own error %v", c.operation, err, boom)
		}
		for range 2 {
			if err := c.call(t.Context(), wrapped); err != nil {
				t.Errorf("%s: %v", c.operation, err)
			}
		}
	}
	fams := gather(t, m)
	for _, c := range calls {
		for result, want := range map[string]float64{"success": 2, "error": 1} {
			got := series(t, fams, "sortie_tracker_requests_total", map[string]string{"operation": c.operation, "result": result})
			if v := got.GetCounter().GetValue(); v != want {
				t.Errorf("tracker_requests_total{operation=%q,result=%q} = %g, want %g", c.operation, result, v, want)
			}
		}
		if got, want := fake.Calls(c.op), 3; got != want {
			t.Errorf("%s reached the tracker %d times, want %d", c.operation, got, want)
		}
	}
}

func TestTracker_EveryOperationIsExportedBeforeItsFirstCall(t *testing.T) {
	fams := gather(t, New("1.2.3"))
	if got, want := len(fams["sortie_tracker_requests_total"].GetMetric()), 2*int(opCount); got != want {
		t.Errorf("tracker_requests_total has %d series before any call, want %d (every operation × success, error)", got, want)
	}
}

func TestTracker_KeepsWatcherOnlyWhenTheTrackerHasIt(t *testing.T) {
	m := New("1.2.3")
	fake := faketracker.New("Todo")
	fake.Put(tracker.Issue{ID: "1", Identifier: "T-1", State: "Todo"})

	w, ok := m.Tracker(fake).(tracker.Watcher)
	if !ok {
		t.Fatal("the wrapped fake tracker is not a tracker.Watcher; the orchestrator would only poll it")
	}
	ch := w.Watch(t.Context())
	if err := fake.SetState("1", "Done"); err != nil {
		t.Fatal(err)
	}
	<-ch // the wrapped tracker's own notification, passed through

	if _, ok := m.Tracker(fake.PollOnly()).(tracker.Watcher); ok {
		t.Error("the wrapper of a tracker without Watch is a tracker.Watcher")
	}
	n := testCounterSum(t, m)
	if n != 0 {
		t.Errorf("Watch counted %g tracker requests, want 0", n)
	}
}

func TestTracker_UnwrapAndNil(t *testing.T) {
	m := New("1.2.3")
	fake := faketracker.New("Todo")
	u, ok := m.Tracker(fake).(interface{ Unwrap() tracker.Tracker })
	if !ok || u.Unwrap() != tracker.Tracker(fake) {
		t.Errorf("Unwrap did not return the wrapped tracker")
	}
	if got := m.Tracker(nil); got != nil {
		t.Errorf("Tracker(nil) = %v, want nil", got)
	}
}

// testCounterSum sums every sortie_tracker_requests_total series.
func testCounterSum(t *testing.T, m *Metrics) float64 {
	t.Helper()
	var sum float64
	for _, s := range gather(t, m)["sortie_tracker_requests_total"].GetMetric() {
		sum += s.GetCounter().GetValue()
	}
	return sum
}

// TestTracker_WrapperStillShowsTheTrackersAccount: the counting wrapper hides the
// tracker's optional interfaces from a type assertion, but tracker.As finds them, so
// the orchestrator still learns which account Sortie writes as (its own comments must
// never answer a checkpoint).
func TestTracker_WrapperStillShowsTheTrackersAccount(t *testing.T) {
	wrapped := New("1.2.3").Tracker(faketracker.New("Todo"))
	acc, ok := tracker.As[tracker.Account](wrapped)
	if !ok {
		t.Fatal("tracker.As found no Account behind the metrics wrapper")
	}
	if id, err := acc.Self(context.Background()); err != nil || id != faketracker.Self {
		t.Errorf("Self = %+v, %v; want %+v", id, err, faketracker.Self)
	}
}

// TestTracker_WrapperStillShowsTheTrackersLabeler: tracker.As finds the tracker's
// Labeler behind the counting wrapper (escalation labels), and none when the tracker
// has none.
func TestTracker_WrapperStillShowsTheTrackersLabeler(t *testing.T) {
	m := New("1.2.3")
	fake := faketracker.New("Todo")
	fake.Put(tracker.Issue{ID: "1", Identifier: "T-1", State: "Todo"})
	l, ok := tracker.As[tracker.Labeler](m.Tracker(fake))
	if !ok {
		t.Fatal("tracker.As found no Labeler behind the metrics wrapper")
	}
	if err := l.AddLabel(context.Background(), "1", "needs-human"); err != nil {
		t.Fatal(err)
	}
	if is, _ := fake.Issue("1"); !slices.Contains(is.Labels, "needs-human") {
		t.Errorf("labels = %v, want needs-human", is.Labels)
	}
	if _, ok := tracker.As[tracker.Labeler](m.Tracker(fake.WithoutLabels())); ok {
		t.Error("tracker.As found a Labeler behind a tracker without one")
	}
}
