package agent

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"sortie/internal/ttlmap"
)

// TestInstallRoots_ReusedForAWhile: an executable's roots are resolved again only
// once the memo's answer has expired, so a CLI whose link is retargeted is granted its
// new installation from the first start after that; what a caller does to the slice
// it is given never reaches the memo.
func TestInstallRoots_ReusedForAWhile(t *testing.T) {
	dir := t.TempDir()
	for _, v := range []string{"v1", "v2"} {
		bin := filepath.Join(dir, "lib", "node_modules", "cli-"+v, "bin")
		if err := os.MkdirAll(bin, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(bin, "cli.js"), nil, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	prefixBin := filepath.Join(dir, "bin")
	if err := os.Mkdir(prefixBin, 0o755); err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(prefixBin, "cli")
	link := func(v string) {
		t.Helper()
		_ = os.Remove(exe)
		if err := os.Symlink(filepath.Join("..", "lib", "node_modules", "cli-"+v, "bin", "cli.js"), exe); err != nil {
			t.Fatal(err)
		}
	}
	link("v1")
	now := time.Unix(1000, 0)
	memo := &installRootsMemo{now: func() time.Time { return now }, roots: ttlmap.New[string, []string](installRootsTTL, maxInstallRoots)}
	real := func(v string) string {
		r, err := filepath.EvalSymlinks(filepath.Join(dir, "lib", "node_modules", "cli-"+v, "bin"))
		if err != nil {
			t.Fatal(err)
		}
		return r
	}

	first := memo.get(exe)
	if !slices.Contains(first, real("v1")) || !slices.Contains(first, prefixBin) || !slices.Contains(first, dir) {
		t.Fatalf("roots %v: want the prefix %s, its bin and the resolved %s", first, dir, real("v1"))
	}
	if want := installRootsOf(exe); !slices.Equal(first, want) {
		t.Errorf("memo gave %v, resolving now gives %v", first, want)
	}
	first[0] = "/changed-by-the-caller"

	link("v2")
	now = now.Add(installRootsTTL - time.Millisecond)
	if got := memo.get(exe); !slices.Contains(got, real("v1")) || slices.Contains(got, "/changed-by-the-caller") {
		t.Errorf("within the TTL: %v, want the remembered roots with %s, untouched by the caller", got, real("v1"))
	}
	now = now.Add(time.Millisecond)
	if got := memo.get(exe); !slices.Contains(got, real("v2")) || slices.Contains(got, real("v1")) {
		t.Errorf("after the TTL: %v, want the new installation %s only", got, real("v2"))
	}
	// A clock that went back is not trusted to mean "fresh".
	now = now.Add(-time.Hour)
	link("v1")
	if got := memo.get(exe); !slices.Contains(got, real("v1")) {
		t.Errorf("after the clock went back: %v, want %s resolved afresh", got, real("v1"))
	}
}
