package file

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"sortie/internal/tracker"
)

// referenceDir is sortie 1.9's test data, third-party files beside the repository
// (/work/shared/testdata/README.md): read in place when present, never copied. The
// package's own inputs are in testdata/; the reference files are a compatibility check
// that CI runs.
var referenceDir = filepath.Join("..", "..", "..", "..", "shared", "testdata", "sortie-1.9")

// referenceFile returns the path of a file under referenceDir, skipping the test, and
// saying what was skipped, when the shared data is not beside the repository.
func referenceFile(t testing.TB, rel string) string {
	t.Helper()
	p := filepath.Join(referenceDir, filepath.FromSlash(rel))
	if _, err := os.Stat(p); err != nil {
		t.Skipf("skipped: ../shared/testdata/sortie-1.9/%s not present (third-party sortie 1.9 compatibility data, run in CI)", rel)
	}
	return p
}

// readReference reads a file under referenceDir, for fuzz seeds that are added only
// when the shared data is there.
func readReference(rel string) ([]byte, error) {
	return os.ReadFile(filepath.Join(referenceDir, filepath.FromSlash(rel)))
}

// testNow is the time a test tracker stamps on what it writes.
var testNow = time.Date(2026, 4, 1, 12, 30, 0, 0, time.UTC)

// Every test tracker has these terminal and handoff states, so tests may move issues
// to them; active states are each test's own.
var (
	testTerminalStates = []string{"Done"}
	testHandoffState   = "In Review"
)

// newTestTracker builds a tracker for path through the registry, as the daemon does, with
// a fixed clock and predictable comment ids (c-test-1, c-test-2, ...).
func newTestTracker(t testing.TB, path string, active ...string) *Tracker {
	t.Helper()
	tr, err := tracker.New(tracker.Config{
		Kind:           "file",
		ActiveStates:   active,
		TerminalStates: testTerminalStates,
		HandoffState:   testHandoffState,
		Options:        map[string]any{"path": path},
	})
	if err != nil {
		t.Fatalf("tracker.New(file, %s): %v", path, err)
	}
	ft := tr.(*Tracker)
	ft.now = func() time.Time { return testNow }
	var n atomic.Int64
	ft.newCommentID = func() string { return fmt.Sprintf("c-test-%d", n.Add(1)) }
	return ft
}

// writeIssues writes content to issues.json in a new temp dir and returns its path.
func writeIssues(t testing.TB, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "issues.json")
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func readString(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// wantKind fails unless err is a *tracker.Error of kind k whose message contains every
// one of subs.
func wantKind(t *testing.T, err error, k tracker.ErrorKind, subs ...string) {
	t.Helper()
	if got := tracker.KindOf(err); got != k {
		t.Fatalf("error kind = %q, want %q (error: %v)", got, k, err)
	}
	for _, s := range subs {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not mention %q", err, s)
		}
	}
}

func ids[I tracker.Issue | *tracker.Issue](issues []I) []string {
	out := []string{}
	for _, is := range issues {
		switch v := any(is).(type) {
		case tracker.Issue:
			out = append(out, v.ID)
		case *tracker.Issue:
			out = append(out, v.ID)
		}
	}
	return out
}

func TestNew_Config(t *testing.T) {
	wfDir := t.TempDir()
	tests := []struct {
		name     string
		options  map[string]any
		wantPath string // "" when an error is expected
		wantErr  string
	}{
		{name: "no options", options: nil, wantErr: "config: file.path: the file tracker needs"},
		{name: "null path", options: map[string]any{"path": nil}, wantErr: "config: file.path: the file tracker needs"},
		{name: "not a string", options: map[string]any{"path": 42}, wantErr: "config: file.path: must be a string (got int)"},
		{name: "blank", options: map[string]any{"path": "  "}, wantErr: "config: file.path: must not be empty"},
		{name: "relative to WORKFLOW.md", options: map[string]any{"path": "data/issues.json"}, wantPath: filepath.Join(wfDir, "data", "issues.json")},
		{name: "dot-dot relative", options: map[string]any{"path": "../issues.json"}, wantPath: filepath.Join(filepath.Dir(wfDir), "issues.json")},
		{name: "absolute kept", options: map[string]any{"path": "/srv/issues.json"}, wantPath: "/srv/issues.json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr, err := tracker.New(tracker.Config{Kind: "file", Options: tt.options, WorkflowDir: wfDir})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("New() error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("New() error = %v", err)
			}
			if got := tr.(*Tracker).Path(); got != tt.wantPath {
				t.Errorf("Path() = %q, want %q", got, tt.wantPath)
			}
		})
	}
}

