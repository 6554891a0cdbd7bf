package fakelinear_test

import (
	"context"
	"slices"
	"sync"
	"testing"

	"sortie/internal/testkit/fakelinear"
	"sortie/internal/tracker"
	"sortie/internal/tracker/linear"
)

// TestMutatorsWhileTheAdapterPolls: a test may add issues, move them and comment while
// the Linear adapter polls (run with -race), and an issue added at runtime is in the
// adapter's next candidate query.
func TestMutatorsWhileTheAdapterPolls(t *testing.T) {
	s := fakelinear.New(t, nil)
	s.AddTeam("ENG", "Engineering")
	first := s.AddIssue("ENG", "first", "Todo", nil)
	tr, err := linear.New(tracker.Config{Kind: "linear", Endpoint: s.URL, APIKey: fakelinear.Key, Team: "ENG",
		ActiveStates: []string{"Todo", "In Progress"}, UserAgent: "sortie/test"})
	if err != nil {
		t.Fatalf("linear.New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		for ctx.Err() == nil {
			_, _ = tr.FetchCandidateIssues(ctx)
		}
	})
	var added []*fakelinear.Issue
	for range 10 {
		is := s.AddIssue("ENG", "added while polling", "Todo", nil)
		s.AddComment(is.ID, s.Viewer().ID, "", "hello")
		s.SetState(is.ID, "In Progress")
		added = append(added, is)
	}
	s.SetState(first.ID, "Done")
	cancel()
	wg.Wait()

	got, err := tr.FetchCandidateIssues(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, is := range got {
		ids = append(ids, is.Identifier+":"+is.State)
	}
	var want []string
	for _, is := range added {
		want = append(want, is.Identifier+":In Progress")
	}
	if !slices.Equal(ids, want) {
		t.Errorf("candidates after the changes = %v, want %v (the added issues, in progress; not %s, done)", ids, want, first.Identifier)
	}
	cs, err := tr.FetchIssueComments(context.Background(), added[0].ID)
	if err != nil || len(cs) != 1 || cs[0].Body != "hello" {
		t.Errorf("comments of %s = %+v, %v; want the one added", added[0].Identifier, cs, err)
	}
}
