package sshd

import (
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"

	"sortie/internal/agent/remote"
)

func TestStart_TheClientOnPathRunsTheAgentOverSSH(t *testing.T) {
	s := Start(t)
	a := NewAgent(t, "sh", []string{"GREETING=hi 'there' $HOME"})
	args := []string{"-c", `printf '%s' "$GREETING"`}
	line := remote.Quote(a.Command)
	for _, arg := range args {
		line += " " + remote.Quote(arg)
	}
	// ssh is the wrapper ClientOnPath put first on PATH.
	out, err := exec.Command("ssh", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=accept-new",
		"-p", strconv.Itoa(s.Port), "127.0.0.1", "--", line).CombinedOutput()
	if err != nil {
		t.Fatalf("ssh %s: %v\n%s", s.Host(), err, out)
	}
	if string(out) != "hi 'there' $HOME" {
		t.Errorf("remote output = %q, want the exported value as written", out)
	}
	if got := a.Argv(t); !slices.Equal(got, args) {
		t.Errorf("remote argv = %q, want %q", got, args)
	}
	if conn := a.Conn(); !strings.HasSuffix(conn, " 127.0.0.1 "+strconv.Itoa(s.Port)) {
		t.Errorf("SSH_CONNECTION = %q, want it to end with the server's 127.0.0.1 %d", conn, s.Port)
	}
}
