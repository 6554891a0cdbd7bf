package sandbox

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestPrune_DropsOnlyWhatAnotherGrantCovers(t *testing.T) {
	d := func(p string) grant { return grant{path: p, dir: true} }
	f := func(p string) grant { return grant{path: p} }
	write := []grant{d("/ws"), d("/ws/sub"), f("/dev/null"), d("/ws"), d("/tmp/run")}
	read := []grant{
		d("/usr"), d("/usr/bin"), d("/usr/local/go"), // beneath /usr
		d("/ws/sub/x"),       // beneath a write grant
		f("/dev/null"),       // the same file, granted for writing
		d("/usrx"),           // a sibling that shares a prefix, not beneath /usr
		f("/etc/gitconfig"),  // a file beneath nothing else
		d("/etc/gitconfig/"), // (not a real case; kept: it differs in kind)
		d("/usr"),            // twice
	}
	w, r := prune(write, read)
	if want := []grant{d("/ws"), f("/dev/null"), d("/tmp/run")}; !reflect.DeepEqual(w, want) {
		t.Errorf("write = %v, want %v", w, want)
	}
	if want := []grant{d("/usr"), d("/usrx"), f("/etc/gitconfig"), d("/etc/gitconfig/")}; !reflect.DeepEqual(r, want) {
		t.Errorf("read = %v, want %v", r, want)
	}
	// A write grant beneath a read grant still adds the right to write.
	w, r = prune([]grant{d("/usr/local/ws")}, []grant{d("/usr")})
	if len(w) != 1 || len(r) != 1 {
		t.Errorf("a write grant beneath a read grant: write %v read %v", w, r)
	}
}

// prune keeps what a grant-by-grant comparison keeps: a grant goes when a directory
// grant above it, or the same grant earlier (or, for a read grant, for writing),
// already covers it. Checked against that comparison written out, on random grants
// over a small tree, so that ancestors, duplicates, siblings sharing a prefix, "/" and
// a file and a directory at one path all meet.
func TestPrune_MatchesPairwiseComparison(t *testing.T) {
	paths := []string{"/", "/a", "/a/b", "/a/b/c", "/ab", "/ab/c", "/a/bc", "/x", "/x/a"}
	rng := rand.New(rand.NewPCG(1, 2))
	random := func() []grant {
		gs := make([]grant, rng.IntN(8))
		for i := range gs {
			gs[i] = grant{path: paths[rng.IntN(len(paths))], dir: rng.IntN(3) > 0}
		}
		return gs
	}
	for range 20000 {
		write, read := random(), random()
		w, r := prune(write, read)
		ww, wr := prunePairwise(write, read)
		if !slices.Equal(w, ww) || !slices.Equal(r, wr) {
			t.Fatalf("prune(%v, %v) = %v, %v; pairwise %v, %v", write, read, w, r, ww, wr)
		}
	}
}

// prunePairwise is prune by comparing every grant with every other.
func prunePairwise(write, read []grant) ([]grant, []grant) {
	covered := func(g grant, by []grant, self int) bool {
		for i, a := range by {
			switch {
			case i == self || !within(g.path, a.path):
			case a.path != g.path && !a.dir: // a file covers nothing beneath it
			case a.path == g.path && (a.dir != g.dir || i > self && self >= 0):
			default:
				return true
			}
		}
		return false
	}
	var w, r []grant
	for i, g := range write {
		if !covered(g, write, i) {
			w = append(w, g)
		}
	}
	for i, g := range read {
		if !covered(g, w, -1) && !covered(g, read, i) {
			r = append(r, g)
		}
	}
	return w, r
}

// The cache answers from memory until the entry expires: a root created meanwhile is
// granted from the first expansion after that, and a cached root removed meanwhile
// is still listed (its rule is then skipped as missing).
func TestExpansionCache_ReusesUntilExpired(t *testing.T) {
	base := t.TempDir()
	now := time.Unix(1_000_000, 0)
	c := newExpansionCache(func() time.Time { return now }, 5*time.Second)
	a, later := filepath.Join(base, "a"), filepath.Join(base, "later")
	if err := os.Mkdir(a, 0o755); err != nil {
		t.Fatal(err)
	}
	expand := func() []string {
		t.Helper()
		g, err := c.expand([]string{a, later, a}, c.exclusions(Policy{Hide: []string{filepath.Join(base, "db")}}))
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, x := range g {
			out = append(out, filepath.Base(x.path))
		}
		return out
	}
	if got := expand(); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("first expansion = %v, want [a]", got)
	}
	if err := os.Mkdir(later, 0o755); err != nil {
		t.Fatal(err)
	}
	now = now.Add(4 * time.Second)
	if got := expand(); !slices.Equal(got, []string{"a"}) {
		t.Errorf("within the TTL = %v, want the cached [a]", got)
	}
	now = now.Add(time.Second)
	if got := expand(); !slices.Equal(got, []string{"a", "later"}) {
		t.Errorf("after the TTL = %v, want [a later]", got)
	}
}

func TestExpansionCache_Bounded(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	c := newExpansionCache(func() time.Time { return now }, time.Hour)
	base := t.TempDir()
	for i := range maxCachedRoots + 10 {
		if _, err := c.expand([]string{filepath.Join(base, "run-"+strconv.Itoa(i))}, exclusions{}); err != nil {
			t.Fatal(err)
		}
		if c.roots.Len() > maxCachedRoots {
			t.Fatalf("%d cached roots, more than %d", c.roots.Len(), maxCachedRoots)
		}
	}
}

