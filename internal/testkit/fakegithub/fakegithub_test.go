package fakegithub_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"sortie/internal/testkit/fakegithub"
	"sortie/internal/tracker"
	"sortie/internal/tracker/github"
)

// newTracker builds the real GitHub adapter against f.
func newTracker(t *testing.T, f *fakegithub.Server) tracker.Tracker {
	t.Helper()
	tr, err := github.New(tracker.Config{
		Kind: "github", Endpoint: f.URL(), APIKey: fakegithub.Token, Project: f.Project(),
		ActiveStates: []string{"Todo", "In Progress"}, TerminalStates: []string{"Done"}, UserAgent: "sortie/test",
	})
	if err != nil {
		t.Fatalf("github.New: %v", err)
	}
	return tr
}

func candidates(t *testing.T, tr tracker.Tracker) []string {
	t.Helper()
	got, err := tr.FetchCandidateIssues(context.Background())
	if err != nil {
		t.Fatalf("FetchCandidateIssues: %v", err)
	}
	ids := []string{}
	for _, is := range got {
		ids = append(ids, is.ID+":"+is.State)
	}
	return ids
}

// TestRuntimeChangesReachTheAdapter: issues added and changed while the adapter polls
// show in its next fetch; a fetch with nothing changed is answered 304, uncharged.
func TestRuntimeChangesReachTheAdapter(t *testing.T) {
	f := fakegithub.New(t)
	f.AddIssue(1, "first", "open", "todo")
	tr := newTracker(t, f)

	if got, want := candidates(t, tr), []string{"1:Todo"}; !slices.Equal(got, want) {
		t.Fatalf("candidates = %v, want %v", got, want)
	}
	before := f.Counts()
	if got, want := candidates(t, tr), []string{"1:Todo"}; !slices.Equal(got, want) {
		t.Fatalf("unchanged re-fetch: candidates = %v, want %v", got, want)
	}
	after := f.Counts()
	if after.NotModified != before.NotModified+1 || after.Charged != before.Charged || after.Requests != before.Requests+1 {
		t.Errorf("unchanged re-fetch: counts went from %+v to %+v, want one more request, answered 304 and not charged", before, after)
	}

	f.AddIssue(2, "second", "open", "In Progress")
	if got, want := candidates(t, tr), []string{"1:Todo", "2:In Progress"}; !slices.Equal(got, want) {
		t.Errorf("after AddIssue(2): candidates = %v, want %v", got, want)
	}
	if c := f.Counts(); c.Charged != after.Charged+1 {
		t.Errorf("after AddIssue(2): charged %d, want %d: the changed list is served in full", c.Charged, after.Charged+1)
	}
	f.CloseIssue(1)
	f.RemoveLabel(2, "in progress")
	f.AddLabel(2, "Done")
	if got := candidates(t, tr); len(got) != 0 {
		t.Errorf("after closing #1 and labelling #2 Done: candidates = %v, want none", got)
	}
	f.ReopenIssue(1)
	if got, want := candidates(t, tr), []string{"1:Todo"}; !slices.Equal(got, want) {
		t.Errorf("after reopening #1: candidates = %v, want %v", got, want)
	}

	f.AddComment(2, "erin", "/sortie choose approve")
	cs, err := tr.FetchIssueComments(context.Background(), "2")
	if err != nil || len(cs) != 1 {
		t.Fatalf("comments of #2 = %+v, %v; want erin's", cs, err)
	}
	if c := cs[0]; c.AuthorLogin != "erin" || c.AuthorAssociation != "MEMBER" || c.AuthorBot || c.Body != "/sortie choose approve" {
		t.Errorf("erin's comment as the adapter reads it: %+v, want by erin, a MEMBER, not a bot", c)
	}
}

// TestChangesMoveUpdatedAtAndTheETag: with a clock that stands still, a change still
// moves updated_at and the ETag, so a conditional request sees it.
func TestChangesMoveUpdatedAtAndTheETag(t *testing.T) {
	now := time.Date(2026, 4, 1, 12, 0, 0, 0, time.UTC)
	f := fakegithub.New(t, fakegithub.WithClock(func() time.Time { return now }), fakegithub.WithRepo("acme", "rockets"))
	f.AddIssue(1, "first", "open")
	get := func(etag string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, f.URL()+"/repos/acme/rockets/issues/1", nil)
		req.Header.Set("Authorization", "Bearer "+fakegithub.Token)
		req.Header.Set("Accept", "application/vnd.github+json")
		req.Header.Set("User-Agent", "test")
		if etag != "" {
			req.Header.Set("If-None-Match", etag)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode, resp.Header.Get("ETag")
	}
	status, etag := get("")
	if status != http.StatusOK || etag == "" {
		t.Fatalf("first GET: %d with ETag %q, want 200 with an ETag", status, etag)
	}
	if status, _ := get(etag); status != http.StatusNotModified {
		t.Fatalf("GET with the current ETag: %d, want 304", status)
	}
	was, _ := f.Issue(1)
	f.Touch(1, func(*fakegithub.Issue) {}) // an edit that leaves every field as it was
	is, _ := f.Issue(1)
	if !is.UpdatedAt.After(was.UpdatedAt) {
		t.Errorf("updated_at after Touch = %v, want after %v", is.UpdatedAt, was.UpdatedAt)
	}
	status, etag2 := get(etag)
	if status != http.StatusOK || etag2 == etag {
		t.Errorf("GET with the old ETag after Touch: %d with ETag %q, want 200 and a new ETag", status, etag2)
	}
	if c := f.Counts(); c.NotModified != 1 || c.Requests != 3 {
		t.Errorf("counts = %+v, want 3 requests, one of them 304", c)
	}
}

// TestMutatorsWhileTheAdapterPolls: a test may change issues while a tracker polls;
// run with -race.
func TestMutatorsWhileTheAdapterPolls(t *testing.T) {
	f := fakegithub.New(t)
	tr := newTracker(t, f)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		for ctx.Err() == nil {
			_, _ = tr.FetchCandidateIssues(ctx)
		}
	})
	for n := int64(1); n <= 20; n++ {
		f.AddIssue(n, fmt.Sprint("issue ", n), "open", "todo")
		f.AddComment(n, "erin", "hello")
		if n%2 == 0 {
			f.SetState(n, "closed")
		}
		f.Touch(n, func(is *fakegithub.Issue) { is.Title += "!" })
	}
	cancel()
	wg.Wait()
	if got := candidates(t, tr); len(got) != 10 {
		t.Errorf("after adding 20 issues and closing 10: %d candidates (%v), want 10", len(got), got)
	}
}
