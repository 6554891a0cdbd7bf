package agenttest

// Drift checks: behaviour every adapter must share, whatever code runs its CLI. The adapters were written as copies of one another and drifted apart; these
// checks hold each of them to the same behaviour through agent.Adapter (and
// agent.Versioner) alone, against a fake CLI (a shell script the check writes), so
// that they survive a rewrite of the adapters' internals.

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"sortie/internal/agent"
	"sortie/internal/agent/proc/proctest"
)

// AdapterFor builds the adapter under test running the CLI at command, a shell script
// a drift check wrote (agent.New with Kind, Command and the adapter's options). It
// fails t when the adapter cannot be built.
type AdapterFor func(t *testing.T, command string) agent.Adapter

// driftPatience bounds every wait of a drift check for something already under way (a
// turn, a Version call). It is a bound against a hang, never an assertion on speed.
const driftPatience = 60 * time.Second

// driftVersion is the version line the drift checks' fake CLIs print.
const driftVersion = "1.2.3 (Drift CLI)"

// escapedStderr is what StderrWithoutEscapes's CLI writes on stderr before failing: an
// error in red (CSI), a window title (OSC ended by BEL) and a hyperlink (OSC 8 ended by
// ST), as CLIs built on terminal libraries write even when stderr is not a terminal.
const escapedStderr = "\x1b[31mError: boom\x1b[0m\n" +
	"\x1b]0;drift title\x07" +
	"\x1b]8;;https://example.com/docs\x1b\\see the docs\x1b]8;;\x1b\\\n"

