package orchestrator

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"

	"sortie/internal/agent/supervise"
	"sortie/internal/confine"
	"sortie/internal/store"
)

// recover rebuilds loop state from the store before the first tick: agent process
// groups left running by a daemon that died are stopped and their runs marked
// interrupted (their issues resume), persisted retries are re-armed with their
// remaining delay (past-due ones fire at once) and keep their claims, and holds are
// restored. Nothing is dispatched before this completes.
func (o *Orchestrator) recover(ctx context.Context) error {
	var runs []store.Run
	var retries []store.Retry
	var err error
	if o.opts.Cluster != nil {
		// In a cluster, what is left running belongs to a daemon that is alive, or to one
		// whose lease has expired: only that is this daemon's to take over (and every
		// poll takes over what expires later).
		runs, retries, err = o.opts.Cluster.Adopt(ctx)
	} else {
		runs, err = o.opts.Store.RunsInProgress(ctx)
		if err == nil {
			retries, err = o.opts.Store.LoadRetries(ctx)
		}
	}
	if err != nil {
		return err
	}
	holds, err := o.opts.Store.LoadHolds(ctx)
	if err != nil {
		return err
	}
	if cp := o.opts.Checkpoints; cp != nil {
		if err := cp.Recover(ctx); err != nil {
			return fmt.Errorf("loading pending checkpoints: %w", err)
		}
	}
	now := o.clk.Now()
	for _, h := range holds {
		o.holds[h.IssueID] = holdFromStore(h)
	}
	for _, r := range retries {
		o.scheduleRetry(ctx, o.retryFromStore(ctx, r), r.DueAt.Sub(now))
	}
	return o.resumeLeftRuns(ctx, runs, o.stopLeftRuns(ctx, runs))
}

// holdFromStore is the loop's copy of a persisted hold.
func holdFromStore(h store.Hold) *hold {
	return &hold{issueID: h.IssueID, identifier: h.Identifier, reason: h.Reason,
		message: h.Message, state: h.State, updatedAt: h.IssueUpdatedAt, since: h.Since}
}

// retryFromStore is the loop's entry of a persisted retry, its failure count read back
// from the issue's runs.
func (o *Orchestrator) retryFromStore(ctx context.Context, r store.Retry) retryEntry {
	return retryEntry{issueID: r.IssueID, identifier: r.Identifier, attempt: r.Attempt - 1,
		failures: o.trailingFailures(ctx, r.IssueID), kind: string(r.Kind), reason: r.Error,
		sessionID: r.SessionID, host: r.SSHHost}
}

// stopLeftRuns stops what is left of runs a daemon that died left running: their
// process groups, what their agents started outside them (their cgroups, the processes
// carrying their marks), and their agents on SSH hosts, whose errors it returns by
// index. It may take seconds: never call it on the loop once Run has started. In a
// cluster only the runs started on this host are stopped here (another host's agents
// died with it, or its own daemon stops them), and only their own cgroups and
// temporary directories are removed: the other daemons on this host share the trees.
func (o *Orchestrator) stopLeftRuns(ctx context.Context, runs []store.Run) []error {
	cfg := o.opts.Config()
	host, _ := os.Hostname()
	local := runs
	if o.opts.Cluster != nil {
		local = nil
		for _, r := range runs {
			if r.DaemonHost == host {
				local = append(local, r)
			}
		}
	}
	var orphans []orphanGroup
	for _, r := range local {
		if r.PGID > 0 {
			orphans = append(orphans, orphanGroup{pgid: r.PGID, runID: r.ID, identifier: r.Identifier})
		}
	}
	for _, g := range stopOrphanGroups(orphans, 5*time.Second) {
		o.log.Warn("stopped an agent left running by a previous daemon", "issue_identifier", g.identifier,
			"pgid", g.pgid, "run_id", g.runID)
	}
	// What those agents started outside their group and their supervisors did not get
	// to stop (agent.keep_processes aside): everything in their runs' cgroups, then
	// what the run's marks in their environment find.
	switch t := o.opts.Cgroups; {
	case t == nil:
	case cfg.Agent.KeepProcesses:
		t.RemoveEmpty()
	case o.opts.Cluster != nil:
		for _, r := range local {
			if n, err := t.KillRun(r.ID, supervise.DefaultGrace); err != nil || n > 0 {
				o.log.Warn("killed what an agent of a stopped daemon left in its run's cgroup", "run_id", r.ID, "count", n, "error", err)
			}
		}
	default:
		if n, err := t.KillAll(supervise.DefaultGrace); err != nil || n > 0 {
			o.log.Warn("killed what agents of a previous daemon left in their runs' cgroups", "count", n, "error", err)
		}
	}
	for _, r := range local {
		if r.SSHHost != "" || r.Workspace == "" || cfg.Agent.KeepProcesses {
			continue
		}
		if n := supervise.StopMarked(supervise.DefaultGrace, "SORTIE_RUN_ID="+strconv.FormatInt(r.ID, 10),
			"SORTIE_WORKSPACE="+r.Workspace); n > 0 {
			o.log.Warn("stopped processes an agent of a previous daemon left running", "issue_identifier", r.Identifier,
				"run_id", r.ID, "count", n)
		}
	}
	// Their runs' temporary directories went with them (their agents are stopped
	// first, above, so nothing writes there any more).
	if o.opts.Cluster != nil {
		ids := make([]int64, len(local))
		for i, r := range local {
			ids[i] = r.ID
		}
		confine.RemoveRunTmpOf(cfg, ids)
	} else if err := confine.RemoveRunTmp(cfg); err != nil {
		o.log.Warn("removing the temporary directories of a previous daemon's runs failed", "error", err)
	}
	// An agent on an SSH host outlives its local ssh: it is stopped there first. The
	// hosts are asked at once: an unreachable one takes its connect timeout.
	return o.stopRemotes(ctx, runs)
}

