package orchestrator

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sortie/internal/config"
	"sortie/internal/store"
	"sortie/internal/tracker"
)

// TestHandoff_WhatANormalExitLeadsTo covers the end of a run that had no error.
func TestHandoff_WhatANormalExitLeadsTo(t *testing.T) {
	cases := []struct {
		name        string
		handoff     string
		status      string // what the agent writes to .sortie/status
		transitions []string
		hold        string // hold reason, "" for none
		runStatus   store.RunStatus
	}{
		{name: "turns used up, handoff_state set: moved once and released",
			handoff: "Human Review", transitions: []string{"Human Review"}, runStatus: store.StatusHandedOff},
		{name: "needs-human-review, handoff_state set: moved once and released",
			handoff: "Human Review", status: "needs-human-review", transitions: []string{"Human Review"}, runStatus: store.StatusHandedOff},
		{name: "needs-human-review, no handoff_state: held",
			status: "needs-human-review", hold: holdHumanReview, runStatus: store.StatusSucceeded},
		{name: "blocked, handoff_state set: held, not moved",
			handoff: "Human Review", status: "blocked", hold: holdBlocked, runStatus: store.StatusBlocked},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := testConfig(t, func(cf *config.Config) {
				cf.Tracker.HandoffState = c.handoff
				cf.Agent.MaxTurns = 3
				cf.Extensions = map[string]any{"mock": map[string]any{"status": c.status}}
			})
			h := newHarness(t, cfg, harnessOptions{pollOnly: true})
			h.trk.Put(issue("HO-1", "Todo"))
			h.start()
			o := h.awaitStep(StepExit, "HO-1")
			if _, r := retryOf(o.Snapshot, "HO-1"); r || isRunning(o.Snapshot, "HO-1") {
				t.Fatalf("after the run: %s, want HO-1 neither running nor retrying", describe(o.Snapshot))
			}
			held, isHeld := heldOf(o.Snapshot, "HO-1")
			if held.Reason != c.hold || isHeld != (c.hold != "") {
				t.Fatalf("hold = %q (held %v), want %q", held.Reason, isHeld, c.hold)
			}
			// Later polls change nothing.
			for range 2 {
				h.advance(cfg.Polling.Interval)
				o = h.awaitStep(StepTick, "")
				if isRunning(o.Snapshot, "HO-1") {
					t.Fatalf("a later poll dispatched HO-1 again, want it left alone")
				}
			}
			if got := h.trk.TransitionsOf("HO-1"); !slices.Equal(got, c.transitions) {
				t.Fatalf("transitions = %q, want %q", got, c.transitions)
			}
			runs := h.runs("HO-1")
			if len(runs) != 1 || runs[0].Status != c.runStatus {
				t.Fatalf("runs = %v, want one %s", h.statuses("HO-1"), c.runStatus)
			}
			if c.status != "" && runs[0].Turns != 1 {
				t.Fatalf("turns = %d, want 1: the agent's status ends the run", runs[0].Turns)
			}
		})
	}
}

// TestHandoff_TerminalStateAfterTheLastTurnWinsOverHandoff: the issue is closed while
// the last turn runs (by the agent itself, say); no poll sees it before the worker does.
func TestHandoff_TerminalStateAfterTheLastTurnWinsOverHandoff(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "before_remove.log")
	cfg := testConfig(t, func(c *config.Config) {
		c.Tracker.HandoffState = "Human Review"
		c.Hooks.BeforeRemove = `echo "$SORTIE_ISSUE_IDENTIFIER" >> '` + marker + `'`
	})
	h := newHarness(t, cfg, harnessOptions{pollOnly: true})
	h.trk.Put(issue("CLOSE-1", "Todo"))
	h.agent.afterTurn = func(ident string, turn int) {
		if err := h.trk.SetState("CLOSE-1", "Done"); err != nil {
			t.Error(err)
		}
	}
	h.start()
	o := h.awaitStep(StepExit, "CLOSE-1")
	if !settled(o.Snapshot, "CLOSE-1") {
		t.Fatalf("after the run: %s, want CLOSE-1 released", describe(o.Snapshot))
	}
	if err := h.stop(); err != nil { // waits for the workspace removal
		t.Fatalf("Run: %v", err)
	}
	if got := h.trk.TransitionsOf("CLOSE-1"); len(got) != 0 {
		t.Fatalf("transitions = %q, want none: a terminal issue is not handed off", got)
	}
	if is, _ := h.trk.Issue("CLOSE-1"); is.State != "Done" {
		t.Fatalf("tracker state = %q, want Done", is.State)
	}
	if got := h.statuses("CLOSE-1"); !slices.Equal(got, []store.RunStatus{store.StatusSucceeded}) {
		t.Fatalf("runs = %v, want [succeeded]", got)
	}
	// The run row names its workspace from the start (crash recovery needs it), even
	// after the workspace is gone.
	if ws, want := h.runs("CLOSE-1")[0].Workspace, filepath.Join(cfg.Workspace.Root, "CLOSE-1"); ws != want {
		t.Fatalf("run workspace = %q, want %q", ws, want)
	}
	if _, err := os.Stat(workspacePath(t, cfg, "CLOSE-1")); !os.IsNotExist(err) {
		t.Fatalf("workspace: stat error %v, want it removed (the issue is terminal)", err)
	}
	if data, _ := os.ReadFile(marker); strings.TrimSpace(string(data)) != "CLOSE-1" {
		t.Fatalf("before_remove marker = %q, want %q", data, "CLOSE-1")
	}
}

