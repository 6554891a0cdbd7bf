package orchestrator

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"sortie/internal/agent"
	"sortie/internal/agent/proc/proctest"
	"sortie/internal/config"
	"sortie/internal/store"
	"sortie/internal/testkit/faketracker"
)

// hangingAgent is a mock block whose turns never end (after starting a helper process in
// the agent's process group, which the group kill must remove too).
var hangingAgent = map[string]any{"script": []any{"hang"}, "helper_processes": 1}

// requireNoProcessLeft checks that the process group of every run of an issue is gone.
func requireNoProcessLeft(t *testing.T, h *harness, issueID string) {
	t.Helper()
	for _, r := range h.runs(issueID) {
		if r.PGID == 0 {
			t.Fatalf("run %d of %s recorded no process group, want the agent's", r.ID, issueID)
		}
		proctest.RequireGroupGone(t, r.PGID)
	}
}

func TestReconcile_StalledAgentIsStoppedAndRetriedWithBackoff(t *testing.T) {
	cfg := testConfig(t, func(c *config.Config) {
		c.Agent.StallTimeout = time.Minute
		c.Extensions = map[string]any{"mock": hangingAgent}
	})
	h := newHarness(t, cfg, harnessOptions{pollOnly: true})
	h.trk.Put(issue("STALL-1", "Todo"))
	h.start()
	started := h.awaitEvent("STALL-1", agent.EventSessionStarted)
	if started.ev.PID == 0 {
		t.Fatal("session_started carried no pid")
	}

	h.advance(59 * time.Second)
	o := h.await("a stall check at 59s", func(o Observation) bool {
		return o.Step == StepStallCheck && o.Snapshot.GeneratedAt.Equal(t0.Add(59*time.Second))
	})
	if r, _ := runningOf(o.Snapshot, "STALL-1"); r.Stopping != "" {
		t.Fatalf("stopping %q after 59s of silence, want still running (agent.stall_timeout_ms is 1m)", r.Stopping)
	}

	h.advance(2 * time.Second)
	o = h.awaitStep(StepExit, "STALL-1")
	retry, ok := retryOf(o.Snapshot, "STALL-1")
	if !ok {
		t.Fatalf("after the stall: %s, want a retry of STALL-1", describe(o.Snapshot))
	}
	if got := retry.DueAt.Sub(o.Snapshot.GeneratedAt); retry.Kind != retryFailure || retry.Attempt != 1 || got != 10*time.Second {
		t.Fatalf("retry = %s attempt %d due in %v, want failure attempt 1 due in 10s", retry.Kind, retry.Attempt, got)
	}
	if got := h.statuses("STALL-1"); !slices.Equal(got, []store.RunStatus{store.StatusStalled}) {
		t.Fatalf("run statuses = %v, want [stalled]", got)
	}
	requireNoProcessLeft(t, h, "STALL-1")
}

func TestReconcile_TerminalStateStopsAgentAndRemovesWorkspace(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "before_remove.log")
	cfg := testConfig(t, func(c *config.Config) {
		c.Hooks.BeforeRemove = `echo "$SORTIE_ISSUE_IDENTIFIER $(basename "$PWD")" >> '` + marker + `'`
		c.Extensions = map[string]any{"mock": hangingAgent}
	})
	h := newHarness(t, cfg, harnessOptions{}) // the tracker's watch triggers the tick
	h.trk.Put(issue("TERM-1", "Todo"))
	h.start()
	h.awaitEvent("TERM-1", agent.EventSessionStarted)
	ws := workspacePath(t, cfg, "TERM-1")
	if _, err := os.Stat(ws); err != nil {
		t.Fatalf("workspace while running: %v", err)
	}

	h.setState("TERM-1", "Done")
	o := h.awaitStep(StepExit, "TERM-1")
	if !settled(o.Snapshot, "TERM-1") {
		t.Fatalf("after the stop: %s, want TERM-1 released", describe(o.Snapshot))
	}
	if _, held := heldOf(o.Snapshot, "TERM-1"); held {
		t.Fatalf("TERM-1 held, want released")
	}
	// The removal runs in the background; Run waits for it before returning.
	if err := h.stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if got := h.statuses("TERM-1"); !slices.Equal(got, []store.RunStatus{store.StatusCancelled}) {
		t.Fatalf("run statuses = %v, want [cancelled]", got)
	}
	if _, err := os.Stat(ws); !os.IsNotExist(err) {
		t.Fatalf("workspace %s: stat error %v, want it removed", ws, err)
	}
	data, err := os.ReadFile(marker)
	if err != nil || strings.TrimSpace(string(data)) != "TERM-1 TERM-1" {
		t.Fatalf("before_remove marker = %q (%v), want %q: the hook runs in the workspace before removal", data, err, "TERM-1 TERM-1")
	}
	requireNoProcessLeft(t, h, "TERM-1")
}

