package sshd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sortie/internal/agent/remote"
)

// Agent is the program the remote side of an SSH test runs as agent.command: it records
// how it was started, sets up its environment and runs an agent CLI.
type Agent struct {
	Command string // the program, to name as agent.command
	Dir     string // holds the program and its records; nothing else writes here
}

// NewAgent writes the program. Each run records its arguments and $SSH_CONNECTION, then
// exports env (KEY=VALUE) and this process's PATH, since the remote shell gets none of
// the test's environment and the CLIs need node, and execs cli with its arguments.
func NewAgent(t testing.TB, cli string, env []string) *Agent {
	t.Helper()
	a := &Agent{Dir: t.TempDir()}
	a.Command = filepath.Join(a.Dir, "agent-remote")
	var b strings.Builder
	b.WriteString("#!/bin/sh\n")
	b.WriteString("printf '%s\\0' \"$@\" > " + remote.Quote(a.argvFile()) + "\n")
	b.WriteString("printf '%s' \"$SSH_CONNECTION\" > " + remote.Quote(a.connFile()) + "\n")
	b.WriteString("export PATH=" + remote.Quote(os.Getenv("PATH")) + "\n")
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		b.WriteString("export " + k + "=" + remote.Quote(v) + "\n")
	}
	b.WriteString("exec " + remote.Quote(cli) + " \"$@\"\n")
	if err := os.WriteFile(a.Command, []byte(b.String()), 0o755); err != nil {
		t.Fatal(err)
	}
	return a
}

func (a *Agent) argvFile() string { return filepath.Join(a.Dir, "argv") }
func (a *Agent) connFile() string { return filepath.Join(a.Dir, "argv.conn") }

// Argv is the arguments of the program's last run. It fails the test if the program
// never ran.
func (a *Agent) Argv(t testing.TB) []string {
	t.Helper()
	b, err := os.ReadFile(a.argvFile())
	if err != nil {
		t.Fatalf("the remote agent.command did not run: %v", err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00")
}

// Conn is $SSH_CONNECTION of the program's last run, which sshd sets to "client-ip
// client-port server-ip server-port"; "" if it never ran.
func (a *Agent) Conn() string {
	b, _ := os.ReadFile(a.connFile())
	return string(b)
}