// TestHold_BlockedIsHeldUntilAHumanActs: an agent that reports blocked is never
// re-dispatched by polls alone, even though its issue stays active (and even though the
// run itself moved it to in_progress_state); a human's change lifts the hold.
func TestHold_BlockedIsHeldUntilAHumanActs(t *testing.T) {
	cases := []struct {
		name string
		edit func(h *harness)
	}{
		{name: "state changed", edit: func(h *harness) { h.trk.SetState("BLK-1", "Todo") }},
		{name: "comment added", edit: func(h *harness) { h.trk.AddComment("BLK-1", "alice", "use the staging DB") }},
		{name: "description edited", edit: func(h *harness) {
			h.trk.Update("BLK-1", func(is *tracker.Issue) { is.Description = "clarified" })
		}},
		{name: "left the active states and came back", edit: func(h *harness) {
			h.trk.SetState("BLK-1", "Backlog")
			h.advance(h.cfg.Load().Polling.Interval)
			h.awaitStep(StepTick, "")
			h.trk.SetState("BLK-1", "In Progress")
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := testConfig(t, func(cf *config.Config) {
				cf.Tracker.InProgressState = "In Progress"
				cf.Extensions = map[string]any{"mock": map[string]any{"status": "blocked"}}
			})
			h := newHarness(t, cfg, harnessOptions{pollOnly: true})
			h.trk.Put(issue("BLK-1", "Todo"))
			h.start()
			o := h.awaitStep(StepExit, "BLK-1")
			if held, ok := heldOf(o.Snapshot, "BLK-1"); !ok || held.Reason != holdBlocked {
				t.Fatalf("after the run: %s, want BLK-1 held as blocked", describe(o.Snapshot))
			}
			for range 3 {
				h.advance(cfg.Polling.Interval)
				o = h.awaitStep(StepTick, "")
				if _, ok := heldOf(o.Snapshot, "BLK-1"); !ok || isRunning(o.Snapshot, "BLK-1") {
					t.Fatalf("a poll with no human change: %s, want BLK-1 still held", describe(o.Snapshot))
				}
			}
			if n := len(h.runs("BLK-1")); n != 1 {
				t.Fatalf("runs while held = %d, want 1", n)
			}

			c.edit(h)
			h.advance(cfg.Polling.Interval)
			h.awaitStep(StepExit, "BLK-1") // dispatched again; the agent blocks again
			if got := h.statuses("BLK-1"); !slices.Equal(got, []store.RunStatus{store.StatusBlocked, store.StatusBlocked}) {
				t.Fatalf("runs = %v, want [blocked blocked]", got)
			}
			if got := h.trk.TransitionsOf("BLK-1"); slices.Contains(got, "Human Review") {
				t.Fatalf("transitions = %q, want no handoff of a blocked issue", got)
			}
		})
	}
}

// TestHold_ErrorsRetryingCannotFixAreHeldUntilTheWorkflowChanges covers the
// non-retryable errors, and that a configuration change lifts error holds but not a
// hold for a human.
func TestHold_ErrorsRetryingCannotFixAreHeldUntilTheWorkflowChanges(t *testing.T) {
	cases := []struct {
		name     string
		mutate   func(*config.Config)
		wantKind string
	}{
		{name: "agent binary missing", wantKind: "agent_not_found", mutate: func(c *config.Config) {
			c.Agent.Command = filepath.Join(c.Dir, "no-such-agent")
		}},
		{name: "agent asks for input", wantKind: "turn_input_required", mutate: func(c *config.Config) {
			c.Extensions = map[string]any{"mock": map[string]any{"issues": map[string]any{
				"ERR-1": map[string]any{"script": []any{"input_required"}},
				"HUM-1": map[string]any{"status": "blocked"},
			}}}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := testConfig(t, c.mutate)
			h := newHarness(t, cfg, harnessOptions{pollOnly: true})
			h.trk.Put(issue("ERR-1", "Todo"))
			if cfg.Agent.Command == "" {
				h.trk.Put(issue("HUM-1", "Todo"))
			}
			h.start()
			ids := []string{"ERR-1"}
			if cfg.Agent.Command == "" {
				ids = append(ids, "HUM-1")
			}
			o := h.awaitExits(ids...)
			held, ok := heldOf(o.Snapshot, "ERR-1")
			if !ok || held.Reason != holdError || !strings.Contains(held.Message, c.wantKind) {
				t.Fatalf("after the run: %s (message %q), want ERR-1 held for an error naming %s", describe(o.Snapshot), held.Message, c.wantKind)
			}
			for range 2 {
				h.advance(cfg.Polling.Interval)
				o = h.awaitStep(StepTick, "")
				if _, ok := heldOf(o.Snapshot, "ERR-1"); !ok {
					t.Fatalf("a poll: %s, want ERR-1 still held (no retry)", describe(o.Snapshot))
				}
			}
			if got := h.statuses("ERR-1"); !slices.Equal(got, []store.RunStatus{store.StatusFailed}) {
				t.Fatalf("runs = %v, want [failed]", got)
			}

			// A new workflow configuration lifts the error hold at once.
			h.obs.skip()
			h.mutateConfig(func(c *config.Config) { c.Prompt += "\n(edited)" })
			o = h.awaitStep(StepExit, "ERR-1")
			if got := h.statuses("ERR-1"); !slices.Equal(got, []store.RunStatus{store.StatusFailed, store.StatusFailed}) {
				t.Fatalf("runs after the workflow changed = %v, want [failed failed]", got)
			}
			if cfg.Agent.Command == "" {
				if _, ok := heldOf(o.Snapshot, "HUM-1"); !ok {
					t.Fatalf("after the workflow changed: %s, want HUM-1 (blocked) still held", describe(o.Snapshot))
				}
				if n := len(h.runs("HUM-1")); n != 1 {
					t.Fatalf("runs of HUM-1 = %d, want 1", n)
				}
			}
		})
	}
}
