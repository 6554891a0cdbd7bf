package storetest

// The reactions' part of the suite (store.ReactionStore), and the review metadata of
// runs.

import (
	"context"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"sortie/internal/store"
)

// reactionTests are the cases of the suite about store.ReactionStore and
// RunEnd.ReviewMetadata.
var reactionTests = []struct {
	name string
	fn   func(t *testing.T, s store.Store)
}{
	{"ReactionWatchesSaveReplaceLoadDelete", testReactionWatches},
	{"SaveReactionWatchRejectsIncompleteWatch", testReactionWatchValidation},
	{"ObserveReactionResetsDispatchedOnlyOnNewFingerprint", testObserveReaction},
	{"MarkReactionDispatchedOncePerFingerprint", testMarkReactionDispatched},
	{"MarkReactionDispatchedConcurrentlyOnlyOneWins", testMarkReactionDispatchedRace},
	{"ReleaseReactionDispatchGivesTheAttemptBack", testReleaseReactionDispatch},
	{"ResetAndEscalateReaction", testResetEscalateReaction},
	{"ReactionKeysAreChecked", testReactionKeys},
	{"DeleteReactionsForgetsWatchAndStates", testDeleteReactions},
	{"ReviewMetadataRoundTrips", testReviewMetadata},
	{"FinishRunRejectsBadReviewMetadata", testReviewMetadataValidation},
}

// NewReactionWatch returns a valid watch of issue id for SaveReactionWatch.
func NewReactionWatch(id string, handedOff time.Time) store.ReactionWatch {
	return store.ReactionWatch{IssueID: id, Identifier: "PROJ-" + id, Workspace: "/ws/PROJ-" + id,
		SessionID: "sess-" + id, Branch: "sortie/PROJ-" + id, PRNumber: 0, HandedOffAt: handedOff}
}

func observe(t *testing.T, s store.Store, issueID, kind, fp string, now time.Time) store.ReactionState {
	t.Helper()
	st, err := s.ObserveReaction(context.Background(), issueID, kind, fp, now)
	if err != nil {
		t.Fatalf("ObserveReaction(%s, %s, %s): %v", issueID, kind, fp, err)
	}
	return st
}

func mark(t *testing.T, s store.Store, issueID, kind, fp string, now time.Time) bool {
	t.Helper()
	ok, err := s.MarkReactionDispatched(context.Background(), issueID, kind, fp, now)
	if err != nil {
		t.Fatalf("MarkReactionDispatched(%s, %s, %s): %v", issueID, kind, fp, err)
	}
	return ok
}

func states(t *testing.T, s store.Store, issueID string) []store.ReactionState {
	t.Helper()
	got, err := s.ReactionStates(context.Background(), issueID)
	if err != nil {
		t.Fatalf("ReactionStates(%s): %v", issueID, err)
	}
	return got
}

