package daemon

import (
	"strings"
	"testing"

	"sortie/internal/runas"
)

// TestSocketWarning: a daemon inside tmux, screen, an SSH agent's or a desktop session
// whose confined agents get no mount namespace (not root) is told that the sockets are
// within their reach and how to fix it; nothing is said when they are not.
func TestSocketWarning(t *testing.T) {
	session := []string{"PATH=/usr/bin", "TMUX=/tmp/tmux-1000/default,1,0", "SSH_AUTH_SOCK=/tmp/ssh-x/agent.1"}
	msg := socketWarning(session, true, nil, func() bool { return false })
	for _, want := range []string{"SSH_AUTH_SOCK, TMUX set", "outside Landlock's reach", "agent.run_as"} {
		if !strings.Contains(msg, want) {
			t.Errorf("warning %q lacks %q", msg, want)
		}
	}
	for name, got := range map[string]string{
		"no session":        socketWarning([]string{"PATH=/usr/bin", "TMUX="}, true, nil, func() bool { return false }),
		"unconfined":        socketWarning(session, false, nil, func() bool { t.Error("the namespace probe ran for unconfined agents"); return false }),
		"run_as":            socketWarning(session, true, &runas.User{}, func() bool { t.Error("the namespace probe ran with run_as"); return false }),
		"a mount namespace": socketWarning(session, true, nil, func() bool { return true }),
	} {
		if got != "" {
			t.Errorf("%s: warning %q, want none", name, got)
		}
	}
}
