package orchestrator

import (
	"context"
	"slices"
	"time"

	"sortie/internal/config"
	"sortie/internal/store"
	"sortie/internal/workspace"
)

// confineHook is the workspace.ConfineHook of cfg for a run on host ("" for a local
// run, and for before_remove, which belongs to no run). A hook that runs after an
// agent may have written the workspace (after_run, before_remove, a later before_run)
// runs confined as the run's agent is, plus hooks.sandbox (confine.Sandbox.Hook). Where agents are not confined (agent.sandbox.mode off, no Landlock here,
// an SSH host) neither are hooks, which is said once.
func (o *Orchestrator) confineHook(cfg *config.Config, host string) workspace.ConfineHook {
	s := o.opts.Sandbox
	ok, why := s.Confined(cfg)
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
	return s.Hook(cfg, o.opts.RunAs)
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
