package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
)

// childEnv marks the test binary run as `sortie confine` would be.
const childEnv = "SORTIE_SANDBOX_TEST_CHILD"

func TestMain(m *testing.M) {
	if gone := os.Getenv(goneEnv); gone != "" {
		// Confine to grants of which one is gone, as a file renamed away between the
		// expansion and the rules would be.
		if err := restrictGrants([]grant{{path: os.TempDir(), dir: true}}, []grant{{path: gone}}); err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(111)
		}
		os.Stdout.WriteString("confined\n")
		os.Exit(0)
	}
	if os.Getenv(childEnv) == "1" {
		p, argv, err := ParseArgs(os.Args[1:])
		if err == nil {
			if code, ran := ConfineInUserNS(p, os.Args); ran {
				os.Exit(code)
			}
			err = Exec(p, argv, withoutUserNSEnv(os.Environ()))
		}
		os.Stderr.WriteString(err.Error() + "\n")
		os.Exit(111)
	}
	os.Exit(m.Run())
}

// goneEnv names a path that no longer exists, for TestRestrict_AGrantGoneMeanwhileIsSkipped.
const goneEnv = "SORTIE_SANDBOX_TEST_GONE"

// A directory expanded around a hidden file lists every entry beside it; one renamed
// away before its rule is made (the issues file's temporary next version, say) is
// skipped, not a failure that keeps the agent from starting.
func TestRestrict_AGrantGoneMeanwhileIsSkipped(t *testing.T) {
	requireLandlock(t)
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), goneEnv+"="+filepath.Join(t.TempDir(), ".issues.json.sortie-1.tmp"))
	out, err := cmd.CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "confined" {
		t.Fatalf("confining with a grant gone: %v\n%s", err, out)
	}
}

// requireLandlock skips without Landlock, except in CI, where the suite must prove
// confinement and a kernel without it is a failure.
func requireLandlock(t *testing.T) {
	t.Helper()
	if _, err := Available(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI needs Landlock to test confinement: %v", err)
		}
		t.Skipf("skipped: confinement needs Landlock: %v", err)
	}
}

// confined runs script with /bin/sh under p in a child and returns its output.
func confined(t *testing.T, p Policy, script string) string {
	t.Helper()
	args := append(p.Args(), "/bin/sh", "-c", script)
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), childEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("confined script failed: %v\n%s", err, out)
	}
	return string(out)
}

