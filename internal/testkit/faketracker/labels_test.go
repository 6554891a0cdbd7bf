package faketracker

import (
	"errors"
	"slices"
	"testing"

	"sortie/internal/tracker"
)

func TestAddLabel_PersistsOnceRecordsAndMovesUpdatedAt(t *testing.T) {
	trk := newTracker(t)
	before, _ := trk.Issue("1")
	if err := trk.AddLabel(t.Context(), "1", "Needs-Human"); err != nil {
		t.Fatalf("AddLabel: %v", err)
	}
	after, _ := trk.Issue("1")
	if !slices.Contains(after.Labels, "needs-human") || after.UpdatedAt == before.UpdatedAt {
		t.Fatalf("after AddLabel: labels %v, updated_at %q (was %q)", after.Labels, after.UpdatedAt, before.UpdatedAt)
	}
	if err := trk.AddLabel(t.Context(), "1", "needs-human"); err != nil {
		t.Fatalf("AddLabel again: %v", err)
	}
	again, _ := trk.Issue("1")
	if again.UpdatedAt != after.UpdatedAt || len(again.Labels) != len(after.Labels) {
		t.Errorf("a label the issue has changed it: %+v", again)
	}
	want := []Labeling{{IssueID: "1", Label: "Needs-Human", Added: true}, {IssueID: "1", Label: "needs-human"}}
	if got := trk.Labelings(); !slices.Equal(got, want) {
		t.Errorf("Labelings = %v, want %v", got, want)
	}
	if err := trk.AddLabel(t.Context(), "nope", "x"); tracker.KindOf(err) != tracker.ErrNotFound {
		t.Errorf("AddLabel(unknown) = %v, want tracker_not_found", err)
	}
	injected := tracker.Errorf(tracker.ErrAuth, "add_label", "no")
	trk.FailNext(OpAddLabel, 1, injected)
	if err := trk.AddLabel(t.Context(), "1", "x"); !errors.Is(err, injected) || trk.Calls(OpAddLabel) != 4 {
		t.Errorf("AddLabel with a fault = %v (calls %d)", err, trk.Calls(OpAddLabel))
	}
}

func TestLabeler_FoundThroughPollOnlyNotThroughWithoutLabels(t *testing.T) {
	trk := newTracker(t)
	if _, ok := tracker.As[tracker.Labeler](trk.PollOnly()); !ok {
		t.Error("tracker.As finds no Labeler through PollOnly")
	}
	w := trk.WithoutLabels()
	if _, ok := tracker.As[tracker.Labeler](w); ok {
		t.Error("WithoutLabels still offers a Labeler")
	}
	if _, ok := tracker.As[tracker.Account](w); !ok {
		t.Error("WithoutLabels lost Account")
	}
	if _, ok := w.(tracker.Watcher); !ok {
		t.Error("WithoutLabels lost Watch")
	}
}
