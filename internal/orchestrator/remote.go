package orchestrator

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"sortie/internal/store"
	"sortie/internal/tracker"
)

// remoteResult is the outcome of one attempt to stop the agents a previous daemon left
// on SSH hosts: the error of each waiting issue's attempt, nil once stopped.
type remoteResult map[string]error

// waitForRemote records that the agent of r, a run of a previous daemon, may still run
// on its SSH host, which could not be reached to stop it: the issue is held
// (holdRemote, shown on the dashboard, never persisted: r stays running in the store,
// so a restart finds it again) and no second agent starts on it until the host is
// reached and the agent stopped (retryRemoteStops). Loop only.
func (o *Orchestrator) waitForRemote(r store.Run, err error) {
	o.remoteWaits[r.IssueID] = r
	msg := remoteWaitMessage(r, err)
	o.holds[r.IssueID] = &hold{issueID: r.IssueID, identifier: r.Identifier, reason: holdRemote, message: msg, since: o.clk.Now()}
	o.log.Error("an agent of a previous daemon may still run on an unreachable SSH host; its issue waits instead of getting a second agent",
		"issue_identifier", r.Identifier, "host", r.SSHHost, "remote_pgid", r.RemotePGID, "run_id", r.ID, "error", err)
	o.report(Activity{Kind: ActivityHold, IssueID: r.IssueID, Identifier: r.Identifier, Result: holdRemote, Message: msg})
	o.alert(Alert{Event: "failed", Severity: "critical", Issue: tracker.Issue{ID: r.IssueID, Identifier: r.Identifier},
		Title: r.Identifier + " waits: its agent may still run on " + r.SSHHost + ", which Sortie cannot reach", Message: msg})
}

// remoteWaitMessage is the hold's message for r, whose agent could not be stopped on
// its host because of err.
func remoteWaitMessage(r store.Run, err error) string {
	return fmt.Sprintf("the agent of run %d may still be running on %s (remote process group %d), which Sortie could not reach to stop it: %v; "+
		"the issue waits until the host can be reached (stop the process group there, or bring the host back)", r.ID, r.SSHHost, r.RemotePGID, err)
}

// retryRemoteStops tries again, in the background, to stop the agents issues wait for
// (waitForRemote); at most one attempt runs at a time, each poll starts one. Loop only.
func (o *Orchestrator) retryRemoteStops(ctx context.Context) {
	if len(o.remoteWaits) == 0 || o.remoteBusy || o.opts.StopRemote == nil {
		return
	}
	o.remoteBusy = true
	waits := slices.Collect(maps.Values(o.remoteWaits))
	o.fetches.Go(func() {
		res := remoteResult{}
		for _, r := range waits {
			res[r.IssueID] = o.opts.StopRemote(ctx, r.SSHHost, r.RemotePGID)
		}
		select {
		case o.remotes <- res:
		case <-ctx.Done():
		}
	})
}

// applyRemoteStops resumes the issues whose agent was stopped on its host, as recovery
// would have: the run is marked interrupted and the issue resumes its session. Loop only.
func (o *Orchestrator) applyRemoteStops(ctx context.Context, res remoteResult) {
	o.remoteBusy = false
	for id, err := range res {
		r, ok := o.remoteWaits[id]
		if !ok {
			continue
		}
		if err != nil {
			if h := o.holds[id]; h != nil && h.reason == holdRemote {
				h.message = remoteWaitMessage(r, err)
			}
			continue
		}
		delete(o.remoteWaits, id)
		if h := o.holds[id]; h != nil && h.reason == holdRemote {
			delete(o.holds, id)
		}
		o.log.Warn("stopped an agent a previous daemon left running on an SSH host; its issue resumes", "issue_identifier", r.Identifier,
			"host", r.SSHHost, "remote_pgid", r.RemotePGID, "run_id", r.ID)
		if err := o.opts.Store.MarkInterrupted(ctx, []int64{r.ID}); err != nil {
			o.log.Warn("marking the run interrupted failed", "issue_identifier", r.Identifier, "run_id", r.ID, "error", err)
		}
		o.resumeInterrupted(ctx, r)
	}
}
