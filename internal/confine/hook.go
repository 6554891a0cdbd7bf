package confine

import (
	"fmt"
	"os"
	"slices"

	"sortie/internal/agent/sandbox"
	"sortie/internal/config"
	"sortie/internal/runas"
	"sortie/internal/workspace"
)

// Hook is the confinement of a hook that runs after an agent may have written the
// workspace (after_run, before_remove, a later before_run), for cfg: the policy the
// run's agent gets (RunPolicy) plus hooks.sandbox, with a temporary directory of its
// own, owned by owner (agent.run_as's user, nil for the daemon's): what the agent
// planted there (a git hook, a filter in .git/config) runs, if at all, with no more
// than the agent had and the hook was granted. Call it only where s confines agents
// (Confined).
func (s Sandbox) Hook(cfg *config.Config, owner *runas.User) workspace.ConfineHook {
	return func(_, wsPath string, env []string) (*workspace.HookConfinement, error) {
		parent := RunTmpRoot(cfg)
		if err := os.MkdirAll(parent, 0o711); err != nil { // run_as users search it, never list it
			return nil, fmt.Errorf("the runs' temporary directory: %w", err)
		}
		tmp, err := os.MkdirTemp(parent, "hook-*")
		if err != nil {
			return nil, fmt.Errorf("the hook's temporary directory: %w", err)
		}
		if err := owner.Chown(tmp); err != nil {
			_ = os.RemoveAll(tmp)
			return nil, fmt.Errorf("the hook's temporary directory: %w", err)
		}
		p := s.HookPolicy(cfg, wsPath, tmp, env)
		hc := &workspace.HookConfinement{
			// TMPDIR, and the build caches it would otherwise write in the home
			// directory (denied to it), in its temporary directory, as for agents:
			// only what Env adds, which runHook puts in place of the hook's own.
			Env:  Env(env, tmp)[len(env):],
			Done: func() { _ = os.RemoveAll(tmp) },
		}
		// As an agent's: the private /tmp needs a user namespace when the daemon is not
		// root, which only `sortie confine` can enter (agent.LocalLaunch).
		if sandbox.ConfineOnThread() {
			hc.Thread = func() error { return sandbox.RestrictThread(p) }
		} else {
			hc.Wrap = append([]string{s.Self, "confine"}, p.Args()...)
		}
		return hc, nil
	}
}

// HookPolicy is what a confined hook in wsPath may touch: the run's agent's policy
// (RunPolicy, with tmp as the run's temporary directory and the hook's environment for
// its PATH and HOME) plus hooks.sandbox's paths, in a private /tmp as the agent's. The
// daemon's private files stay hidden whatever hooks.sandbox grants.
func (s Sandbox) HookPolicy(cfg *config.Config, wsPath, tmp string, env []string) sandbox.Policy {
	p := s.RunPolicy(cfg, wsPath, tmp, env)
	p.Write = append(slices.Clone(p.Write), cfg.Hooks.Sandbox.WritePaths...)
	p.Read = append(slices.Clone(p.Read), cfg.Hooks.Sandbox.ReadPaths...)
	// What the agent planted (a git filter) must not connect() to tmux's, an SSH
	// agent's or the session bus's socket by name any more than the agent could
	// (sandbox.CoveredDirs): the hook gets a private /tmp too, with its own paths kept.
	p.PrivateTmp = true
	return p
}
