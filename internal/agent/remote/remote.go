// Package remote wraps an agent CLI invocation for execution on another host over SSH:
// the local ssh argument list with the options the adapter specs fix, and a remote
// command line in which every word is single-quoted for the POSIX shell that sshd runs
// it with, so that no workspace path, argument or prompt can inject shell syntax.
package remote

import (
	"fmt"
	"strconv"
	"strings"
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
	if strings.ContainsAny(s, " \t\r\n") || strings.HasPrefix(s, "-") {
		return Target{}, fmt.Errorf("ssh host %q: must not contain whitespace or start with '-'", s)
	}
	user, hostport := "", s
	if i := strings.LastIndex(s, "@"); i >= 0 {
		user, hostport = s[:i+1], s[i+1:]
	}
	host, port := hostport, ""
	switch {
	case strings.HasPrefix(hostport, "["):
		end := strings.Index(hostport, "]")
		if end < 0 {
			return Target{}, fmt.Errorf("ssh host %q: unclosed '['", s)
		}
		host, port = hostport[1:end], strings.TrimPrefix(hostport[end+1:], ":")
		if rest := hostport[end+1:]; rest != "" && !strings.HasPrefix(rest, ":") {
			return Target{}, fmt.Errorf("ssh host %q: unexpected %q after ']'", s, rest)
		}
	case strings.Count(hostport, ":") == 1:
		i := strings.Index(hostport, ":")
		host, port = hostport[:i], hostport[i+1:]
	}
	if host == "" {
		return Target{}, fmt.Errorf("ssh host %q: no host name", s)
	}
	t := Target{Host: user + host}
	if port != "" {
		p, err := strconv.Atoi(port)
		if err != nil || p < 1 || p > 65535 {
			return Target{}, fmt.Errorf("ssh host %q: port %q is not a number from 1 to 65535", s, port)
		}
		t.Port = p
	}
	return t, nil
}

// Command returns the arguments for the local ssh binary (without the program name)
// that run program with args in workspace on target: `cd '<workspace>' && '<program>'
// '<arg>'…`. program may hold several words (e.g. "npx claude"); each is quoted on
// its own. strict is the StrictHostKeyChecking value: accept-new, yes or no.
func Command(target Target, strict, workspace string, program []string, args []string) []string {
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
	return append(argv, "--", target.Host, RemoteLine(workspace, program, args))
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