// resumeLeftRuns marks the runs stopLeftRuns stopped interrupted and queues their
// issues to resume with their sessions. A run whose SSH host could not be reached
// (remoteErrs) stays running, and its issue waits for the host (remote.go) instead of
// getting a second agent.
func (o *Orchestrator) resumeLeftRuns(ctx context.Context, runs []store.Run, remoteErrs []error) error {
	var ids []int64
	for i, r := range runs {
		if r.SSHHost != "" && r.RemotePGID > 0 && o.opts.StopRemote != nil {
			if err := remoteErrs[i]; err != nil {
				o.waitForRemote(r, err)
				continue
			}
			o.log.Warn("stopped an agent a previous daemon left running on an SSH host", "issue_identifier", r.Identifier,
				"host", r.SSHHost, "remote_pgid", r.RemotePGID, "run_id", r.ID)
		}
		ids = append(ids, r.ID)
		o.resumeInterrupted(ctx, r)
	}
	if len(ids) > 0 {
		if err := o.opts.Store.MarkInterrupted(ctx, ids); err != nil {
			return err
		}
		o.log.Warn("runs interrupted by a previous daemon found; their issues resume", "count", len(ids))
	}
	return nil
}

// trailingFailures counts an issue's most recent consecutive failed runs, so the
// agent.max_retries budget survives a restart without being stored twice.
func (o *Orchestrator) trailingFailures(ctx context.Context, issueID string) int {
	limit := o.opts.Config().Agent.MaxRetries + 1
	if limit < 2 {
		return 0
	}
	runs, err := o.opts.Store.RunsForIssue(ctx, issueID, limit)
	if err != nil {
		o.log.Warn("reading run history for the retry budget failed", "issue_id", issueID, "error", err)
		return 0
	}
	n := 0
	for _, r := range runs {
		if r.Status != store.StatusFailed && r.Status != store.StatusStalled && r.Status != store.StatusTimedOut {
			break
		}
		n++
	}
	return n
}

// orphanGroup is the process group of a run a dead daemon left running.
type orphanGroup struct {
	pgid       int
	runID      int64
	identifier string
}

// stopOrphanGroups stops the groups that still belong to their run — a member carries
// SORTIE_RUN_ID=<run id> in its environment, so a recycled pid is never signalled. All of
// them get SIGTERM at once, then SIGKILL after grace if any member is still alive. It
// returns the groups it signalled.
func stopOrphanGroups(groups []orphanGroup, grace time.Duration) []orphanGroup {
	var live []orphanGroup
	for _, g := range groups {
		if groupBelongsToRun(g.pgid, g.runID) {
			live = append(live, g)
			_ = syscall.Kill(-g.pgid, syscall.SIGTERM)
		}
	}
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) {
		alive := false
		for _, g := range live {
			if groupAlive(g.pgid) {
				alive = true
				break
			}
		}
		if !alive {
			return live
		}
		time.Sleep(20 * time.Millisecond) // polling foreign processes: there is nothing to wait on
	}
	for _, g := range live {
		_ = syscall.Kill(-g.pgid, syscall.SIGKILL)
	}
	return live
}

