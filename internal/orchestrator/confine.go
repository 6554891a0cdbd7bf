package orchestrator

import (
	"slices"

	"sortie/internal/agent"
	"sortie/internal/agent/sandbox"
	"sortie/internal/config"
)

// Sandbox is how the daemon confines its local agents (Options.Sandbox,
// docs/security.md#confinement).
type Sandbox struct {
	// Self is the sortie executable, which runs `confine`.
	Self string
	// Hide are the daemon's private files no agent may read or write, even when they
	// lie inside a path it is granted: the database and its journal, the workflow key,
	// the operator token, the env file, WORKFLOW.md.
	Hide []string
	// Unavailable says why Landlock cannot confine agents on this machine; "" when it
	// can.
	Unavailable string
}

// confined reports whether cfg confines local agents here, and when not, why.
func (s Sandbox) confined(cfg *config.Config) (bool, string) {
	switch {
	case cfg.Agent.Sandbox.Mode == config.SandboxOff:
		return false, "agent.sandbox.mode is off"
	case s.Self == "":
		return false, "the daemon was started without confinement"
	case s.Unavailable != "":
		return false, "Landlock is unavailable: " + s.Unavailable
	}
	return true, ""
}

// runPolicy is what one run's local agent may touch: write its workspace, its run's
// temporary directory, the device files and the operator's write_paths; read the
// system, the toolchains on its PATH and the operator's read_paths; never the
// daemon's private files. The adapter adds its CLI's own state and installation.
func (s Sandbox) runPolicy(cfg *config.Config, workspace, runTmp string, env []string) sandbox.Policy {
	write := append([]string{workspace, runTmp}, sandbox.SystemWrite...)
	write = append(write, cfg.Agent.Sandbox.WritePaths...)
	read := slices.Clone(sandbox.SystemRead)
	read = append(read, agent.PathRoots(env)...)
	read = append(read, cfg.Agent.Sandbox.ReadPaths...)
	return sandbox.Policy{Write: write, Read: read, Hide: slices.Clone(s.Hide)}
}
