package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"sortie/internal/agent"
	"sortie/internal/agent/proc/proctest"
	"sortie/internal/config"
	"sortie/internal/store"
	"sortie/internal/store/sqlite"
	"sortie/internal/testkit/faketracker"
)

// seedStore writes what a previous daemon left behind into the database at path.
func seedStore(t *testing.T, path string, seed func(ctx context.Context, st *sqlite.Store)) {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatalf("opening the store to seed it: %v", err)
	}
	seed(ctx, st)
	if err := st.Close(); err != nil {
		t.Fatalf("closing the seeded store: %v", err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestRecovery_RestartKeepsRetriesHoldsAndResumesInterruptedRuns starts a daemon on a
// database a previous one left: a retry not yet due, one overdue, a hold nobody
// answered, a hold answered while the daemon was down, and a run still marked running.
func TestRecovery_RestartKeepsRetriesHoldsAndResumesInterruptedRuns(t *testing.T) {
	cfg := testConfig(t, func(c *config.Config) { c.Agent.StallTimeout = 0 })
	trk := faketracker.New(cfg.Tracker.ActiveStates...)
	trk.Put(issue("LATER", "Todo"), issue("OVERDUE", "Todo"), issue("HELD", "Todo"),
		issue("ANSWERED", "Todo"), issue("CRASHED", "In Progress"))
	heldIssue, _ := trk.Issue("HELD")
	answered, _ := trk.Issue("ANSWERED")

	seedStore(t, cfg.DBPath, func(ctx context.Context, st *sqlite.Store) {
		must(t, st.SaveRetry(ctx, store.Retry{IssueID: "LATER", Identifier: "LATER", Attempt: 3,
			DueAt: t0.Add(30 * time.Second), Kind: store.RetryFailure, Error: "turn_failed"}))
		must(t, st.SaveRetry(ctx, store.Retry{IssueID: "OVERDUE", Identifier: "OVERDUE", Attempt: 2,
			DueAt: t0.Add(-time.Minute), Kind: store.RetryContinuation, SessionID: "sess-overdue"}))
		must(t, st.SaveHold(ctx, store.Hold{IssueID: "HELD", Identifier: "HELD", Reason: holdBlocked,
			State: heldIssue.State, IssueUpdatedAt: heldIssue.UpdatedAt, Since: t0.Add(-time.Hour)}))
		must(t, st.SaveHold(ctx, store.Hold{IssueID: "ANSWERED", Identifier: "ANSWERED", Reason: holdBlocked,
			State: answered.State, IssueUpdatedAt: "2020-01-01T00:00:00Z", Since: t0.Add(-time.Hour)}))
		_, err := st.StartRun(ctx, store.Run{IssueID: "CRASHED", Identifier: "CRASHED", Attempt: 1, AgentKind: "mock",
			StartedAt: t0.Add(-5 * time.Minute), Progress: store.Progress{SessionID: "sess-crashed"}})
		must(t, err)
	})

	h := newHarness(t, cfg, harnessOptions{pollOnly: true, trk: trk})
	h.start()
	o := h.awaitStep(StepTick, "")
	s := o.Snapshot
	if r, ok := retryOf(s, "LATER"); !ok || !r.DueAt.Equal(t0.Add(30*time.Second)) || r.Kind != retryFailure {
		t.Fatalf("LATER after restart: %s, want a failure retry still due at +30s", describe(s))
	}
	if _, ok := heldOf(s, "HELD"); !ok {
		t.Fatalf("HELD after restart: %s, want still held", describe(s))
	}
	if _, ok := heldOf(s, "ANSWERED"); ok || !isRunning(s, "ANSWERED") {
		t.Fatalf("ANSWERED after restart: %s, want its hold lifted (updated while the daemon was down) and it dispatched", describe(s))
	}
	if r, ok := retryOf(s, "CRASHED"); !ok || r.Kind != retryResume {
		t.Fatalf("CRASHED after restart: %s, want a resume retry", describe(s))
	}
	if got := h.statuses("CRASHED"); len(got) != 1 || got[0] != store.StatusInterrupted {
		t.Fatalf("CRASHED runs = %v, want [interrupted]", got)
	}

	// Overdue retries fire at once (the fake clock fires timers due now on any move).
	h.advance(0)
	h.awaitExits("OVERDUE", "CRASHED")
	for _, c := range []struct {
		id, session string
		attempt     int
	}{{"OVERDUE", "sess-overdue", 2}, {"CRASHED", "sess-crashed", 1}} {
		starts := h.agent.startsOf(c.id)
		if len(starts) != 1 || starts[0].ResumeSessionID != c.session {
			t.Fatalf("%s: %d sessions started, resuming %q; want 1 resuming %q", c.id, len(starts), resumeOf(starts), c.session)
		}
		runs := h.runs(c.id)
		if last := runs[len(runs)-1]; last.Attempt != c.attempt {
			t.Fatalf("%s: resumed run has attempt %d, want %d (the attempt the retry said it would run)", c.id, last.Attempt, c.attempt)
		}
	}

	h.advance(30 * time.Second) // LATER's retry, and a poll
	var polled, exited bool
	o = h.await("LATER's run and a poll", func(o Observation) bool {
		polled = polled || o.Step == StepTick
		exited = exited || (o.Step == StepExit && o.IssueID == "LATER")
		return polled && exited
	})
	if runs := h.runs("LATER"); len(runs) != 1 || runs[0].Attempt != 3 {
		t.Fatalf("LATER runs = %d, want 1 with attempt 3 (the attempt its retry was saved with)", len(runs))
	}
	if _, ok := heldOf(o.Snapshot, "HELD"); !ok || len(h.runs("HELD")) != 0 {
		t.Fatalf("HELD after polls: %s, want still held and never run", describe(o.Snapshot))
	}
}

func resumeOf(starts []agent.StartParams) []string {
	var out []string
	for _, s := range starts {
		out = append(out, s.ResumeSessionID)
	}
	return out
}

// startOrphan starts a long-lived process in its own group, as an agent a dead daemon
// left behind, with env. It is killed at the end of the test if still alive.
func startOrphan(t *testing.T, env ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sleep", "600")
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting the orphan: %v", err)
	}
	waited := make(chan struct{})
	go func() { cmd.Wait(); close(waited) }()
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-waited
	})
	return cmd
}