func testReactionWatches(t *testing.T, s store.Store) {
	ctx := context.Background()
	if got, err := s.LoadReactionWatches(ctx); err != nil || len(got) != 0 {
		t.Fatalf("LoadReactionWatches on an empty store = %+v, %v; want none", got, err)
	}
	newer := NewReactionWatch("1", t0.Add(time.Minute))
	older := NewReactionWatch("2", t0)
	same := NewReactionWatch("0", t0) // same time as older: issue id breaks the tie
	for _, w := range []store.ReactionWatch{newer, older, same} {
		if err := s.SaveReactionWatch(ctx, w); err != nil {
			t.Fatal(err)
		}
	}
	// A new hand-off of issue 1 replaces its watch; the PR is found.
	replaced := newer
	replaced.SessionID, replaced.Branch, replaced.PRNumber = "sess-1b", "sortie/PROJ-1-b", 42
	replaced.HandedOffAt = t0.Add(2 * time.Minute)
	if err := s.SaveReactionWatch(ctx, replaced); err != nil {
		t.Fatal(err)
	}
	got, err := s.LoadReactionWatches(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := []store.ReactionWatch{same, older, replaced}; !reflect.DeepEqual(got, want) {
		t.Fatalf("LoadReactionWatches =\n%+v\nwant (oldest hand-off first, then issue id)\n%+v", got, want)
	}
	// Deleting a watch keeps the issue's states; deleting twice is no error.
	observe(t, s, "1", store.ReactionCI, "sha1", t0)
	for range 2 {
		if err := s.DeleteReactionWatch(ctx, "1"); err != nil {
			t.Fatal(err)
		}
	}
	if got, _ := s.LoadReactionWatches(ctx); len(got) != 2 || got[0].IssueID != "0" || got[1].IssueID != "2" {
		t.Fatalf("LoadReactionWatches after DeleteReactionWatch(1) = %+v, want issues 0 and 2", got)
	}
	if got := states(t, s, "1"); len(got) != 1 || got[0].Fingerprint != "sha1" {
		t.Fatalf("ReactionStates(1) after DeleteReactionWatch = %+v, want the ci state kept", got)
	}
}

func testReactionWatchValidation(t *testing.T, s store.Store) {
	ctx := context.Background()
	for name, w := range map[string]store.ReactionWatch{
		"no issue id":      {Identifier: "P-1", HandedOffAt: t0},
		"no identifier":    {IssueID: "1", HandedOffAt: t0},
		"no handed_off_at": {IssueID: "1", Identifier: "P-1"},
		"negative PR":      {IssueID: "1", Identifier: "P-1", HandedOffAt: t0, PRNumber: -1},
	} {
		if err := s.SaveReactionWatch(ctx, w); err == nil {
			t.Errorf("SaveReactionWatch(%s) succeeded, want an error", name)
		}
	}
	if got, err := s.LoadReactionWatches(ctx); err != nil || len(got) != 0 {
		t.Fatalf("LoadReactionWatches after rejected saves = %+v, %v; want none", got, err)
	}
}

func testObserveReaction(t *testing.T, s store.Store) {
	t1, t2, t3 := t0.Add(time.Minute), t0.Add(2*time.Minute), t0.Add(3*time.Minute)
	got := observe(t, s, "1", store.ReactionCI, "sha1", t0)
	want := store.ReactionState{IssueID: "1", Kind: store.ReactionCI, Fingerprint: "sha1", UpdatedAt: t0}
	if got != want {
		t.Fatalf("first ObserveReaction = %+v, want %+v", got, want)
	}
	if !mark(t, s, "1", store.ReactionCI, "sha1", t1) {
		t.Fatal("MarkReactionDispatched after the first observation = false, want true")
	}
	// The same fingerprint again leaves the state as it was: dispatched, its time too.
	got = observe(t, s, "1", store.ReactionCI, "sha1", t2)
	want = store.ReactionState{IssueID: "1", Kind: store.ReactionCI, Fingerprint: "sha1", Dispatched: true, Attempts: 1, UpdatedAt: t1}
	if got != want {
		t.Fatalf("ObserveReaction of the same fingerprint = %+v, want unchanged %+v", got, want)
	}
	if err := s.EscalateReaction(context.Background(), "1", store.ReactionCI, t2); err != nil {
		t.Fatal(err)
	}
	// A new fingerprint: a failure not acted on yet. Attempts and Escalated stay.
	got = observe(t, s, "1", store.ReactionCI, "sha2", t3)
	want = store.ReactionState{IssueID: "1", Kind: store.ReactionCI, Fingerprint: "sha2", Attempts: 1, Escalated: true, UpdatedAt: t3}
	if got != want {
		t.Fatalf("ObserveReaction of a new fingerprint = %+v, want %+v", got, want)
	}
	// Kinds are apart: a review state of the same issue is a state of its own.
	rv := observe(t, s, "1", store.ReactionReview, "sha2", t3)
	if rv.Kind != store.ReactionReview || rv.Attempts != 0 || rv.Escalated || rv.Dispatched {
		t.Fatalf("ObserveReaction(review) = %+v, want a new review state", rv)
	}
	if all := states(t, s, "1"); !reflect.DeepEqual(all, []store.ReactionState{want, rv}) {
		t.Fatalf("ReactionStates(1) = %+v, want ci then review: %+v, %+v", all, want, rv)
	}
	if other := states(t, s, "2"); len(other) != 0 {
		t.Fatalf("ReactionStates of an issue never observed = %+v, want none", other)
	}
}

func testMarkReactionDispatched(t *testing.T, s store.Store) {
	t1 := t0.Add(time.Minute)
	if mark(t, s, "1", store.ReactionCI, "sha1", t0) {
		t.Fatal("MarkReactionDispatched of a state never observed = true, want false")
	}
	observe(t, s, "1", store.ReactionCI, "sha1", t0)
	if !mark(t, s, "1", store.ReactionCI, "sha1", t1) {
		t.Fatal("first MarkReactionDispatched = false, want true")
	}
	if mark(t, s, "1", store.ReactionCI, "sha1", t1) {
		t.Fatal("second MarkReactionDispatched of the same fingerprint = true, want false")
	}
	// A newer failure arrives; a caller still holding the old fingerprint loses.
	observe(t, s, "1", store.ReactionCI, "sha2", t1)
	if mark(t, s, "1", store.ReactionCI, "sha1", t1) {
		t.Fatal("MarkReactionDispatched of a stale fingerprint = true, want false")
	}
	if !mark(t, s, "1", store.ReactionCI, "sha2", t1) {
		t.Fatal("MarkReactionDispatched of the new fingerprint = false, want true")
	}
	want := []store.ReactionState{{IssueID: "1", Kind: store.ReactionCI, Fingerprint: "sha2", Dispatched: true, Attempts: 2, UpdatedAt: t1}}
	if got := states(t, s, "1"); !reflect.DeepEqual(got, want) {
		t.Fatalf("ReactionStates after two dispatches = %+v, want %+v", got, want)
	}
}

// A dispatch whose run never reached the agent is taken back: the failure can be
// dispatched again and counts no attempt; a stale fingerprint takes back nothing.
func testReleaseReactionDispatch(t *testing.T, s store.Store) {
	ctx := context.Background()
	observe(t, s, "1", store.ReactionCI, "sha1", t0)
	if !mark(t, s, "1", store.ReactionCI, "sha1", t0) {
		t.Fatal("MarkReactionDispatched = false")
	}
	if err := s.ReleaseReactionDispatch(ctx, "1", store.ReactionCI, "other"); err != nil {
		t.Fatal(err)
	}
	if got := states(t, s, "1"); len(got) != 1 || !got[0].Dispatched || got[0].Attempts != 1 {
		t.Fatalf("after releasing another fingerprint: %+v, want sha1 still dispatched once", got)
	}
	if err := s.ReleaseReactionDispatch(ctx, "1", store.ReactionCI, "sha1"); err != nil {
		t.Fatal(err)
	}
	if got := states(t, s, "1"); len(got) != 1 || got[0].Dispatched || got[0].Attempts != 0 {
		t.Fatalf("after the release: %+v, want sha1 not dispatched, no attempt", got)
	}
	// Released twice: nothing more is given back.
	if err := s.ReleaseReactionDispatch(ctx, "1", store.ReactionCI, "sha1"); err != nil {
		t.Fatal(err)
	}
	if !mark(t, s, "1", store.ReactionCI, "sha1", t0) {
		t.Fatal("the released failure cannot be dispatched again")
	}
	if got := states(t, s, "1"); got[0].Attempts != 1 {
		t.Fatalf("attempts = %d after release and a new dispatch, want 1", got[0].Attempts)
	}
}

// Several daemons (goroutines here, connections in the store) mark the same failure
// at once: exactly one wins.
func testMarkReactionDispatchedRace(t *testing.T, s store.Store) {
	const n = 8
	observe(t, s, "1", store.ReactionCI, "sha1", t0)
	var (
		wg   sync.WaitGroup
		won  = make([]bool, n)
		errs = make([]error, n)
		gate = make(chan struct{})
	)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-gate
			won[i], errs[i] = s.MarkReactionDispatched(context.Background(), "1", store.ReactionCI, "sha1", t0)
		}()
	}
	close(gate)
	wg.Wait()
	wins := 0
	for i := range n {
		if errs[i] != nil {
			t.Errorf("MarkReactionDispatched #%d: %v", i, errs[i])
		}
		if won[i] {
			wins++
		}
	}
	if wins != 1 {
		t.Fatalf("%d of %d concurrent MarkReactionDispatched calls returned true, want exactly 1", wins, n)
	}
	if got := states(t, s, "1"); len(got) != 1 || got[0].Attempts != 1 || !got[0].Dispatched {
		t.Fatalf("ReactionStates after the race = %+v, want dispatched once (1 attempt)", got)
	}
}

