package github

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	"sortie/internal/testkit/fakegithub"
	"sortie/internal/tracker"
)

func TestAddLabel_AddsOnceAndMapsErrors(t *testing.T) {
	cases := []struct {
		name       string
		id, label  string
		labels     []string // the issue's labels before
		fail       int      // the status the POST is answered with; 0 lets the fake answer
		failBody   string
		wantLabels []string
		wantPost   bool
		wantErr    tracker.ErrorKind
		wantText   string // in the error
		outOfProj  bool
	}{
		{name: "added", id: "5", label: "needs-human", labels: []string{"In Progress", "bug"},
			wantLabels: []string{"In Progress", "bug", "needs-human"}, wantPost: true},
		{name: "added to #N", id: "#5", label: " needs-human ", labels: nil,
			wantLabels: []string{"needs-human"}, wantPost: true},
		{name: "already there sends nothing", id: "5", label: "needs-human", labels: []string{"Todo", "Needs-Human"},
			wantLabels: []string{"Todo", "Needs-Human"}},
		{name: "a state label is refused", id: "5", label: "done", labels: []string{"Todo"},
			wantLabels: []string{"Todo"}, wantErr: tracker.ErrPayload, wantText: "state"},
		{name: "empty label", id: "5", label: "  ", labels: []string{"Todo"},
			wantLabels: []string{"Todo"}, wantErr: tracker.ErrPayload},
		{name: "too long for GitHub", id: "5", label: strings.Repeat("x", 51), labels: []string{"Todo"},
			wantLabels: []string{"Todo"}, wantPost: true, wantErr: tracker.ErrPayload},
		{name: "missing issue", id: "404", label: "needs-human", wantErr: tracker.ErrNotFound},
		{name: "not a number", id: "abc", label: "needs-human", wantErr: tracker.ErrNotFound},
		{name: "a pull request", id: "8", label: "needs-human", wantErr: tracker.ErrNotFound},
		{name: "token may not write", id: "5", label: "needs-human", labels: []string{"Todo"}, fail: 403,
			failBody: `{"message":"Resource not accessible by personal access token"}`, wantLabels: []string{"Todo"},
			wantPost: true, wantErr: tracker.ErrAuth, wantText: "Issues read and write"},
		{name: "issues disabled", id: "5", label: "needs-human", labels: []string{"Todo"}, fail: 410,
			failBody: `{"message":"Issues are disabled for this repo"}`, wantLabels: []string{"Todo"}, wantPost: true, wantErr: tracker.ErrNotFound},
		{name: "transferred meanwhile", id: "5", label: "needs-human", labels: []string{"Todo"}, fail: 301,
			failBody: `{"message":"Moved Permanently"}`, wantLabels: []string{"Todo"}, wantPost: true, wantErr: tracker.ErrNotFound, outOfProj: true},
		{name: "server error", id: "5", label: "needs-human", labels: []string{"Todo"}, fail: 502,
			failBody: `<html>bad gateway</html>`, wantLabels: []string{"Todo"}, wantPost: true, wantErr: tracker.ErrAPI},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			clock := newTestClock()
			f := fakegithub.New(t, fakegithub.WithClock(clock.Now))
			f.AddIssue(5, "héllo", "open", c.labels...)
			f.AddPR(8)
			if c.fail != 0 {
				f.SetHook(func(w http.ResponseWriter, r *http.Request) bool {
					if r.Method != http.MethodPost {
						return false
					}
					if c.fail/100 == 3 {
						w.Header().Set("Location", f.URL()+"/repos/evil/repo/issues/5/labels")
					}
					w.WriteHeader(c.fail)
					_, _ = w.Write([]byte(c.failBody))
					return true
				})
			}
			tr := newTestTracker(t, f, clock)
			var _ tracker.Labeler = tr
			err := tr.AddLabel(context.Background(), c.id, c.label)
			if tracker.KindOf(err) != c.wantErr {
				t.Fatalf("AddLabel = %v, want kind %q", err, c.wantErr)
			}
			if err != nil {
				if !strings.Contains(err.Error(), c.wantText) || strings.Contains(err.Error(), fakegithub.Token) {
					t.Errorf("error %q: want it to say %q and not carry the token", err, c.wantText)
				}
				if errors.Is(err, tracker.ErrOutOfProject) != c.outOfProj {
					t.Errorf("error %v: out of project = %v, want %v", err, !c.outOfProj, c.outOfProj)
				}
			}
			posted := slices.ContainsFunc(f.Log(), func(l string) bool { return strings.HasPrefix(l, "POST ") })
			if posted != c.wantPost {
				t.Errorf("POST sent = %v, want %v: %v", posted, c.wantPost, f.Log())
			}
			if c.wantLabels != nil {
				if fi, _ := f.Issue(5); !slices.Equal(fi.Labels, c.wantLabels) {
					t.Errorf("labels after = %v, want %v", fi.Labels, c.wantLabels)
				}
			}
		})
	}
}

// TestAddLabel_TheIssueReadsBackWithTheLabelAndItsState: the label shows in the issue
// as the adapter reads it (lowercased), and its state is unchanged.
func TestAddLabel_TheIssueReadsBackWithTheLabelAndItsState(t *testing.T) {
	clock := newTestClock()
	f := fakegithub.New(t, fakegithub.WithClock(clock.Now))
	f.AddIssue(3, "three", "open", "Human Review")
	tr := newTestTracker(t, f, clock)
	ctx := context.Background()
	before, err := tr.FetchIssueByID(ctx, "3")
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(5e9)
	if err := tr.AddLabel(ctx, "3", "Needs-Human"); err != nil {
		t.Fatal(err)
	}
	is, err := tr.FetchIssueByID(ctx, "3")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(is.Labels, "needs-human") || is.State != "Human Review" || is.UpdatedAt == before.UpdatedAt {
		t.Errorf("after AddLabel: labels %v, state %q, updated_at %s (was %s)", is.Labels, is.State, is.UpdatedAt, before.UpdatedAt)
	}
}