func TestReconcile_NeitherActiveNorTerminalStopsAgentAndKeepsWorkspace(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "before_remove.log")
	cfg := testConfig(t, func(c *config.Config) {
		c.Hooks.BeforeRemove = `echo removed >> '` + marker + `'`
		c.Extensions = map[string]any{"mock": hangingAgent}
	})
	h := newHarness(t, cfg, harnessOptions{pollOnly: true})
	h.trk.Put(issue("PARK-1", "Todo"))
	h.start()
	h.awaitEvent("PARK-1", agent.EventSessionStarted)

	h.setState("PARK-1", "Backlog")
	h.advance(cfg.Polling.Interval) // the next poll reconciles
	o := h.awaitStep(StepExit, "PARK-1")
	if !settled(o.Snapshot, "PARK-1") {
		t.Fatalf("after the stop: %s, want PARK-1 released", describe(o.Snapshot))
	}
	if err := h.stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if got := h.statuses("PARK-1"); !slices.Equal(got, []store.RunStatus{store.StatusCancelled}) {
		t.Fatalf("run statuses = %v, want [cancelled]", got)
	}
	if _, err := os.Stat(filepath.Join(workspacePath(t, cfg, "PARK-1"), ".mock-agent")); err != nil {
		t.Fatalf("workspace content: %v, want the workspace kept", err)
	}
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Fatalf("before_remove ran (marker: %v), want no removal", err)
	}
	requireNoProcessLeft(t, h, "PARK-1")
}

// A stop that lands between two turns, while the worker asks the tracker for the
// issue's state, is still a stop: the run is cancelled, not failed, and nothing retries.
func TestReconcile_StopBetweenTurnsIsACancellationNotAFailure(t *testing.T) {
	cfg := testConfig(t, func(c *config.Config) { c.Agent.MaxTurns = 3 })
	h := newHarness(t, cfg, harnessOptions{pollOnly: true})
	h.trk.Put(issue("GAP-1", "Todo"))
	stopping := h.when(func(o Observation) bool {
		r, ok := runningOf(o.Snapshot, "GAP-1")
		return ok && r.Stopping != ""
	})
	// The first state request is the worker's after turn 1 (polls ask for running
	// issues only, and without a watch or a clock move the only poll so far is the
	// start-up one). Before it goes out, a human parks the issue and a poll stops the
	// worker; the poll's own request passes straight through.
	var fired atomic.Bool
	h.trk.BeforeCall(faketracker.OpFetchStates, func(context.Context) {
		if !fired.CompareAndSwap(false, true) {
			return
		}
		if err := h.trk.SetState("GAP-1", "Backlog"); err != nil {
			h.t.Error(err)
		}
		h.orch.Refresh()
		h.waitClosed(stopping, "the poll to stop GAP-1")
	})
	h.start()
	o := h.awaitStep(StepExit, "GAP-1")
	if !settled(o.Snapshot, "GAP-1") {
		t.Fatalf("after the stop: %s, want GAP-1 released (no retry)", describe(o.Snapshot))
	}
	runs := h.runs("GAP-1")
	if len(runs) != 1 || runs[0].Status != store.StatusCancelled {
		t.Fatalf("runs = %+v, want one cancelled run", runs)
	}
}

