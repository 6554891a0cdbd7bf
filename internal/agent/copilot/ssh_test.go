package copilot

// SSH mode against a fake ssh client first on PATH: it logs its argv and runs the remote
// command line with sh, as sshd would, so the quoting is checked end to end with the
// fake CLI as the "remote" program.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"sortie/internal/agent"
	"sortie/internal/agent/remote"
)

// fakeSSH puts an ssh on PATH that exits with code (after printing msg on stderr) or,
// when code is 0, runs its last argument with sh. It returns the file of its argv,
// appended to by every run, each run's arguments NUL-terminated and ended by \001.
func fakeSSH(t *testing.T, code int, msg string) string {
	t.Helper()
	dir := t.TempDir()
	argv := filepath.Join(dir, "argv")
	body := fmt.Sprintf("#!/bin/sh\nprintf '%%s\\0' \"$@\" >> %[1]s; printf '\\001\\0' >> %[1]s\n", shellQuote(argv))
	if code != 0 {
		body += fmt.Sprintf("echo %s >&2\nexit %d\n", shellQuote(msg), code)
	} else {
		body += "for last; do :; done\nexec sh -c \"$last\"\n"
	}
	writeFile(t, filepath.Join(dir, "ssh"), body)
	os.Chmod(filepath.Join(dir, "ssh"), 0o755)
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return argv
}

// sshArgvs returns the argument lists of every run of the fake ssh.
func sshArgvs(t *testing.T, path string) [][]string {
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

func TestSSH_TurnRunsRemotelyWithQuotedArguments(t *testing.T) {
	argvFile := fakeSSH(t, 0, "")
	f := newFakeCLI(t)
	os.Remove(filepath.Join(f.dir, "version")) // the canary would fail: SSH mode skips it
	f.turn(t, 1, 0, message, resultLine("remote-1", 0, 5))
	a := newFakeAdapter(t, f, map[string]any{"model": "gpt-4.1"})
	ws := filepath.Join(t.TempDir(), "work space 'quoted'")
	os.Mkdir(ws, 0o755)
	// No credential in the environment either: the preflight is skipped too.
	s, err := a.StartSession(context.Background(), agent.StartParams{Workspace: ws, Env: []string{"PATH=" + os.Getenv("PATH")},
		SSHHost: "deploy@build-1:2222", SSHStrictHostKeyChecking: "yes"})
	if err != nil {
		t.Fatal(err)
	}
	defer a.StopSession(context.Background(), s)
	prompt := "- fix it's \"bug\" $(touch PWNED) `touch PWNED` ; echo $HOME\nline two é"
	o := runTurn(t, a, s, 1, prompt)
	mustComplete(t, o)
	if s.ID != "remote-1" {
		t.Errorf("session id = %q, want the remote result's", s.ID)
	}

	argv := sshArgvs(t, argvFile)[0]
	wantOpts := []string{"-o", "StrictHostKeyChecking=yes", "-o", "BatchMode=yes", "-o", "ConnectTimeout=30",
		"-o", "ServerAliveInterval=15", "-o", "ServerAliveCountMax=3", "-p", "2222", "--", "deploy@build-1"}
	if len(argv) != len(wantOpts)+1 || !reflect.DeepEqual(argv[:len(wantOpts)], wantOpts) {
		t.Fatalf("ssh argv = %q, want %q and the remote command", argv, wantOpts)
	}
	line := argv[len(argv)-1]
	cli := f.argvs(t)[0]
	if want := remote.RemoteLine(ws, []string{f.path}, cli); !strings.HasSuffix(line, want) {
		t.Errorf("remote command = %q, want it to end with %q", line, want)
	}
	if v, _ := flagValue(cli, "--prompt"); v != prompt {
		t.Errorf("the remote CLI got prompt %q, want %q", v, prompt)
	}
	if v, _ := flagValue(cli, "--model"); v != "gpt-4.1" || slices.Contains(cli, "--usage-output-file") {
		t.Errorf("remote argv = %q: want --model and no local usage file", cli)
	}
	if _, err := os.Stat(filepath.Join(ws, "PWNED")); err == nil {
		t.Error("the prompt was run by the remote shell")
	}
}

func TestSSH_StrictHostKeyCheckingDefaultsToAcceptNew(t *testing.T) {
	argvFile := fakeSSH(t, 0, "")
	f := newFakeCLI(t)
	a := newFakeAdapter(t, f, nil)
	s := startFake(t, a, agent.StartParams{SSHHost: "build-2"})
	runTurn(t, a, s, 1, "p")
	if argv := sshArgvs(t, argvFile)[0]; argv[1] != "StrictHostKeyChecking=accept-new" || slices.Contains(argv, "-p") {
		t.Errorf("ssh argv = %q", argv)
	}
}

func TestSSH_ExitCodes(t *testing.T) {
	cases := []struct {
		name string
		code int
		msg  string
		kind agent.ErrorKind
		want string
	}{
		{"connection failure", 255, "ssh: connect to host build-3 port 22: Connection refused", agent.ErrPortExit, "ssh could not reach or log in to build-3"},
		{"remote CLI missing", 127, "sh: 1: copilot: not found", agent.ErrNotFound, "the CLI was not found"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fakeSSH(t, c.code, c.msg)
			a := newFakeAdapter(t, newFakeCLI(t), nil)
			s := startFake(t, a, agent.StartParams{SSHHost: "build-3"})
			o := runTurn(t, a, s, 1, "p")
			if o.res.ExitReason != agent.EventTurnFailed || agent.KindOf(o.err) != c.kind {
				t.Fatalf("turn = %s, %v; want turn_failed with %s", o.res.ExitReason, o.err, c.kind)
			}
			if !strings.Contains(o.err.Error(), c.want) || !strings.Contains(o.err.Error(), c.msg) {
				t.Errorf("error %q: want %q and ssh's stderr", o.err, c.want)
			}
		})
	}
}

