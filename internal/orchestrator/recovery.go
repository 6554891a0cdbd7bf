package orchestrator

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"sortie/internal/store"
)

// recover rebuilds loop state from the store before the first tick: agent process
// groups left running by a daemon that died are stopped and their runs marked
// interrupted (their issues resume), persisted retries are re-armed with their
// remaining delay (past-due ones fire at once) and keep their claims, and holds are
// restored. Nothing is dispatched before this completes.
func (o *Orchestrator) recover(ctx context.Context) error {
	runs, err := o.opts.Store.RunsInProgress(ctx)
	if err != nil {
		return err
	}
	retries, err := o.opts.Store.LoadRetries(ctx)
	if err != nil {
		return err
	}
	holds, err := o.opts.Store.LoadHolds(ctx)
	if err != nil {
		return err
	}
	now := o.clk.Now()
	for _, h := range holds {
		o.holds[h.IssueID] = &hold{issueID: h.IssueID, identifier: h.Identifier, reason: h.Reason,
			message: h.Message, state: h.State, updatedAt: h.IssueUpdatedAt, since: h.Since}
	}
	for _, r := range retries {
		o.scheduleRetry(ctx, retryEntry{issueID: r.IssueID, identifier: r.Identifier, attempt: r.Attempt,
			failures: o.trailingFailures(ctx, r.IssueID), kind: string(r.Kind), reason: r.Error,
			sessionID: r.SessionID, host: r.SSHHost}, r.DueAt.Sub(now))
	}
	var ids []int64
	for _, r := range runs {
		if r.PGID > 0 {
			if stopped := stopOrphanGroup(r.PGID, r.ID, 5*time.Second); stopped {
				o.log.Warn("stopped an agent left running by a previous daemon", "issue_identifier", r.Identifier,
					"pgid", r.PGID, "run_id", r.ID)
			}
		}
		ids = append(ids, r.ID)
		if _, ok := o.retrying[r.IssueID]; ok {
			continue
		}
		if _, ok := o.holds[r.IssueID]; ok {
			continue
		}
		o.scheduleRetry(ctx, retryEntry{issueID: r.IssueID, identifier: r.Identifier, attempt: r.Attempt,
			kind: retryResume, reason: "interrupted: the previous daemon stopped while this ran",
			sessionID: r.SessionID, host: r.SSHHost}, 0)
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

// stopOrphanGroup stops process group pgid if, and only if, one of its members carries
// SORTIE_RUN_ID=runID in its environment — so a recycled pid is never killed. It sends
// SIGTERM, waits up to grace, then SIGKILL. It reports whether it signalled anything.
func stopOrphanGroup(pgid int, runID int64, grace time.Duration) bool {
	if !groupBelongsToRun(pgid, runID) {
		return false
	}
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) {
		if syscall.Kill(-pgid, 0) != nil {
			return true
		}
		time.Sleep(50 * time.Millisecond) // polling a foreign process group: no event to wait on
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	return true
}

// groupBelongsToRun scans /proc for members of process group pgid and checks their
// environment for the run's marker.
func groupBelongsToRun(pgid int, runID int64) bool {
	marker := []byte("SORTIE_RUN_ID=" + strconv.FormatInt(runID, 10) + "\x00")
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return false
	}
	for _, ent := range entries {
		pid, err := strconv.Atoi(ent.Name())
		if err != nil {
			continue
		}
		if g, err := procPGID(pid); err != nil || g != pgid {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", ent.Name(), "environ"))
		if err != nil {
			continue
		}
		if bytes.Contains(append(env, 0), marker) {
			return true
		}
	}
	return false
}

// procPGID reads a process's group id from /proc/<pid>/stat (field 5, after the
// parenthesised command name, which may itself contain spaces or parentheses).
func procPGID(pid int) (int, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("malformed stat for pid %d", pid)
	}
	fields := strings.Fields(s[i+1:])
	if len(fields) < 3 {
		return 0, fmt.Errorf("malformed stat for pid %d", pid)
	}
	return strconv.Atoi(fields[2])
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
	for _, e := range o.running {
		if e.stop == stopNone {
			o.stopWorker(e, stopShutdown)
		}
	}
	deadline := time.NewTimer(o.opts.ShutdownTimeout)
	defer deadline.Stop()
	for len(o.running) > 0 {
		select {
		case ex := <-o.exits:
			o.handleExit(ctx, ex)
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
	o.workers.Wait()
	o.bg.Wait()
}
