package linear

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	"sortie/internal/testkit/fakelinear"
	"sortie/internal/tracker"
)

func TestAddLabel_ByTheTeamsLabelIDNeverCreating(t *testing.T) {
	type setup struct {
		f     *fakelinear.Server
		issue *fakelinear.Issue
	}
	cases := []struct {
		name       string
		prepare    func(f *fakelinear.Server) // labels that exist
		has        []string                   // the issue's labels before
		ref        func(s setup) string       // the id given; the issue's id when nil
		label      string
		fail       func(w http.ResponseWriter) // answers the mutation when set
		wantLabels []string
		wantOps    []string // the adapter's operations, in order
		wantErr    tracker.ErrorKind
		wantText   []string
		outOfProj  bool
	}{
		{name: "the team's label", label: "needs-human",
			prepare: func(f *fakelinear.Server) { f.AddLabel("ENG", "needs-human", false) }, has: []string{"bug"},
			wantLabels: []string{"bug", "needs-human"}, wantOps: []string{"SortieIssueLabels", "SortieLabelByName", "SortieAddLabel"}},
		{name: "by identifier, name in other case", label: "Needs-Human", ref: func(s setup) string { return s.issue.Identifier },
			prepare:    func(f *fakelinear.Server) { f.AddLabel("ENG", "needs-human", false) },
			wantLabels: []string{"needs-human"}, wantOps: []string{"SortieIssueLabels", "SortieLabelByName", "SortieAddLabel"}},
		{name: "the workspace's label", label: "needs-human",
			prepare:    func(f *fakelinear.Server) { f.AddLabel("", "needs-human", false) },
			wantLabels: []string{"needs-human"}, wantOps: []string{"SortieIssueLabels", "SortieLabelByName", "SortieAddLabel"}},
		{name: "the team's before the workspace's", label: "needs-human",
			prepare: func(f *fakelinear.Server) {
				f.AddLabel("", "Needs-Human", false)
				f.AddLabel("OPS", "needs-human", false)
				f.AddLabel("ENG", "NEEDS-HUMAN", false)
			},
			wantLabels: []string{"NEEDS-HUMAN"}, wantOps: []string{"SortieIssueLabels", "SortieLabelByName", "SortieAddLabel"}},
		{name: "already there sends nothing", label: "needs-human",
			prepare: func(f *fakelinear.Server) { f.AddLabel("ENG", "Needs-Human", false) }, has: []string{"Needs-Human"},
			wantLabels: []string{"Needs-Human"}, wantOps: []string{"SortieIssueLabels"}},
		{name: "no such label", label: "needs-human", has: []string{"bug"},
			wantLabels: []string{"bug"}, wantOps: []string{"SortieIssueLabels", "SortieLabelByName"},
			wantErr: tracker.ErrPayload, wantText: []string{`create label "needs-human" in team Engineering (ENG)`, "does not create labels"}},
		{name: "only another team's label", label: "needs-human",
			prepare: func(f *fakelinear.Server) { f.AddLabel("OPS", "needs-human", false) },
			wantOps: []string{"SortieIssueLabels", "SortieLabelByName"}, wantErr: tracker.ErrPayload, wantText: []string{"create label"}},
		{name: "only a label group", label: "needs-human",
			prepare: func(f *fakelinear.Server) { f.AddLabel("ENG", "needs-human", true) },
			wantOps: []string{"SortieIssueLabels", "SortieLabelByName"}, wantErr: tracker.ErrPayload, wantText: []string{"create label"}},
		{name: "empty label", label: "  ", wantErr: tracker.ErrPayload},
		{name: "another team's issue", label: "needs-human", ref: func(s setup) string { return s.f.AddIssue("OPS", "o", "Todo", nil).ID },
			prepare: func(f *fakelinear.Server) { f.AddLabel("", "needs-human", false) },
			wantOps: []string{"SortieIssueLabels"}, wantErr: tracker.ErrNotFound, outOfProj: true},
		{name: "missing issue", label: "needs-human", ref: func(setup) string { return "ENG-999" },
			wantOps: []string{"SortieIssueLabels"}, wantErr: tracker.ErrNotFound},
		{name: "key without write access", label: "needs-human",
			prepare: func(f *fakelinear.Server) { f.AddLabel("ENG", "needs-human", false) },
			fail: func(w http.ResponseWriter) {
				fakelinear.WriteError(w, http.StatusForbidden, "FORBIDDEN", "Invalid scope: `write` required")
			},
			wantLabels: []string{}, wantOps: []string{"SortieIssueLabels", "SortieLabelByName"},
			wantErr: tracker.ErrAuth, wantText: []string{"write"}},
		{name: "server error", label: "needs-human",
			prepare: func(f *fakelinear.Server) { f.AddLabel("ENG", "needs-human", false) },
			fail:    func(w http.ResponseWriter) { w.WriteHeader(http.StatusBadGateway) },
			wantOps: []string{"SortieIssueLabels", "SortieLabelByName"}, wantErr: tracker.ErrAPI},
		{name: "rate limited", label: "needs-human",
			prepare: func(f *fakelinear.Server) { f.AddLabel("ENG", "needs-human", false) },
			fail: func(w http.ResponseWriter) {
				fakelinear.WriteError(w, http.StatusBadRequest, "RATELIMITED", "Rate limit exceeded")
			},
			wantOps: []string{"SortieIssueLabels", "SortieLabelByName"}, wantErr: tracker.ErrAPI},
		{name: "success false", label: "needs-human",
			prepare: func(f *fakelinear.Server) { f.AddLabel("ENG", "needs-human", false) },
			fail: func(w http.ResponseWriter) {
				w.Write([]byte(`{"data":{"issueAddLabel":{"success":false}}}`))
			},
			wantOps: []string{"SortieIssueLabels", "SortieLabelByName"}, wantErr: tracker.ErrPayload, wantText: []string{"success false"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, tr, _ := newTest(t, tracker.Config{})
			is := f.AddIssue("ENG", "a", "In Progress", func(is *fakelinear.Issue) { is.Labels = slices.Clone(c.has) })
			if c.prepare != nil {
				c.prepare(f)
			}
			id := is.ID
			if c.ref != nil {
				id = c.ref(setup{f, is})
			}
			if c.fail != nil {
				f.SetHook(func(w http.ResponseWriter, body []byte) bool {
					if !strings.Contains(string(body), "SortieAddLabel") {
						return false
					}
					c.fail(w)
					return true
				})
			}
			var _ tracker.Labeler = tr
			err := tr.AddLabel(context.Background(), id, c.label)
			if tracker.KindOf(err) != c.wantErr {
				t.Fatalf("AddLabel = %v, want kind %q", err, c.wantErr)
			}
			if err != nil {
				for _, s := range append(c.wantText, "add_label") {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q does not say %q", err, s)
					}
				}
				if strings.Contains(err.Error(), fakelinear.Key) {
					t.Errorf("the error shows the key: %v", err)
				}
				if errors.Is(err, tracker.ErrOutOfProject) != c.outOfProj {
					t.Errorf("error %v: out of project = %v, want %v", err, !c.outOfProj, c.outOfProj)
				}
			}
			if got := f.Log(); c.wantOps != nil && !slices.Equal(got, c.wantOps) {
				t.Errorf("operations %v, want %v", got, c.wantOps)
			}
			if c.wantLabels != nil {
				got, _ := f.Issue(is.ID)
				if !slices.Equal(got.Labels, c.wantLabels) && !(len(got.Labels) == 0 && len(c.wantLabels) == 0) {
					t.Errorf("labels after = %v, want %v", got.Labels, c.wantLabels)
				}
			}
		})
	}
}

// TestAddLabel_TheIssueReadsBackWithTheLabel: the label shows in the issue as the
// adapter reads it, its state is unchanged and its updatedAt moved.
func TestAddLabel_TheIssueReadsBackWithTheLabel(t *testing.T) {
	f, tr, clk := newTest(t, tracker.Config{})
	is := f.AddIssue("ENG", "a", "In Review", nil)
	f.AddLabel("ENG", "Needs-Human", false)
	ctx := context.Background()
	before, err := tr.FetchIssueByID(ctx, is.ID)
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(5e9)
	if err := tr.AddLabel(ctx, is.Identifier, "needs-human"); err != nil {
		t.Fatal(err)
	}
	got, err := tr.FetchIssueByID(ctx, is.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Labels, []string{"needs-human"}) || got.State != "In Review" || got.UpdatedAt == before.UpdatedAt {
		t.Errorf("after AddLabel: labels %v, state %q, updated %s (was %s)", got.Labels, got.State, got.UpdatedAt, before.UpdatedAt)
	}
}
