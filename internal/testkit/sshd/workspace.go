package sshd

import (
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// HostileWorkspace makes a workspace, in a directory of its own, whose path a remote
// command line must quote right: quotes, command substitutions that would `touch
// PWNED`, operators, non-ASCII.
func HostileWorkspace(t testing.TB) string {
	t.Helper()
	ws := filepath.Join(t.TempDir(), "ws 'it''s' \"q\" $(touch PWNED) `touch PWNED`; & é")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	return ws
}

// CheckRanIn fails t unless the program's last run came through s, and the agent's
// shell tool ran in ws (the model had it run `pwd > where.txt`); and if a hostile string
// ran its `touch PWNED` below ws's directory or the program's.
func (a *Agent) CheckRanIn(t testing.TB, s *Server, ws string) {
	t.Helper()
	// sshd sets SSH_CONNECTION to "client-ip client-port server-ip server-port".
	if conn := a.Conn(); !strings.HasSuffix(conn, " 127.0.0.1 "+strconv.Itoa(s.Port)) {
		t.Errorf("the remote command's SSH_CONNECTION = %q, want it to end with the test sshd's 127.0.0.1 %d", conn, s.Port)
	}
	if where, err := os.ReadFile(filepath.Join(ws, "where.txt")); err != nil || strings.TrimSuffix(string(where), "\n") != ws {
		t.Errorf("remote pwd = %q (%v), want the workspace %q", where, err, ws)
	}
	for _, d := range []string{filepath.Dir(ws), a.Dir} {
		filepath.WalkDir(d, func(path string, e fs.DirEntry, err error) error {
			if err == nil && e.Name() == "PWNED" {
				t.Errorf("a hostile string ran a command: %s exists", path)
			}
			return nil
		})
	}
}
