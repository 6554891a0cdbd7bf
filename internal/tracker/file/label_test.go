package file

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sortie/internal/tracker"
)

func TestAddLabel_WritesInTheFilesLayout(t *testing.T) {
	const now = `"updated_at": "2026-04-01T12:30:00Z"`
	tests := []struct {
		name, input, id, label string
		want                   string // "" when the file must not change
	}{
		{
			name: "labels absent", input: twoIssues, id: "a", label: "needs-human",
			want: strings.Replace(twoIssues, `    "updated_at": "2026-01-01T00:00:00Z",
    "custom": {"z": 1, "a": [true, null]}
  },`, `    `+now+`,
    "custom": {"z": 1, "a": [true, null]},
    "labels": ["needs-human"]
  },`, 1),
		},
		{
			name: "one label: after it on the line, updated_at added", input: twoIssues, id: "b", label: "needs-human",
			want: strings.Replace(twoIssues, `    "labels": ["X"]
  }`, `    "labels": ["X", "needs-human"],
    `+now+`
  }`, 1),
		},
		{
			name:  "several labels: separated as they are",
			input: `[{"id": "a", "identifier": "A-1", "title": "T", "state": "Todo", "labels": ["x","y"], "updated_at": "old"}]`,
			id:    "a", label: "Needs-Human",
			want: `[{"id": "a", "identifier": "A-1", "title": "T", "state": "Todo", "labels": ["x","y","Needs-Human"], ` + now + `}]`,
		},
		{
			name:  "one label a line",
			input: "[{\"id\": \"a\", \"identifier\": \"A-1\", \"title\": \"T\", \"state\": \"Todo\", \"labels\": [\n    \"x\"\n  ]}]",
			id:    "a", label: "needs-human",
			want: "[{\"id\": \"a\", \"identifier\": \"A-1\", \"title\": \"T\", \"state\": \"Todo\", \"labels\": [\n    \"x\",\n    \"needs-human\"\n  ], " + now + "}]",
		},
		{
			name:  "empty labels",
			input: `[{"id": "a", "identifier": "A-1", "title": "T", "state": "Todo", "labels": [ ]}]`,
			id:    "a", label: `needs <"human"> & co`,
			want: `[{"id": "a", "identifier": "A-1", "title": "T", "state": "Todo", "labels": ["needs <\"human\"> & co"], ` + now + `}]`,
		},
		{
			name:  "already there in other case: untouched",
			input: `[{"id": "a", "identifier": "A-1", "title": "T", "state": "Todo", "labels": ["Needs-Human"]}]`,
			id:    "a", label: "needs-human",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeIssues(t, tt.input)
			tr := newTestTracker(t, path, "Todo")
			var _ tracker.Labeler = tr
			if err := tr.AddLabel(context.Background(), tt.id, tt.label); err != nil {
				t.Fatal(err)
			}
			want := tt.want
			if want == "" {
				want = tt.input
			}
			if got := readString(t, path); got != want {
				t.Errorf("file after AddLabel:\n%s\nwant:\n%s", got, want)
			}
			is, err := tr.FetchIssueByID(context.Background(), tt.id)
			if err != nil || !slices.Contains(is.Labels, strings.ToLower(tt.label)) {
				t.Errorf("issue read back: labels %v, %v; want %q among them", is.Labels, err, strings.ToLower(tt.label))
			}
			assertNoTempFiles(t, filepath.Dir(path))
		})
	}
}

func TestAddLabel_RefusedRequestsLeaveTheFile(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		name, content, id, label string
		kind                     tracker.ErrorKind
		subs                     []string
	}{
		{"unknown id", twoIssues, "zzz", "needs-human", tracker.ErrNotFound, []string{`"zzz"`}},
		{"identifier is not an id", twoIssues, "A-1", "needs-human", tracker.ErrNotFound, []string{`"A-1"`}},
		{"empty label", twoIssues, "a", "  ", tracker.ErrPayload, []string{"empty label"}},
		{"invalid file", oneIssue(`"labels": null`), "a", "needs-human", tracker.ErrPayload, []string{`field "labels"`, "did not change it", "add_label"}},
		{"labels not an array", oneIssue(`"labels": "x"`), "a", "needs-human", tracker.ErrPayload, []string{`field "labels"`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := writeIssues(t, tt.content)
			wantKind(t, newTestTracker(t, path).AddLabel(ctx, tt.id, tt.label), tt.kind, tt.subs...)
			if got := readString(t, path); got != tt.content {
				t.Errorf("a refused AddLabel changed the file:\n%s", got)
			}
		})
	}
	missing := newTestTracker(t, filepath.Join(t.TempDir(), "gone.json"))
	wantKind(t, missing.AddLabel(ctx, "a", "needs-human"), tracker.ErrPayload, "gone.json", "does not exist")
}

// TestAddLabel_SharesAWriteWithTransitions: labels and transitions of several issues at
// once all land, none lost to another's write.
func TestAddLabel_SharesAWriteWithTransitions(t *testing.T) {
	path := writeIssues(t, twoIssues)
	tr := newTestTracker(t, path, "Todo", "In Progress")
	ctx := context.Background()
	errs := make(chan error, 4)
	go func() { errs <- tr.AddLabel(ctx, "a", "needs-human") }()
	go func() { errs <- tr.AddLabel(ctx, "b", "needs-human") }()
	go func() { errs <- tr.TransitionIssue(ctx, "a", "In Review") }()
	go func() { errs <- tr.CommentIssue(ctx, "b", "escalated") }()
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"a", "b"} {
		is, err := tr.FetchIssueByID(ctx, id)
		if err != nil || !slices.Contains(is.Labels, "needs-human") {
			t.Errorf("issue %s: labels %v, %v", id, is.Labels, err)
		}
	}
}
