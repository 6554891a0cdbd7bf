package fakejira_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"sortie/internal/testkit/fakejira"
	"sortie/internal/tracker"
	"sortie/internal/tracker/jira"
)

var flavours = []struct {
	name string
	api  fakejira.API
}{{"cloud", fakejira.Cloud}, {"datacenter", fakejira.DataCenter}}

// newTracker builds the real Jira adapter against f.
func newTracker(t *testing.T, f *fakejira.Server, api fakejira.API) tracker.Tracker {
	t.Helper()
	cfg := tracker.Config{Kind: "jira", Endpoint: f.URL(), APIKey: f.Key(), Project: "PROJ",
		ActiveStates: []string{"To Do", "In Progress"}, UserAgent: "sortie/test", Options: map[string]any{}}
	if api == fakejira.DataCenter {
		cfg.Options["api"] = "datacenter"
	}
	tr, err := jira.New(cfg)
	if err != nil {
		t.Fatalf("jira.New: %v", err)
	}
	return tr
}

func candidates(t *testing.T, tr tracker.Tracker) []string {
	t.Helper()
	got, err := tr.FetchCandidateIssues(context.Background())
	if err != nil {
		t.Fatalf("FetchCandidateIssues: %v", err)
	}
	keys := []string{}
	for _, is := range got {
		keys = append(keys, is.Identifier+":"+is.State)
	}
	return keys
}

// TestRuntimeChangesReachTheAdapter: issues added, moved and commented on while the
// adapter polls show in what it fetches next, on Cloud and Data Center.
func TestRuntimeChangesReachTheAdapter(t *testing.T) {
	for _, fl := range flavours {
		t.Run(fl.name, func(t *testing.T) {
			f := fakejira.New(t, fl.api)
			f.AddIssue("10001", "PROJ-1", "To Do")
			f.AddIssue("20001", "OTHER-1", "To Do")
			tr := newTracker(t, f, fl.api)
			ctx := context.Background()
			if got, want := candidates(t, tr), []string{"PROJ-1:To Do"}; !slices.Equal(got, want) {
				t.Fatalf("candidates = %v, want %v", got, want)
			}

			f.AddIssue("10002", "PROJ-2", "In Progress")
			f.SetField("PROJ-2", "summary", "Added while polling")
			got, err := tr.FetchCandidateIssues(ctx)
			if err != nil || len(got) != 2 || got[1].Identifier != "PROJ-2" || got[1].Title != "Added while polling" {
				t.Fatalf("after AddIssue(PROJ-2): %+v, %v; want PROJ-1 and PROJ-2 titled as set", got, err)
			}
			f.SetStatus("PROJ-1", "Done")
			if got, want := candidates(t, tr), []string{"PROJ-2:In Progress"}; !slices.Equal(got, want) {
				t.Errorf("after SetStatus(PROJ-1, Done): candidates = %v, want %v", got, want)
			}

			f.AddTransition("PROJ-2", "31", "Send to review", "Human Review")
			if err := tr.TransitionIssue(ctx, "PROJ-2", "human review"); err != nil {
				t.Fatalf("TransitionIssue: %v", err)
			}
			if st, _ := f.Status("PROJ-2"); st != "Human Review" {
				t.Errorf("PROJ-2's status after the transition = %q, want Human Review", st)
			}

			f.AddComment("PROJ-2", "erin", "Looks good.\n\nShip it.")
			if err := tr.CommentIssue(ctx, "PROJ-2", "Thanks!"); err != nil {
				t.Fatalf("CommentIssue: %v", err)
			}
			cs, err := tr.FetchIssueComments(ctx, "PROJ-2")
			if err != nil || len(cs) != 2 {
				t.Fatalf("comments = %+v, %v; want erin's and the adapter's", cs, err)
			}
			if c := cs[0]; c.Author != "erin" || c.Body != "Looks good.\n\nShip it." || c.AuthorEmail != "erin@example.com" {
				t.Errorf("erin's comment as the adapter reads it: %+v", c)
			}
			kept := f.Comments("PROJ-2")
			if len(kept) != 2 || kept[1].Author != "Sortie Bot" || kept[1].Body != "Thanks!" {
				t.Errorf("Comments() = %+v, want erin's then Sortie Bot's \"Thanks!\"", kept)
			}
			if n := f.RequestCount(); n != len(f.Log()) || n == 0 {
				t.Errorf("RequestCount() = %d, Log() has %d", n, len(f.Log()))
			}
		})
	}
}

// TestChangesMoveTheUpdatedTime: with a clock that stands still, every change still
// moves the issue's updated time.
func TestChangesMoveTheUpdatedTime(t *testing.T) {
	now := time.Date(2026, 4, 1, 12, 0, 0, 0, time.UTC)
	f := fakejira.New(t, fakejira.Cloud, fakejira.WithClock(func() time.Time { return now }))
	f.AddIssue("10001", "PROJ-1", "To Do")
	tr := newTracker(t, f, fakejira.Cloud)
	updated := func() string {
		t.Helper()
		is, err := tr.FetchIssueByID(context.Background(), "PROJ-1")
		if err != nil {
			t.Fatal(err)
		}
		return is.UpdatedAt
	}
	seen := []string{updated()}
	for _, change := range []func(){
		func() { f.SetStatus("PROJ-1", "In Progress") },
		func() { f.SetField("PROJ-1", "labels", []string{"agent"}) },
		func() { f.AddComment("PROJ-1", "erin", "hi") },
		func() { f.SetStatus("PROJ-1", "In Progress") },
	} {
		change()
		seen = append(seen, updated())
	}
	for i := 1; i < len(seen); i++ {
		if seen[i] <= seen[i-1] {
			t.Errorf("updated times %v, want each change to move it on", seen)
			break
		}
	}
}

// TestMutatorsWhileTheAdapterPolls: a test may change issues while a tracker polls;
// run with -race.
func TestMutatorsWhileTheAdapterPolls(t *testing.T) {
	f := fakejira.New(t, fakejira.Cloud)
	tr := newTracker(t, f, fakejira.Cloud)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		for ctx.Err() == nil {
			_, _ = tr.FetchCandidateIssues(ctx)
		}
	})
	for i := 1; i <= 20; i++ {
		key := fmt.Sprint("PROJ-", i)
		f.AddIssue(fmt.Sprint(10000+i), key, "To Do")
		f.AddComment(key, "erin", "hello")
		if i%2 == 0 {
			f.SetStatus(key, "Done")
		}
	}
	cancel()
	wg.Wait()
	if got := candidates(t, tr); len(got) != 10 {
		t.Errorf("after adding 20 issues and closing 10: %d candidates (%v), want 10", len(got), got)
	}
}
