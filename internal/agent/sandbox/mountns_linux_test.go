package sandbox

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// connectScript connects to the Unix socket at $1 and says whether it was answered.
const connectScript = `perl -MIO::Socket::UNIX -e '$s = IO::Socket::UNIX->new(Peer => $ARGV[0]) or do { print "refused: $!\n"; exit }; print "answer: ", scalar <$s>' `

// listen serves "hello\n" to every connection to a Unix socket at path.
func listen(t *testing.T, path string) {
	t.Helper()
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("hello\n"))
			c.Close()
		}
	}()
}

// TestPrivateTmp_SocketsOutsideThePolicyAreOutOfReach: a confined tree with PrivateTmp
// cannot connect to a socket beneath /tmp that its policy does not name (tmux's, an
// SSH agent's), whether confined on a thread or through `sortie confine`, and still
// reaches the sockets in its own paths; the daemon's /tmp is untouched. Without
// PrivateTmp, Landlock alone lets it connect (the door this closes).
func TestPrivateTmp_SocketsOutsideThePolicyAreOutOfReach(t *testing.T) {
	requireLandlock(t)
	root, userNS := MountNamespaceAvailable(), UserNamespaceAvailable()
	if !root && !userNS {
		t.Skip("skipped: a mount namespace needs root or unprivileged user namespaces")
	}
	if _, err := exec.LookPath("perl"); err != nil {
		t.Skip("skipped: needs perl to connect")
	}
	tmp, err := os.MkdirTemp("/tmp", "pt-") // beneath /tmp whatever TMPDIR says
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	outside := filepath.Join(tmp, "tmux-0")
	ws := filepath.Join(tmp, "run", "ws")
	hidden := filepath.Join(tmp, "state")
	for _, d := range []string{outside, ws, hidden} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	// The policy names the workspace through a link beneath /tmp, as a CLI installed
	// through one is named: the link leads there in the agent's /tmp too.
	linked := filepath.Join(tmp, "link")
	if err := os.Symlink(filepath.Join(tmp, "run"), linked); err != nil {
		t.Fatal(err)
	}
	listen(t, filepath.Join(outside, "default"))
	listen(t, filepath.Join(ws, "own.sock"))
	listen(t, filepath.Join(hidden, "agent.sock")) // the agent socket: hidden, still reachable
	script := connectScript + filepath.Join(outside, "default") + "; " + connectScript + filepath.Join(linked, "ws", "own.sock") +
		"; " + connectScript + filepath.Join(hidden, "agent.sock")
	p := Policy{Write: []string{filepath.Join(linked, "ws")}, Read: slices.Clone(SystemRead), Hide: []string{hidden}, PrivateTmp: true}

	check := func(how, out string) {
		t.Helper()
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) != 3 || !strings.HasPrefix(lines[0], "refused: No such file") || lines[1] != "answer: hello" ||
			lines[2] != "answer: hello" {
			t.Errorf("%s: want the outside socket refused (no such file), the workspace's and the agent socket answered; got:\n%s", how, out)
		}
	}
	if root {
		check("RestrictThread", threadRun(p, script))
		check("sortie confine", confined(t, p, script))
	}
	if !root {
		// A daemon that is not root: `sortie confine` runs itself again in a user
		// namespace of its own, which makes the mounts there (ConfineInUserNS).
		check("sortie confine in a user namespace", confined(t, p, script))
	}
	if _, err := os.Stat(filepath.Join(outside, "default")); err != nil {
		t.Errorf("the daemon's own /tmp changed: %v", err)
	}
	p.PrivateTmp = false
	if out := threadRun(p, connectScript+filepath.Join(outside, "default")); !strings.Contains(out, "answer: hello") {
		t.Errorf("without PrivateTmp the outside socket should answer (Landlock does not govern connect), got:\n%s", out)
	}
}

// TestPrivateTmp_ReadingRunDoesNotKeepRunUser: every policy reads /run (SystemRead), which
// holds /run/user; that read grant must not leave /run/user as the machine has it, or the
// session bus at /run/user/<uid>/bus (systemd-run --user runs anything, unconfined)
// stays in reach by name. Root only: it makes a directory beneath /run/user.
func TestPrivateTmp_ReadingRunDoesNotKeepRunUser(t *testing.T) {
	requireLandlock(t)
	if !MountNamespaceAvailable() {
		t.Skip("skipped: needs root, to make a canary beneath /run/user")
	}
	if _, err := exec.LookPath("perl"); err != nil {
		t.Skip("skipped: needs perl to connect")
	}
	madeRunUser := false
	if _, err := os.Stat("/run/user"); os.IsNotExist(err) {
		if err := os.Mkdir("/run/user", 0o755); err != nil {
			t.Skipf("skipped: cannot make /run/user: %v", err)
		}
		madeRunUser = true
	}
	dir, err := os.MkdirTemp("/run/user", "canary-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		os.RemoveAll(dir)
		if madeRunUser {
			os.Remove("/run/user")
		}
	})
	bus := filepath.Join(dir, "bus")
	listen(t, bus)
	ws := t.TempDir()
	p := Policy{Write: []string{ws}, Read: slices.Clone(SystemRead), PrivateTmp: true}
	if out := threadRun(p, connectScript+bus); !strings.HasPrefix(strings.TrimSpace(out), "refused: No such file") {
		t.Errorf("a confined tree that reads /run reached %s: %s", bus, out)
	}
	p.PrivateTmp = false
	if out := threadRun(p, connectScript+bus); !strings.Contains(out, "answer: hello") {
		t.Errorf("without PrivateTmp the canary should answer (the door this closes), got:\n%s", out)
	}
}
