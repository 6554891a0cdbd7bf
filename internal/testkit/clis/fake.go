package clis

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"sortie/internal/agent/remote"
)

// Fake is a stand-in agent CLI: a shell script that plays what a test scripted for each
// of its runs, for the outcomes a real CLI cannot be made to produce on demand (an exit
// status, a line over the limit, a kill, a CLI that ignores SIGTERM). Its files, in Dir,
// script it:
//
//   - version: what `--version` prints; without it, `--version` prints version.stderr
//     on stderr and exits 127, as a loader whose runtime is missing does.
//   - help: what `--help` prints.
//   - each: a shell snippet every run (not --version or --help) sources first, with the
//     run's arguments in "$@" and its number in $n.
//   - out.N, stderr.N, code.N: run N's standard output, standard error and exit status
//     (0 without the file); runs count from 1.
//   - then.N: a shell snippet run N sources after writing its output, before it exits:
//     `exec sleep 600` to block until stopped, `kill -KILL $$` to die by a signal.
//
// Every run records its arguments (Argvs) and standard input (Stdin).
type Fake struct {
	Path string // the script, to name as agent.command
	Dir  string // its files
}

const fakeScript = `#!/bin/sh
dir=%s
case "$1" in
--version) [ -f "$dir/version" ] && { cat "$dir/version"; exit 0; }; cat "$dir/version.stderr" >&2 2>/dev/null; exit 127;;
--help) cat "$dir/help" 2>/dev/null; exit 0;;
esac
n=$(cat "$dir/n" 2>/dev/null || echo 0); n=$((n+1)); echo $n > "$dir/n"
printf '%%s\0' "$@" >> "$dir/argv"; printf '\001\0' >> "$dir/argv"
cat > "$dir/stdin.$n"
[ -f "$dir/each" ] && . "$dir/each"
[ -f "$dir/out.$n" ] && cat "$dir/out.$n"
[ -f "$dir/stderr.$n" ] && cat "$dir/stderr.$n" >&2
[ -f "$dir/then.$n" ] && . "$dir/then.$n"
exit $(cat "$dir/code.$n" 2>/dev/null || echo 0)
`

// NewFake writes a fake CLI named name whose `--version` prints "1.0.0 (Fake CLI)".
func NewFake(t testing.TB, name string) *Fake {
	t.Helper()
	f := &Fake{Dir: t.TempDir()}
	f.Path = filepath.Join(f.Dir, name)
	f.Set(t, name, fmt.Sprintf(fakeScript, remote.Quote(f.Dir)))
	if err := os.Chmod(f.Path, 0o755); err != nil {
		t.Fatal(err)
	}
	f.Set(t, "version", "1.0.0 (Fake CLI)\n")
	return f
}

// Run scripts run n: the lines it prints on standard output and its exit status.
func (f *Fake) Run(t testing.TB, n, code int, lines ...string) {
	t.Helper()
	out := ""
	if len(lines) > 0 {
		out = strings.Join(lines, "\n") + "\n"
	}
	f.Set(t, "out."+strconv.Itoa(n), out)
	f.Set(t, "code."+strconv.Itoa(n), strconv.Itoa(code))
}

// Set writes the fake's file name (see Fake) with body.
func (f *Fake) Set(t testing.TB, name, body string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(f.Dir, name), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Remove removes the fake's file name, e.g. "version" for a CLI that cannot run.
func (f *Fake) Remove(t testing.TB, name string) {
	t.Helper()
	if err := os.Remove(filepath.Join(f.Dir, name)); err != nil {
		t.Fatal(err)
	}
}

// Argvs are the arguments of every run so far, in order.
func (f *Fake) Argvs(t testing.TB) [][]string {
	t.Helper()
	return readArgvs(t, filepath.Join(f.Dir, "argv"))
}

// Stdin is what run n read on its standard input.
func (f *Fake) Stdin(t testing.TB, n int) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(f.Dir, "stdin."+strconv.Itoa(n)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// FakeSSH puts an ssh client first on PATH that records its arguments and then either
// exits with code after printing stderr on its standard error or, when code is 0, runs
// its last argument (the remote command line) with sh, as sshd would, on this machine.
// It changes PATH, so the test must not be parallel. It returns the record, read with
// ReadArgvs.
func FakeSSH(t testing.TB, code int, stderr string) (argvFile string) {
	t.Helper()
	dir := t.TempDir()
	argvFile = filepath.Join(dir, "argv")
	body := fmt.Sprintf("#!/bin/sh\nprintf '%%s\\0' \"$@\" >> %[1]s; printf '\\001\\0' >> %[1]s\n", remote.Quote(argvFile))
	if code != 0 {
		body += fmt.Sprintf("echo %s >&2\nexit %d\n", remote.Quote(stderr), code)
	} else {
		body += "for last; do :; done\nexec sh -c \"$last\"\n"
	}
	if err := os.WriteFile(filepath.Join(dir, "ssh"), []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return argvFile
}

// ReadArgvs reads a record of argument lists as Fake and FakeSSH write it: each
// argument ended by NUL, each list by "\001\0".
func ReadArgvs(t testing.TB, path string) [][]string {
	t.Helper()
	return readArgvs(t, path)
}

func readArgvs(t testing.TB, path string) [][]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]string
	var cur []string
	for _, a := range strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00") {
		if a == "\x01" {
			out = append(out, cur)
			cur = nil
			continue
		}
		cur = append(cur, a)
	}
	return out
}

// FlagValue is the value of flag name in argv, given as "name value" or "name=value".
func FlagValue(argv []string, name string) (string, bool) {
	for i, a := range argv {
		if a == name && i+1 < len(argv) {
			return argv[i+1], true
		}
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v, true
		}
	}
	return "", false
}

// FlagValues are every value of flag name in argv, given as "name value".
func FlagValues(argv []string, name string) []string {
	var out []string
	for i, a := range argv {
		if a == name && i+1 < len(argv) {
			out = append(out, argv[i+1])
		}
	}
	return out
}

// WrapCLI writes a wrapper around the agent CLI at cli that records the arguments of
// each of its runs but `--version` and `--help` (read with ReadArgvs from argvFile),
// then execs the CLI: a contract test names the wrapper as agent.command.
func WrapCLI(t testing.TB, cli string) (wrapper, argvFile string) {
	t.Helper()
	dir := t.TempDir()
	argvFile = filepath.Join(dir, "argv")
	wrapper = filepath.Join(dir, filepath.Base(cli)+"-wrapper")
	body := fmt.Sprintf("#!/bin/sh\n"+
		"case \"$1\" in --version|--help) ;; *) printf '%%s\\0' \"$@\" >> %[1]s; printf '\\001\\0' >> %[1]s;; esac\n"+
		"exec %[2]s \"$@\"\n", remote.Quote(argvFile), remote.Quote(cli))
	if err := os.WriteFile(wrapper, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return wrapper, argvFile
}
