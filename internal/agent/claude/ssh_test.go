package claude

// End-to-end tests of SSH mode against a real sshd on 127.0.0.1 that this file starts
// with throw-away keys, the real claude CLI on the "remote" side and the fake Anthropic
// API behind it (spec: claude-code-adapter.md, "SSH remote execution").

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"sortie/internal/agent"
	"sortie/internal/agent/remote"
	"sortie/internal/testkit/clis"
	"sortie/internal/testkit/fakemodel"
)

// sshHostile is a prompt and a system prompt that must reach the model byte for byte:
// quotes, command substitutions, operators, a glob, newlines, backslashes, non-ASCII.
const sshHostile = "Fix it's \"bug\" $(touch PWNED) `touch PWNED` ; touch PWNED && echo $HOME | cat *\n" +
	"second line with '\\'' and \\ backslash, tab\there, é 🚀"

// sshdFixture is an sshd on 127.0.0.1 that lets the current user in with a throw-away
// key, and a PATH whose `ssh` is the real client reading a configuration that trusts
// that key and keeps known_hosts in the fixture's directory, so ~/.ssh is never read or
// written.
type sshdFixture struct {
	dir  string // keys, configurations, the sshd log
	port int
}

// sshClientOnPath puts a wrapper named ssh first on PATH that runs the real client with
// -F <dir>/ssh_config, and writes that configuration. It skips the test when the
// OpenSSH client is missing (fails under CI, where .ci/run installs it).
func sshClientOnPath(t *testing.T, dir string) {
	t.Helper()
	ssh := sshTool(t, "ssh")
	u, err := user.Current()
	if err != nil {
		t.Fatalf("current user: %v", err)
	}
	key := filepath.Join(dir, "id_ed25519")
	if _, err := os.Stat(key); errors.Is(err, fs.ErrNotExist) {
		sshKeygen(t, key)
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

// startSSHD starts sshd -D on a free port of 127.0.0.1 and returns once it listens.
// It is stopped when the test ends.
func startSSHD(t *testing.T) *sshdFixture {
	t.Helper()
	sshd := sshTool(t, "sshd")
	dir := t.TempDir()
	sshClientOnPath(t, dir)
	hostKey := filepath.Join(dir, "ssh_host_ed25519_key")
	sshKeygen(t, hostKey)
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
		port := sshFreePort(t)
		conf := filepath.Join(dir, "sshd_config")
		text := fmt.Sprintf("Port %d\nListenAddress 127.0.0.1\nHostKey %s\nAuthorizedKeysFile %s\n"+
			"PidFile %s\nPermitRootLogin prohibit-password\nStrictModes no\nUsePAM no\n"+
			"PasswordAuthentication no\nKbdInteractiveAuthentication no\nPrintMotd no\nLogLevel VERBOSE\n",
			port, hostKey, authorized, filepath.Join(dir, "sshd.pid"))
		if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		sshdPrivsepDir(t, sshd, conf)

		log := &sshdLog{ready: make(chan struct{})}
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
			return &sshdFixture{dir: dir, port: port}
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

// sshdPrivsepDir creates the privilege separation directory sshd asks for when it runs
// as root; Debian's service unit creates /run/sshd, which a container never started.
func sshdPrivsepDir(t *testing.T, sshd, conf string) {
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

// sshdLog collects sshd's log and closes ready when it says it listens.
type sshdLog struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	ready chan struct{}
	seen  bool
}

func (l *sshdLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(p)
	if !l.seen && strings.Contains(l.buf.String(), "Server listening on 127.0.0.1") {
		l.seen = true
		close(l.ready)
	}
	return len(p), nil
}

func (l *sshdLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// sshTool finds an OpenSSH program, skipping the test without it (failing under CI).
func sshTool(t *testing.T, name string) string {
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

func sshKeygen(t *testing.T, path string) {
	t.Helper()
	keygen := sshTool(t, "ssh-keygen")
	if out, err := exec.Command(keygen, "-q", "-t", "ed25519", "-N", "", "-C", "sortie-test", "-f", path).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v\n%s", err, out)
	}
}

// sshFreePort returns a TCP port of 127.0.0.1 that nothing listened on a moment ago.
func sshFreePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// sshRemoteClaude writes the agent.command the remote shell runs: it records its
// arguments (NUL-terminated, in argvFile) and $SSH_CONNECTION (in argvFile+".conn"),
// sets the environment the claude CLI needs to talk to the fake model (the remote shell
// gets none of the test's; PATH is the test's, for node) and runs the pinned CLI.
func sshRemoteClaude(t *testing.T, fm *fakemodel.Server) (command, argvFile string) {
	t.Helper()
	claude := clis.Claude(t)
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	if err := os.Mkdir(home, 0o700); err != nil {
		t.Fatal(err)
	}
	argvFile = filepath.Join(dir, "argv")
	script := "#!/bin/sh\n" +
		"printf '%s\\0' \"$@\" > " + remote.Quote(argvFile) + "\n" +
		"printf '%s' \"$SSH_CONNECTION\" > " + remote.Quote(argvFile+".conn") + "\n" +
		"export PATH=" + remote.Quote(os.Getenv("PATH")) + "\n" +
		"export ANTHROPIC_BASE_URL=" + remote.Quote(fm.URL) + "\n" +
		"export ANTHROPIC_API_KEY=sk-fake CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 IS_SANDBOX=1\n" +
		"export HOME=" + remote.Quote(home) + "\n" +
		"exec " + remote.Quote(claude) + " \"$@\"\n"
	command = filepath.Join(dir, "claude-remote")
	if err := os.WriteFile(command, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return command, argvFile
}

// sshRunTurn starts a session on host in workspace and runs one turn of prompt.
func sshRunTurn(t *testing.T, a agent.Adapter, host, workspace, prompt string) (*agent.Session, agent.TurnResult, []agent.Event, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	s, err := a.StartSession(ctx, agent.StartParams{Workspace: workspace, SSHHost: host})
	if err != nil {
		t.Fatalf("StartSession(SSHHost %q): %v", host, err)
	}
	t.Cleanup(func() { a.StopSession(context.Background(), s) })
	var events []agent.Event
	res, err := a.RunTurn(ctx, s, agent.TurnParams{Prompt: prompt, TurnNumber: 1,
		OnEvent: func(e agent.Event) { events = append(events, e) }})
	if len(events) == 0 || events[len(events)-1].Type != res.ExitReason {
		t.Fatalf("RunTurn: last event %v does not match the result's exit reason %q", events, res.ExitReason)
	}
	return s, res, events, err
}

// The prompt and every CLI argument reach the remote claude byte for byte, it runs in the
// workspace, and the turn completes.
func TestSSH_TurnRunsRemotelyInWorkspace(t *testing.T) {
	fx := startSSHD(t)
	fm := fakemodel.Start(t,
		fakemodel.Reply{ToolUses: []fakemodel.ToolUse{{Name: "Bash",
			Input: map[string]any{"command": "pwd > where.txt", "description": "Record the working directory"}}}},
		fakemodel.Reply{Text: "recorded"},
	)
	command, argvFile := sshRemoteClaude(t, fm)
	a, err := New(agent.Config{Kind: Kind, Command: command, Options: map[string]any{
		"permission_mode": "bypassPermissions",
		"system_prompt":   sshHostile,
	}})
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	workspace := filepath.Join(root, "ws 'it''s' \"q\" $(touch PWNED) `touch PWNED`; & é")
	if err := os.Mkdir(workspace, 0o755); err != nil {
		t.Fatal(err)
	}

	s, res, events, err := sshRunTurn(t, a, "127.0.0.1:"+strconv.Itoa(fx.port), workspace, sshHostile)
	if err != nil || res.ExitReason != agent.EventTurnCompleted {
		t.Fatalf("RunTurn = %q, %v; want turn_completed; events: %+v", res.ExitReason, err, events)
	}

	argv, err := os.ReadFile(argvFile)
	if err != nil {
		t.Fatalf("the remote agent.command did not run: %v", err)
	}
	wantArgv := []string{"-p", "--output-format", "stream-json", "--verbose", "--session-id", s.ID,
		"--permission-mode", "bypassPermissions", "--append-system-prompt", sshHostile}
	if got := strings.Split(strings.TrimSuffix(string(argv), "\x00"), "\x00"); !slices.Equal(got, wantArgv) {
		t.Errorf("remote argv:\n got %q\nwant %q", got, wantArgv)
	}

	// sshd sets SSH_CONNECTION to "client-ip client-port server-ip server-port".
	if conn, _ := os.ReadFile(argvFile + ".conn"); !strings.HasSuffix(string(conn), " 127.0.0.1 "+strconv.Itoa(fx.port)) {
		t.Errorf("the remote command's SSH_CONNECTION = %q, want it to end with the test sshd's 127.0.0.1 %d", conn, fx.port)
	}

	reqs := fm.Messages()
	if len(reqs) < 2 {
		t.Fatalf("the fake model got %d message requests, want 2 (tool use, then the answer)", len(reqs))
	}
	if !sshUserSaid(reqs[0], sshHostile) {
		t.Errorf("the first request has no user text block equal to the prompt %q; messages: %+v", sshHostile, reqs[0].Messages)
	}
	if !strings.Contains(reqs[0].System, sshHostile) {
		t.Errorf("the system prompt does not contain the appended %q:\n%s", sshHostile, reqs[0].System)
	}

	where, err := os.ReadFile(filepath.Join(workspace, "where.txt"))
	if err != nil {
		t.Fatalf("the Bash tool did not write where.txt in the workspace: %v (tool results: %+v)", err, reqs[len(reqs)-1].ToolResults())
	}
	if got := strings.TrimSuffix(string(where), "\n"); got != workspace {
		t.Errorf("remote pwd = %q, want the workspace %q", got, workspace)
	}
	sshNoPwned(t, root, filepath.Dir(argvFile))
}

// A remote agent.command that does not exist makes the remote shell exit 127, which is
// agent_not_found (spec: "Exit codes").
func TestSSH_MissingRemoteBinaryIsAgentNotFound(t *testing.T) {
	fx := startSSHD(t)
	a, err := New(agent.Config{Kind: Kind, Command: filepath.Join(fx.dir, "no-such-claude")})
	if err != nil {
		t.Fatal(err)
	}
	_, res, _, err := sshRunTurn(t, a, "127.0.0.1:"+strconv.Itoa(fx.port), t.TempDir(), "hello")
	if got := agent.KindOf(err); got != agent.ErrNotFound || res.ExitReason != agent.EventTurnFailed {
		t.Fatalf("RunTurn = %q, %v (kind %q); want turn_failed with agent_not_found", res.ExitReason, err, got)
	}
	if !strings.Contains(err.Error(), "exit status 127") {
		t.Errorf("error %q does not name exit status 127", err)
	}
}

// ssh exits 255 when it cannot connect, which is port_exit (spec: "Exit codes").
func TestSSH_UnreachableHostIsPortExit(t *testing.T) {
	sshClientOnPath(t, t.TempDir())
	port := sshFreePort(t) // closed again: connecting is refused at once
	a, err := New(agent.Config{Kind: Kind, Command: "claude"})
	if err != nil {
		t.Fatal(err)
	}
	_, res, _, err := sshRunTurn(t, a, "127.0.0.1:"+strconv.Itoa(port), t.TempDir(), "hello")
	if got := agent.KindOf(err); got != agent.ErrPortExit || res.ExitReason != agent.EventTurnFailed {
		t.Fatalf("RunTurn = %q, %v (kind %q); want turn_failed with port_exit", res.ExitReason, err, got)
	}
	if !strings.Contains(err.Error(), "exit status 255") || !strings.Contains(err.Error(), "Connection refused") {
		t.Errorf("error %q does not name exit status 255 and ssh's reason", err)
	}
}

// sshUserSaid reports whether a user message of req has a text block equal to text.
func sshUserSaid(req fakemodel.Request, text string) bool {
	for _, m := range req.Messages {
		if m.Role != "user" {
			continue
		}
		for _, b := range m.Content {
			if b.Type == "text" && b.Text == text {
				return true
			}
		}
	}
	return false
}

// sshNoPwned fails the test if a hostile string ran its `touch PWNED` anywhere in dirs.
func sshNoPwned(t *testing.T, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		filepath.WalkDir(d, func(path string, e fs.DirEntry, err error) error {
			if err == nil && e.Name() == "PWNED" {
				t.Errorf("a hostile string ran a command: %s exists", path)
			}
			return nil
		})
	}
}

// Cancelling a turn stops the agent on the remote host too, not only the local ssh:
// without a terminal the remote shell gets no hangup, so the adapter kills the remote
// process group it announced.
func TestSSH_CancelStopsTheRemoteAgent(t *testing.T) {
	fx := startSSHD(t)
	fm := fakemodel.Start(t, fakemodel.Reply{Stall: true})
	command, _ := sshRemoteClaude(t, fm)
	a, err := New(agent.Config{Kind: Kind, Command: command, Options: map[string]any{"permission_mode": "bypassPermissions"}})
	if err != nil {
		t.Fatal(err)
	}
	a.(*adapter).grace = time.Second
	s, err := a.StartSession(t.Context(), agent.StartParams{Workspace: t.TempDir(), SSHHost: "127.0.0.1:" + strconv.Itoa(fx.port)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := a.RunTurn(ctx, s, agent.TurnParams{Prompt: "hang", TurnNumber: 1})
		done <- err
	}()
	fm.WaitStall(t, time.Minute)
	if len(processesWithEnv(t, fm.URL)) == 0 {
		t.Fatal("no remote claude process found while the model stalls; the check below would prove nothing")
	}
	cancel()
	if err := <-done; agent.KindOf(err) != agent.ErrTurnCancelled {
		t.Fatalf("RunTurn = %v, want turn_cancelled", err)
	}
	if left := processesWithEnv(t, fm.URL); len(left) > 0 {
		t.Errorf("remote agent processes still running after the cancelled turn returned: %v", left)
	}
}

// processesWithEnv lists live processes whose environment mentions s (the fake model's
// URL is only in the remote agent's).
func processesWithEnv(t *testing.T, s string) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil || !strings.Contains(string(env), s) {
			continue
		}
		if stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil {
			if f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:])); len(f) > 0 && f[0] == "Z" {
				continue
			}
		}
		out = append(out, pid)
	}
	return out
}