func testResetEscalateReaction(t *testing.T, s store.Store) {
	ctx := context.Background()
	t1 := t0.Add(time.Minute)
	observe(t, s, "1", store.ReactionCI, "sha1", t0)
	mark(t, s, "1", store.ReactionCI, "sha1", t0)
	observe(t, s, "1", store.ReactionReview, "c1", t0)
	if err := s.EscalateReaction(ctx, "1", store.ReactionCI, t1); err != nil {
		t.Fatal(err)
	}
	got := states(t, s, "1")
	if len(got) != 2 || !got[0].Escalated || got[0].Attempts != 1 || !got[0].Dispatched || !got[0].UpdatedAt.Equal(t1) || got[1].Escalated {
		t.Fatalf("ReactionStates after EscalateReaction(ci) = %+v, want ci escalated (its attempt kept), review not", got)
	}
	// CI passed: the ci state is forgotten, the review state stays.
	for range 2 {
		if err := s.ResetReaction(ctx, "1", store.ReactionCI); err != nil {
			t.Fatal(err)
		}
	}
	if got := states(t, s, "1"); len(got) != 1 || got[0].Kind != store.ReactionReview {
		t.Fatalf("ReactionStates after ResetReaction(ci) = %+v, want only the review state", got)
	}
	// The next failure starts over: no attempts, not escalated.
	want := store.ReactionState{IssueID: "1", Kind: store.ReactionCI, Fingerprint: "sha1", UpdatedAt: t1}
	if st := observe(t, s, "1", store.ReactionCI, "sha1", t1); st != want {
		t.Fatalf("ObserveReaction after ResetReaction = %+v, want %+v", st, want)
	}
	// Escalating a kind never observed keeps the escalation; the first observation
	// then is a new failure, still escalated.
	if err := s.EscalateReaction(ctx, "2", store.ReactionReview, t0); err != nil {
		t.Fatal(err)
	}
	if st := observe(t, s, "2", store.ReactionReview, "c1", t1); !st.Escalated || st.Dispatched || st.Attempts != 0 || st.Fingerprint != "c1" {
		t.Fatalf("ObserveReaction after escalating an unobserved state = %+v, want escalated, not dispatched", st)
	}
	if !mark(t, s, "2", store.ReactionReview, "c1", t1) {
		t.Fatal("MarkReactionDispatched after escalating an unobserved state = false, want true")
	}
}

