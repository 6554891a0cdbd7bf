// Package remote wraps an agent CLI invocation for execution on another host over SSH:
// the local ssh argument list with the options the adapter specs fix, and a remote
// command line in which every word is single-quoted for the POSIX shell that sshd runs
// it with, so that no workspace path, argument or prompt can inject shell syntax.
package remote

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// StrictHostKeyChecking values accepted by Command; "" means DefaultStrictHostKeyChecking.
const DefaultStrictHostKeyChecking = "accept-new"

// Options are the fixed ssh client options, in the order they are passed.
var Options = []string{
	"BatchMode=yes",          // never prompt for a password or passphrase
	"ConnectTimeout=30",      // seconds to establish the connection
	"ServerAliveInterval=15", // keepalive every 15 s ...
	"ServerAliveCountMax=3",  // ... and give up after 3 missed ones
}

// Target is a parsed ssh host entry: [user@]host[:port].
type Target struct {
	Host string // [user@]host, as ssh takes it
	Port int    // 0 for ssh's default
}

// ParseTarget parses a worker.ssh_hosts entry. An IPv6 address with a port is written
// [addr]:port; a bare IPv6 address has no port.
func ParseTarget(s string) (Target, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Target{}, fmt.Errorf("ssh host is empty")
	}
	user, hostport := "", s
	if i := strings.LastIndex(s, "@"); i >= 0 {
		user, hostport = s[:i+1], s[i+1:]
	}
	if strings.HasPrefix(s, "-") || strings.HasPrefix(hostport, "-") {
		return Target{}, fmt.Errorf("ssh host %q: must not start with '-'", s)
	}
	for _, c := range []byte(s) {
		if c <= ' ' || c == 0x7f {
			return Target{}, fmt.Errorf("ssh host %q: must not contain whitespace or control characters", s)
		}
	}
	host, port, hasPort := hostport, "", false
	switch {
	case strings.HasPrefix(hostport, "["):
		end := strings.Index(hostport, "]")
		if end < 0 {
			return Target{}, fmt.Errorf("ssh host %q: unclosed '['", s)
		}
		rest := hostport[end+1:]
		if rest != "" && !strings.HasPrefix(rest, ":") {
			return Target{}, fmt.Errorf("ssh host %q: unexpected %q after ']'", s, rest)
		}
		host, port, hasPort = hostport[1:end], strings.TrimPrefix(rest, ":"), rest != ""
	case strings.Count(hostport, ":") == 1:
		i := strings.Index(hostport, ":")
		host, port, hasPort = hostport[:i], hostport[i+1:], true
	case strings.Contains(hostport, ":"):
		addr, _, _ := strings.Cut(hostport, "%") // a zone: fe80::1%eth0
		if net.ParseIP(addr) == nil {
			return Target{}, fmt.Errorf("ssh host %q: several ':' but not an IPv6 address (write [addr]:port for a port)", s)
		}
	}
	if host == "" {
		return Target{}, fmt.Errorf("ssh host %q: no host name", s)
	}
	if user == "" && strings.HasPrefix(host, "-") {
		// "[-oProxyCommand=…]" would reach ssh as an option once the brackets are gone.
		return Target{}, fmt.Errorf("ssh host %q: must not start with '-'", s)
	}
	t := Target{Host: user + host}
	if hasPort {
		p, err := strconv.Atoi(port)
		if err != nil || p < 1 || p > 65535 || strings.TrimLeft(port, "0123456789") != "" {
			return Target{}, fmt.Errorf("ssh host %q: port %q is not a number from 1 to 65535", s, port)
		}
		t.Port = p
	}
	return t, nil
}

// Command returns the arguments for the local ssh binary (without the program name)
// that run program with args in workspace on target: `cd '<workspace>' && '<program>'
// '<arg>'…`, preceded by a line on stderr naming the remote process group (see
// PGIDMarker). program may hold several words (e.g. "npx claude"); each is quoted on
// its own. strict is the StrictHostKeyChecking value: accept-new, yes or no.
func Command(target Target, strict, workspace string, program []string, args []string) []string {
	return sshArgs(target, strict, announcePGID+RemoteLine(workspace, program, args))
}

// PGIDMarker starts the stderr line in which the remote shell names its process group.
// sshd runs a command without a terminal in a new session, so the shell's pid is the
// group of everything the agent starts; and without a terminal, closing the connection
// sends it no hangup. KillCommand is how a stopped turn ends it.
const PGIDMarker = "sortie-remote-pgid="

const announcePGID = "echo " + PGIDMarker + "$$ >&2 && "

// PGIDWait bounds how long a turn waits, at its first line of output, for the stderr
// line that names the remote process group: the remote shell writes it before the CLI
// starts, but the local stdout and stderr pipes are read by different goroutines.
const PGIDWait = 5 * time.Second

