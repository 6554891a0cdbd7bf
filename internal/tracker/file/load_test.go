package file

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// loadDoc loads the file through the cache and returns the shared document.
func loadDoc(t *testing.T, tr *Tracker) *document {
	t.Helper()
	doc, err := tr.load(context.Background(), "test")
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// setMtime sets the file's modification time, so a test controls it exactly.
func setMtime(t *testing.T, path string, mtime time.Time) {
	t.Helper()
	if err := os.Chtimes(path, mtime, mtime); err != nil {
		t.Fatal(err)
	}
}

func TestLoad_UnchangedFileIsNotParsedAgain(t *testing.T) {
	path := writeIssues(t, twoIssues)
	mtime := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	setMtime(t, path, mtime)
	tr := newTestTracker(t, path)
	tr.now = func() time.Time { return mtime.Add(time.Hour) }
	first := loadDoc(t, tr)
	if second := loadDoc(t, tr); second != first {
		t.Error("an unchanged file was parsed again")
	}
}

func TestLoad_ChangesAreSeen(t *testing.T) {
	mtime := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	sameSize := strings.Replace(twoIssues, `"title": "Second"`, `"title": "Secund"`, 1)
	tests := []struct {
		name string
		// clock is the tracker's time when it reads, relative to the file's mtime.
		clock  time.Duration
		change func(t *testing.T, path string)
	}{
		{
			name: "different size", clock: time.Hour,
			change: func(t *testing.T, path string) {
				if err := os.WriteFile(path, []byte(strings.Replace(twoIssues, "Second", "Second, longer", 1)), 0o644); err != nil {
					t.Fatal(err)
				}
				setMtime(t, path, mtime)
			},
		},
		{
			name: "same size, new mtime", clock: time.Hour,
			change: func(t *testing.T, path string) {
				if err := os.WriteFile(path, []byte(sameSize), 0o644); err != nil {
					t.Fatal(err)
				}
				setMtime(t, path, mtime.Add(time.Nanosecond))
			},
		},
		{
			name: "same size and mtime, replaced by rename", clock: time.Hour,
			change: func(t *testing.T, path string) {
				tmp := path + ".new"
				if err := os.WriteFile(tmp, []byte(sameSize), 0o644); err != nil {
					t.Fatal(err)
				}
				setMtime(t, tmp, mtime)
				if err := os.Rename(tmp, path); err != nil {
					t.Fatal(err)
				}
			},
		},
		{
			// Within one mtime tick of the first read: only the racy-window rule
			// catches a same-size in-place edit.
			name: "same size, mtime and inode, read soon after the change", clock: time.Second,
			change: func(t *testing.T, path string) {
				if err := os.WriteFile(path, []byte(sameSize), 0o644); err != nil {
					t.Fatal(err)
				}
				setMtime(t, path, mtime)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeIssues(t, twoIssues)
			setMtime(t, path, mtime)
			tr := newTestTracker(t, path)
			tr.now = func() time.Time { return mtime.Add(tt.clock) }
			if got := loadDoc(t, tr).issues[1].Title; got != "Second" {
				t.Fatalf("title before = %q", got)
			}
			tt.change(t, path)
			if got := loadDoc(t, tr).issues[1].Title; got == "Second" {
				t.Errorf("title after the change = %q: the change was not seen", got)
			}
		})
	}
}

func TestLoad_BrokenThenFixed(t *testing.T) {
	path := writeIssues(t, "[")
	tr := newTestTracker(t, path, "todo")
	ctx := context.Background()
	if _, err := tr.FetchCandidateIssues(ctx); err == nil {
		t.Fatal("a broken file gave no error")
	}
	if err := os.WriteFile(path, []byte(twoIssues), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := tr.FetchCandidateIssues(ctx)
	if err != nil || len(got) != 2 {
		t.Errorf("after fixing the file: %v, %v; want both issues", ids(got), err)
	}
}

// issuesFile returns a file of n issues shaped like examples/issues.json.
func issuesFile(n int) []byte {
	var b strings.Builder
	b.WriteString("[\n")
	for i := range n {
		if i > 0 {
			b.WriteString(",\n")
		}
		state := []string{"To Do", "In Progress", "Done", "Backlog"}[i%4]
		fmt.Fprintf(&b, `  {
    "id": "%d",
    "identifier": "PROJ-%d",
    "title": "Issue number %d",
    "description": "Something to do, described at moderate length so the file is realistic.",
    "priority": %d,
    "state": %q,
    "branch_name": "feature/PROJ-%d",
    "url": "https://tracker.example.com/PROJ-%d",
    "labels": ["feature", "Backend"],
    "assignee": "alice",
    "issue_type": "Story",
    "parent": null,
    "comments": [{"id": "c1", "author": "bob", "body": "A comment.", "created_at": "2026-03-01T10:00:00Z"}],
    "blocked_by": [{"id": "%d", "identifier": "PROJ-%d"}],
    "created_at": "2026-02-28T09:00:00Z",
    "updated_at": "2026-03-01T12:00:00Z"
  }`, 10000+i, i, i, i%4, state, i, i, 10000+(i+1)%n, (i+1)%n)
	}
	b.WriteString("\n]\n")
	return []byte(b.String())
}

// BenchmarkFetchCandidates shows what the stat cache saves on a 1,000-issue file:
// "unchanged" costs a stat and copying the candidates out; "changed" also reads and
// parses the file, as every call would without the cache.
func BenchmarkFetchCandidates(b *testing.B) {
	path := filepath.Join(b.TempDir(), "issues.json")
	data := issuesFile(1000)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		b.Fatal(err)
	}
	base := time.Now().Add(-time.Hour) // older than the racy window
	ctx := context.Background()

	b.Run("unchanged", func(b *testing.B) {
		tr := newTestTracker(b, path, "to do", "in progress")
		tr.now = time.Now
		if err := os.Chtimes(path, base, base); err != nil {
			b.Fatal(err)
		}
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for b.Loop() {
			if got, err := tr.FetchCandidateIssues(ctx); err != nil || len(got) != 500 {
				b.Fatalf("got %d candidates, %v", len(got), err)
			}
		}
	})
	b.Run("changed", func(b *testing.B) {
		tr := newTestTracker(b, path, "to do", "in progress")
		tr.now = time.Now
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			// A new mtime each time: the cache must not be used.
			i++
			mt := base.Add(time.Duration(i) * time.Millisecond)
			if err := os.Chtimes(path, mt, mt); err != nil {
				b.Fatal(err)
			}
			if got, err := tr.FetchCandidateIssues(ctx); err != nil || len(got) != 500 {
				b.Fatalf("got %d candidates, %v", len(got), err)
			}
		}
	})
}