// VersionDoesNotWaitForChildren checks that Version returns the CLI's version once the
// CLI has exited, without waiting for a child it left behind (an npm loader's native
// binary, a daemon it spawned) that still holds its standard output open: the daemon's
// preflight must neither hang on a process that is not the CLI nor call a CLI that
// exited 0 after printing its version broken. The fake CLI prints its
// version, starts a background sleep that keeps the pipe, and exits; the sleep is
// killed when the test ends. The adapter must implement agent.Versioner.
func VersionDoesNotWaitForChildren(t *testing.T, build AdapterFor) {
	t.Helper()
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "child.pid")
	cli := writeScript(t, dir, "cli", `#!/bin/sh
echo '`+driftVersion+`'
sleep 300 &
echo $! > "$(dirname "$0")/child.pid"
exit 0
`)
	killChild := func() {
		if pid := readPID(pidFile); pid > 1 {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	t.Cleanup(killChild)

	v, ok := build(t, cli).(agent.Versioner)
	if !ok {
		t.Fatal("the adapter does not implement agent.Versioner")
	}
	type answer struct {
		version string
		err     error
	}
	done := make(chan answer, 1)
	go func() {
		version, err := v.Version(context.Background())
		done <- answer{version, err}
	}()
	var got answer
	select {
	case got = <-done:
	case <-time.After(driftPatience):
		killChild() // lets Version's read of the pipe end, so that its goroutine does too
		<-done
		t.Fatalf("Version did not return within %s of a CLI that printed %q and exited, while a child it left "+
			"held its stdout open: it waits for the CLI's children to close the pipe (set exec.Cmd.WaitDelay)",
			driftPatience, driftVersion)
	}
	pid := readPID(pidFile)
	if pid <= 1 || !proctest.Alive(pid) {
		t.Fatalf("the CLI's background child (pid %d) was gone before Version returned; the check proves nothing", pid)
	}
	if got.err != nil || got.version != driftVersion {
		hint := ""
		if errors.Is(got.err, exec.ErrWaitDelay) {
			hint = " (exec.ErrWaitDelay after the CLI exited 0 is its child's doing, not a failure of the CLI)"
		}
		t.Errorf("Version = %q, %v while the CLI's child held its stdout; want %q, nil%s", got.version, got.err, driftVersion, hint)
	}
}

// SSHUnreachableHint checks that a turn over SSH that ssh could not even start (ssh's
// exit status 255: host unreachable, connection refused, login refused) fails with an
// error saying so, "ssh could not reach or log in to <host>", rather than leaving the
// operator to decode a bare exit status 255. An ssh stand-in that refuses the
// connection is put first on PATH (with t.Setenv, so the test must not be parallel);
// env is added to the session's environment.
func SSHUnreachableHint(t *testing.T, build AdapterFor, env []string) {
	t.Helper()
	const host = "deploy@drift-unreachable"
	bin := t.TempDir()
	writeScript(t, bin, "ssh", `#!/bin/sh
echo 'ssh: connect to host drift-unreachable port 22: Connection refused' >&2
exit 255
`)
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	// The CLI runs on the host, never here: a local run fails loudly.
	cli := writeScript(t, t.TempDir(), "cli", "#!/bin/sh\necho 'drift: the CLI ran locally in SSH mode' >&2\nexit 3\n")
	a := build(t, cli)
	ws := t.TempDir()
	s := startDriftSession(t, a, agent.StartParams{Workspace: ws, SSHHost: host, Env: driftEnv(t, env)})
	err := driftTurn(t, a, s)
	want := "ssh could not reach or log in to " + host
	switch {
	case err == nil:
		t.Fatalf("RunTurn over an ssh that exited 255 succeeded; want an error saying %q", want)
	case !strings.Contains(err.Error(), want):
		t.Errorf("RunTurn over an ssh that exited 255: error %q does not say %q", err, want)
	}
}

// StderrWithoutEscapes checks that a failed turn's error, which quotes the end of the
// CLI's stderr, carries that text without terminal escape sequences: colours (CSI) and
// OSC sequences (titles, hyperlinks) would otherwise land raw in logs, the dashboard
// and the tracker comment. The fake CLI answers --version and --help (for adapters that
// run canaries at session start), and otherwise writes coloured text on stderr and
// exits 1. env is added to the session's environment (a credential a preflight asks
// for, say).
func StderrWithoutEscapes(t *testing.T, build AdapterFor, env []string) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "stderr"), []byte(escapedStderr), 0o644); err != nil {
		t.Fatal(err)
	}
	cli := writeScript(t, dir, "cli", `#!/bin/sh
case "$1" in
--version) echo '`+driftVersion+`'; exit 0 ;;
--help) echo 'Usage: drift [options]'; exit 0 ;;
esac
cat "$(dirname "$0")/stderr" >&2
exit 1
`)
	a := build(t, cli)
	s := startDriftSession(t, a, agent.StartParams{Workspace: t.TempDir(), Env: driftEnv(t, env)})
	err := driftTurn(t, a, s)
	switch {
	case err == nil:
		t.Fatal("RunTurn of a CLI that exited 1 succeeded; want an error quoting its stderr")
	case !strings.Contains(err.Error(), "Error: boom"):
		t.Fatalf("RunTurn's error %q does not quote the CLI's stderr (\"Error: boom\"); the check proves nothing", err)
	case strings.ContainsRune(err.Error(), 0x1b):
		t.Errorf("RunTurn's error carries terminal escape sequences from the CLI's stderr: %q", err)
	}
}