// ParsePGID finds the remote process group that Command's line announced in the
// session's stderr. The line must be whole (ended by a newline): a number still being
// written is not a group yet.
func ParsePGID(stderr string) (int, bool) {
	i := strings.Index(stderr, PGIDMarker)
	if i < 0 {
		return 0, false
	}
	digits := stderr[i+len(PGIDMarker):]
	end := strings.IndexFunc(digits, func(r rune) bool { return r < '0' || r > '9' })
	if end < 0 || (digits[end] != '\n' && digits[end] != '\r') {
		return 0, false
	}
	digits = digits[:end]
	pgid, err := strconv.Atoi(digits)
	if err != nil || pgid <= 1 {
		return 0, false
	}
	return pgid, true
}

// StderrHead is what AwaitPGID reads a turn's stderr through: proc.HeadTailBuffer.
type StderrHead interface {
	WaitHead(ctx context.Context, n int, ok func(head string) bool) bool
}

// AwaitPGID returns the remote process group announced at the start of a turn's
// stderr, waiting up to PGIDWait for the line to arrive; 0 when it does not. Call it
// once the turn's first line of output has been read: the line precedes the CLI.
func AwaitPGID(stderr StderrHead) int {
	ctx, cancel := context.WithTimeout(context.Background(), PGIDWait)
	defer cancel()
	pgid := 0
	stderr.WaitHead(ctx, 4096, func(head string) bool {
		pgid, _ = ParsePGID(head)
		return pgid > 0
	})
	return pgid
}

// StripPGID removes the PGIDMarker line from captured stderr, for error messages.
func StripPGID(stderr string) string {
	i := strings.Index(stderr, PGIDMarker)
	if i < 0 {
		return stderr
	}
	end := strings.IndexByte(stderr[i:], '\n')
	if end < 0 {
		return stderr[:i]
	}
	return stderr[:i] + stderr[i+end+1:]
}

// KillCommand returns the ssh arguments that stop remote process group pgid the way a
// local one is stopped: SIGTERM, up to grace for it to go, then SIGKILL.
func KillCommand(target Target, strict string, pgid int, grace time.Duration) []string {
	g := strconv.Itoa(pgid)
	secs := strconv.Itoa(max(int(grace.Round(time.Second)/time.Second), 1))
	script := "kill -TERM -- -" + g + " 2>/dev/null || exit 0; i=0; while [ $i -lt " + secs +
		" ] && kill -0 -- -" + g + " 2>/dev/null; do sleep 1; i=$((i+1)); done; kill -KILL -- -" + g + " 2>/dev/null; exit 0"
	return sshArgs(target, strict, script)
}

func sshArgs(target Target, strict, line string) []string {
	if strict == "" {
		strict = DefaultStrictHostKeyChecking
	}
	argv := []string{"-o", "StrictHostKeyChecking=" + strict}
	for _, o := range Options {
		argv = append(argv, "-o", o)
	}
	if target.Port != 0 {
		argv = append(argv, "-p", strconv.Itoa(target.Port))
	}
	return append(argv, "--", target.Host, line)
}

// RemoteLine is the shell command line run on the remote host.
func RemoteLine(workspace string, program []string, args []string) string {
	var b strings.Builder
	b.WriteString("cd ")
	b.WriteString(Quote(workspace))
	b.WriteString(" &&")
	for _, w := range program {
		b.WriteByte(' ')
		b.WriteString(Quote(w))
	}
	for _, a := range args {
		b.WriteByte(' ')
		b.WriteString(Quote(a))
	}
	return b.String()
}

// Quote single-quotes s for a POSIX shell: every character stands for itself. An
// embedded single quote closes the quoting, is escaped with a backslash, and reopens
// it (the standard POSIX pattern).
func Quote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// StopAnnounced ends the remote process group that Command's line announced in stderr,
// for a turn stopped locally: killing the local ssh does not reach it, since without a
// terminal the remote shell gets no hangup, and the agent would go on changing the
// workspace while the issue is retried. ssh is the local client, env its environment.
// It returns once the group is gone or the connection attempt failed; an unreachable
// host has nothing that can be stopped.
func StopAnnounced(ssh string, env []string, target Target, strict, stderr string, grace time.Duration) {
	pgid, ok := ParsePGID(stderr)
	if !ok {
		return // the remote shell never started
	}
	_ = Stop(context.Background(), ssh, env, target, strict, pgid, grace)
}

// ErrUnreachable is wrapped by Stop's error when ssh could not reach or log in to the
// host (its exit status 255), so whether the group still runs is unknown.
var ErrUnreachable = errors.New("the host could not be reached")

// Stop ends remote process group pgid on target the way KillCommand does, and says
// whether it could: nil once the group is gone (or was already), an error wrapping
// ErrUnreachable when ssh could not get there. ssh is the local client, env its
// environment.
func Stop(ctx context.Context, ssh string, env []string, target Target, strict string, pgid int, grace time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, grace+45*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, ssh, KillCommand(target, strict, pgid, grace)...)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &exit) && exit.ExitCode() == 255, ctx.Err() != nil:
		return fmt.Errorf("stopping process group %d on %s: %w (%v: %s)", pgid, target.Host, ErrUnreachable, err, strings.TrimSpace(string(out)))
	}
	return fmt.Errorf("stopping process group %d on %s: %v: %s", pgid, target.Host, err, strings.TrimSpace(string(out)))
}
