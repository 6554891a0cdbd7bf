package file

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

// watchTimeout only guards against a hang: every wait below ends on a receive.
const watchTimeout = 10 * time.Second

func receive(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case _, ok := <-ch:
		if !ok {
			t.Fatalf("watch channel closed while waiting for %s", what)
		}
	case <-time.After(watchTimeout):
		t.Fatalf("no notification within %v after %s", watchTimeout, what)
	}
}

func TestWatch_FiresOnChange(t *testing.T) {
	tests := []struct {
		name   string
		before func(t *testing.T, path string) // before the watch starts
		change func(t *testing.T, tr *Tracker, path string)
	}{
		{
			name: "write in place",
			change: func(t *testing.T, _ *Tracker, path string) {
				if err := os.WriteFile(path, []byte("[]"), 0o644); err != nil {
					t.Fatal(err)
				}
			},
		},
		{
			name: "atomic rename-replace",
			change: func(t *testing.T, _ *Tracker, path string) {
				tmp := filepath.Join(filepath.Dir(path), ".issues.json.swp")
				if err := os.WriteFile(tmp, []byte("[]"), 0o644); err != nil {
					t.Fatal(err)
				}
				if err := os.Rename(tmp, path); err != nil {
					t.Fatal(err)
				}
			},
		},
		{
			name: "create after delete",
			before: func(t *testing.T, path string) {
				if err := os.Remove(path); err != nil {
					t.Fatal(err)
				}
			},
			change: func(t *testing.T, _ *Tracker, path string) {
				if err := os.WriteFile(path, []byte(twoIssues), 0o644); err != nil {
					t.Fatal(err)
				}
			},
		},
		{
			name: "touch",
			change: func(t *testing.T, _ *Tracker, path string) {
				now := time.Now()
				if err := os.Chtimes(path, now, now); err != nil {
					t.Fatal(err)
				}
			},
		},
		{
			name: "delete",
			change: func(t *testing.T, _ *Tracker, path string) {
				if err := os.Remove(path); err != nil {
					t.Fatal(err)
				}
			},
		},
		{
			// Our own write alone wakes nobody (TestWatch_OwnWriteIsRecognised); a hand
			// edit right after it must still notify.
			name: "hand edit right after our own transition",
			change: func(t *testing.T, tr *Tracker, path string) {
				if err := tr.TransitionIssue(context.Background(), "a", "Done"); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(twoIssues), 0o644); err != nil {
					t.Fatal(err)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeIssues(t, twoIssues)
			if tt.before != nil {
				tt.before(t, path)
			}
			tr := newTestTracker(t, path)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			ch := tr.Watch(ctx)
			// Nothing happened to the file since the watch started, so a notification
			// can only come from the change.
			tt.change(t, tr, path)
			receive(t, ch, tt.name)
		})
	}
}

func TestWatch_SurvivesDeleteAndRecreate(t *testing.T) {
	path := writeIssues(t, twoIssues)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := newTestTracker(t, path).Watch(ctx)
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	receive(t, ch, "delete")
	if err := os.WriteFile(path, []byte("[]"), 0o644); err != nil {
		t.Fatal(err)
	}
	receive(t, ch, "re-create")
	if err := os.WriteFile(path, []byte(twoIssues), 0o644); err != nil {
		t.Fatal(err)
	}
	receive(t, ch, "write to the re-created file")
}

func TestWatch_FollowsSymlinkTarget(t *testing.T) {
	dir := t.TempDir()
	realDir := filepath.Join(dir, "elsewhere")
	if err := os.Mkdir(realDir, 0o755); err != nil {
		t.Fatal(err)
	}
	real := filepath.Join(realDir, "tasks.json")
	if err := os.WriteFile(real, []byte(twoIssues), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "issues.json")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := newTestTracker(t, link).Watch(ctx)
	if err := os.WriteFile(real, []byte("[]"), 0o644); err != nil {
		t.Fatal(err)
	}
	receive(t, ch, "write to the symlink's target")
}

func TestWatch_ClosedWhenContextEnds(t *testing.T) {
	tests := []struct {
		name string
		path func(t *testing.T) string
	}{
		{"watching", func(t *testing.T) string { return writeIssues(t, twoIssues) }},
		{"directory missing, nothing to watch", func(t *testing.T) string { return filepath.Join(t.TempDir(), "no", "such", "issues.json") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			ch := newTestTracker(t, tt.path(t)).Watch(ctx)
			cancel()
			deadline := time.After(watchTimeout)
			for {
				select {
				case _, ok := <-ch:
					if !ok {
						return
					}
				case <-deadline:
					t.Fatalf("channel not closed within %v of the context ending", watchTimeout)
				}
			}
		})
	}
}

func TestWatchTargets(t *testing.T) {
	dir := t.TempDir()
	realPath := filepath.Join(dir, "real", "issues.json")
	if err := os.MkdirAll(filepath.Dir(realPath), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(realPath, []byte("[]"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink(realPath, link); err != nil {
		t.Fatal(err)
	}
	// EvalSymlinks also resolves links in dir itself (macOS's /var → /private/var).
	resolved, err := filepath.EvalSymlinks(realPath)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		path     string
		wantDirs []string
	}{
		{"plain file", resolved, []string{filepath.Dir(resolved)}},
		{"missing file", filepath.Join(filepath.Dir(resolved), "nope.json"), []string{filepath.Dir(resolved)}},
		{"symlink", link, []string{dir, filepath.Dir(resolved)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := watchDirs(watchTargets(tt.path)); !reflect.DeepEqual(got, tt.wantDirs) {
				t.Errorf("watched dirs = %v, want %v", got, tt.wantDirs)
			}
		})
	}
}

func TestWatch_OwnWriteIsRecognised(t *testing.T) {
	path := writeIssues(t, twoIssues)
	tr := newTestTracker(t, path)
	if tr.holdsOwnWrite() {
		t.Fatal("holdsOwnWrite before any write of ours = true, want false")
	}
	if err := tr.TransitionIssue(context.Background(), "a", "Done"); err != nil {
		t.Fatal(err)
	}
	if !tr.holdsOwnWrite() {
		t.Fatal("holdsOwnWrite right after our transition = false: our own write would trigger a poll")
	}
	if err := tr.CommentIssue(context.Background(), "b", "noted"); err != nil {
		t.Fatal(err)
	}
	if !tr.holdsOwnWrite() {
		t.Fatal("holdsOwnWrite right after our comment = false")
	}
	// Same length, different bytes: a human's edit.
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	edited := bytes.Replace(data, []byte(`"Done"`), []byte(`"Todo"`), 1)
	if err := os.WriteFile(path, edited, 0o644); err != nil {
		t.Fatal(err)
	}
	if tr.holdsOwnWrite() {
		t.Fatal("holdsOwnWrite after a hand edit = true: the edit would be missed until the next poll")
	}
}