// TestRecovery_StopsAnOrphanedAgentOnlyIfItCarriesTheRunID: a run left running names a
// process group; recovery stops it only when a member carries that run's SORTIE_RUN_ID
// (the pid may have been reused by an unrelated process).
func TestRecovery_StopsAnOrphanedAgentOnlyIfItCarriesTheRunID(t *testing.T) {
	cfg := testConfig(t, func(c *config.Config) { c.Agent.StallTimeout = 0 })
	var ours, stranger *exec.Cmd
	seedStore(t, cfg.DBPath, func(ctx context.Context, st *sqlite.Store) {
		for _, id := range []string{"MINE", "REUSED"} {
			runID, err := st.StartRun(ctx, store.Run{IssueID: id, Identifier: id, Attempt: 1, AgentKind: "mock", StartedAt: t0})
			must(t, err)
			var cmd *exec.Cmd
			if id == "MINE" {
				cmd = startOrphan(t, "SORTIE_RUN_ID="+strconv.FormatInt(runID, 10))
				ours = cmd
			} else {
				cmd = startOrphan(t, "SORTIE_RUN_ID=999999")
				stranger = cmd
			}
			must(t, st.UpdateRunProcess(ctx, runID, store.Process{PID: cmd.Process.Pid, PGID: cmd.Process.Pid}))
		}
	})
	h := newHarness(t, cfg, harnessOptions{pollOnly: true})
	h.start()
	h.awaitStep(StepTick, "") // recovery is done before the first poll
	proctest.WaitExited(t, ours.Process.Pid, 10*time.Second)
	if !proctest.Alive(stranger.Process.Pid) {
		t.Fatalf("the process without the run's SORTIE_RUN_ID was killed, want it left alone")
	}
	for _, id := range []string{"MINE", "REUSED"} {
		if got := h.statuses(id); len(got) != 1 || got[0] != store.StatusInterrupted {
			t.Fatalf("%s runs = %v, want [interrupted]", id, got)
		}
	}
}