func TestSSH_StartSessionErrors(t *testing.T) {
	a := newFakeAdapter(t, newFakeCLI(t), nil)
	_, err := a.StartSession(context.Background(), agent.StartParams{Workspace: t.TempDir(), SSHHost: "-oProxyCommand=evil"})
	if err == nil || !strings.Contains(err.Error(), "worker.ssh_hosts") {
		t.Errorf("host starting with '-': %v", err)
	}
	t.Setenv("PATH", t.TempDir())
	_, err = a.StartSession(context.Background(), agent.StartParams{Workspace: t.TempDir(), SSHHost: "build-4"})
	if agent.KindOf(err) != agent.ErrNotFound || !strings.Contains(err.Error(), "ssh client") {
		t.Errorf("no ssh on PATH: %v, want agent_not_found", err)
	}
}

func TestSSH_CancelledTurnStopsTheRemoteGroup(t *testing.T) {
	argvFile := fakeSSH(t, 0, "")
	f := newFakeCLI(t)
	f.turn(t, 1, 0, message)
	f.file(t, "block", 1, "")
	a := newFakeAdapter(t, f, nil)
	s := startFake(t, a, agent.StartParams{SSHHost: "build-5"})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var res turnOutcome
	res.res, res.err = a.RunTurn(ctx, s, agent.TurnParams{Prompt: "p", OnEvent: func(e agent.Event) {
		if e.Type == agent.EventNotification {
			cancel()
		}
	}})
	if agent.KindOf(res.err) != agent.ErrTurnCancelled {
		t.Fatalf("turn = %v, want turn_cancelled", res.err)
	}
	runs := sshArgvs(t, argvFile)
	if len(runs) != 2 {
		t.Fatalf("ssh ran %d times, want the turn and the remote kill", len(runs))
	}
	// The fake's "remote" shell is the local ssh process, so its group is the turn's.
	kill := runs[1][len(runs[1])-1]
	if want := fmt.Sprintf("kill -TERM -- -%d ", res.res.PID); !strings.HasPrefix(kill, want) {
		t.Errorf("remote kill command = %q, want it to start %q", kill, want)
	}
}
