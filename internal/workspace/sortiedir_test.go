package workspace

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

func TestReadStatus(t *testing.T) {
	tests := []struct {
		name    string
		setup   func(t *testing.T, ws string)
		want    Status
		wantErr error
	}{
		{name: "no .sortie directory", setup: func(t *testing.T, ws string) {}, want: Status{}},
		{name: "absent", setup: func(t *testing.T, ws string) { mkSortie(t, ws) }, want: Status{}},
		{name: "blocked", setup: writeStatus("blocked\n"), want: Status{Kind: StatusBlocked, Value: "blocked"}},
		{name: "needs-human-review with spaces and CRLF", setup: writeStatus("  needs-human-review \r\nwhy: tests pass\n"),
			want: Status{Kind: StatusNeedsHumanReview, Value: "needs-human-review"}},
		{name: "only the first line counts", setup: writeStatus("working\nblocked\n"), want: Status{Kind: StatusUnknown, Value: "working"}},
		{name: "case-sensitive", setup: writeStatus("BLOCKED"), want: Status{Kind: StatusUnknown, Value: "BLOCKED"}},
		{name: "empty file", setup: writeStatus(""), want: Status{Kind: StatusUnknown, Value: ""}},
		{name: "exactly at the cap", setup: writeStatus("blocked\n" + strings.Repeat("x", MaxStatusSize-8)),
			want: Status{Kind: StatusBlocked, Value: "blocked"}},
		{name: "oversized", setup: writeStatus("blocked\n" + strings.Repeat("x", MaxStatusSize)), wantErr: ErrTooLarge},
		{name: "symlinked .sortie", setup: func(t *testing.T, ws string) {
			outside := t.TempDir()
			os.WriteFile(filepath.Join(outside, "status"), []byte("blocked"), 0o600)
			must(t, os.Symlink(outside, filepath.Join(ws, ".sortie")))
		}, wantErr: ErrSymlink},
		{name: "symlinked status", setup: func(t *testing.T, ws string) {
			mkSortie(t, ws)
			target := filepath.Join(t.TempDir(), "elsewhere")
			os.WriteFile(target, []byte("blocked"), 0o600)
			must(t, os.Symlink(target, filepath.Join(ws, ".sortie", "status")))
		}, wantErr: ErrSymlink},
		{name: "status is a directory", setup: func(t *testing.T, ws string) {
			mkSortie(t, ws)
			must(t, os.Mkdir(filepath.Join(ws, ".sortie", "status"), 0o750))
		}, wantErr: ErrNotRegular},
		{name: "status is a FIFO", setup: func(t *testing.T, ws string) {
			mkSortie(t, ws)
			must(t, syscall.Mkfifo(filepath.Join(ws, ".sortie", "status"), 0o600))
		}, wantErr: ErrNotRegular},
		{name: ".sortie is a file", setup: func(t *testing.T, ws string) {
			must(t, os.WriteFile(filepath.Join(ws, ".sortie"), []byte("blocked"), 0o600))
		}, wantErr: ErrConflict},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := t.TempDir()
			tt.setup(t, ws)
			got, err := ReadStatus(ws)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("ReadStatus err = %v, want %v", err, tt.wantErr)
				}
				if got.Kind != StatusNone {
					t.Fatalf("ReadStatus on error = %+v, want StatusNone (treated as absent)", got)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ReadStatus = %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

func TestClearStatus(t *testing.T) {
	t.Run("deletes the file", func(t *testing.T) {
		ws := t.TempDir()
		writeStatus("blocked")(t, ws)
		must(t, ClearStatus(ws))
		if _, err := os.Lstat(filepath.Join(ws, ".sortie", "status")); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("status still present: %v", err)
		}
		must(t, ClearStatus(ws)) // nothing left: still fine
	})
	t.Run("no .sortie", func(t *testing.T) {
		must(t, ClearStatus(t.TempDir()))
	})
	t.Run("refuses a symlinked .sortie", func(t *testing.T) {
		ws, outside := t.TempDir(), t.TempDir()
		target := filepath.Join(outside, "status")
		must(t, os.WriteFile(target, []byte("x"), 0o600))
		must(t, os.Symlink(outside, filepath.Join(ws, ".sortie")))
		if err := ClearStatus(ws); !errors.Is(err, ErrSymlink) {
			t.Fatalf("ClearStatus = %v, want ErrSymlink", err)
		}
		if _, err := os.Stat(target); err != nil {
			t.Fatalf("deleted through the link: %v", err)
		}
	})
	t.Run("refuses a symlinked status", func(t *testing.T) {
		ws := t.TempDir()
		mkSortie(t, ws)
		link := filepath.Join(ws, ".sortie", "status")
		must(t, os.Symlink("/etc/hostname", link))
		if err := ClearStatus(ws); !errors.Is(err, ErrSymlink) {
			t.Fatalf("ClearStatus = %v, want ErrSymlink", err)
		}
	})
}

func TestWriteFileAtomic(t *testing.T) {
	ws := t.TempDir()
	must(t, WriteFileAtomic(ws, "state.json", []byte(`{"turn_number":1}`)))
	must(t, WriteFileAtomic(ws, "state.json", []byte(`{"turn_number":2}`)))
	path := filepath.Join(ws, ".sortie", "state.json")
	got, err := os.ReadFile(path)
	if err != nil || string(got) != `{"turn_number":2}` {
		t.Fatalf("state.json = %q, %v", got, err)
	}
	fi, _ := os.Stat(path)
	if perm := fi.Mode().Perm(); perm != 0o600 {
		t.Errorf("mode = %v, want 0600", perm)
	}
	gi, err := os.ReadFile(filepath.Join(ws, ".sortie", ".gitignore"))
	if err != nil || string(gi) != "*\n" {
		t.Errorf(".gitignore = %q, %v; want it written too", gi, err)
	}
	var names []string
	entries, _ := os.ReadDir(filepath.Join(ws, ".sortie"))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	// The version the second write replaced stays as .state.json.next where names
	// can be swapped (swap_linux.go); nothing else is left.
	want := []string{".gitignore", "state.json"}
	if runtime.GOOS == "linux" {
		want = []string{".gitignore", ".state.json.next", "state.json"}
	}
	if !slices.Equal(names, want) {
		t.Errorf(".sortie holds %v, want %v (no temp files left)", names, want)
	}
}

// The third and later writes of a file reuse the inode the swap kept: nothing is
// created or deleted. A .next file the agent replaced by a link, a hard link or a
// FIFO is removed, never written through.
func TestWriteFileAtomic_SwapReusesAndDistrusts(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("names are swapped only on Linux")
	}
	ino := func(path string) uint64 {
		t.Helper()
		fi, err := os.Lstat(path)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Sys().(*syscall.Stat_t).Ino
	}
	ws := t.TempDir()
	state := filepath.Join(ws, ".sortie", "state.json")
	next := filepath.Join(ws, ".sortie", ".state.json.next")
	must(t, WriteFileAtomic(ws, "state.json", []byte("1")))
	must(t, WriteFileAtomic(ws, "state.json", []byte("2")))
	inodes := map[uint64]bool{ino(state): true, ino(next): true}
	for i := 3; i <= 5; i++ {
		must(t, WriteFileAtomic(ws, "state.json", []byte(strconv.Itoa(i))))
		if !inodes[ino(state)] || !inodes[ino(next)] {
			t.Fatalf("write %d made a new file", i)
		}
		if got, _ := os.ReadFile(state); string(got) != strconv.Itoa(i) {
			t.Fatalf("write %d: state.json = %q", i, got)
		}
	}

	outside := filepath.Join(t.TempDir(), "outside")
	must(t, os.WriteFile(outside, []byte("keep"), 0o644))
	plant := map[string]func() error{
		"symlink":   func() error { return os.Symlink(outside, next) },
		"hard link": func() error { return os.Link(outside, next) },
		"fifo":      func() error { return syscall.Mkfifo(next, 0o600) },
	}
	for name, mk := range plant {
		must(t, os.Remove(next))
		must(t, mk())
		must(t, WriteFileAtomic(ws, "state.json", []byte(name)))
		if got, _ := os.ReadFile(state); string(got) != name {
			t.Errorf("%s planted: state.json = %q", name, got)
		}
		if got, _ := os.ReadFile(outside); string(got) != "keep" {
			t.Fatalf("%s planted: written through to %s: %q", name, outside, got)
		}
		if fi, err := os.Lstat(next); err != nil || !fi.Mode().IsRegular() {
			t.Errorf("%s planted: .next is %v, %v; want a regular file of ours", name, fi, err)
		}
	}
}

