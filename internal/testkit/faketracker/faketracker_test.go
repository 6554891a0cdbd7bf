package faketracker

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"sortie/internal/tracker"
)

func newTracker(t *testing.T) *Tracker {
	t.Helper()
	trk := New("Todo", "In Progress")
	trk.Put(
		tracker.Issue{ID: "1", Identifier: "T-1", Title: "one", State: "Todo"},
		tracker.Issue{ID: "2", Identifier: "T-2", Title: "two", State: "Done"},
		tracker.Issue{ID: "3", Identifier: "T-3", Title: "three", State: "in progress",
			BlockedBy: []tracker.BlockerRef{{ID: "2", Identifier: "T-2"}, {ID: "x", Identifier: "EXT-9", State: "Open"}}},
	)
	return trk
}

func ids(issues []tracker.Issue) []string {
	var out []string
	for _, is := range issues {
		out = append(out, is.ID)
	}
	return out
}

func TestFetchCandidateIssues_ActiveStatesInInsertionOrderWithoutComments(t *testing.T) {
	trk := newTracker(t)
	got, err := trk.FetchCandidateIssues(t.Context())
	if err != nil {
		t.Fatalf("FetchCandidateIssues: %v", err)
	}
	if want := []string{"1", "3"}; !slices.Equal(ids(got), want) {
		t.Fatalf("candidates = %v, want %v", ids(got), want)
	}
	for _, is := range got {
		if is.Comments != nil {
			t.Errorf("candidate %s: Comments = %v, want nil (listing calls do not fetch comments)", is.ID, is.Comments)
		}
	}
}

func TestFetch_BlockersCarryTheBlockersCurrentState(t *testing.T) {
	trk := newTracker(t)
	is, err := trk.FetchIssueByID(t.Context(), "3")
	if err != nil {
		t.Fatalf("FetchIssueByID: %v", err)
	}
	want := []tracker.BlockerRef{{ID: "2", Identifier: "T-2", State: "Done"}, {ID: "x", Identifier: "EXT-9", State: "Open"}}
	if !slices.Equal(is.BlockedBy, want) {
		t.Fatalf("BlockedBy = %v, want %v (known blockers resolved, unknown ones as given)", is.BlockedBy, want)
	}
	if err := trk.SetState("2", "Todo"); err != nil {
		t.Fatal(err)
	}
	is, _ = trk.FetchIssueByID(t.Context(), "3")
	if is.BlockedBy[0].State != "Todo" {
		t.Fatalf("after the blocker moved: BlockedBy[0].State = %q, want %q", is.BlockedBy[0].State, "Todo")
	}
}

func TestTransitionIssue_PersistsRecordsAndMovesUpdatedAt(t *testing.T) {
	trk := newTracker(t)
	before, _ := trk.Issue("1")
	if err := trk.TransitionIssue(t.Context(), "1", "Human Review"); err != nil {
		t.Fatalf("TransitionIssue: %v", err)
	}
	after, err := trk.FetchIssueByID(t.Context(), "1")
	if err != nil {
		t.Fatalf("FetchIssueByID: %v", err)
	}
	if after.State != "Human Review" {
		t.Errorf("State = %q, want %q", after.State, "Human Review")
	}
	if after.UpdatedAt == before.UpdatedAt {
		t.Errorf("UpdatedAt = %q, want it changed from %q", after.UpdatedAt, before.UpdatedAt)
	}
	if got, want := trk.Transitions(), []Transition{{IssueID: "1", From: "Todo", To: "Human Review"}}; !slices.Equal(got, want) {
		t.Errorf("Transitions = %v, want %v", got, want)
	}
	if err := trk.TransitionIssue(t.Context(), "nope", "Done"); tracker.KindOf(err) != tracker.ErrNotFound {
		t.Errorf("TransitionIssue(unknown): error kind %q (%v), want %q", tracker.KindOf(err), err, tracker.ErrNotFound)
	}
}

func TestCommentIssue_PersistsAndMovesUpdatedAt(t *testing.T) {
	trk := newTracker(t)
	before, _ := trk.Issue("1")
	if err := trk.CommentIssue(t.Context(), "1", "hello"); err != nil {
		t.Fatalf("CommentIssue: %v", err)
	}
	if err := trk.AddComment("1", "alice", "answer"); err != nil {
		t.Fatalf("AddComment: %v", err)
	}
	comments, err := trk.FetchIssueComments(t.Context(), "1")
	if err != nil {
		t.Fatalf("FetchIssueComments: %v", err)
	}
	if len(comments) != 2 || comments[0].Body != "hello" || comments[0].Author != "sortie" || comments[1].Author != "alice" {
		t.Fatalf("comments = %+v, want sortie's %q then alice's %q", comments, "hello", "answer")
	}
	after, _ := trk.Issue("1")
	if after.UpdatedAt == before.UpdatedAt {
		t.Errorf("UpdatedAt unchanged (%q) after comments", after.UpdatedAt)
	}
}

