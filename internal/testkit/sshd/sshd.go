// Package sshd lets tests of SSH mode run against a real OpenSSH server: Start runs sshd
// on 127.0.0.1 with throw-away keys and puts an ssh client that trusts it first on PATH,
// so that ~/.ssh and the machine's known hosts are never read or written, and NewAgent
// writes the program the remote side runs as agent.command. Without OpenSSH a test is
// skipped with the reason, except under CI (CI set), where that is a failure.
package sshd

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"sortie/internal/agent/remote"
)

// Server is an sshd on 127.0.0.1 that lets the current user in with a throw-away key.
type Server struct {
	Dir  string // keys, configurations, known hosts
	Port int
}

// Host is the server as worker.ssh_hosts names it: "127.0.0.1:<port>".
func (s *Server) Host() string { return "127.0.0.1:" + strconv.Itoa(s.Port) }

// Start starts sshd -D on a free port of 127.0.0.1, with ClientOnPath set up for it, and
// returns once it listens. It is stopped when the test ends, and its log is printed if
// the test failed. Start changes PATH, so the test must not be parallel.
func Start(t testing.TB) *Server {
	t.Helper()
	sshd := tool(t, "sshd")
	dir := t.TempDir()
	ClientOnPath(t, dir)
	hostKey := filepath.Join(dir, "ssh_host_ed25519_key")
	keygen(t, hostKey)
	pub, err := os.ReadFile(filepath.Join(dir, "id_ed25519.pub"))
	if err != nil {
		t.Fatal(err)
	}
	authorized := filepath.Join(dir, "authorized_keys")
	if err := os.WriteFile(authorized, pub, 0o600); err != nil {
		t.Fatal(err)
	}

	// A port can be taken between choosing and binding it; sshd then exits saying so,
	// and another port is tried.
	for attempt := 1; ; attempt++ {
		port := FreePort(t)
		conf := filepath.Join(dir, "sshd_config")
		text := fmt.Sprintf("Port %d\nListenAddress 127.0.0.1\nHostKey %s\nAuthorizedKeysFile %s\n"+
			"PidFile %s\nPermitRootLogin prohibit-password\nStrictModes no\nUsePAM no\n"+
			"PasswordAuthentication no\nKbdInteractiveAuthentication no\nPrintMotd no\nLogLevel VERBOSE\n",
			port, hostKey, authorized, filepath.Join(dir, "sshd.pid"))
		if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		privsepDir(t, sshd, conf)

		log := &serverLog{ready: make(chan struct{})}
		cmd := exec.Command(sshd, "-D", "-e", "-f", conf)
		cmd.Stdout, cmd.Stderr = log, log
		// Session processes inherit the log pipe; do not wait on them past shutdown.
		cmd.WaitDelay = 5 * time.Second
		if err := cmd.Start(); err != nil {
			t.Fatalf("starting %s: %v", sshd, err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		select {
		case <-log.ready:
			t.Cleanup(func() {
				cmd.Process.Signal(syscall.SIGTERM)
				<-exited
				if t.Failed() {
					t.Logf("sshd log:\n%s", log.String())
				}
			})
			return &Server{Dir: dir, Port: port}
		case err := <-exited:
			if strings.Contains(log.String(), "Address already in use") && attempt < 3 {
				continue
			}
			t.Fatalf("sshd exited before listening (%v):\n%s", err, log.String())
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-exited
			t.Fatalf("sshd did not report listening on 127.0.0.1:%d within 10s:\n%s", port, log.String())
		}
	}
}

// ClientOnPath puts a wrapper named ssh first on PATH that runs the real client with
// -F <dir>/ssh_config, and writes that configuration: the current user, the key
// <dir>/id_ed25519 (made if missing) and known hosts in <dir>. It changes PATH, so the
// test must not be parallel.
func ClientOnPath(t testing.TB, dir string) {
	t.Helper()
	ssh := tool(t, "ssh")
	u, err := user.Current()
	if err != nil {
		t.Fatalf("current user: %v", err)
	}
	key := filepath.Join(dir, "id_ed25519")
	if _, err := os.Stat(key); errors.Is(err, fs.ErrNotExist) {
		keygen(t, key)
	}
	conf := fmt.Sprintf("Host *\n  User %s\n  IdentityFile \"%s\"\n  IdentitiesOnly yes\n"+
		"  UserKnownHostsFile \"%s\"\n  GlobalKnownHostsFile /dev/null\n  LogLevel ERROR\n",
		u.Username, key, filepath.Join(dir, "known_hosts"))
	confPath := filepath.Join(dir, "ssh_config")
	if err := os.WriteFile(confPath, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	// OpenSSH finds ~/.ssh through the password database, not $HOME: -F is the way to
	// keep the test away from the user's own configuration and known hosts.
	wrapper := "#!/bin/sh\nexec " + remote.Quote(ssh) + " -F " + remote.Quote(confPath) + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(bin, "ssh"), []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// FreePort returns a TCP port of 127.0.0.1 that nothing listened on a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// privsepDir creates the privilege separation directory sshd asks for when it runs as
// root; Debian's service unit creates /run/sshd, which a container never started.
func privsepDir(t testing.TB, sshd, conf string) {
	t.Helper()
	out, err := exec.Command(sshd, "-t", "-f", conf).CombinedOutput()
	if err == nil {
		return
	}
	m := regexp.MustCompile(`Missing privilege separation directory: (\S+)`).FindSubmatch(out)
	if m == nil || os.Geteuid() != 0 {
		t.Fatalf("%s -t -f %s: %v\n%s", sshd, conf, err, out)
	}
	if err := os.MkdirAll(string(m[1]), 0o755); err != nil {
		t.Fatalf("creating sshd's privilege separation directory: %v", err)
	}
	if out, err := exec.Command(sshd, "-t", "-f", conf).CombinedOutput(); err != nil {
		t.Fatalf("%s -t -f %s: %v\n%s", sshd, conf, err, out)
	}
}

// serverLog collects sshd's log and closes ready when it says it listens.
type serverLog struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	ready chan struct{}
	seen  bool
}

func (l *serverLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(p)
	if !l.seen && strings.Contains(l.buf.String(), "Server listening on 127.0.0.1") {
		l.seen = true
		close(l.ready)
	}
	return len(p), nil
}

func (l *serverLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// tool finds an OpenSSH program, skipping the test without it (failing under CI).
func tool(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil && name == "sshd" {
		p, err = exec.LookPath("/usr/sbin/sshd") // not on a normal user's PATH
	}
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is not installed; .ci/run must install openssh-server and openssh-client", name)
		}
		t.Skipf("SSH end-to-end test skipped: %s not found (apt-get install openssh-server openssh-client)", name)
	}
	return p
}

func keygen(t testing.TB, path string) {
	t.Helper()
	bin := tool(t, "ssh-keygen")
	if out, err := exec.Command(bin, "-q", "-t", "ed25519", "-N", "", "-C", "sortie-test", "-f", path).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v\n%s", err, out)
	}
}