func TestExec_WritesOnlyBeneathWriteAndNeverReadsHidden(t *testing.T) {
	requireLandlock(t)
	base := t.TempDir()
	ws, outside, proj := filepath.Join(base, "ws"), filepath.Join(base, "outside"), filepath.Join(base, "proj")
	for _, d := range []string{ws, outside, proj, filepath.Join(proj, "sub")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{
		filepath.Join(proj, "state.db"):      "the daemon's database",
		filepath.Join(proj, ".env"):          "TOKEN=s3cr3t",
		filepath.Join(proj, "README"):        "readable",
		filepath.Join(proj, "sub", "notes"):  "also readable",
		filepath.Join(outside, "untouched"):  "x",
		filepath.Join(proj, "sub", "hidden"): "a hidden file in a subdirectory",
	}
	for f, c := range files {
		if err := os.WriteFile(f, []byte(c), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// A link beside the hidden files pointing at one must not lead to it.
	if err := os.Symlink(filepath.Join(proj, "state.db"), filepath.Join(proj, "link-to-db")); err != nil {
		t.Fatal(err)
	}
	p := Policy{
		Write: append([]string{ws}, SystemWrite...),
		Read:  append(slices.Clone(SystemRead), proj),
		Hide:  []string{filepath.Join(proj, "state.db"), filepath.Join(proj, ".env"), filepath.Join(proj, "sub", "hidden")},
	}
	script := `
try() { if eval "$2" >/dev/null 2>&1; then echo "$1 ok"; else echo "$1 denied"; fi; }
try write-workspace 'echo hi > ` + ws + `/a && mkdir ` + ws + `/d && mv ` + ws + `/a ` + ws + `/d/a'
try write-outside 'echo hi > ` + outside + `/b'
try write-proj 'echo hi > ` + proj + `/new'
try read-readme 'cat ` + proj + `/README'
try read-sub 'cat ` + proj + `/sub/notes'
try read-db 'cat ` + proj + `/state.db'
try read-env 'cat ` + proj + `/.env'
try read-hidden-in-sub 'cat ` + proj + `/sub/hidden'
try read-through-link 'cat ` + proj + `/link-to-db'
try read-outside 'cat ` + outside + `/untouched'
`
	got := strings.Fields(confined(t, p, script))
	want := strings.Fields(`write-workspace ok write-outside denied write-proj denied read-readme ok read-sub ok
		read-db denied read-env denied read-hidden-in-sub denied read-through-link denied read-outside denied`)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("confined results:\n%v\nwant\n%v", got, want)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "d", "a")); err != nil || string(b) != "hi\n" {
		t.Errorf("the workspace write: %q, %v", b, err)
	}
}

func TestExec_RefusesWithoutLandlockRatherThanRunUnconfined(t *testing.T) {
	if _, err := Available(); err == nil {
		t.Skip("skipped: Landlock is available here; this checks the failure path")
	}
	err := Exec(Policy{Write: []string{t.TempDir()}}, []string{"/bin/true"}, os.Environ())
	if err == nil {
		t.Fatal("Exec without Landlock returned nil")
	}
}

func TestArgs_RoundTrip(t *testing.T) {
	p := Policy{Write: []string{"/ws", "/tmp/run"}, Read: []string{"/usr"}, Hide: []string{"/srv/sortie.db"},
		Private: []string{"/var/lib/sortie/workspaces", "/home/agent"}, PrivateTmp: true}
	argv := Command("/usr/local/bin/sortie", p, "claude", []string{"-p", "--", "--write"})
	if argv[0] != "/usr/local/bin/sortie" || argv[1] != "confine" {
		t.Fatalf("argv = %q", argv)
	}
	got, rest, err := ParseArgs(argv[2:])
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, p) || !reflect.DeepEqual(rest, []string{"claude", "-p", "--", "--write"}) {
		t.Errorf("ParseArgs = %+v %q", got, rest)
	}
	for _, bad := range [][]string{{}, {"--write"}, {"--write", ""}, {"--read", "/x"}, {"--bogus", "/x", "--", "sh"}, {"--"}, {"--private", "", "--", "sh"}} {
		if _, _, err := ParseArgs(bad); err == nil {
			t.Errorf("ParseArgs(%q) = nil error", bad)
		}
	}
}

