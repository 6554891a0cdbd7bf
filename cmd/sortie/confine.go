package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"sortie/internal/agent/sandbox"
	"sortie/internal/agent/supervise"
	"sortie/internal/config"
	"sortie/internal/confine"
)

// cmdConfine is `sortie confine --write P --read P --hide P --private P ... -- PROGRAM ARGS`: the
// daemon starts every confined agent through it (sandbox.Main). It never runs PROGRAM
// unconfined.
//
// When PROGRAM is `sortie supervise` (this executable), which is how every local agent
// starts, the supervisor runs here, confined, rather than in a process of its own: one
// program start fewer per turn, the same confinement (Landlock's domain and the dropped
// capabilities are those an exec would have carried over).
func cmdConfine(args []string, stderr io.Writer) int {
	p, argv, err := sandbox.ParseArgs(args)
	if err != nil || !isSelf(argv, "supervise") {
		return sandbox.Main(args, stderr)
	}
	if p.Hidden(argv[0]) {
		fmt.Fprintf(stderr, "sortie confine: %s is hidden from agents and cannot be run confined\n", argv[0])
		return 126
	}
	if code, ran := sandbox.ConfineInUserNS(p, os.Args); ran {
		return code // not root: it ran in a user namespace, for the private /tmp
	}
	if err := sandbox.ConfineThread(p); err != nil {
		fmt.Fprintf(stderr, "sortie confine: %v\n", err)
		return 126
	}
	return supervise.Main(argv[2:], stderr)
}

// isSelf reports whether argv runs this executable's subcommand sub.
func isSelf(argv []string, sub string) bool {
	if len(argv) < 2 || argv[1] != sub {
		return false
	}
	self, err := os.Executable()
	if err != nil {
		return false
	}
	a, errA := os.Stat(argv[0])
	b, errB := os.Stat(self)
	return errA == nil && errB == nil && os.SameFile(a, b)
}

// agentSandbox is how this daemon confines its local agents (docs/security.md,
// "Confinement"). With agent.sandbox.mode landlock set explicitly, a machine without
// Landlock is a start-up error; with the mode left out it is a warning, logged once, and
// agents run unconfined (the dashboard says so). hide are the daemon's private files:
// its database and everything named after it (journal, lock, workflow key, operator
// token, agent socket directory) and the env file.
func agentSandbox(cfg *config.Config, workflow, envFile string, log *slog.Logger) (confine.Sandbox, error) {
	self, err := os.Executable()
	if err == nil {
		self, err = filepath.EvalSymlinks(self)
	}
	if err != nil {
		return confine.Sandbox{}, fmt.Errorf("finding this executable to confine agents with: %w", err)
	}
	s := confine.Sandbox{Self: self, Hide: privateFiles(cfg, envFile)}
	if abs, err := filepath.Abs(workflow); err == nil {
		s.Read = []string{abs} // the agent's MCP sidecar loads it; secrets in it are $VAR references
	}
	if _, err := sandbox.Available(); err != nil {
		s.Unavailable = err.Error()
		if cfg.Agent.Sandbox.Mode == config.SandboxLandlock {
			return s, fmt.Errorf("agent.sandbox.mode is landlock, but %v; set it to off to run agents unconfined", err)
		}
		if cfg.Agent.Sandbox.Mode != config.SandboxOff {
			log.Warn("agents not confined: Landlock is unavailable on this machine; they can read and write whatever this daemon's user can (set agent.sandbox.mode: off to silence this, or agent.run_as)",
				"error", err)
		}
	}
	return s, nil
}

// privateFiles are the daemon's files an agent must never read or write.
func privateFiles(cfg *config.Config, envFile string) []string {
	var out []string
	if db, err := filepath.Abs(cfg.DBPath); err == nil {
		for _, suffix := range []string{"", "-wal", "-shm", "-journal", ".lock", workflowKeySuffix, operatorTokenSuffix, ".run"} {
			out = append(out, db+suffix)
		}
	}
	if envFile == "" {
		envFile = os.Getenv("SORTIE_ENV_FILE")
	}
	if envFile != "" {
		if abs, err := filepath.Abs(envFile); err == nil {
			out = append(out, abs)
		}
	}
	return out
}
