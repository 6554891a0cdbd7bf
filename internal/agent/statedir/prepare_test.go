package statedir

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"sortie/internal/agent/agenttest"
)

// A reset leaves what Keep's patterns name (a directory with all below it, a regular
// file), goes down the directories a longer pattern goes through, and removes the rest:
// links (not followed), FIFOs (never opened), a file where a directory is kept and the
// other way round.
func TestPrepare_KeepsOnlyWhatTheSpecKeeps(t *testing.T) {
	const uuid = "00000000-0000-4000-8000-000000000001"
	cases := []struct {
		name  string
		keep  []string
		plant map[string]string
		want  []string
	}{
		{"nothing kept", nil,
			map[string]string{"AGENTS.md": "x", "rules/r": "x", "sessions/s.jsonl": "x"}, nil},
		{"a directory, whole", []string{"sessions/"},
			map[string]string{"AGENTS.md": "x", "sessions/2026/s.jsonl": "x", "sessions/other/x": "x", "sessionsx/y": "x"},
			[]string{"sessions/2026/s.jsonl", "sessions/other/x"}},
		{"a file kept is not a directory", []string{"config.toml"},
			map[string]string{"config.toml/x": "x"}, nil},
		{"a directory kept is not a file", []string{"session-state/"},
			map[string]string{"session-state": "x"}, nil},
		{"patterns below directories", []string{"projects/*/*.jsonl", "projects/*/" + uuidPattern + "/"},
			map[string]string{"projects/-ws/" + uuid + ".jsonl": "x", "projects/-ws/" + uuid + "/subagents/a.jsonl": "x",
				"projects/-ws/memory/MEMORY.md": "x", "projects/-ws/CLAUDE.md": "x", "projects/stray": "x", "CLAUDE.md": "x"},
			[]string{"projects/-ws/" + uuid + "/subagents/a.jsonl", "projects/-ws/" + uuid + ".jsonl"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "issue")
			plant(t, dir, c.plant)
			if err := Prepare(dir, nil, Spec{Keep: c.keep}); err != nil {
				t.Fatal(err)
			}
			slices.Sort(c.want)
			if got := filesIn(t, dir); !slices.Equal(got, c.want) {
				t.Errorf("left %q, want %q", got, c.want)
			}
		})
	}
}

// uuidPattern matches a session's UUID, as claude's spec does.
var uuidPattern = strings.Join([]string{hexes(8), hexes(4), hexes(4), hexes(4), hexes(12)}, "-")

func hexes(n int) string { return strings.Repeat("[0-9a-f]", n) }

// Links, FIFOs and what a kept name holds instead of what it should are removed,
// never followed or opened, kept or not.
func TestPrepare_RemovesLinksAndFIFOsWithoutFollowingThem(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "issue")
	v := victim(t)
	outside := filepath.Dir(v)
	plant(t, dir, map[string]string{"sessions/s.jsonl": "x"})
	for name, target := range map[string]string{"commands": outside, "sessions/link": v, "kept": outside, "file": v} {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	spec := Spec{Keep: []string{"sessions/", "kept/", "file", "fifo"}, Files: []File{{Name: "fifo", Content: func(old []byte) []byte {
		if old != nil {
			t.Errorf("the FIFO was read: %q", old)
		}
		return []byte("{}")
	}}}}
	if err := Prepare(dir, nil, spec); err != nil {
		t.Fatal(err)
	}
	// The kept directory keeps its own entries, the link among them, which Sortie
	// never follows; the links at kept names are gone.
	if got, want := filesIn(t, dir), []string{"fifo", "sessions/link", "sessions/s.jsonl"}; !slices.Equal(got, want) {
		t.Errorf("left %q, want %q", got, want)
	}
	if fi, err := os.Lstat(filepath.Join(dir, "fifo")); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("fifo = %v, %v: want the file Sortie wrote in its place", fi, err)
	}
	untouched(t, v)
}

// Files are written (0600) from what they held, which is read only from a regular
// file of the agent's with one name; a link or a hard link at the name is replaced,
// never written through nor read.
func TestPrepare_WritesFilesFromTheirOldContent(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "issue")
	v := victim(t)
	plant(t, dir, map[string]string{".claude.json": `{"userID":"u1"}`})
	if err := os.Symlink(v, filepath.Join(dir, "linked")); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(v, filepath.Join(dir, "hardlinked")); err != nil {
		t.Fatal(err)
	}
	old := map[string]string{}
	file := func(name string) File {
		return File{Name: name, Content: func(b []byte) []byte { old[name] = string(b); return []byte("new " + name) }}
	}
	spec := Spec{Files: []File{file(".claude.json"), file("linked"), file("hardlinked"), file("missing")}}
	if err := Prepare(dir, nil, spec); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{".claude.json": `{"userID":"u1"}`, "linked": "", "hardlinked": "", "missing": ""}
	for name, w := range want {
		if old[name] != w {
			t.Errorf("%s: old content %q, want %q", name, old[name], w)
		}
		p := filepath.Join(dir, name)
		fi, err := os.Lstat(p)
		if b, _ := os.ReadFile(p); err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 || string(b) != "new "+name {
			t.Errorf("%s = %q (%v, %v), want a file of its own, 0600", name, b, fi, err)
		}
	}
	untouched(t, v)
	if got := filesIn(t, dir); len(got) != len(want) {
		t.Errorf("left %q: a temporary file stayed behind", got)
	}
}

