package file

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"

	"sortie/internal/tracker"
)

// twoIssues is a hand-formatted file: unknown fields (one a number that re-encoding
// would change), keys out of the usual order, HTML characters, a nested object.
const twoIssues = `[
  {
    "id": "a",
    "identifier": "A-1",
    "x-estimate": 1.50,
    "title": "First <b> & co",
    "state": "Todo",
    "updated_at": "2026-01-01T00:00:00Z",
    "custom": {"z": 1, "a": [true, null]}
  },
  {
    "identifier": "B-1",
    "id": "b",
    "title": "Second",
    "state": "Todo",
    "labels": ["X"]
  }
]
`

func TestTransitionIssue_WritesOnlyTheTargetIssue(t *testing.T) {
	tests := []struct {
		name   string
		input  string
		id     string
		target string
		active []string
		want   string
	}{
		{
			name: "updated_at present", input: twoIssues, id: "a", target: "In Progress", active: []string{"Todo", "In Progress"},
			want: strings.Replace(twoIssues, `"state": "Todo",
    "updated_at": "2026-01-01T00:00:00Z"`, `"state": "In Progress",
    "updated_at": "2026-04-01T12:30:00Z"`, 1),
		},
		{
			name: "updated_at added after the last field", input: twoIssues, id: "b", target: "Done",
			want: strings.Replace(twoIssues, `    "state": "Todo",
    "labels": ["X"]
  }`, `    "state": "Done",
    "labels": ["X"],
    "updated_at": "2026-04-01T12:30:00Z"
  }`, 1),
		},
		{
			name:   "one issue per line",
			input:  "[\n{\"id\":\"a\",\"identifier\":\"A-1\",\"title\":\"T\",\"state\":\"Todo\"},\n{\"id\":\"b\",\"identifier\":\"B-1\",\"title\":\"T\",\"state\":\"Todo\"}\n]\n",
			id:     "a",
			target: "Done",
			want:   "[\n{\"id\":\"a\",\"identifier\":\"A-1\",\"title\":\"T\",\"state\":\"Done\",\"updated_at\":\"2026-04-01T12:30:00Z\"},\n{\"id\":\"b\",\"identifier\":\"B-1\",\"title\":\"T\",\"state\":\"Todo\"}\n]\n",
		},
		{
			name:   "CRLF line endings",
			input:  "[\r\n  {\r\n    \"id\": \"a\",\r\n    \"identifier\": \"A-1\",\r\n    \"title\": \"T\",\r\n    \"state\": \"Todo\"\r\n  }\r\n]\r\n",
			id:     "a",
			target: "Done",
			want:   "[\r\n  {\r\n    \"id\": \"a\",\r\n    \"identifier\": \"A-1\",\r\n    \"title\": \"T\",\r\n    \"state\": \"Done\",\r\n    \"updated_at\": \"2026-04-01T12:30:00Z\"\r\n  }\r\n]\r\n",
		},
		{
			name:   "state needing escapes, not HTML-escaped",
			input:  `[{"id": "a", "identifier": "A-1", "title": "T", "state": "Todo"}]`,
			id:     "a",
			target: `Review <"QA"> & sign-off`,
			active: []string{`Review <"QA"> & sign-off`},
			want:   `[{"id": "a", "identifier": "A-1", "title": "T", "state": "Review <\"QA\"> & sign-off", "updated_at": "2026-04-01T12:30:00Z"}]`,
		},
		{
			name:   "duplicate key: the one readers see is changed",
			input:  `[{"id": "a", "identifier": "A-1", "title": "T", "state": "Old", "state": "Todo"}]`,
			id:     "a",
			target: "Done",
			want:   `[{"id": "a", "identifier": "A-1", "title": "T", "state": "Old", "state": "Done", "updated_at": "2026-04-01T12:30:00Z"}]`,
		},
		{
			name:   "key in other case: the one readers see is changed",
			input:  `[{"id": "a", "identifier": "A-1", "title": "T", "State": "Todo", "Updated_At": "x"}]`,
			id:     "a",
			target: "Done",
			want:   `[{"id": "a", "identifier": "A-1", "title": "T", "State": "Done", "Updated_At": "2026-04-01T12:30:00Z"}]`,
		},
		{
			name:   "byte-order mark kept",
			input:  "\xef\xbb\xbf" + `[{"id": "a", "identifier": "A-1", "title": "T", "state": "Todo"}]`,
			id:     "a",
			target: "Done",
			want:   "\xef\xbb\xbf" + `[{"id": "a", "identifier": "A-1", "title": "T", "state": "Done", "updated_at": "2026-04-01T12:30:00Z"}]`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeIssues(t, tt.input)
			tr := newTestTracker(t, path, tt.active...)
			if err := tr.TransitionIssue(context.Background(), tt.id, tt.target); err != nil {
				t.Fatal(err)
			}
			if got := readString(t, path); got != tt.want {
				t.Errorf("file after transition:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}

func TestCommentIssue_AppendsInTheFilesLayout(t *testing.T) {
	const stamp = `"created_at": "2026-04-01T12:30:00Z"`
	tests := []struct {
		name  string
		input string
		want  string
	}{
		{
			name: "comments absent",
			input: `[
  {
    "id": "a",
    "identifier": "A-1",
    "title": "T",
    "state": "Todo"
  }
]`,
			want: `[
  {
    "id": "a",
    "identifier": "A-1",
    "title": "T",
    "state": "Todo",
    "comments": [
      {
        "id": "c-test-1",
        "author": "sortie",
        "body": "Started <work> & \"more\"",
        ` + stamp + `
      }
    ]
  }
]`,
		},
		{
			name: "comments null, four-space indent",
			input: `[
    {
        "id": "a",
        "comments": null,
        "identifier": "A-1",
        "title": "T",
        "state": "Todo"
    }
]`,
			want: `[
    {
        "id": "a",
        "comments": [
            {
                "id": "c-test-1",
                "author": "sortie",
                "body": "Started <work> & \"more\"",
                ` + stamp + `
            }
        ],
        "identifier": "A-1",
        "title": "T",
        "state": "Todo"
    }
]`,
		},
		{
			name:  "comments empty, tab indent",
			input: "[\n\t{\n\t\t\"id\": \"a\",\n\t\t\"identifier\": \"A-1\",\n\t\t\"title\": \"T\",\n\t\t\"state\": \"Todo\",\n\t\t\"comments\": [ ]\n\t}\n]",
			want: "[\n\t{\n\t\t\"id\": \"a\",\n\t\t\"identifier\": \"A-1\",\n\t\t\"title\": \"T\",\n\t\t\"state\": \"Todo\",\n\t\t\"comments\": [\n\t\t\t{\n" +
				"\t\t\t\t\"id\": \"c-test-1\",\n\t\t\t\t\"author\": \"sortie\",\n\t\t\t\t\"body\": \"Started <work> & \\\"more\\\"\",\n\t\t\t\t" + stamp + "\n\t\t\t}\n\t\t]\n\t}\n]",
		},
		{
			name: "existing comments",
			input: `[
  {
    "id": "a",
    "identifier": "A-1",
    "title": "T",
    "state": "Todo",
    "comments": [
      {"id": "c1", "author": "bob", "body": "first", "created_at": "2026-03-01T10:00:00Z", "reactions": 3}
    ],
    "extra": true
  }
]`,
			want: `[
  {
    "id": "a",
    "identifier": "A-1",
    "title": "T",
    "state": "Todo",
    "comments": [
      {"id": "c1", "author": "bob", "body": "first", "created_at": "2026-03-01T10:00:00Z", "reactions": 3},
      {
        "id": "c-test-1",
        "author": "sortie",
        "body": "Started <work> & \"more\"",
        ` + stamp + `
      }
    ],
    "extra": true
  }
]`,
		},
		{
			name:  "one-line issue",
			input: `[{"id":"a","identifier":"A-1","title":"T","state":"Todo","comments":[{"id":"c1"}]}]`,
			want:  `[{"id":"a","identifier":"A-1","title":"T","state":"Todo","comments":[{"id":"c1"},{"id":"c-test-1","author":"sortie","body":"Started <work> & \"more\"","created_at":"2026-04-01T12:30:00Z"}]}]`,
		},
		{
			name:  "one-line issue without comments",
			input: `[{"id":"a","identifier":"A-1","title":"T","state":"Todo"}]`,
			want:  `[{"id":"a","identifier":"A-1","title":"T","state":"Todo","comments":[{"id":"c-test-1","author":"sortie","body":"Started <work> & \"more\"","created_at":"2026-04-01T12:30:00Z"}]}]`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeIssues(t, tt.input)
			tr := newTestTracker(t, path)
			if err := tr.CommentIssue(context.Background(), "a", `Started <work> & "more"`); err != nil {
				t.Fatal(err)
			}
			if got := readString(t, path); got != tt.want {
				t.Errorf("file after comment:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}

func TestTransitionIssue_PersistsAcrossTrackers(t *testing.T) {
	path := writeIssues(t, twoIssues)
	ctx := context.Background()
	if err := newTestTracker(t, path).TransitionIssue(ctx, "b", "In Review"); err != nil {
		t.Fatal(err)
	}
	if err := newTestTracker(t, path).CommentIssue(ctx, "b", "handed off"); err != nil {
		t.Fatal(err)
	}
	reopened := newTestTracker(t, path, "in review")
	got, err := reopened.FetchIssueByID(ctx, "b")
	if err != nil {
		t.Fatal(err)
	}
	if got.State != "In Review" || got.UpdatedAt != "2026-04-01T12:30:00Z" {
		t.Errorf("after reopening: state %q updated_at %q, want \"In Review\" and the transition time", got.State, got.UpdatedAt)
	}
	if len(got.Comments) != 1 || got.Comments[0].Body != "handed off" || got.Comments[0].Author != "sortie" || got.Comments[0].ID == "" {
		t.Errorf("after reopening: comments %+v, want the one sortie comment", got.Comments)
	}
	cands, err := reopened.FetchCandidateIssues(ctx)
	if err != nil || len(cands) != 1 || cands[0].ID != "b" {
		t.Errorf("candidates after reopening = %v, %v; want [b]", ids(cands), err)
	}
}

func TestTransitionIssue_AlreadyInStateWritesNothing(t *testing.T) {
	path := writeIssues(t, twoIssues)
	before, _ := os.Stat(path)
	if err := newTestTracker(t, path, "Todo").TransitionIssue(context.Background(), "a", "Todo"); err != nil {
		t.Fatal(err)
	}
	after, _ := os.Stat(path)
	if !os.SameFile(before, after) || readString(t, path) != twoIssues {
		t.Error("transition to the current state rewrote the file")
	}
}

// A target that is none of the configured states is refused as Jira and GitHub refuse
// it: a typo would otherwise park the issue in a state that is never dispatched.
func TestTransitionIssue_UnknownTargetStateIsRefused(t *testing.T) {
	path := writeIssues(t, twoIssues)
	tr := newTestTracker(t, path, "Todo", "In Progress")
	ctx := context.Background()
	for _, target := range []string{"Dnoe", "In Progres", "Backlog", "Done!"} {
		err := tr.TransitionIssue(ctx, "a", target)
		wantKind(t, err, tracker.ErrPayload, `"a"`, `"`+target+`"`, "not a configured state",
			"active: Todo, In Progress", "terminal: Done", "handoff: In Review")
		if tracker.KindOf(err).Retryable() {
			t.Errorf("%q: kind %q is retryable; a wrong state name needs the operator", target, tracker.KindOf(err))
		}
	}
	if got := readString(t, path); got != twoIssues {
		t.Fatalf("a refused transition changed the file:\n%s", got)
	}

	// Every configured state is a target, matched case-insensitively and written as
	// configured.
	for _, tt := range []struct{ target, want string }{
		{"in progress", "In Progress"},
		{" in review ", "In Review"},
		{"DONE", "Done"},
		{"todo", "Todo"},
	} {
		if err := tr.TransitionIssue(ctx, "a", tt.target); err != nil {
			t.Fatalf("TransitionIssue(%q): %v", tt.target, err)
		}
		got, err := tr.FetchIssueByID(ctx, "a")
		if err != nil || got.State != tt.want {
			t.Errorf("after TransitionIssue(%q): state %q (%v), want %q", tt.target, got.State, err, tt.want)
		}
	}
}

func TestTransitionIssue_NoConfiguredStatesRefusesEveryTarget(t *testing.T) {
	path := writeIssues(t, twoIssues)
	tr, err := tracker.New(tracker.Config{Kind: "file", Options: map[string]any{"path": path}})
	if err != nil {
		t.Fatal(err)
	}
	err = tr.TransitionIssue(context.Background(), "a", "Done")
	wantKind(t, err, tracker.ErrPayload, "active: none; terminal: none; handoff: none")
}

func TestWrite_HandEditBeforeOurWriteIsKept(t *testing.T) {
	path := writeIssues(t, twoIssues)
	tr := newTestTracker(t, path, "todo")
	ctx := context.Background()
	if _, err := tr.FetchCandidateIssues(ctx); err != nil { // the tracker has now read the file
		t.Fatal(err)
	}
	// A human edits issue a, then Sortie transitions issue b.
	edited := strings.Replace(twoIssues, `"title": "First <b> & co"`, `"title": "Edited by hand"`, 1)
	if err := os.WriteFile(path, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := tr.TransitionIssue(ctx, "b", "Done"); err != nil {
		t.Fatal(err)
	}
	got := readString(t, path)
	if !strings.Contains(got, `"title": "Edited by hand"`) {
		t.Errorf("the hand edit to issue a was lost:\n%s", got)
	}
	if !strings.Contains(got, `"state": "Done"`) {
		t.Errorf("the transition of issue b is missing:\n%s", got)
	}
}

func TestWrite_EditDuringOurWrite(t *testing.T) {
	ctx := context.Background()

	t.Run("once: the write starts over on the new content", func(t *testing.T) {
		path := writeIssues(t, twoIssues)
		tr := newTestTracker(t, path)
		edited := strings.Replace(twoIssues, `"title": "Second"`, `"title": "Saved meanwhile"`, 1)
		calls := 0
		tr.beforeRename = func() {
			calls++
			if calls == 1 {
				if err := os.WriteFile(path, []byte(edited), 0o644); err != nil {
					t.Error(err)
				}
			}
		}
		if err := tr.TransitionIssue(ctx, "a", "Done"); err != nil {
			t.Fatal(err)
		}
		got := readString(t, path)
		if !strings.Contains(got, `"title": "Saved meanwhile"`) || !strings.Contains(got, `"state": "Done"`) {
			t.Errorf("want both the concurrent edit and the transition, got:\n%s", got)
		}
		if calls != 2 {
			t.Errorf("write attempts = %d, want 2", calls)
		}
	})

	t.Run("every time: gives up without writing", func(t *testing.T) {
		path := writeIssues(t, twoIssues)
		tr := newTestTracker(t, path)
		n := 0
		tr.beforeRename = func() {
			n++
			edited := strings.Replace(twoIssues, `"title": "Second"`, fmt.Sprintf(`"title": "Edit %d"`, n), 1)
			if err := os.WriteFile(path, []byte(edited), 0o644); err != nil {
				t.Error(err)
			}
		}
		err := tr.TransitionIssue(ctx, "a", "Done")
		wantKind(t, err, tracker.ErrTransport, "changed while Sortie was writing")
		if got, want := readString(t, path), strings.Replace(twoIssues, `"title": "Second"`, `"title": "Edit 3"`, 1); got != want {
			t.Errorf("file = \n%s\nwant the last hand edit untouched:\n%s", got, want)
		}
		assertNoTempFiles(t, filepath.Dir(path))
	})
}

func TestWrite_InvalidFileIsRefusedAndUntouched(t *testing.T) {
	tests := []struct {
		name    string
		content string
		subs    []string
	}{
		{"broken JSON", "[\n  {\"id\": \"a\",\n", []string{"line 3, column 1", "did not change it"}},
		{"duplicate ids", `[{"id": "a", "identifier": "A-1", "title": "T", "state": "Todo"}, {"id": "a", "identifier": "A-2", "title": "T", "state": "Todo"}]`, []string{`same id "a"`}},
		{"null labels", oneIssue(`"labels": null`), []string{`field "labels"`}},
		{"empty", "", []string{"the file is empty"}},
	}
	ops := map[string]func(*Tracker) error{
		"transition": func(tr *Tracker) error { return tr.TransitionIssue(context.Background(), "a", "Done") },
		"comment":    func(tr *Tracker) error { return tr.CommentIssue(context.Background(), "a", "hi") },
	}
	for _, tt := range tests {
		for opName, op := range ops {
			t.Run(tt.name+"/"+opName, func(t *testing.T) {
				path := writeIssues(t, tt.content)
				if err := os.Chmod(path, 0o600); err != nil {
					t.Fatal(err)
				}
				before, _ := os.Stat(path)
				err := op(newTestTracker(t, path))
				wantKind(t, err, tracker.ErrPayload, append([]string{path}, tt.subs...)...)
				after, _ := os.Stat(path)
				if got := readString(t, path); got != tt.content || !os.SameFile(before, after) || !after.ModTime().Equal(before.ModTime()) || after.Mode() != before.Mode() {
					t.Errorf("the file was touched: content %q (was %q)", got, tt.content)
				}
				assertNoTempFiles(t, filepath.Dir(path))
			})
		}
	}
}

func TestWrite_RefusedRequests(t *testing.T) {
	path := writeIssues(t, twoIssues)
	tr := newTestTracker(t, path)
	ctx := context.Background()
	tests := []struct {
		name string
		err  error
		kind tracker.ErrorKind
		subs []string
	}{
		{"transition of unknown id", tr.TransitionIssue(ctx, "zzz", "Done"), tracker.ErrNotFound, []string{`"zzz"`}},
		{"comment on unknown id", tr.CommentIssue(ctx, "zzz", "hi"), tracker.ErrNotFound, []string{`"zzz"`}},
		{"identifier is not an id", tr.TransitionIssue(ctx, "A-1", "Done"), tracker.ErrNotFound, []string{`"A-1"`}},
		{"empty target state", tr.TransitionIssue(ctx, "a", " "), tracker.ErrPayload, []string{"empty state"}},
		{"empty comment", tr.CommentIssue(ctx, "a", ""), tracker.ErrPayload, []string{"empty comment"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { wantKind(t, tt.err, tt.kind, tt.subs...) })
	}
	if got := readString(t, path); got != twoIssues {
		t.Errorf("refused requests changed the file:\n%s", got)
	}

	missing := newTestTracker(t, filepath.Join(t.TempDir(), "gone.json"))
	wantKind(t, missing.TransitionIssue(ctx, "a", "Done"), tracker.ErrPayload, "gone.json", "does not exist")

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := tr.CommentIssue(cctx, "a", "hi"); !errors.Is(err, context.Canceled) {
		t.Errorf("CommentIssue with a cancelled context = %v, want context.Canceled", err)
	}
}

// TestWrite_ThroughALinkedDirectory: an issues file reached through a linked directory
// is written in place, its lock beside it, and the link stays a link; a writer naming
// the file by its real directory shares that lock.
func TestWrite_ThroughALinkedDirectory(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "data", "issues.json")
	if err := os.MkdirAll(filepath.Dir(real), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(real, []byte(twoIssues), 0o644); err != nil {
		t.Fatal(err)
	}
	via := filepath.Join(dir, "via")
	if err := os.Symlink("data", via); err != nil {
		t.Fatal(err)
	}
	tr := newTestTracker(t, filepath.Join(via, "issues.json"))
	if err := tr.TransitionIssue(context.Background(), "a", "Done"); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(via); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the linked directory was replaced: %v, %v", fi.Mode(), err)
	}
	if !strings.Contains(readString(t, real), `"state": "Done"`) {
		t.Error("the file was not updated")
	}
	if _, err := os.Stat(filepath.Join(dir, "data", ".issues.json.lock")); err != nil {
		t.Errorf("the lock is not beside the file: %v", err)
	}
	unlock, err := newTestTracker(t, real).lockFile(context.Background(), "test")
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // one try, no waiting: it fails only because the lock is held
	if _, err := tr.lockFile(ctx, "test"); err == nil {
		t.Error("the writer through the link took the lock the writer by the real path holds")
	}
	assertNoTempFiles(t, filepath.Dir(real))
}

func TestWrite_KeepsModeAndFollowsSymlinks(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "data", "issues.json")
	if err := os.MkdirAll(filepath.Dir(real), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(real, []byte(twoIssues), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(real, 0o640); err != nil { // regardless of umask
		t.Fatal(err)
	}
	link := filepath.Join(dir, "issues.json")
	if err := os.Symlink(filepath.Join("data", "issues.json"), link); err != nil {
		t.Fatal(err)
	}
	if err := newTestTracker(t, link).TransitionIssue(context.Background(), "a", "Done"); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the symlink was replaced: %v, %v", fi.Mode(), err)
	}
	fi, err := os.Stat(real)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o640 {
		t.Errorf("mode after write = %v, want -rw-r-----", fi.Mode().Perm())
	}
	if !strings.Contains(readString(t, real), `"state": "Done"`) {
		t.Error("the link's target was not updated")
	}
	assertNoTempFiles(t, filepath.Dir(real))
}

func TestWrite_ConcurrentWritesAreAllKept(t *testing.T) {
	path := writeIssues(t, twoIssues)
	tr := newTestTracker(t, path, "todo")
	ctx := context.Background()
	const n = 20
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if err := tr.CommentIssue(ctx, "a", fmt.Sprintf("comment %d", i)); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Go(func() {
		if err := tr.TransitionIssue(ctx, "b", "Done"); err != nil {
			t.Error(err)
		}
	})
	// Readers run alongside the writers.
	for range 5 {
		wg.Go(func() {
			if _, err := tr.FetchCandidateIssues(ctx); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	got, err := tr.FetchIssueComments(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != n {
		t.Errorf("comments = %d, want %d", len(got), n)
	}
	seen := map[string]bool{}
	for _, c := range got {
		if seen[c.ID] {
			t.Errorf("duplicate comment id %q", c.ID)
		}
		seen[c.ID] = true
	}
	if st, _ := tr.FetchIssueStatesByIDs(ctx, []string{"b"}); st["b"] != "Done" {
		t.Errorf("state of b = %q, want Done", st["b"])
	}
	assertNoTempFiles(t, filepath.Dir(path))
}

// A write's content goes into the buffer of a content it replaced (writes in a row
// allocate nothing that size), so no reader may still be looking at that one. Here
// writes in a row race the watch's own-write check and cached reads, and every
// write's content must be whole on disk and in the cache afterwards.
func TestWrite_RecycledBuffersAreNotShared(t *testing.T) {
	path := writeIssues(t, twoIssues)
	tr := newTestTracker(t, path, "todo")
	ctx := context.Background()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			tr.holdsOwnWrite()
			if _, err := tr.FetchCandidateIssues(ctx); err != nil {
				t.Error(err)
			}
		}
	})
	const n = 30
	for i := range n {
		if err := tr.CommentIssue(ctx, "a", fmt.Sprintf("comment %d", i)); err != nil {
			t.Fatal(err)
		}
		state := "Done"
		if i%2 == 1 {
			state = "Todo"
		}
		if err := tr.TransitionIssue(ctx, "b", state); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	if !tr.holdsOwnWrite() {
		t.Error("the file does not hold the last write")
	}
	doc, err := parse([]byte(readString(t, path)))
	if err != nil {
		t.Fatalf("the file after %d writes: %v", 2*n, err)
	}
	if got := len(doc.issues[0].Comments); got != n {
		t.Errorf("comments on disk = %d, want %d", got, n)
	}
	got, err := tr.FetchIssueComments(ctx, "a")
	if err != nil || len(got) != n || got[n-1].Body != fmt.Sprintf("comment %d", n-1) {
		t.Errorf("comments from the cache = %d (%v), want %d ending with comment %d", len(got), err, n, n-1)
	}
}

func TestRandomCommentID_Unique(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		id := randomCommentID()
		if !strings.HasPrefix(id, "sortie-") || seen[id] {
			t.Fatalf("randomCommentID() = %q: want a fresh sortie-… id", id)
		}
		seen[id] = true
	}
}

func assertNoTempFiles(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.Contains(e.Name(), ".sortie-") {
			t.Errorf("temporary file left behind: %s", e.Name())
		}
	}
}

func TestTransitionIssue_BlockedIssueSeesBlockersNewState(t *testing.T) {
	path := writeIssues(t, `[
  {"id": "a", "identifier": "A-1", "title": "blocked", "state": "Todo", "blocked_by": [{"identifier": "B-1"}]},
  {"id": "b", "identifier": "B-1", "title": "blocker", "state": "In Progress"}
]`)
	tr := newTestTracker(t, path, "todo")
	ctx := context.Background()
	blockerState := func() string {
		t.Helper()
		got, err := tr.FetchCandidateIssues(ctx)
		if err != nil || len(got) != 1 {
			t.Fatalf("candidates = %v, %v", ids(got), err)
		}
		return got[0].BlockedBy[0].State
	}
	if got := blockerState(); got != "In Progress" {
		t.Fatalf("blocker state before = %q, want In Progress", got)
	}
	if err := tr.TransitionIssue(ctx, "b", "Done"); err != nil {
		t.Fatal(err)
	}
	if got := blockerState(); got != "Done" {
		t.Errorf("blocker state after the blocker moved = %q, want Done", got)
	}
}

// Edits that arrive while a write is in progress are written together in the next
// one: one temporary file, one sync, one rename for all of them. Each still settles
// on its own: an unknown id and a cancelled caller fail alone.
func TestWrite_EditsQueuedDuringAWriteShareTheNextOne(t *testing.T) {
	path := writeIssues(t, twoIssues)
	tr := newTestTracker(t, path, "todo")
	ctx := context.Background()
	inWrite, release := make(chan struct{}), make(chan struct{})
	writes := 0
	tr.beforeRename = func() {
		if writes++; writes == 1 {
			close(inWrite)
			<-release
		}
	}
	first := make(chan error, 1)
	go func() { first <- tr.CommentIssue(ctx, "a", "first") }()
	<-inWrite

	cancelled, cancel := context.WithCancel(ctx)
	results := make(chan string, 4)
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := tr.TransitionIssue(ctx, "a", "Done"); err != nil {
			t.Errorf("transition a: %v", err)
		}
		results <- "a"
	})
	wg.Go(func() {
		if err := tr.CommentIssue(ctx, "b", "second"); err != nil {
			t.Errorf("comment b: %v", err)
		}
		results <- "b"
	})
	wg.Go(func() {
		wantKind(t, tr.TransitionIssue(ctx, "nope", "Done"), tracker.ErrNotFound, `"nope"`)
		results <- "nope"
	})
	wg.Go(func() {
		err := tr.CommentIssue(cancelled, "b", "never")
		if !errors.Is(err, context.Canceled) {
			t.Errorf("a cancelled caller's comment: %v, want context.Canceled", err)
		}
		results <- "cancelled"
	})
	// Wait, without sleeping, until all four are queued behind the first write.
	for queued := 0; queued < 4; {
		tr.queueMu.Lock()
		queued = len(tr.queue)
		tr.queueMu.Unlock()
		runtime.Gosched()
	}
	cancel()
	close(release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if writes != 2 {
		t.Errorf("writes = %d, want 2: the first, then one for everything queued during it", writes)
	}
	got := readString(t, path)
	for _, want := range []string{`"first"`, `"second"`, `"state": "Done"`} {
		if !strings.Contains(got, want) {
			t.Errorf("the file lacks %s:\n%s", want, got)
		}
	}
	if strings.Contains(got, "never") {
		t.Errorf("the cancelled caller's comment was written:\n%s", got)
	}
	// What the tracker now serves is what the file holds.
	other := newTestTracker(t, path, "todo")
	for _, id := range []string{"a", "b"} {
		mine, err := tr.FetchIssueByID(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		fresh, err := other.FetchIssueByID(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(mine, fresh) {
			t.Errorf("issue %s served from the cache:\n%+v\nread from the file:\n%+v", id, mine, fresh)
		}
	}
	assertNoTempFiles(t, filepath.Dir(path))
}
