package jira

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	"sortie/internal/tracker"
)

func TestAddLabel_UpdateAddsOnceAndMapsErrors(t *testing.T) {
	cases := []struct {
		name       string
		id, label  string
		labels     []string // the issue's labels before
		fail       int      // the status the PUT is answered with; 0 lets the fake answer
		failBody   string
		wantLabels []string
		wantPut    bool
		wantErr    tracker.ErrorKind
		wantText   []string
		outOfProj  bool
	}{
		{name: "added by key", id: "PROJ-1", label: "needs-human", labels: []string{"backend"},
			wantLabels: []string{"backend", "needs-human"}, wantPut: true},
		{name: "added by id", id: "10001", label: " needs-human ",
			wantLabels: []string{"needs-human"}, wantPut: true},
		{name: "already there sends nothing", id: "PROJ-1", label: "needs-human", labels: []string{"Needs-Human"},
			wantLabels: []string{"Needs-Human"}},
		{name: "a space is refused before Jira is asked", id: "PROJ-1", label: "needs human", labels: []string{"backend"},
			wantLabels: []string{"backend"}, wantErr: tracker.ErrPayload, wantText: []string{"cannot contain spaces", `"needs-human"`}},
		{name: "a tab too", id: "PROJ-1", label: "needs\thuman", wantErr: tracker.ErrPayload, wantText: []string{"cannot contain spaces"}},
		{name: "empty", id: "PROJ-1", label: " ", wantErr: tracker.ErrPayload},
		{name: "too long", id: "PROJ-1", label: strings.Repeat("é", 256), wantErr: tracker.ErrPayload, wantText: []string{"at most 255"}},
		{name: "another project's key", id: "OTHER-1", label: "needs-human", wantErr: tracker.ErrNotFound, outOfProj: true},
		{name: "another project's issue by id", id: "20001", label: "needs-human", wantErr: tracker.ErrNotFound, outOfProj: true},
		{name: "missing issue", id: "PROJ-9", label: "needs-human", wantErr: tracker.ErrNotFound},
		{name: "not an issue ref", id: "../myself", label: "needs-human", wantErr: tracker.ErrNotFound},
		{name: "no Edit issues permission", id: "PROJ-1", label: "needs-human", fail: 403,
			failBody: `{"errorMessages":["You do not have permission to edit issues in this project."]}`,
			wantPut:  true, wantErr: tracker.ErrAuth, wantText: []string{"Edit issues"}},
		{name: "labels not on the edit screen", id: "PROJ-1", label: "needs-human", fail: 400,
			failBody: `{"errorMessages":[],"errors":{"labels":"Field 'labels' cannot be set. It is not on the appropriate screen, or unknown."}}`,
			wantPut:  true, wantErr: tracker.ErrPayload, wantText: []string{"cannot be set", "edit screen"}},
		{name: "server error", id: "PROJ-1", label: "needs-human", fail: 503, wantPut: true, wantErr: tracker.ErrAPI},
	}
	for _, c := range cases {
		for _, fl := range flavours() {
			t.Run(c.name+"/"+fl.name, func(t *testing.T) {
				f := newFake(t, fl.cloud)
				f.AddIssue("10001", "PROJ-1", "To Do")
				f.AddIssue("20001", "OTHER-1", "To Do")
				if c.labels != nil {
					f.SetField("PROJ-1", "labels", c.labels)
				}
				if c.fail != 0 {
					f.SetHook(func(w http.ResponseWriter, r *http.Request) bool {
						if r.Method != http.MethodPut {
							return false
						}
						w.WriteHeader(c.fail)
						_, _ = w.Write([]byte(c.failBody))
						return true
					})
				}
				tr := newFakeTracker(t, f, fl.cloud, nil)
				var _ tracker.Labeler = tr
				err := tr.AddLabel(context.Background(), c.id, c.label)
				if tracker.KindOf(err) != c.wantErr {
					t.Fatalf("AddLabel = %v, want kind %q", err, c.wantErr)
				}
				if err != nil {
					for _, s := range append(c.wantText, "add_label") {
						if !strings.Contains(err.Error(), s) {
							t.Errorf("error %q does not say %q", err, s)
						}
					}
					if strings.Contains(err.Error(), "tok3n") || strings.Contains(err.Error(), dcKey) {
						t.Errorf("error leaks the token: %v", err)
					}
					if errors.Is(err, tracker.ErrOutOfProject) != c.outOfProj {
						t.Errorf("error %v: out of project = %v, want %v", err, !c.outOfProj, c.outOfProj)
					}
				}
				var puts []string
				for _, r := range f.Log() {
					if r.Method == http.MethodPut {
						puts = append(puts, r.Path+" "+r.Body)
					}
				}
				if (len(puts) > 0) != c.wantPut {
					t.Errorf("PUTs %v, want one: %v", puts, c.wantPut)
				}
				if c.wantPut && c.fail == 0 {
					api := "/rest/api/2/issue/"
					if fl.cloud {
						api = "/rest/api/3/issue/"
					}
					want := api + c.id + ` {"update":{"labels":[{"add":"needs-human"}]}}`
					if len(puts) != 1 || puts[0] != want {
						t.Errorf("PUTs %v, want [%s]", puts, want)
					}
				}
				if c.wantLabels != nil {
					if got, _ := f.Labels("PROJ-1"); !slices.Equal(got, c.wantLabels) {
						t.Errorf("labels after = %v, want %v", got, c.wantLabels)
					}
				}
			})
		}
	}
}

// TestAddLabel_TheIssueReadsBackWithTheLabel: the label shows in the issue as the
// adapter reads it, and the issue's updated time moved.
func TestAddLabel_TheIssueReadsBackWithTheLabel(t *testing.T) {
	for _, fl := range flavours() {
		t.Run(fl.name, func(t *testing.T) {
			f := newFake(t, fl.cloud)
			f.AddIssue("10001", "PROJ-1", "In Progress")
			tr := newFakeTracker(t, f, fl.cloud, nil)
			ctx := context.Background()
			before, err := tr.FetchIssueByID(ctx, "10001")
			if err != nil {
				t.Fatal(err)
			}
			if err := tr.AddLabel(ctx, "10001", "Needs-Human"); err != nil {
				t.Fatal(err)
			}
			is, err := tr.FetchIssueByID(ctx, "10001")
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(is.Labels, []string{"needs-human"}) || is.State != "In Progress" || is.UpdatedAt == before.UpdatedAt {
				t.Errorf("after AddLabel: labels %v, state %q, updated %s (was %s)", is.Labels, is.State, is.UpdatedAt, before.UpdatedAt)
			}
		})
	}
}
