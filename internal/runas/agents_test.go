package runas

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestForAgents_NoUserIsTheDaemonsOwn(t *testing.T) {
	shared := false
	u, err := ForAgents("", []Need{{Path: "/nonexistent", Access: Read, What: "x", Share: func(int) error { shared = true; return nil }}},
		[]string{"/nonexistent"}, slog.New(slog.DiscardHandler))
	if u != nil || err != nil || shared {
		t.Fatalf("ForAgents(\"\") = %v, %v (shared %v), want nil, nil and nothing shared", u, err, shared)
	}
}

func TestForAgents_RefusedWithoutRoot(t *testing.T) {
	shared := false
	_, err := forAgents(1000, "nobody", []Need{{Path: "/", Access: Read, What: "x", Share: func(int) error { shared = true; return nil }}},
		nil, slog.New(slog.DiscardHandler))
	want := `agent.run_as is "nobody", but the daemon runs as uid 1000 and only root can start processes as another user: ` +
		"run the daemon as root, or remove agent.run_as and run the daemon itself as an unprivileged user"
	if err == nil || err.Error() != want || shared {
		t.Fatalf("a daemon as uid 1000: %v (shared %v), want %q", err, shared, want)
	}
}

// TestForAgents_SharesChecksReachAndHidesPrivateFiles: as root, the user gets what
// each Need shares before anything is checked, must reach every Need, and loses read
// access to the daemon's private files, or is refused when it keeps it.
func TestForAgents_SharesChecksReachAndHidesPrivateFiles(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("skipped: agent.run_as needs root")
	}
	nobody, err := Lookup("nobody")
	if err != nil {
		t.Skipf("skipped: this machine has no user nobody: %v", err)
	}
	dir, err := os.MkdirTemp("", "runas-agents-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	file := func(name string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("x"), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	exe, wf, sock := file("sortie", 0o755), file("WORKFLOW.md", 0o644), file("agent.sock", 0o600)
	db := file("sortie.db", 0o644)
	var log bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&log, nil))
	var sharedWith []int
	share := func(gid int) error {
		sharedWith = append(sharedWith, gid)
		return os.Chmod(sock, 0o666)
	}
	reach := []Need{{Path: exe, Access: Read | Exec, What: "the sortie executable"}, {Path: wf, Access: Read, What: "WORKFLOW.md"},
		{Path: sock, Access: Write, What: "the agent socket", Share: share}}

	u, err := ForAgents("nobody", reach, []string{db, filepath.Join(dir, "missing")}, logger)
	if err != nil || u == nil || u.UID != nobody.UID {
		t.Fatalf("ForAgents = %v, %v", u, err)
	}
	if len(sharedWith) != 1 || sharedWith[0] != int(nobody.GID) {
		t.Errorf("shared with %v, want nobody's group %d", sharedWith, nobody.GID)
	}
	if fi, err := os.Stat(db); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the private file: %v %v, want mode 0600", fi.Mode().Perm(), err)
	}
	for _, line := range []string{"made a private file of the daemon unreadable by group and others, for agent.run_as",
		"local agents and hooks run as another user"} {
		if !strings.Contains(log.String(), line) {
			t.Errorf("the log lacks %q:\n%s", line, log.String())
		}
	}

	// A Need the user cannot reach, a share that fails, a private file it owns.
	if err := os.Chmod(wf, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ForAgents("nobody", reach, nil, logger); err == nil || !strings.HasPrefix(err.Error(), "agent.run_as: WORKFLOW.md: nobody(") ||
		!strings.Contains(err.Error(), "cannot read") {
		t.Errorf("WORKFLOW.md unreadable: %v", err)
	}
	failing := []Need{{Path: sock, Access: Write, What: "the agent socket", Share: func(int) error { return errors.New("chown: no") }}}
	if _, err := ForAgents("nobody", failing, nil, logger); err == nil || err.Error() != "agent.run_as: chown: no" {
		t.Errorf("a failed share: %v", err)
	}
	if err := os.Chown(db, int(nobody.UID), int(nobody.GID)); err != nil {
		t.Fatal(err)
	}
	want := "agent.run_as: " + nobody.String() + " can read " + db + ", a private file of the daemon: give it to the daemon's user (chown root " + db + ")"
	if _, err := ForAgents("nobody", reach[:1], []string{db}, logger); err == nil || err.Error() != want {
		t.Errorf("a private file the user owns: %v, want %q", err, want)
	}
}