// Dirs are made where missing, and a link or file the agent put where one goes is
// replaced by a directory, nothing written through it; Links are made again at every
// reset, below a kept directory too.
func TestPrepare_MakesDirsInPlaceOfLinks(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "issue")
	outside := t.TempDir()
	plant(t, dir, map[string]string{"data/opencode/opencode.db": "sessions", "state": "a file"})
	if err := os.Mkdir(filepath.Join(dir, "cache"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "cache", "opencode")); err != nil {
		t.Fatal(err)
	}
	spec := Spec{Keep: []string{"data/", "state/", "cache/"}, Dirs: []string{"config/opencode", "data/opencode", "state/opencode", "cache/opencode"},
		Links: map[string]string{"config/git": "/etc/gitconfig-dir", "state/kept-link": "/etc/gitconfig-dir"}}
	for range 2 {
		if err := Prepare(dir, nil, spec); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range spec.Dirs {
		if !isDir(t, filepath.Join(dir, d)) {
			t.Errorf("%s is not a directory", d)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "data", "opencode", "opencode.db")); string(b) != "sessions" {
		t.Errorf("the kept sessions are gone: %q", b)
	}
	for name := range spec.Links {
		if l, err := os.Readlink(filepath.Join(dir, name)); err != nil || l != "/etc/gitconfig-dir" {
			t.Errorf("%s = %q, %v; want the link the spec names", name, l, err)
		}
	}
	if entries, _ := os.ReadDir(outside); len(entries) > 0 {
		t.Errorf("Sortie wrote through a link: %v", entries)
	}
}

// The login is copied when newer than the copy, which the CLI refreshes and which is
// then kept; without a login to give, a copy left over goes.
func TestPrepare_CopiesTheLoginWhenNewer(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "issue")
	login := filepath.Join(t.TempDir(), "auth.json")
	if err := os.WriteFile(login, []byte("v1"), 0o600); err != nil {
		t.Fatal(err)
	}
	copied := filepath.Join(dir, "data", "auth.json")
	prepare := func(from string) {
		t.Helper()
		if err := Prepare(dir, nil, Spec{Dirs: []string{"data"}, Login: &Login{From: from, To: "data/auth.json"}}); err != nil {
			t.Fatal(err)
		}
	}
	content := func() string { b, _ := os.ReadFile(copied); return string(b) }
	prepare(login)
	if got := content(); got != "v1" {
		t.Fatalf("copy = %q, want v1", got)
	}
	owned(t, copied, uint32(os.Geteuid()), 0o600)
	plant(t, dir, map[string]string{"data/auth.json": "refreshed"})
	prepare(login)
	if got := content(); got != "refreshed" {
		t.Errorf("the refreshed copy was replaced: %q", got)
	}
	if err := os.WriteFile(login, []byte("v2"), 0o600); err != nil {
		t.Fatal(err)
	}
	future := time.Now().Add(time.Minute)
	if err := os.Chtimes(login, future, future); err != nil {
		t.Fatal(err)
	}
	prepare(login)
	if got := content(); got != "v2" {
		t.Errorf("a new login was not copied: %q", got)
	}
	prepare(filepath.Join(t.TempDir(), "missing.json"))
	if got := content(); got != "v2" {
		t.Errorf("with no login at the source, the copy = %q, want it kept", got)
	}
	prepare("")
	if _, err := os.Lstat(copied); !os.IsNotExist(err) {
		t.Errorf("without a login to give, the copy stays: %v", err)
	}
}

// The login is read only from a regular file of the agent user's own: a link, a hard
// link or another user's file is refused (a *LoginError naming it), with no copy.
func TestPrepare_RefusesAPlantedLogin(t *testing.T) {
	agenttest.RefusesPlantedLogin(t,
		func(home string) string { return filepath.Join(home, "auth.json") },
		func(home string) (string, error) {
			dir := filepath.Join(t.TempDir(), "issue")
			err := Prepare(dir, nil, Spec{Login: &Login{From: filepath.Join(home, "auth.json"), To: "auth.json"}})
			var le *LoginError
			if err != nil && !errors.As(err, &le) {
				t.Errorf("refusal %v is no *LoginError", err)
			}
			return filepath.Join(dir, "auth.json"), err
		})
	t.Run("FIFO", func(t *testing.T) {
		login := filepath.Join(t.TempDir(), "auth.json")
		if err := syscall.Mkfifo(login, 0o600); err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(t.TempDir(), "issue")
		wantErr(t, "a FIFO for a login", Prepare(dir, nil, Spec{Login: &Login{From: login, To: "auth.json"}}), login)
	})
}
