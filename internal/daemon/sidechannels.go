package daemon

import (
	"log/slog"
	"os"
	"slices"
	"strings"

	"sortie/internal/agent/sandbox"
	"sortie/internal/config"
	"sortie/internal/confine"
	"sortie/internal/runas"
)

// sessionVariables say that the daemon runs inside a terminal multiplexer, with an SSH
// agent or in a desktop session: each names a socket that acts as the daemon's user.
var sessionVariables = []string{"TMUX", "STY", "DBUS_SESSION_BUS_ADDRESS", "DISPLAY", "WAYLAND_DISPLAY", "SSH_AUTH_SOCK"}

// socketWarning is the start-up warning of a daemon whose confined agents could reach
// those sockets by name: Landlock does not govern connect() to a pathname Unix socket,
// and the agents get no mount namespace of their own to hide /tmp and /run/user (the
// daemon is not root, sandbox.MountNamespaceAvailable, and the kernel refuses it
// unprivileged user namespaces, sandbox.UserNamespaceAvailable). The variables do not
// reach agents (internal/agent/agentenv), but the sockets' paths are guessable. ""
// when there is nothing to say: agents are not confined here (another warning says so),
// run as another user (who may not connect to this user's sockets), or get the
// namespace. namespace is asked last: its first answer may start a probe process.
func socketWarning(environ []string, confined bool, runAs *runas.User, namespace func() bool) string {
	if !confined || runAs != nil {
		return ""
	}
	var set []string
	for _, kv := range environ {
		if name, v, ok := strings.Cut(kv, "="); ok && v != "" && slices.Contains(sessionVariables, name) {
			set = append(set, name)
		}
	}
	if len(set) == 0 || namespace() {
		return ""
	}
	slices.Sort(set)
	return "this daemon runs inside a terminal or desktop session (" + strings.Join(set, ", ") + " set), and pathname Unix " +
		"sockets are outside Landlock's reach: a confined agent can connect() to tmux's, screen's, the SSH agent's or the " +
		"session bus's socket by its path (/tmp/tmux-<uid>/default, /run/user/<uid>/bus) and have it act as this user, outside " +
		"the sandbox, since this kernel allows no unprivileged user namespace to hide them in. Run the daemon as root with " +
		"agent.run_as (agents then run as that user, with a /tmp and /run/user of their own), or start it outside the " +
		"session (a systemd service)"
}

// warnSocketReach logs socketWarning for the daemon as it starts, whose agents are
// confined unless agent.sandbox.mode is off or Landlock is unavailable (s.Unavailable),
// and run here unless worker.ssh_hosts sends them elsewhere.
func warnSocketReach(cfg *config.Config, s confine.Sandbox, runAs *runas.User, log *slog.Logger) {
	confined := cfg.Agent.Sandbox.Mode != config.SandboxOff && s.Unavailable == "" && len(cfg.Worker.SSHHosts) == 0
	namespace := func() bool { return sandbox.MountNamespaceAvailable() || sandbox.UserNamespaceAvailable() }
	if msg := socketWarning(os.Environ(), confined, runAs, namespace); msg != "" {
		log.Warn(msg)
	}
}