// TestRecovery_AnAgentLeftOnAnUnreachableSSHHostHoldsItsIssue: a previous daemon's
// agent on an SSH host is stopped there before its issue resumes; while the host
// cannot be reached, the issue is held (remote_unreachable) and gets no second agent,
// and once it can, the agent is stopped and the issue resumes its session.
func TestRecovery_AnAgentLeftOnAnUnreachableSSHHostHoldsItsIssue(t *testing.T) {
	cfg := testConfig(t, func(c *config.Config) { c.Agent.StallTimeout = 0 })
	trk := faketracker.New(cfg.Tracker.ActiveStates...)
	trk.Put(issue("FAR", "In Progress"), issue("NEAR", "In Progress"))
	var farRun int64
	seedStore(t, cfg.DBPath, func(ctx context.Context, st *sqlite.Store) {
		for _, id := range []string{"FAR", "NEAR"} {
			runID, err := st.StartRun(ctx, store.Run{IssueID: id, Identifier: id, Attempt: 1, AgentKind: "mock",
				SSHHost: strings.ToLower(id) + ".example:22", StartedAt: t0.Add(-5 * time.Minute),
				Progress: store.Progress{SessionID: "sess-" + id}})
			must(t, err)
			must(t, st.UpdateRunProcess(ctx, runID, store.Process{RemotePGID: 4242}))
			if id == "FAR" {
				farRun = runID
			}
		}
	})
	var mu sync.Mutex
	reachable := map[string]bool{"near.example:22": true}
	var stopped []string
	stop := func(_ context.Context, host string, pgid int) error {
		mu.Lock()
		defer mu.Unlock()
		if !reachable[host] {
			return errors.New("ssh: connect to host " + host + ": No route to host")
		}
		stopped = append(stopped, fmt.Sprintf("%s/%d", host, pgid))
		return nil
	}
	h := newHarness(t, cfg, harnessOptions{pollOnly: true, trk: trk, stopRemote: stop})
	h.start()
	o := h.awaitStep(StepTick, "")
	held, ok := heldOf(o.Snapshot, "FAR")
	if !ok || held.Reason != holdRemote || !strings.Contains(held.Message, "far.example:22") || isRunning(o.Snapshot, "FAR") {
		t.Fatalf("FAR after restart: %s, want held as remote_unreachable naming its host", describe(o.Snapshot))
	}
	if _, ok := retryOf(o.Snapshot, "NEAR"); !ok && !isRunning(o.Snapshot, "NEAR") {
		t.Fatalf("NEAR after restart: %s, want it resumed (its agent was stopped on its host)", describe(o.Snapshot))
	}
	if runs := h.runs("FAR"); len(runs) != 1 || runs[0].Status != store.StatusRunning {
		t.Fatalf("FAR's run = %+v, want it still running in the store until its agent is stopped", runs)
	}

	// Polls go on trying; the host comes back.
	h.advance(cfg.Polling.Interval)
	if o := h.awaitStep(StepRemote, ""); isRunning(o.Snapshot, "FAR") {
		t.Fatalf("FAR dispatched while its old agent may still run: %s", describe(o.Snapshot))
	}
	mu.Lock()
	reachable["far.example:22"] = true
	mu.Unlock()
	h.advance(cfg.Polling.Interval)
	h.await("FAR resumes once its agent is stopped", func(o Observation) bool {
		_, held := heldOf(o.Snapshot, "FAR")
		_, retrying := retryOf(o.Snapshot, "FAR")
		return !held && (retrying || isRunning(o.Snapshot, "FAR"))
	})
	mu.Lock()
	defer mu.Unlock()
	if !slices.Contains(stopped, "far.example:22/4242") || !slices.Contains(stopped, "near.example:22/4242") {
		t.Errorf("stopped = %v, want both remote groups", stopped)
	}
	for _, r := range h.runs("FAR") {
		if r.ID == farRun && r.Status != store.StatusInterrupted {
			t.Errorf("FAR's old run is %s, want interrupted", r.Status)
		}
	}
}
