package runas

import (
	"fmt"
	"log/slog"
	"os"
)

// Need is a path the agents' user must reach for its processes to work: the sortie
// executable, WORKFLOW.md, the agent socket.
type Need struct {
	Path   string
	Access Access
	// What names the path in the error when the user cannot reach it.
	What string
	// Share, when set, opens Path to the user's primary group (the agent socket:
	// agentsock.Server.ShareWithGroup). Every Share runs before any Need is checked.
	Share func(gid int) error
}

// ForAgents is the policy of agent.run_as, name: the user local agents and hooks run
// as, nil for "" (the daemon's own). Only root can start processes as another user,
// so a daemon that is not root is refused, saying how to fix it. The user must be
// able to reach what its processes use (reach, after each Need's Share). It must not be
// able to read the daemon's private files (private: the database, the key, the token,
// the env file), whatever the sandbox: each regular one loses its group and other
// permissions here, and ForAgents refuses the user if it can still read one.
func ForAgents(name string, reach []Need, private []string, log *slog.Logger) (*User, error) {
	return forAgents(os.Geteuid(), name, reach, private, log)
}

// forAgents is ForAgents for a daemon running as euid.
func forAgents(euid int, name string, reach []Need, private []string, log *slog.Logger) (*User, error) {
	if name == "" {
		return nil, nil
	}
	if euid != 0 {
		return nil, fmt.Errorf("agent.run_as is %q, but the daemon runs as uid %d and only root can start processes as another user: "+
			"run the daemon as root, or remove agent.run_as and run the daemon itself as an unprivileged user", name, euid)
	}
	u, err := Lookup(name)
	if err != nil {
		return nil, err
	}
	for _, need := range reach {
		if need.Share == nil {
			continue
		}
		if err := need.Share(int(u.GID)); err != nil {
			return nil, fmt.Errorf("agent.run_as: %w", err)
		}
	}
	for _, need := range reach {
		if err := u.CanReach(need.Path, need.Access); err != nil {
			return nil, fmt.Errorf("agent.run_as: %s: %w", need.What, err)
		}
	}
	for _, p := range private {
		fi, err := os.Lstat(p)
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		if fi.Mode().Perm()&0o077 != 0 {
			if err := os.Chmod(p, fi.Mode().Perm()&^0o077); err != nil {
				return nil, fmt.Errorf("agent.run_as: making %s private to the daemon: %w", p, err)
			}
			log.Info("made a private file of the daemon unreadable by group and others, for agent.run_as", "path", p)
		}
		if u.CanReach(p, Read) == nil {
			return nil, fmt.Errorf("agent.run_as: %s can read %s, a private file of the daemon: give it to the daemon's user (chown root %s)", u, p, p)
		}
	}
	log.Info("local agents and hooks run as another user", "user", u.String(), "home", u.Home)
	return u, nil
}
