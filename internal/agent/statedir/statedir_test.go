package statedir

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"sortie/internal/runas"
)

// nobody is the agent's user in the tests of agent.run_as, which need root.
var nobody = &runas.User{Name: "nobody", UID: 65534, GID: 65534, Groups: []uint32{65534}}

// needRoot skips a test that gives files away.
func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("agent.run_as needs root")
	}
}

// plant writes the files of tree (path below dir: content) as the agent would.
func plant(t *testing.T, dir string, tree map[string]string) {
	t.Helper()
	for name, body := range tree {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// filesIn lists what is below dir but directories, relative to it, sorted.
func filesIn(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// victim is a file outside the state directory that nothing may write or remove.
func victim(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(p, []byte("keep me"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// untouched fails the test when the victim file was changed or removed.
func untouched(t *testing.T, victim string) {
	t.Helper()
	if b, err := os.ReadFile(victim); err != nil || string(b) != "keep me" {
		t.Errorf("%s, outside the state directory, was reached: %q, %v", victim, b, err)
	}
}

func TestDir_OnePerIssueAndStable(t *testing.T) {
	env := func(id string) []string { return []string{"HOME=/home/u", "SORTIE_ISSUE_ID=" + id} }
	a := Dir(env("1"), "claude", "", "/srv/wf", "/ws/A")
	cases := []struct {
		name string
		got  string
		same bool
	}{
		{"the same issue again", Dir(env("1"), "claude", "", "/srv/wf/", "/ws/A"), true},
		{"the same issue after its workspace moved", Dir(env("1"), "claude", "", "/srv/wf", "/elsewhere/A"), true},
		{"another issue", Dir(env("2"), "claude", "", "/srv/wf", "/ws/A"), false},
		{"another workflow", Dir(env("1"), "claude", "", "/srv/other", "/ws/A"), false},
		{"another CLI", Dir(env("1"), "copilot", "", "/srv/wf", "/ws/A"), false},
		{"no issue id: by workspace", Dir([]string{"HOME=/home/u"}, "claude", "", "/srv/wf", "/ws/A"), false},
	}
	for _, c := range cases {
		if (c.got == a) != c.same {
			t.Errorf("%s: %s vs %s, want the same: %v", c.name, c.got, a, c.same)
		}
	}
	noID := []string{"HOME=/home/u"}
	if Dir(noID, "claude", "", "/srv/wf", "/ws/B") != Dir(noID, "claude", "", "/srv/wf", "/ws/B/") {
		t.Error("without an issue id, one workspace has two directories")
	}
}

func TestDir_Layout(t *testing.T) {
	env := []string{"HOME=/home/u", "SORTIE_ISSUE_ID=1"}
	// Where claude's and copilot's directories have been since they had one per issue.
	if got, want := Dir(env, "claude", "", "/srv/wf", "/ws/A"), "/home/u/.cache/sortie/claude/e22547254800/740a35d7c6631c13"; got != want {
		t.Errorf("Dir = %s, want %s", got, want)
	}
	for _, c := range []struct {
		name       string
		env        []string
		base, want string
	}{
		{"below ~/.cache", env, "", "/home/u/.cache/sortie/codex"},
		{"below XDG_CACHE_HOME", append(env, "XDG_CACHE_HOME=/c"), "", "/c/sortie/codex"},
		{"the operator's base replaces <cache>/sortie/<cli>", env, "/srv/codex", "/srv/codex"},
		{"without a cache directory", []string{"SORTIE_ISSUE_ID=1"}, "", filepath.Join(os.TempDir(), fmt.Sprintf("sortie-%d", os.Getuid()), "sortie", "codex")},
	} {
		got := Dir(c.env, "codex", c.base, "/srv/wf", "/ws/A")
		wf, issue := filepath.Base(filepath.Dir(got)), filepath.Base(got)
		if filepath.Dir(filepath.Dir(got)) != c.want || len(wf) != 12 || len(issue) != 16 {
			t.Errorf("%s: %s, want %s/<workflow: 12 hex>/<issue: 16 hex>", c.name, got, c.want)
		}
	}
}

// isDir reports whether p is a directory, not a link.
func isDir(t *testing.T, p string) bool {
	t.Helper()
	fi, err := os.Lstat(p)
	return err == nil && fi.IsDir()
}

// owned fails the test unless p is uid's with mode perm.
func owned(t *testing.T, p string, uid uint32, perm os.FileMode) {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	if st := fi.Sys().(*syscall.Stat_t); st.Uid != uid || fi.Mode().Perm() != perm {
		t.Errorf("%s: uid %d mode %s, want uid %d mode %s", p, st.Uid, fi.Mode().Perm(), uid, perm)
	}
}

// wantErr fails the test unless err is an error whose message holds each of want.
func wantErr(t *testing.T, what string, err error, want ...string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: no error", what)
		return
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%s: %v, want it to name %q", what, err, w)
		}
	}
}