func TestExpand_GrantsAroundHiddenPaths(t *testing.T) {
	base := t.TempDir()
	for _, d := range []string{"a/b", "a/c", "d"} {
		if err := os.MkdirAll(filepath.Join(base, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"a/b/secret", "a/b/fine", "a/x"} {
		if err := os.WriteFile(filepath.Join(base, f), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	g, _, err := expand(Policy{Write: []string{base, filepath.Join(base, "missing")},
		Hide: []string{filepath.Join(base, "a/b/secret"), filepath.Join(base, "d/not-yet")}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, x := range g {
		rel, _ := filepath.Rel(base, x.path)
		if x.dir {
			rel += "/"
		}
		got = append(got, rel)
	}
	slices.Sort(got)
	// d is granted piecewise (it is empty) because of a hidden file it will hold.
	if want := []string{"a/b/fine", "a/c/", "a/x"}; !reflect.DeepEqual(got, want) {
		t.Errorf("grants = %q, want %q", got, want)
	}
	if _, g, _ := expand(Policy{Read: []string{filepath.Join(base, "a/b/secret")}, Hide: []string{filepath.Join(base, "a")}}); len(g) != 0 {
		t.Errorf("a root beneath a hidden path granted %+v", g)
	}
}

// RestrictThread confines what the thread starts, exactly as `sortie confine` would,
// and nothing else: the process itself (every other thread, and later goroutines)
// keeps its own access, however many confined children were started.
func TestRestrictThread_ConfinesTheChildOnly(t *testing.T) {
	requireLandlock(t)
	if !ThreadConfinable() {
		t.Skip("skipped: the kernel's Landlock is older than ABI 2")
	}
	base := t.TempDir()
	ws, proj := filepath.Join(base, "ws"), filepath.Join(base, "proj")
	for _, d := range []string{ws, proj} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	secret := filepath.Join(proj, "state.db")
	if err := os.WriteFile(secret, []byte("the daemon's database"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(proj, "README"), []byte("readable"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := Policy{
		Write: append([]string{ws}, SystemWrite...),
		Read:  append(slices.Clone(SystemRead), proj),
		Hide:  []string{secret},
	}
	script := `
try() { if eval "$2" >/dev/null 2>&1; then echo "$1 ok"; else echo "$1 denied"; fi; }
try write-workspace 'echo hi > ` + ws + `/a'
try write-proj 'echo hi > ` + proj + `/new'
try read-readme 'cat ` + proj + `/README'
try read-db 'cat ` + secret + `'
`
	for i := range 8 {
		got := strings.Fields(threadRun(p, script))
		want := strings.Fields(`write-workspace ok write-proj denied read-readme ok read-db denied`)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("child %d: %v\nwant %v", i, got, want)
		}
		// The rest of the process is not confined: from any goroutine, on any thread.
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				if _, err := os.ReadFile(secret); err != nil {
					t.Errorf("after confining a child, this process cannot read %s: %v", secret, err)
				}
				if err := os.WriteFile(filepath.Join(proj, "daemon-write"), []byte("x"), 0o600); err != nil {
					t.Errorf("after confining a child, this process cannot write: %v", err)
				}
			})
		}
		wg.Wait()
	}
}

// threadRun runs script with /bin/sh from a thread confined to p (RestrictThread) and
// returns its output, or why it could not run.
func threadRun(p Policy, script string) string {
	out := make(chan string, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		if err := RestrictThread(p); err != nil {
			out <- "restrict: " + err.Error()
			return
		}
		b, err := exec.Command("/bin/sh", "-c", script).CombinedOutput()
		if err != nil {
			out <- "run: " + err.Error() + ": " + string(b)
			return
		}
		out <- string(b)
	}()
	return <-out
}

// FuzzParseArgs: whatever the confine command line holds, ParseArgs either refuses it
// or decodes a policy that Args encodes back to the same policy and program.
func FuzzParseArgs(f *testing.F) {
	f.Add("--write\x00/ws\x00--private\x00/var/lib/ws\x00--hide\x00/srv/db\x00--\x00sh\x00-c\x00--read")
	f.Add("--read\x00/usr\x00--")
	f.Add("--private\x00--\x00--\x00x")
	f.Fuzz(func(t *testing.T, joined string) {
		p, rest, err := ParseArgs(strings.Split(joined, "\x00"))
		if err != nil {
			return
		}
		again, rest2, err := ParseArgs(append(p.Args(), rest...))
		if err != nil || !reflect.DeepEqual(again, p) || !reflect.DeepEqual(rest2, rest) {
			t.Fatalf("round trip of %+v %q: %+v %q, %v", p, rest, again, rest2, err)
		}
	})
}

// privateTree makes base/sys (a directory every agent may read, as /var/lib is)
// holding base/sys/workspaces (workspace.root) with two workspaces, each with a
// token, and a file beside the root; it returns sys, the root and the workspaces.
func privateTree(t *testing.T) (sys, root, ws1, ws2 string) {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	sys = filepath.Join(base, "sys")
	root = filepath.Join(sys, "sortie", "workspaces")
	ws1, ws2 = filepath.Join(root, "A-1"), filepath.Join(root, "A-2")
	for _, d := range []string{filepath.Join(ws1, ".sortie"), filepath.Join(ws2, ".sortie"), filepath.Join(sys, "dpkg")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for f, c := range map[string]string{
		filepath.Join(ws1, ".sortie", "mcp.json"): "token-of-A-1",
		filepath.Join(ws2, ".sortie", "mcp.json"): "token-of-A-2",
		filepath.Join(sys, "dpkg", "status"):      "readable",
		filepath.Join(sys, "sortie", "notes"):     "beside the root",
	} {
		if err := os.WriteFile(f, []byte(c), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return sys, root, ws1, ws2
}

// A private path is granted only by a rule at or beneath it: the directory that holds
// it is granted around it (everything beside it, recursively), while the run's own
// workspace beneath it keeps its write grant and a hidden path stays hidden even
// there.
func TestExpand_PrivateGrantedOnlyByItsOwnRules(t *testing.T) {
	sys, root, ws1, _ := privateTree(t)
	secret := filepath.Join(ws1, ".sortie", "secret")
	write, read, err := expand(Policy{
		Write:   []string{ws1},
		Read:    []string{sys, filepath.Join(root, "A-1", ".sortie")},
		Hide:    []string{secret},
		Private: []string{root, filepath.Join(sys, "missing-private")},
	})
	if err != nil {
		t.Fatal(err)
	}
	rel := func(gs []grant) []string {
		var out []string
		for _, g := range gs {
			r, _ := filepath.Rel(sys, g.path)
			if g.dir {
				r += "/"
			}
			out = append(out, r)
		}
		slices.Sort(out)
		return out
	}
	// The workspace holds a hidden path, so it too is granted piecewise.
	if got, want := rel(write), []string{"sortie/workspaces/A-1/.sortie/mcp.json"}; !reflect.DeepEqual(got, want) {
		t.Errorf("write grants = %q, want %q", got, want)
	}
	if got, want := rel(read), []string{"dpkg/", "sortie/notes", "sortie/workspaces/A-1/.sortie/mcp.json"}; !reflect.DeepEqual(got, want) {
		t.Errorf("read grants = %q, want %q (nothing of the root but the workspace's own rule)", got, want)
	}
	// Without the hidden file the workspace is one rule, and a root that is the
	// private path itself is granted (it is its own rule).
	write, read, err = expand(Policy{Write: []string{ws1}, Read: []string{root}, Private: []string{root}})
	if err != nil {
		t.Fatal(err)
	}
	if len(write) != 1 || write[0] != (grant{path: ws1, dir: true}) || len(read) != 1 || read[0] != (grant{path: root, dir: true}) {
		t.Errorf("own rules: write %+v, read %+v; want the workspace and the root whole", write, read)
	}
	// A write root is the operator's explicit grant: granted whole, private paths in
	// it or not, so that files can still be created in it.
	write, _, err = expand(Policy{Write: []string{sys}, Private: []string{root}})
	if err != nil {
		t.Fatal(err)
	}
	if len(write) != 1 || write[0] != (grant{path: sys, dir: true}) {
		t.Errorf("a write root holding a private path: %+v, want it whole", write)
	}
}

// Confined by a policy that reads sys (which holds workspace.root) and writes one
// workspace beneath it, an agent reads and writes its own workspace and reads what
// lies beside the root, but neither lists the root nor reads a sibling's token:
// through `sortie confine` and through RestrictThread with its cache, twice.
func TestConfined_PrivateRootHidesSiblings(t *testing.T) {
	requireLandlock(t)
	sys, root, ws1, ws2 := privateTree(t)
	p := Policy{
		Write:   append([]string{ws1}, SystemWrite...),
		Read:    append(slices.Clone(SystemRead), sys),
		Private: []string{root},
	}
	script := `
try() { if eval "$2" >/dev/null 2>&1; then echo "$1 ok"; else echo "$1 denied"; fi; }
try own-token 'cat ` + ws1 + `/.sortie/mcp.json'
try own-write 'echo x > ` + ws1 + `/new'
try beside 'cat ` + sys + `/dpkg/status && cat ` + sys + `/sortie/notes'
try list-root 'ls ` + root + `'
try sibling-token 'cat ` + ws2 + `/.sortie/mcp.json'
try sibling-list 'ls ` + ws2 + `'
`
	want := strings.Fields(`own-token ok own-write ok beside ok list-root denied sibling-token denied sibling-list denied`)
	if got := strings.Fields(confined(t, p, script)); !reflect.DeepEqual(got, want) {
		t.Errorf("sortie confine:\n%v\nwant\n%v", got, want)
	}
	if !ThreadConfinable() {
		return
	}
	for i := range 2 { // the second from the expansion cache
		if got := strings.Fields(threadRun(p, script)); !reflect.DeepEqual(got, want) {
			t.Errorf("RestrictThread %d:\n%v\nwant\n%v", i, got, want)
		}
	}
}