func testReactionKeys(t *testing.T, s store.Store) {
	ctx := context.Background()
	calls := map[string]func() error{
		"ObserveReaction without issue": func() error {
			_, err := s.ObserveReaction(ctx, "", store.ReactionCI, "sha", t0)
			return err
		},
		"ObserveReaction of unknown kind": func() error {
			_, err := s.ObserveReaction(ctx, "1", "lint", "sha", t0)
			return err
		},
		"ObserveReaction without fingerprint": func() error {
			_, err := s.ObserveReaction(ctx, "1", store.ReactionCI, "", t0)
			return err
		},
		"MarkReactionDispatched without fingerprint": func() error {
			_, err := s.MarkReactionDispatched(ctx, "1", store.ReactionCI, "", t0)
			return err
		},
		"ResetReaction of unknown kind":    func() error { return s.ResetReaction(ctx, "1", "") },
		"EscalateReaction of unknown kind": func() error { return s.EscalateReaction(ctx, "1", "CI", t0) },
	}
	for name, call := range calls {
		if err := call(); err == nil {
			t.Errorf("%s succeeded, want an error", name)
		}
	}
	if got := states(t, s, "1"); len(got) != 0 {
		t.Fatalf("ReactionStates after rejected calls = %+v, want none", got)
	}
}