func TestReconcile_TrackerOutageKeepsAgentsRunning(t *testing.T) {
	cfg := testConfig(t, func(c *config.Config) { c.Extensions = map[string]any{"mock": hangingAgent} })
	h := newHarness(t, cfg, harnessOptions{pollOnly: true})
	h.trk.Put(issue("OUT-1", "Todo"), issue("OUT-2", "In Progress"))
	h.start()
	h.awaitEvent("OUT-1", agent.EventSessionStarted)
	h.awaitEvent("OUT-2", agent.EventSessionStarted)

	// The tracker says OUT-1 is done, but no poll can read it.
	h.trk.FailAlways(faketracker.OpFetchStates, nil)
	if err := h.trk.SetState("OUT-1", "Done"); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		h.advance(cfg.Polling.Interval)
		o := h.awaitStep(StepTick, "")
		for _, id := range []string{"OUT-1", "OUT-2"} {
			r, ok := runningOf(o.Snapshot, id)
			if !ok || r.Stopping != "" {
				t.Fatalf("poll %d with the tracker down: %s, want %s running and not stopping", i+1, describe(o.Snapshot), id)
			}
		}
	}
	if got := h.trk.Failures(faketracker.OpFetchStates); got != 2 {
		t.Fatalf("failed state refreshes = %d, want 2 (one per poll)", got)
	}

	// Once the tracker answers again, the next poll acts on what it says.
	h.trk.Heal(faketracker.OpFetchStates)
	h.advance(cfg.Polling.Interval)
	o := h.awaitStep(StepExit, "OUT-1")
	if !isRunning(o.Snapshot, "OUT-2") {
		t.Fatalf("after recovery: %s, want OUT-2 still running", describe(o.Snapshot))
	}
	if got := h.statuses("OUT-1"); !slices.Equal(got, []store.RunStatus{store.StatusCancelled}) {
		t.Fatalf("OUT-1 run statuses = %v, want [cancelled]", got)
	}
}

// tracker.required_labels: a running issue that loses a required label is stopped, its
// workspace kept, and not dispatched again while the label is missing.
func TestReconcile_LosingARequiredLabelStopsAgentAndKeepsWorkspace(t *testing.T) {
	cfg := testConfig(t, func(c *config.Config) {
		c.Tracker.RequiredLabels = []string{"sortie"}
		c.Extensions = map[string]any{"mock": hangingAgent}
	})
	h := newHarness(t, cfg, harnessOptions{pollOnly: true})
	is := issue("LBL-1", "Todo")
	is.Labels = []string{"sortie"}
	h.trk.Put(is)
	h.start()
	h.awaitEvent("LBL-1", agent.EventSessionStarted)

	is.Labels = []string{"other"}
	h.trk.Put(is)
	h.advance(cfg.Polling.Interval) // the next poll reconciles
	o := h.awaitStep(StepExit, "LBL-1")
	if !settled(o.Snapshot, "LBL-1") {
		t.Fatalf("after the stop: %s, want LBL-1 released", describe(o.Snapshot))
	}
	if err := h.stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if got := h.statuses("LBL-1"); !slices.Equal(got, []store.RunStatus{store.StatusCancelled}) {
		t.Fatalf("run statuses = %v, want [cancelled] (one run, not dispatched again without the label)", got)
	}
	if _, err := os.Stat(filepath.Join(workspacePath(t, cfg, "LBL-1"), ".mock-agent")); err != nil {
		t.Fatalf("workspace content: %v, want the workspace kept", err)
	}
	requireNoProcessLeft(t, h, "LBL-1")
}