// A cached grant whose path has become a link since it was expanded must not grant
// where the link points: RestrictThread notices (the rule's path is opened without
// following links), expands afresh, and the link, like any link beside a hidden
// path, is not granted.
func TestRestrictThread_ACachedPathTurnedLinkIsNotFollowed(t *testing.T) {
	requireLandlock(t)
	if !ThreadConfinable() {
		t.Skip("skipped: the kernel's Landlock is older than ABI 2")
	}
	now := time.Unix(1_000_000, 0)
	saved := expansions
	expansions = newExpansionCache(func() time.Time { return now }, time.Hour)
	t.Cleanup(func() { expansions = saved })

	base := t.TempDir()
	proj, secret, sub := filepath.Join(base, "proj"), filepath.Join(base, "proj", "secret"), filepath.Join(base, "proj", "sub")
	for _, d := range []string{secret, sub} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for path, data := range map[string]string{filepath.Join(secret, "token"): "the operator's token", filepath.Join(sub, "README"): "readable"} {
		if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	p := Policy{Write: SystemWrite, Read: append(slices.Clone(SystemRead), proj), Hide: []string{secret}}
	run := func(script string) string {
		t.Helper()
		return strings.TrimSpace(threadRun(p, script))
	}
	if got := run("cat " + filepath.Join(sub, "README")); got != "readable" {
		t.Fatalf("before: %q, want the README", got)
	}
	// proj/sub is cached as a grant; make it a link to the hidden directory.
	if err := os.RemoveAll(sub); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, sub); err != nil {
		t.Fatal(err)
	}
	if got := run("cat " + filepath.Join(sub, "token") + " || echo denied"); !strings.HasSuffix(got, "denied") {
		t.Fatalf("through the link that replaced a cached grant: %q, want denied", got)
	}
	if got := run("cat " + filepath.Join(secret, "token") + " || echo denied"); !strings.HasSuffix(got, "denied") {
		t.Fatalf("the hidden directory: %q, want denied", got)
	}
}

// A root resolves as filepath.EvalSymlinks would have it, its directory from the cache
// while fresh: a link among the directories, a link as the root itself and a missing
// root each come out as they do uncached, and a retargeted directory link is seen once
// its entry expires.
func TestExpansionCache_ResolvesThroughCachedDirectories(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_000_000, 0)
	c := newExpansionCache(func() time.Time { return now }, 5*time.Second)
	for _, d := range []string{"one/ws-1", "one/ws-2", "two/ws-1", "one/target"} {
		if err := os.MkdirAll(filepath.Join(base, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	via := filepath.Join(base, "via")
	if err := os.Symlink("one", via); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("target", filepath.Join(base, "one", "link")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{
		filepath.Join(via, "ws-1"), filepath.Join(via, "ws-2"), filepath.Join(via, "link"),
		filepath.Join(base, "one", "ws-1"), filepath.Join(base, "one", ".", "ws-2"),
	} {
		got, err := c.resolve(p, now)
		want, werr := filepath.EvalSymlinks(p)
		if err != nil || werr != nil || got != want {
			t.Errorf("resolve(%s) = %q, %v; want %q, %v", p, got, err, want, werr)
		}
	}
	if got, err := c.resolve(filepath.Join(via, "missing"), now); err == nil {
		t.Errorf("resolve of a missing root = %q, want an error (it grants nothing)", got)
	}
	if err := os.Remove(via); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("two", via); err != nil {
		t.Fatal(err)
	}
	if got, _ := c.resolve(filepath.Join(via, "ws-1"), now.Add(4*time.Second)); got != filepath.Join(base, "one", "ws-1") {
		t.Errorf("within the TTL, after the link moved: %q, want the cached directory's ws-1", got)
	}
	if got, _ := c.resolve(filepath.Join(via, "ws-1"), now.Add(5*time.Second)); got != filepath.Join(base, "two", "ws-1") {
		t.Errorf("after the TTL: %q, want the new directory's ws-1", got)
	}
}

// A root's cached grants belong to the exclusions they were expanded with: the same
// root read for a policy with a private path beneath it and for one without is
// granted around it, and whole; written, whole either way.
func TestExpansionCache_KeyedByPrivatePaths(t *testing.T) {
	sys, root, _, _ := privateTree(t)
	now := time.Unix(1_000_000, 0)
	c := newExpansionCache(func() time.Time { return now }, time.Hour)
	for _, tc := range []struct {
		private []string
		whole   bool
	}{{[]string{root}, false}, {nil, true}, {[]string{root}, false}} {
		// The same root, to write and to read: private paths narrow only the read.
		w, g, err := c.expandPolicy(Policy{Write: []string{sys}, Read: []string{sys}, Private: tc.private})
		if err != nil {
			t.Fatal(err)
		}
		whole := len(g) == 1 && g[0] == (grant{path: sys, dir: true})
		if whole != tc.whole {
			t.Errorf("private %v: read grants %+v, want whole = %v", tc.private, g, tc.whole)
		}
		if len(w) != 1 || w[0] != (grant{path: sys, dir: true}) {
			t.Errorf("private %v: write grants %+v, want the root whole", tc.private, w)
		}
	}
}
