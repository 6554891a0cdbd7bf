package orchestrator

import (
	"context"
	"path/filepath"

	"sortie/internal/config"
	"sortie/internal/tracker"
	"sortie/internal/workspace"
)

// sweepEvery is how many ticks pass between workspace sweeps (≈30 minutes at the
// default 30 s poll); one also runs at start-up.
const sweepEvery = 60

// sweepResult is what a background sweep found: workspace directory names whose issue
// (looked up by identifier) is in a terminal state.
type sweepResult struct {
	terminal map[string]string // directory name → state
	err      error
}

// startSweep looks, in the background, for workspaces of issues that reached a terminal
// state while nothing was running them (e.g. while the daemon was down). The loop
// decides what to remove when the result comes back.
func (o *Orchestrator) startSweep(ctx context.Context, cfg *config.Config) {
	if o.sweeping || o.draining {
		return
	}
	mgr, err := o.workspaces(cfg)
	if err != nil {
		return
	}
	o.sweeping = true
	o.bg.Add(1)
	go func() {
		defer o.bg.Done()
		res := sweepResult{terminal: map[string]string{}}
		names, err := mgr.List()
		if err == nil && len(names) > 0 {
			// Directory names are workspace keys: the identifier itself unless it had
			// characters outside [A-Za-z0-9._-]; such keys simply find no issue here.
			var states map[string]string
			states, err = o.opts.Tracker.FetchIssueStatesByIdentifiers(ctx, names)
			for name, state := range states {
				if tracker.StateIn(state, cfg.Tracker.TerminalStates) {
					res.terminal[name] = state
				}
			}
		}
		res.err = err
		select {
		case o.sweeps <- res:
		case <-ctx.Done():
		}
	}()
}

// applySweep removes the workspaces of terminal issues that nothing is running or
// retrying.
func (o *Orchestrator) applySweep(res sweepResult) {
	o.sweeping = false
	if res.err != nil {
		o.log.Warn("workspace sweep failed; will try again later", "error", res.err)
		return
	}
	if len(res.terminal) == 0 {
		return
	}
	busy := map[string]bool{}
	for _, e := range o.running {
		if k, err := workspace.Key(e.issue.Identifier); err == nil {
			busy[k] = true
		}
	}
	for _, r := range o.retrying {
		if k, err := workspace.Key(r.identifier); err == nil {
			busy[k] = true
		}
	}
	cfg := o.opts.Config()
	mgr, err := o.workspaces(cfg)
	if err != nil {
		return
	}
	for name, state := range res.terminal {
		if busy[name] {
			continue
		}
		path := filepath.Join(mgr.Root(), name)
		o.log.Info("removing the workspace of a terminal issue", "workspace", name, "state", state)
		o.cleanWorkspace(cfg, tracker.Issue{Identifier: name}, path, "sweep_cleanup")
	}
}