func testDeleteReactions(t *testing.T, s store.Store) {
	ctx := context.Background()
	for _, id := range []string{"1", "2"} {
		if err := s.SaveReactionWatch(ctx, NewReactionWatch(id, t0)); err != nil {
			t.Fatal(err)
		}
		observe(t, s, id, store.ReactionCI, "sha", t0)
		observe(t, s, id, store.ReactionReview, "c", t0)
	}
	for range 2 { // the second time there is nothing left: no error
		if err := s.DeleteReactions(ctx, "1"); err != nil {
			t.Fatal(err)
		}
	}
	if got := states(t, s, "1"); len(got) != 0 {
		t.Fatalf("ReactionStates(1) after DeleteReactions = %+v, want none", got)
	}
	ws, err := s.LoadReactionWatches(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(ws) != 1 || ws[0].IssueID != "2" || len(states(t, s, "2")) != 2 {
		t.Fatalf("after DeleteReactions(1): watches %+v, states of 2 %+v; want issue 2's watch and both states kept", ws, states(t, s, "2"))
	}
}

func testReviewMetadata(t *testing.T, s store.Store) {
	ctx := context.Background()
	meta := `{"verdict":"approve","findings":[{"file":"a.go","line":3,"note":"ünïcode"}]}`
	first := NewRun("1", 1)
	first.Reaction = store.ReactionCI
	id := start(t, s, first)
	if r := onlyRun(t, s, "1"); r.ReviewMetadata != "" || r.Reaction != store.ReactionCI {
		t.Fatalf("ReviewMetadata of a running run = %q, want empty; Reaction = %q, want ci", r.ReviewMetadata, r.Reaction)
	}
	if err := s.FinishRun(ctx, id, store.RunEnd{Status: store.StatusHandedOff, EndedAt: t0.Add(time.Minute), ReviewMetadata: meta}); err != nil {
		t.Fatal(err)
	}
	// A run without a review, and one at the size limit.
	plain := start(t, s, NewRun("2", 1))
	if err := s.FinishRun(ctx, plain, store.RunEnd{Status: store.StatusSucceeded, EndedAt: t0}); err != nil {
		t.Fatal(err)
	}
	big := `"` + strings.Repeat("x", store.MaxReviewMetadataBytes-2) + `"`
	bigID := start(t, s, NewRun("3", 1))
	if err := s.FinishRun(ctx, bigID, store.RunEnd{Status: store.StatusSucceeded, EndedAt: t0, ReviewMetadata: big,
		Events: []store.Event{{Time: t0, Type: "review", Message: "done"}}}); err != nil {
		t.Fatalf("FinishRun with %d bytes of review metadata (the limit) and events: %v", len(big), err)
	}
	want := map[int64]string{id: meta, plain: "", bigID: big}
	lists := map[string]func() ([]store.Run, error){
		"RunsForIssue":      func() ([]store.Run, error) { return s.RunsForIssue(ctx, "1", 10) },
		"RunsForIdentifier": func() ([]store.Run, error) { return s.RunsForIdentifier(ctx, "PROJ-3", 10) },
		"RecentRuns":        func() ([]store.Run, error) { return s.RecentRuns(ctx, 10) },
		"ListRuns": func() ([]store.Run, error) {
			return s.ListRuns(ctx, store.RunFilter{Limit: 10, Status: store.StatusSucceeded})
		},
	}
	for name, list := range lists {
		runs, err := list()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(runs) == 0 {
			t.Fatalf("%s returned no runs", name)
		}
		for _, r := range runs {
			if r.ReviewMetadata != want[r.ID] {
				t.Errorf("%s: run %d ReviewMetadata = %.80q, want %.80q", name, r.ID, r.ReviewMetadata, want[r.ID])
			}
		}
	}
}

func testReviewMetadataValidation(t *testing.T, s store.Store) {
	ctx := context.Background()
	id := start(t, s, NewRun("1", 1))
	for name, meta := range map[string]string{
		"too long":     `"` + strings.Repeat("x", store.MaxReviewMetadataBytes-1) + `"`,
		"not JSON":     `{"verdict":`,
		"two values":   `{} {}`,
		"bare garbage": `approve`,
	} {
		if err := s.FinishRun(ctx, id, store.RunEnd{Status: store.StatusSucceeded, EndedAt: t0, ReviewMetadata: meta}); err == nil {
			t.Errorf("FinishRun with review metadata %s succeeded, want an error", name)
		}
	}
	if r := onlyRun(t, s, "1"); r.Status != store.StatusRunning || r.ReviewMetadata != "" {
		t.Fatalf("after rejected FinishRun: %+v, want still running without review metadata", r)
	}
	// A RunsInProgress reader sees the column as well (recovery reads runs this way).
	running, err := s.RunsInProgress(ctx)
	if err != nil || len(running) != 1 || running[0].ReviewMetadata != "" {
		t.Fatalf("RunsInProgress = %+v, %v", running, err)
	}
}
