package agent

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
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
	if !slices.Contains(first, real("v1")) || !slices.Contains(first, prefixBin) || slices.Contains(first, dir) {
		t.Fatalf("roots %v: want the bin directory %s and the resolved %s, never the prefix %s", first, prefixBin, real("v1"), dir)
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

// A PATH grants each of its directories and, for a bin directory, its installation:
// the prefix of one outside the home directories or deep in one, only the library
// directories of a tool's home directly in a home (never ~/.cargo or ~/.local whole,
// which hold credentials), nothing for a home, "/" or a relative entry.
func TestPathRoots_HomeToolchainsGetBinAndLibrariesOnly(t *testing.T) {
	home := "/srv/agent" // agent.run_as's home, which only HOME names
	path := strings.Join([]string{
		"/usr/local/go/bin", "/opt/node/bin", "/usr/lib/node_modules/.bin",
		home + "/.cargo/bin", home + "/.local/bin", home + "/go/bin", home + "/.npm-global/bin",
		home + "/.nvm/versions/node/v22/bin", home + "/.rustup/toolchains/stable/bin", home + "/bin",
		"/home/op/.local/bin", "/root/.cargo/bin", home, "/", "rel/bin", "/tmp/bin",
	}, ":")
	got := PathRoots([]string{"HOME=" + home, "PATH=" + path})
	want := []string{
		"/usr/local/go/bin", "/usr/local/go",
		"/opt/node/bin", "/opt/node",
		"/usr/lib/node_modules/.bin", "/usr/lib/node_modules",
		home + "/.cargo/bin", home + "/.cargo/registry", home + "/.cargo/git", home + "/.rustup/toolchains", home + "/.rustup/settings.toml",
		home + "/.local/bin", home + "/.local/lib",
		home + "/go/bin", home + "/go/pkg/mod",
		home + "/.npm-global/bin", home + "/.npm-global/lib",
		home + "/.nvm/versions/node/v22/bin", home + "/.nvm/versions/node/v22",
		home + "/.rustup/toolchains/stable/bin", home + "/.rustup/toolchains/stable",
		home + "/bin",
		"/home/op/.local/bin", "/home/op/.local/lib",
		"/root/.cargo/bin", "/root/.cargo/registry", "/root/.cargo/git", "/root/.rustup/toolchains", "/root/.rustup/settings.toml",
		"/tmp/bin", // /tmp itself is broad, a directory in it is not
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("PathRoots =\n%q\nwant\n%q", got, want)
	}
	for _, r := range got {
		for _, never := range []string{home, home + "/.cargo", home + "/.local", home + "/go", home + "/.local/share", "/home/op/.local", "/root/.cargo"} {
			if r == never {
				t.Errorf("PathRoots grants %s whole", never)
			}
		}
	}
}

// A CLI is granted the directories it and its link's target are in, and the
// node_modules tree of an npm package, never a prefix: not ~/.local for
// ~/.local/bin/claude, not the prefix of a bin directory outside the home.
func TestInstallRoots_NoPrefix(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	native := filepath.Join(dir, "share", "claude", "versions", "2.1.0")
	bin := filepath.Join(dir, "bin")
	for _, d := range []string{filepath.Dir(native), bin} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(native, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(bin, "claude")
	if err := os.Symlink(native, exe); err != nil {
		t.Fatal(err)
	}
	if got, want := installRootsOf(exe), []string{bin, filepath.Dir(native)}; !reflect.DeepEqual(got, want) {
		t.Errorf("installRootsOf(%s) = %q, want %q", exe, got, want)
	}
}