func TestRegister_FileKindNeedsNoProjectOrKeyAndWatches(t *testing.T) {
	meta, ok := tracker.Lookup("file")
	if !ok {
		t.Fatalf("kind file is not registered; known: %v", tracker.Kinds())
	}
	if meta.RequiresProject || meta.RequiresAPIKey {
		t.Errorf("Meta = %+v, want no project and no api key", meta)
	}
	if got := meta.Options.Known(); !slices.Equal(got, []string{"path"}) {
		t.Errorf("the file: block declares %v, want [path]", got)
	}
	tr, err := tracker.New(tracker.Config{Kind: "file", Options: map[string]any{"path": "/x.json"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := tr.(tracker.Watcher); !ok {
		t.Errorf("%T does not implement tracker.Watcher", tr)
	}
}

// sample is an issues file the fetch tests read and what they expect of it: the
// package's own testdata/issues.json, and sortie 1.9's example file when the shared
// data is beside the repository.
type sample struct {
	name string
	path func(testing.TB) string
	// candidates are the ids in states "to do" or "IN PROGRESS", in file order.
	candidates []string
	// comments is how many comments FetchIssueByID returns per id; the ids cover
	// "comments" as a list, as [], as null and absent.
	comments map[string]int
	// notIDs are not ids in the file (an identifier among them).
	notIDs []string
	// statesByID and statesByIdentifier are lookups with one unknown key each.
	statesByID, statesByIdentifier map[string]string
	unknownID, unknownIdentifier   string
	commentsOf                     string // an id with comments
	wantComments                   []tracker.Comment
	nullCommentsOf                 string // an id with "comments": null
}

var samples = []sample{
	{
		name:       "own",
		path:       func(testing.TB) string { return filepath.Join("testdata", "issues.json") },
		candidates: []string{"201", "202", "205"},
		comments:   map[string]int{"201": 2, "202": 0, "203": 0, "205": 0},
		notIDs:     []string{"SITE-1", "nope"},
		statesByID: map[string]string{"201": "To Do", "203": "Done"}, unknownID: "missing",
		statesByIdentifier: map[string]string{"SITE-2": "In Progress", "SITE-4": "Backlog"}, unknownIdentifier: "SITE-99",
		commentsOf: "201",
		wantComments: []tracker.Comment{
			{ID: "k1", Author: "eli", Body: "Atom would do as well; pick one.", CreatedAt: "2026-02-10T09:15:00Z"},
			{ID: "k2", Author: "dana", Body: "RSS 2.0, with full post bodies.", CreatedAt: "2026-02-11T16:40:00Z"},
		},
		nullCommentsOf: "204",
	},
	{
		name:       "reference",
		path:       func(t testing.TB) string { return referenceFile(t, "examples/issues.json") },
		candidates: []string{"10001", "10002", "10005"},
		comments:   map[string]int{"10001": 2, "10002": 0, "10003": 0, "10005": 0},
		notIDs:     []string{"PROJ-1", "nope"},
		statesByID: map[string]string{"10001": "To Do", "10003": "Done"}, unknownID: "missing",
		statesByIdentifier: map[string]string{"PROJ-2": "In Progress", "PROJ-4": "Backlog"}, unknownIdentifier: "PROJ-99",
		commentsOf: "10001",
		wantComments: []tracker.Comment{
			{ID: "c1", Author: "bob", Body: "Needs SSO support for SAML providers.", CreatedAt: "2026-03-01T10:00:00Z"},
			{ID: "c2", Author: "charlie", Body: "Token refresh must handle clock skew.", CreatedAt: "2026-03-02T14:30:00Z"},
		},
		nullCommentsOf: "10004",
	},
}

func TestFetchCandidateIssues_ActiveStatesCaseInsensitiveNoComments(t *testing.T) {
	for _, sm := range samples {
		t.Run(sm.name, func(t *testing.T) {
			tr := newTestTracker(t, sm.path(t), "to do", "IN PROGRESS")
			got, err := tr.FetchCandidateIssues(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(ids(got), sm.candidates) {
				t.Fatalf("candidates = %v, want %v (file order, active states only)", ids(got), sm.candidates)
			}
			for _, is := range got {
				if is.Comments != nil {
					t.Errorf("candidate %s has comments %v, want nil (listing calls do not fetch comments)", is.ID, is.Comments)
				}
			}
		})
	}
}

func TestFetchCandidateIssues_NoActiveStatesMeansNone(t *testing.T) {
	for _, sm := range samples {
		t.Run(sm.name, func(t *testing.T) {
			tr := newTestTracker(t, sm.path(t))
			got, err := tr.FetchCandidateIssues(context.Background())
			if err != nil || got == nil || len(got) != 0 {
				t.Fatalf("FetchCandidateIssues() = %v, %v; want an empty non-nil slice", got, err)
			}
		})
	}
}

func TestFetchIssueByID(t *testing.T) {
	for _, sm := range samples {
		t.Run(sm.name, func(t *testing.T) {
			tr := newTestTracker(t, sm.path(t))
			for id, n := range sm.comments {
				got, err := tr.FetchIssueByID(context.Background(), id)
				if err != nil {
					t.Fatalf("FetchIssueByID(%s): %v", id, err)
				}
				if got.ID != id {
					t.Errorf("ID = %q, want %q", got.ID, id)
				}
				if got.Comments == nil || len(got.Comments) != n {
					t.Errorf("%s: Comments = %#v, want %d (non-nil)", id, got.Comments, n)
				}
			}
			for _, id := range sm.notIDs {
				_, err := tr.FetchIssueByID(context.Background(), id)
				wantKind(t, err, tracker.ErrNotFound, id)
			}
		})
	}
}

func TestFetchIssueStates_UnknownOmitted(t *testing.T) {
	for _, sm := range samples {
		t.Run(sm.name, func(t *testing.T) {
			tr := newTestTracker(t, sm.path(t))
			ctx := context.Background()
			var idKeys, identKeys []string
			for k := range sm.statesByID {
				idKeys = append(idKeys, k)
			}
			for k := range sm.statesByIdentifier {
				identKeys = append(identKeys, k)
			}
			byID, err := tr.FetchIssueStatesByIDs(ctx, append(idKeys, sm.unknownID))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(byID, sm.statesByID) {
				t.Errorf("FetchIssueStatesByIDs = %v, want %v", byID, sm.statesByID)
			}
			// An id is not an identifier.
			byIdent, err := tr.FetchIssueStatesByIdentifiers(ctx, append(identKeys, sm.unknownIdentifier, idKeys[0]))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(byIdent, sm.statesByIdentifier) {
				t.Errorf("FetchIssueStatesByIdentifiers = %v, want %v", byIdent, sm.statesByIdentifier)
			}
			empty, err := tr.FetchIssueStatesByIDs(ctx, nil)
			if err != nil || empty == nil || len(empty) != 0 {
				t.Errorf("FetchIssueStatesByIDs(nil) = %v, %v; want an empty map", empty, err)
			}
		})
	}
}

func TestFetchIssueComments(t *testing.T) {
	for _, sm := range samples {
		t.Run(sm.name, func(t *testing.T) {
			tr := newTestTracker(t, sm.path(t))
			got, err := tr.FetchIssueComments(context.Background(), sm.commentsOf)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, sm.wantComments) {
				t.Errorf("comments = %+v, want %+v", got, sm.wantComments)
			}
			none, err := tr.FetchIssueComments(context.Background(), sm.nullCommentsOf)
			if err != nil || none == nil || len(none) != 0 {
				t.Errorf("FetchIssueComments(%s) = %#v, %v; want empty non-nil", sm.nullCommentsOf, none, err)
			}
			_, err = tr.FetchIssueComments(context.Background(), "zzz")
			wantKind(t, err, tracker.ErrNotFound, "zzz")
		})
	}
}

func TestFetch_FileProblemsArePayloadErrors(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.json")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	// Sparse: costs no disk, but stat and read see 64 MiB + 1 byte.
	if err := f.Truncate(MaxFileBytes + 1); err != nil {
		t.Fatal(err)
	}
	f.Close()

	tests := []struct {
		name string
		path string
		subs []string
	}{
		{name: "missing", path: filepath.Join(dir, "nope.json"), subs: []string{filepath.Join(dir, "nope.json"), "does not exist", "file.path"}},
		{name: "malformed", path: filepath.Join("testdata", "malformed.json"), subs: []string{"malformed.json", "line 2, column 73", "invalid JSON"}},
		{name: "too large", path: big, subs: []string{"big.json", "64 MiB"}},
		{name: "directory", path: dir, subs: []string{"not a regular file"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := newTestTracker(t, tt.path, "Open")
			_, err := tr.FetchCandidateIssues(context.Background())
			wantKind(t, err, tracker.ErrPayload, tt.subs...)
			if tracker.KindOf(err).Retryable() {
				t.Errorf("kind %q is retryable; a broken file needs the operator", tracker.KindOf(err))
			}
		})
	}
}

func TestFetch_ReturnsCopies(t *testing.T) {
	path := writeIssues(t, `[{"id":"a","identifier":"A-1","title":"t","state":"Open","labels":["x"],"priority":1,
	  "parent":{"id":"p","identifier":"P-1"},"blocked_by":[{"id":"b","identifier":"B-1"}],"comments":[{"id":"c"}]}]`)
	tr := newTestTracker(t, path, "open")
	tr.now = func() time.Time { return time.Now().Add(time.Hour) } // trust the cache
	ctx := context.Background()
	first, err := tr.FetchIssueByID(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	first.Labels[0] = "changed"
	*first.Priority = 9
	first.Parent.ID = "changed"
	first.BlockedBy[0].State = "changed"
	first.Comments[0].Body = "changed"
	second, err := tr.FetchIssueByID(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if second.Labels[0] != "x" || *second.Priority != 1 || second.Parent.ID != "p" || second.BlockedBy[0].State != "" || second.Comments[0].Body != "" {
		t.Errorf("a caller's changes leaked into the cache: %+v", second)
	}
}

func TestFetch_ContextCanceled(t *testing.T) {
	tr := newTestTracker(t, filepath.Join("testdata", "issues.json"), "To Do")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := tr.FetchCandidateIssues(ctx)
	if !errors.Is(err, context.Canceled) || tracker.KindOf(err) != tracker.ErrTransport {
		t.Errorf("error = %v, want a tracker_transport_error wrapping context.Canceled", err)
	}
}
