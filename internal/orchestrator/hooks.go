package orchestrator

import (
	"context"
	"fmt"
	"os"
	"slices"
	"time"

	"sortie/internal/agent/sandbox"
	"sortie/internal/config"
	"sortie/internal/store"
	"sortie/internal/workspace"
)

// confineHook is the workspace.ConfineHook of cfg for a run on host ("" for a local
// run, and for before_remove, which belongs to no run). A hook that runs after an
// agent may have written the workspace (after_run, before_remove, a later before_run)
// runs under the policy the run's agent gets (runPolicy) plus hooks.sandbox, with a
// temporary directory of its own: what the agent planted there (a git hook, a filter
// in .git/config) runs, if at all, with no more than the agent had and the hook was
// granted. Where agents are not confined (agent.sandbox.mode off, no Landlock here,
// an SSH host) neither are hooks, which is said once.
func (o *Orchestrator) confineHook(cfg *config.Config, host string) workspace.ConfineHook {
	s := o.opts.Sandbox
	ok, why := s.confined(cfg)
	if ok && host != "" {
		ok, why = false, "agents run on SSH hosts"
	}
	if !ok {
		return func(hook, _ string, _ []string) (*workspace.HookConfinement, error) {
			if _, said := o.hooksLogged.LoadOrStore(why, true); !said {
				o.log.Warn("hooks run unconfined, as agents do: a hook after an agent's run runs what the agent left in the workspace (a git hook, a .git/config setting) as this daemon's user",
					"reason", why, "hook", hook)
			}
			return nil, nil
		}
	}
	return func(_, wsPath string, env []string) (*workspace.HookConfinement, error) {
		parent := runTmpRoot(cfg)
		if err := os.MkdirAll(parent, 0o711); err != nil { // run_as users search it, never list it
			return nil, fmt.Errorf("the runs' temporary directory: %w", err)
		}
		tmp, err := os.MkdirTemp(parent, "hook-*")
		if err != nil {
			return nil, fmt.Errorf("the hook's temporary directory: %w", err)
		}
		if err := o.opts.RunAs.Chown(tmp); err != nil {
			_ = os.RemoveAll(tmp)
			return nil, fmt.Errorf("the hook's temporary directory: %w", err)
		}
		p := hookPolicy(s, cfg, wsPath, tmp, env)
		hc := &workspace.HookConfinement{
			// TMPDIR, and the build caches it would otherwise write in the home
			// directory (denied to it), in its temporary directory, as for agents:
			// only what confinedEnv adds, which runHook puts in place of the hook's own.
			Env:  confinedEnv(env, tmp)[len(env):],
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

// hookPolicy is what a confined hook in wsPath may touch: the run's agent's policy
// (runPolicy, with tmp as the run's temporary directory and the hook's environment for
// its PATH and HOME) plus hooks.sandbox's paths, in a private /tmp as the agent's. The
// daemon's private files stay hidden whatever hooks.sandbox grants.
func hookPolicy(s Sandbox, cfg *config.Config, wsPath, tmp string, env []string) sandbox.Policy {
	p := s.runPolicy(cfg, wsPath, tmp, env)
	p.Write = append(slices.Clone(p.Write), cfg.Hooks.Sandbox.WritePaths...)
	p.Read = append(slices.Clone(p.Read), cfg.Hooks.Sandbox.ReadPaths...)
	// What the agent planted (a git filter) must not connect() to tmux's, an SSH
	// agent's or the session bus's socket by name any more than the agent could
	// (sandbox.CoveredDirs): the hook gets a private /tmp too, with its own paths kept.
	p.PrivateTmp = true
	return p
}

// legacyWorkspaceOwner is workspace.Config.LegacyOwner: the workspace at oldPath, named
// as an older Sortie named issue's, is issue's when one of issue's recorded runs worked
// there. The daemon wrote those records; nothing an agent or an issue's author chooses
// (an identifier made to share the old name's 32 bits of hash) can make them say so.
func (o *Orchestrator) legacyWorkspaceOwner(issue workspace.Issue, oldPath string) bool {
	if issue.ID == "" {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	runs, err := o.opts.Store.RunsForIssue(ctx, issue.ID, 1000)
	if err != nil {
		o.log.Warn("an older Sortie's workspace is left under its old name: the run history could not be read",
			"issue_identifier", issue.Identifier, "workspace", oldPath, "error", err)
		return false
	}
	return slices.ContainsFunc(runs, func(r store.Run) bool { return r.Workspace == oldPath })
}