// groupAlive reports whether process group pgid has a member that is not a zombie.
// Orphaned agents are reaped by init, which may take a while (or never, when sortie is
// itself pid 1 in a container): a zombie can do no more work, so it counts as gone.
func groupAlive(pgid int) bool {
	return len(supervise.Group(pgid)) > 0
}

// groupBelongsToRun checks the environment of the members of process group pgid for
// the run's marker.
func groupBelongsToRun(pgid int, runID int64) bool {
	marker := "SORTIE_RUN_ID=" + strconv.FormatInt(runID, 10)
	for _, pid := range supervise.Group(pgid) {
		if supervise.HasEnv(pid, marker) {
			return true
		}
	}
	return false
}

// stopRemotes stops, concurrently, the remote process groups of the runs on SSH hosts
// (Options.StopRemote) and returns each run's error by index.
func (o *Orchestrator) stopRemotes(ctx context.Context, runs []store.Run) []error {
	errs := make([]error, len(runs))
	if o.opts.StopRemote == nil {
		return errs
	}
	var wg sync.WaitGroup
	for i, r := range runs {
		if r.SSHHost == "" || r.RemotePGID <= 0 {
			continue
		}
		wg.Go(func() { errs[i] = o.opts.StopRemote(ctx, r.SSHHost, r.RemotePGID) })
	}
	wg.Wait()
	return errs
}

// resumeInterrupted queues the issue of r, a run a previous daemon left running, to
// resume at once with its agent session, unless it is already retrying or held.
func (o *Orchestrator) resumeInterrupted(ctx context.Context, r store.Run) {
	if _, ok := o.retrying[r.IssueID]; ok {
		return
	}
	if _, ok := o.holds[r.IssueID]; ok {
		return
	}
	// A resume runs the same attempt again: the run row's 1-based Attempt is the
	// loop's 0-based counter plus one.
	o.scheduleRetry(ctx, retryEntry{issueID: r.IssueID, identifier: r.Identifier, attempt: r.Attempt - 1,
		kind: retryResume, reason: "interrupted: the previous daemon stopped while this ran",
		sessionID: r.SessionID, host: r.SSHHost}, 0)
}

func (o *Orchestrator) persistHold(h *hold) {
	if err := o.opts.Store.SaveHold(context.Background(), store.Hold{
		IssueID: h.issueID, Identifier: h.identifier, Reason: h.reason, Message: h.message,
		State: h.state, IssueUpdatedAt: h.updatedAt, Since: h.since,
	}); err != nil {
		o.log.Error("persisting hold failed; it will not survive a restart", "issue_identifier", h.identifier, "error", err)
	}
}

func (o *Orchestrator) deleteHold(id string) {
	if err := o.opts.Store.DeleteHold(context.Background(), id); err != nil {
		o.log.Warn("deleting persisted hold failed", "issue_id", id, "error", err)
	}
}

// shutdown stops every worker gracefully and waits (bounded) for their exits, so each
// run is recorded and each interrupted issue has a resume retry persisted.
func (o *Orchestrator) shutdown(ctx context.Context) {
	o.draining = true
	if o.pollTimer != nil {
		o.pollTimer.Stop()
	}
	if o.stallTimer != nil {
		o.stallTimer.Stop()
	}
	for _, e := range o.running {
		if e.stop == stopNone {
			o.stopWorker(e, stopShutdown)
		}
	}
	o.publish()
	deadline := time.NewTimer(o.opts.ShutdownTimeout)
	defer deadline.Stop()
	for len(o.running) > 0 {
		select {
		case ex := <-o.exits:
			o.handleExit(ctx, ex)
			o.publish()
		case <-deadline.C:
			o.log.Error("workers did not exit within the shutdown timeout", "running", len(o.running))
			return
		}
	}
	for _, r := range o.retrying {
		if r.timer != nil {
			r.timer.Stop()
		}
	}
	if o.renewTimer != nil {
		o.renewTimer.Stop()
	}
	o.workers.Wait()
	o.bg.Wait()
	// Every run gave back its own temporary directory; the kept ones go, and their
	// parent too, when empty (a daemon of a cluster may share it with another on
	// this machine).
	o.runTmp.Drain()
	_ = os.Remove(confine.RunTmpRoot(o.opts.Config()))
	if c := o.opts.Cluster; c != nil {
		// The others take over this daemon's retries and resumes at once.
		if err := c.Leave(ctx); err != nil {
			o.log.Warn("leaving the cluster failed; the others take over this daemon's issues once its leases lapse", "error", err)
		}
	}
}
