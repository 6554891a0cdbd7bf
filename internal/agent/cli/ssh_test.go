package cli

// The runner over SSH: against a fake ssh client that runs the remote command line with
// sh on this machine (clis.FakeSSH), and end to end against a real sshd on 127.0.0.1
// (internal/testkit/sshd). What each CLI's argv becomes on the host is its adapter's.

import (
	"context"
	"crypto/rand"
	"fmt"
	"strings"
	"testing"
	"time"

	"sortie/internal/agent"
	"sortie/internal/agent/proc/proctest"
	"sortie/internal/agent/remote"
	"sortie/internal/testkit/clis"
	"sortie/internal/testkit/sshd"
)

// TestRunTurn_SSHExitMapping: ssh's 255 says the host could not be reached, the remote
// shell's 127 that the CLI is missing there, and the remote shell's line naming its
// process group never reaches an error.
func TestRunTurn_SSHExitMapping(t *testing.T) {
	cases := []struct {
		name   string
		code   int // the fake ssh's, 0: it runs the remote line
		stderr string
		kind   agent.ErrorKind
		msg    string
	}{
		{"unreachable", 255, "ssh: connect to host build-3 port 22: Connection refused", agent.ErrPortExit,
			"ssh to build-3 (pid %d): exit status 255; ssh could not reach or log in to build-3; stderr: ssh: connect to host build-3 port 22: Connection refused"},
		{"CLI missing on the host", 127, "sh: 1: fake: not found", agent.ErrNotFound,
			"ssh to build-3 (pid %d): exit status 127; the CLI was not found (check agent.command and PATH, on the SSH host in SSH mode); stderr: sh: 1: fake: not found"},
		{"CLI failed on the host", 0, "", agent.ErrPortExit, "ssh to build-3 (pid %d): exit status 3; stderr: boom"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			clis.FakeSSH(t, c.code, c.stderr)
			f, r := fake(t, &testDialect{})
			f.Run(t, 1, 3, "working")
			f.Set(t, "stderr.1", "boom\n")
			s := start(t, r, agent.StartParams{SSHHost: "build-3"})
			o := runTurn(t, context.Background(), r, s, 1)
			wantTurn(t, o, agent.EventTurnFailed, c.kind, fmt.Sprintf(c.msg, o.Result.PID))
			if strings.Contains(o.Err.Error(), remote.PGIDMarker) {
				t.Errorf("error %q carries the remote shell's process group line", o.Err)
			}
		})
	}
}

// A cancelled turn over SSH ends the remote process group the remote shell announced:
// killing the local ssh does not reach it.
func TestRunTurn_SSHCancelKillsTheRemoteGroup(t *testing.T) {
	argvFile := clis.FakeSSH(t, 0, "")
	f, r := fake(t, &testDialect{}, []string{"working"})
	f.Set(t, "then.1", "exec sleep 600")
	s := start(t, r, agent.StartParams{SSHHost: "build-5"})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	o := runTurn(t, ctx, r, s, 1, onFirst(agent.EventNotification, cancel))
	wantTurn(t, o, agent.EventTurnCancelled, agent.ErrTurnCancelled, "ssh to build-5")
	runs := clis.ReadArgvs(t, argvFile)
	if len(runs) != 2 {
		t.Fatalf("ssh ran %d times, want the turn and the remote kill", len(runs))
	}
	// The fake's "remote" shell is the local ssh process, so its group is the turn's.
	kill := runs[1][len(runs[1])-1]
	if want := fmt.Sprintf("kill -TERM -- -%d ", o.Result.PID); !strings.HasPrefix(kill, want) {
		t.Errorf("remote kill command = %q, want it to start %q", kill, want)
	}
}

// End to end through a real sshd: cancelling a turn stops the CLI on the host and what
// it started there, not only the local ssh.
func TestRunTurn_SSHCancelStopsTheRemoteAgent(t *testing.T) {
	fx := sshd.Start(t)
	f := clis.NewFake(t, "fake")
	f.Run(t, 1, 0, "working")
	f.Set(t, "then.1", "sleep 600 & exec sleep 600")
	marker := "SORTIE_CLI_TEST_REMOTE=" + rand.Text() // in the environment of the remote CLI only
	r := newRunner(t, sshd.NewAgent(t, f.Path, []string{marker}).Command, &testDialect{})
	s := start(t, r, agent.StartParams{SSHHost: fx.Host()})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var running []int
	o := runTurn(t, ctx, r, s, 1, onFirst(agent.EventNotification, func() {
		running = proctest.WithEnv(t, marker)
		cancel()
	}))
	wantTurn(t, o, agent.EventTurnCancelled, agent.ErrTurnCancelled, "turn cancelled")
	if len(running) == 0 {
		t.Fatal("no remote CLI process found while the turn ran; the check below would prove nothing")
	}
	// RunTurn returned once the remote group was gone; what it forked last may still be
	// on its way out.
	for _, pid := range proctest.WithEnv(t, marker) {
		proctest.WaitExited(t, pid, time.Minute)
	}
	if left := proctest.WithEnv(t, marker); len(left) > 0 {
		t.Errorf("remote processes still running after the cancelled turn returned: %v", left)
	}
}