// PlantedLoginNeverCopied checks, through the adapter alone, what RefusesPlantedLogin
// checks of an adapter's copying function: a login the agent's user planted in its home
// (a symbolic or hard link to a file the agent must not read, or another user's file)
// never lands anywhere the session's CLI can read. login is where the CLI keeps its
// login in home; build must make the adapter copy it (claude-code's use_login, say).
// The session starts with HOME set to home and env added; when StartSession refuses
// it, the error must name the login; when it starts, one turn of a fake CLI runs. Then
// no file below the session's home and workspace but the planted one may hold the
// planted content.
//
// A control comes first: an ordinary login, a regular file of the agent's user, must be
// copied below the session's home or workspace, so that the walk that finds no planted
// copy is known to look where a copy lands.
func PlantedLoginNeverCopied(t *testing.T, build AdapterFor, env []string, login func(home string) string) {
	t.Helper()
	cases := map[string]func(t *testing.T, secret, path string){"control: an ordinary login": func(t *testing.T, secret, path string) {
		b, err := os.ReadFile(secret)
		if err == nil {
			err = os.WriteFile(path, b, 0o600)
		}
		if err != nil {
			t.Fatal(err)
		}
	}}
	for name, plant := range plantings {
		cases[name] = plant
	}
	for name, plant := range cases {
		control := strings.HasPrefix(name, "control")
		t.Run(name, func(t *testing.T) {
			secret := filepath.Join(t.TempDir(), "shadow")
			if err := os.WriteFile(secret, []byte(plantedSecret), 0o600); err != nil {
				t.Fatal(err)
			}
			root := t.TempDir()
			home, ws := filepath.Join(root, "home"), filepath.Join(root, "workspace")
			for _, d := range []string{home, ws} {
				if err := os.Mkdir(d, 0o700); err != nil {
					t.Fatal(err)
				}
			}
			path := login(home)
			if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
				t.Fatal(err)
			}
			plant(t, secret, path)

			cli := writeScript(t, t.TempDir(), "cli", "#!/bin/sh\necho 'drift: no model here' >&2\nexit 1\n")
			a := build(t, cli)
			p := agent.StartParams{Workspace: ws, Env: append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + home}, env...)}
			ctx, cancel := context.WithTimeout(context.Background(), driftPatience)
			defer cancel()
			s, err := a.StartSession(ctx, p)
			if err != nil && control {
				t.Fatalf("StartSession refused an ordinary login: %v", err)
			}
			if err != nil && !strings.Contains(err.Error(), path) {
				t.Errorf("StartSession refused the session with an error that does not name the planted login %s: %v", path, err)
			}
			if err == nil {
				// The login might be copied before each turn rather than at the start.
				driftTurn(t, a, s)
				stopDriftSession(t, a, s)
			}
			copied := false
			err = filepath.WalkDir(root, func(f string, d fs.DirEntry, err error) error {
				if err != nil || d.IsDir() || f == path {
					return err
				}
				b, err := os.ReadFile(f)
				if err != nil {
					return err
				}
				if strings.Contains(string(b), "SECRET") {
					copied = true
					if !control {
						t.Errorf("%s holds the content of the login planted at %s (%s)", f, path, name)
					}
				}
				return nil
			})
			if err != nil {
				t.Errorf("reading what the session left: %v", err)
			}
			if control && !copied {
				t.Errorf("the ordinary login at %s was copied nowhere below %s: the check of the planted ones looks in the wrong place", path, root)
			}
		})
	}
}

// driftEnv is the base environment of a drift check's session: this process's PATH
// and a HOME of the test's own, so that nothing lands in the real one; extra follows.
func driftEnv(t *testing.T, extra []string) []string {
	t.Helper()
	return append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}, extra...)
}

// startDriftSession starts a session, stopped when the test ends.
func startDriftSession(t *testing.T, a agent.Adapter, p agent.StartParams) *agent.Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), driftPatience)
	defer cancel()
	s, err := a.StartSession(ctx, p)
	if err != nil {
		t.Fatalf("StartSession: %v", err)
	}
	t.Cleanup(func() { stopDriftSession(t, a, s) })
	return s
}

func stopDriftSession(t *testing.T, a agent.Adapter, s *agent.Session) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), driftPatience)
	defer cancel()
	if err := a.StopSession(ctx, s); err != nil {
		t.Errorf("StopSession: %v", err)
	}
}

// driftTurn runs one turn, bounded by driftPatience, and returns its error.
func driftTurn(t *testing.T, a agent.Adapter, s *agent.Session) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), driftPatience)
	defer cancel()
	_, err := a.RunTurn(ctx, s, agent.TurnParams{Prompt: "drift check", TurnNumber: 1, OnEvent: func(agent.Event) {}})
	if ctx.Err() == context.DeadlineExceeded {
		t.Fatalf("RunTurn did not end within %s of a fake CLI that exits at once", driftPatience)
	}
	return err
}

// writeScript writes an executable script named name in dir and returns its path.
func writeScript(t *testing.T, dir, name, body string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// readPID reads the process id a fake CLI wrote to path, 0 when there is none.
func readPID(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}