func TestWriteFileAtomic_Refusals(t *testing.T) {
	t.Run("bad names", func(t *testing.T) {
		ws := t.TempDir()
		for _, name := range []string{"", ".", "..", "a/b", "../x", "nul\x00", strings.Repeat("n", 65)} {
			if err := WriteFileAtomic(ws, name, nil); err == nil {
				t.Errorf("WriteFileAtomic(%q) = nil, want an error", name)
			}
		}
	})
	t.Run("symlinked .sortie", func(t *testing.T) {
		ws, outside := t.TempDir(), t.TempDir()
		must(t, os.Symlink(outside, filepath.Join(ws, ".sortie")))
		if err := WriteFileAtomic(ws, "mcp.json", []byte("{}")); !errors.Is(err, ErrSymlink) {
			t.Fatalf("err = %v, want ErrSymlink", err)
		}
		if entries, _ := os.ReadDir(outside); len(entries) != 0 {
			t.Fatalf("wrote through the link: %v", entries)
		}
	})
	t.Run("symlinked target", func(t *testing.T) {
		ws := t.TempDir()
		mkSortie(t, ws)
		target := filepath.Join(t.TempDir(), "victim")
		must(t, os.WriteFile(target, []byte("original"), 0o600))
		must(t, os.Symlink(target, filepath.Join(ws, ".sortie", "state.json")))
		if err := WriteFileAtomic(ws, "state.json", []byte("x")); !errors.Is(err, ErrSymlink) {
			t.Fatalf("err = %v, want ErrSymlink", err)
		}
		if got, _ := os.ReadFile(target); string(got) != "original" {
			t.Fatalf("link target changed to %q", got)
		}
	})
	t.Run("symlinked .gitignore", func(t *testing.T) {
		ws := t.TempDir()
		must(t, os.Mkdir(filepath.Join(ws, ".sortie"), 0o750))
		target := filepath.Join(t.TempDir(), "victim")
		must(t, os.WriteFile(target, []byte("original"), 0o600))
		must(t, os.Symlink(target, filepath.Join(ws, ".sortie", ".gitignore")))
		if err := WriteFileAtomic(ws, "mcp.json", []byte("{}")); !errors.Is(err, ErrSymlink) {
			t.Fatalf("err = %v, want ErrSymlink", err)
		}
		if _, err := os.Lstat(filepath.Join(ws, ".sortie", "mcp.json")); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("mcp.json written without a real .gitignore: %v", err)
		}
	})
}

