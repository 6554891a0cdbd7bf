package daemon

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"sortie/internal/agent/sandbox"
	"sortie/internal/config"
	"sortie/internal/confine"
)

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
		for _, suffix := range []string{"", "-wal", "-shm", "-journal", ".lock", workflowKeySuffix, OperatorTokenSuffix, ".run"} {
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