func TestFetchIssueStatesByIDs_OmitsUnknownIDs(t *testing.T) {
	trk := newTracker(t)
	got, err := trk.FetchIssueStatesByIDs(t.Context(), []string{"1", "gone", "2"})
	if err != nil {
		t.Fatalf("FetchIssueStatesByIDs: %v", err)
	}
	if len(got) != 2 || got["1"] != "Todo" || got["2"] != "Done" {
		t.Fatalf("states = %v, want map[1:Todo 2:Done]", got)
	}
	byIdent, err := trk.FetchIssueStatesByIdentifiers(t.Context(), []string{"T-3", "T-404"})
	if err != nil {
		t.Fatalf("FetchIssueStatesByIdentifiers: %v", err)
	}
	if len(byIdent) != 1 || byIdent["T-3"] != "in progress" {
		t.Fatalf("states by identifier = %v, want map[T-3:in progress]", byIdent)
	}
}

func TestDelete_LaterLookupsAreNotFound(t *testing.T) {
	trk := newTracker(t)
	trk.Delete("1")
	if _, err := trk.FetchIssueByID(t.Context(), "1"); tracker.KindOf(err) != tracker.ErrNotFound {
		t.Fatalf("FetchIssueByID after Delete: error kind %q (%v), want %q", tracker.KindOf(err), err, tracker.ErrNotFound)
	}
	got, _ := trk.FetchCandidateIssues(t.Context())
	if want := []string{"3"}; !slices.Equal(ids(got), want) {
		t.Fatalf("candidates after Delete = %v, want %v", ids(got), want)
	}
}

func TestFaults_FailNextCountsDownAndFailAlwaysUntilHealed(t *testing.T) {
	trk := newTracker(t)
	boom := errors.New("boom")
	trk.FailNext(OpFetchStates, 2, boom)
	for i := range 2 {
		if _, err := trk.FetchIssueStatesByIDs(t.Context(), []string{"1"}); !errors.Is(err, boom) {
			t.Fatalf("call %d: error %v, want the injected one", i+1, err)
		}
	}
	if _, err := trk.FetchIssueStatesByIDs(t.Context(), []string{"1"}); err != nil {
		t.Fatalf("call 3: error %v, want none after 2 injected failures", err)
	}
	if got := trk.Calls(OpFetchStates); got != 3 {
		t.Errorf("Calls = %d, want 3", got)
	}
	if got := trk.Failures(OpFetchStates); got != 2 {
		t.Errorf("Failures = %d, want 2", got)
	}

	trk.FailAlways(OpFetchCandidates, nil)
	for range 3 {
		if _, err := trk.FetchCandidateIssues(t.Context()); tracker.KindOf(err) != tracker.ErrTransport {
			t.Fatalf("FetchCandidateIssues with FailAlways: error kind %q, want %q", tracker.KindOf(err), tracker.ErrTransport)
		}
	}
	trk.Heal(OpFetchCandidates)
	if _, err := trk.FetchCandidateIssues(t.Context()); err != nil {
		t.Fatalf("FetchCandidateIssues after Heal: %v", err)
	}
	// Other operations were never affected.
	if _, err := trk.FetchIssueByID(t.Context(), "1"); err != nil {
		t.Fatalf("FetchIssueByID: %v", err)
	}
}

func TestWatch_WakesOnChangesAndClosesWithContext(t *testing.T) {
	trk := newTracker(t)
	ctx, cancel := context.WithCancel(t.Context())
	ch := trk.Watch(ctx)
	if err := trk.TransitionIssue(t.Context(), "1", "In Progress"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatal("no watch notification within 10s of a transition")
	}
	cancel()
	for range ch {
	}
}

func TestPollOnly_HidesWatch(t *testing.T) {
	trk := newTracker(t)
	if _, ok := trk.PollOnly().(tracker.Watcher); ok {
		t.Fatal("PollOnly() implements tracker.Watcher, want it hidden")
	}
}

func TestIssuesAreCopies(t *testing.T) {
	trk := newTracker(t)
	got, _ := trk.FetchIssueByID(t.Context(), "3")
	got.BlockedBy[0].Identifier = "changed"
	got.State = "changed"
	again, _ := trk.FetchIssueByID(t.Context(), "3")
	if again.BlockedBy[0].Identifier != "T-2" || again.State != "in progress" {
		t.Fatalf("a caller's edit leaked into the tracker: %+v", again)
	}
}

func TestBeforeCall_RunsFirstWithoutTheLock(t *testing.T) {
	trk := newTracker(t)
	var seen []string
	trk.BeforeCall(OpFetchStates, func(ctx context.Context) {
		// The hook may use the tracker: it must not hold the lock.
		if err := trk.SetState("1", "Done"); err != nil {
			t.Errorf("SetState in hook: %v", err)
		}
		seen = append(seen, "hook")
	})
	got, err := trk.FetchIssueStatesByIDs(t.Context(), []string{"1"})
	if err != nil {
		t.Fatalf("FetchIssueStatesByIDs: %v", err)
	}
	if got["1"] != "Done" || len(seen) != 1 {
		t.Fatalf("state = %q after %d hook runs, want %q after 1 (the hook runs before the call)", got["1"], len(seen), "Done")
	}
	trk.BeforeCall(OpFetchStates, nil)
	trk.FetchIssueStatesByIDs(t.Context(), []string{"1"})
	if len(seen) != 1 {
		t.Fatalf("hook ran %d times, want 1 (removed)", len(seen))
	}
}