func TestReadSortieFile(t *testing.T) {
	ws := t.TempDir()
	must(t, WriteFileAtomic(ws, "scm.json", []byte(`{"branch":"b"}`)))
	got, err := ReadSortieFile(ws, "scm.json", 4096)
	if err != nil || string(got) != `{"branch":"b"}` {
		t.Fatalf("ReadSortieFile = %q, %v", got, err)
	}
	if _, err := ReadSortieFile(ws, "scm.json", 5); !errors.Is(err, ErrTooLarge) {
		t.Errorf("over the limit: err = %v, want ErrTooLarge", err)
	}
	if _, err := ReadSortieFile(ws, "missing.json", 10); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing: err = %v, want fs.ErrNotExist", err)
	}
	if _, err := ReadSortieFile(ws, "../escape", 10); err == nil {
		t.Error("name with a separator: err = nil, want an error")
	}
}

func mkSortie(t *testing.T, ws string) {
	t.Helper()
	must(t, os.MkdirAll(filepath.Join(ws, ".sortie"), 0o750))
}

func writeStatus(content string) func(t *testing.T, ws string) {
	return func(t *testing.T, ws string) {
		t.Helper()
		mkSortie(t, ws)
		must(t, os.WriteFile(filepath.Join(ws, ".sortie", "status"), []byte(content), 0o600))
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// SortieFiles holds `.sortie/` open for a run: writes keep going into the directory
// that was opened even when the agent swaps `.sortie/` for a link to somewhere else,
// and a target turned into a link is refused as WriteFileAtomic refuses it.
func TestSortieFiles_HeldDirectory(t *testing.T) {
	ws, outside := t.TempDir(), t.TempDir()
	f, err := OpenSortieFiles(ws)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for i := range 3 {
		must(t, f.WriteFile("state.json", []byte(strconv.Itoa(i))))
	}
	if got, _ := os.ReadFile(filepath.Join(ws, ".sortie", "state.json")); string(got) != "2" {
		t.Fatalf("state.json = %q, want 2", got)
	}
	if got, _ := os.ReadFile(filepath.Join(ws, ".sortie", ".gitignore")); string(got) != gitignoreContent {
		t.Fatalf(".gitignore = %q", got)
	}

	// The agent moves .sortie/ aside and puts a link in its place.
	must(t, os.Rename(filepath.Join(ws, ".sortie"), filepath.Join(ws, "moved")))
	must(t, os.Symlink(outside, filepath.Join(ws, ".sortie")))
	must(t, f.WriteFile("state.json", []byte("after")))
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Fatalf("wrote through the link: %v", entries)
	}
	if got, _ := os.ReadFile(filepath.Join(ws, "moved", "state.json")); string(got) != "after" {
		t.Fatalf("the opened directory's state.json = %q, want after", got)
	}

	victim := filepath.Join(outside, "victim")
	must(t, os.WriteFile(victim, []byte("original"), 0o600))
	must(t, os.Symlink(victim, filepath.Join(ws, "moved", "mcp.json")))
	if err := f.WriteFile("mcp.json", []byte("{}")); !errors.Is(err, ErrSymlink) {
		t.Fatalf("a linked target: err = %v, want ErrSymlink", err)
	}
	if got, _ := os.ReadFile(victim); string(got) != "original" {
		t.Fatalf("link target changed to %q", got)
	}
}

// What an agent leaves at `.sortie/.gitignore` is neither waited on nor written
// through: a FIFO and a hard link are refused, the hard link's other name keeps its
// content, and a same-sized .gitignore with other content is rewritten.
func TestEnsureSortieDir_GitignoreIsNeverWaitedOnOrWrittenThrough(t *testing.T) {
	t.Run("fifo", func(t *testing.T) {
		ws := t.TempDir()
		must(t, os.Mkdir(filepath.Join(ws, ".sortie"), 0o750))
		must(t, unix.Mkfifo(filepath.Join(ws, ".sortie", ".gitignore"), 0o600))
		if _, err := ensureSortieDir(ws); !errors.Is(err, ErrNotRegular) {
			t.Fatalf("err = %v, want ErrNotRegular", err)
		}
	})
	t.Run("hard link", func(t *testing.T) {
		ws := t.TempDir()
		must(t, os.Mkdir(filepath.Join(ws, ".sortie"), 0o750))
		other := filepath.Join(ws, "elsewhere")
		must(t, os.WriteFile(other, []byte("keep me"), 0o600))
		must(t, os.Link(other, filepath.Join(ws, ".sortie", ".gitignore")))
		if _, err := ensureSortieDir(ws); !errors.Is(err, ErrNotRegular) {
			t.Fatalf("err = %v, want ErrNotRegular", err)
		}
		if got, _ := os.ReadFile(other); string(got) != "keep me" {
			t.Fatalf("written through the hard link: %q", got)
		}
	})
	t.Run("other content of the same size", func(t *testing.T) {
		ws := t.TempDir()
		must(t, os.Mkdir(filepath.Join(ws, ".sortie"), 0o750))
		must(t, os.WriteFile(filepath.Join(ws, ".sortie", ".gitignore"), []byte("!\n"), 0o644))
		if _, err := ensureSortieDir(ws); err != nil {
			t.Fatal(err)
		}
		if got, err := os.ReadFile(filepath.Join(ws, ".sortie", ".gitignore")); err != nil || string(got) != gitignoreContent {
			t.Fatalf(".gitignore = %q (%v), want %q", got, err, gitignoreContent)
		}
	})
}

func TestRemoveSortieFile(t *testing.T) {
	const name = "review_verdict.json"
	t.Run("deletes a regular file", func(t *testing.T) {
		ws := t.TempDir()
		must(t, WriteFileAtomic(ws, name, []byte(`{}`)))
		must(t, RemoveSortieFile(ws, name))
		if _, err := os.Lstat(filepath.Join(ws, ".sortie", name)); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("file still present: %v", err)
		}
		must(t, RemoveSortieFile(ws, name)) // nothing left: still fine
	})
	t.Run("no .sortie", func(t *testing.T) {
		must(t, RemoveSortieFile(t.TempDir(), name))
	})
	t.Run("deletes a link, not what it points at", func(t *testing.T) {
		ws := t.TempDir()
		mkSortie(t, ws)
		target := filepath.Join(t.TempDir(), "outside")
		must(t, os.WriteFile(target, []byte("keep"), 0o600))
		must(t, os.Symlink(target, filepath.Join(ws, ".sortie", name)))
		must(t, RemoveSortieFile(ws, name))
		if _, err := os.Lstat(filepath.Join(ws, ".sortie", name)); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("link still present: %v", err)
		}
		if _, err := os.Stat(target); err != nil {
			t.Fatalf("the link's target was deleted: %v", err)
		}
	})
	t.Run("refuses a symlinked .sortie", func(t *testing.T) {
		ws, outside := t.TempDir(), t.TempDir()
		target := filepath.Join(outside, name)
		must(t, os.WriteFile(target, []byte("x"), 0o600))
		must(t, os.Symlink(outside, filepath.Join(ws, ".sortie")))
		if err := RemoveSortieFile(ws, name); !errors.Is(err, ErrSymlink) {
			t.Fatalf("RemoveSortieFile = %v, want ErrSymlink", err)
		}
		if _, err := os.Stat(target); err != nil {
			t.Fatalf("deleted through the link: %v", err)
		}
	})
	t.Run("refuses a directory", func(t *testing.T) {
		ws := t.TempDir()
		mkSortie(t, ws)
		must(t, os.Mkdir(filepath.Join(ws, ".sortie", name), 0o750))
		if err := RemoveSortieFile(ws, name); !errors.Is(err, ErrNotRegular) {
			t.Fatalf("RemoveSortieFile = %v, want ErrNotRegular", err)
		}
	})
	t.Run("refuses a bad name", func(t *testing.T) {
		if err := RemoveSortieFile(t.TempDir(), "../x"); err == nil {
			t.Fatal("RemoveSortieFile(../x) = nil, want an error")
		}
	})
}
