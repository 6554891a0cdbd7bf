package orchestrator

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"sortie/internal/config"
	"sortie/internal/workflow/engine"
)

// TestHandoff_RefusedWhileAGateHasNoHumanAnswer: a run that would hand its issue to
// humans (tracker.handoff_state) while its workflow session skipped a blocking
// checkpoint does not: the issue is held for a human, with the reason, and the refusal
// is in the session's trace. A poll does not lift the hold: the run's own tracker
// changes are in its baseline.
func TestHandoff_RefusedWhileAGateHasNoHumanAnswer(t *testing.T) {
	cases := []struct {
		name     string
		blockers []engine.Blocker
		err      error
		held     string // substring of the hold message; "" for a hand-off
	}{
		{name: "unanswered gate", blockers: []engine.Blocker{reviewGate}, held: "review/approve-pr"},
		{name: "check failed", err: errors.New("database is locked"), held: "could not be checked (database is locked)"},
		{name: "every gate answered", held: ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := &gateChecker{blockers: c.blockers, err: c.err}
			h := newHarness(t, checkpointConfig(t), harnessOptions{pollOnly: true, checkpoints: true, engine: g})
			const id = "GATE-1"
			h.trk.Put(issue(id, "Todo"))
			h.start()
			o := h.awaitStep(StepExit, id)
			held, isHeld := heldOf(o.Snapshot, id)
			if c.held == "" {
				if isHeld || !slices.Equal(h.trk.TransitionsOf(id), []string{"Human Review"}) {
					t.Fatalf("with every gate answered: %s, transitions %q; want the hand-off", describe(o.Snapshot), h.trk.TransitionsOf(id))
				}
				return
			}
			if !isHeld || held.Reason != holdCheckpointSkipped || !strings.Contains(held.Message, c.held) {
				t.Fatalf("after the run: %s (%q); want %s held as %s saying %q", describe(o.Snapshot), held.Message, id, holdCheckpointSkipped, c.held)
			}
			if got := h.trk.TransitionsOf(id); len(got) != 0 {
				t.Fatalf("transitions %q, want none: the hand-off was refused", got)
			}
			g.mu.Lock()
			traced := slices.Clone(g.traced)
			g.mu.Unlock()
			if c.err == nil && (len(traced) != 1 || !strings.Contains(traced[0], "would move the issue to Human Review")) {
				t.Fatalf("trace entries %q, want the refused hand-off", traced)
			}
			h.advance(config.DefaultPollingInterval)
			o = h.awaitStep(StepTick, "")
			if held, ok := heldOf(o.Snapshot, id); !ok || held.Reason != holdCheckpointSkipped {
				t.Fatalf("a poll changed the hold: %s", describe(o.Snapshot))
			}
		})
	}
}

// TestHandoff_NeedsHumanReviewWithoutAHandoffState: the agent's needs-human-review
// hands the issue to humans too; with a gate unanswered the hold says so.
func TestHandoff_NeedsHumanReviewWithoutAHandoffState(t *testing.T) {
	cfg := checkpointConfig(t)
	cfg.Tracker.HandoffState = ""
	cfg.Extensions = map[string]any{"mock": map[string]any{"status": "needs-human-review"}}
	g := &gateChecker{blockers: []engine.Blocker{reviewGate}}
	h := newHarness(t, cfg, harnessOptions{pollOnly: true, checkpoints: true, engine: g})
	const id = "GATE-2"
	h.trk.Put(issue(id, "Todo"))
	h.start()
	o := h.awaitStep(StepExit, id)
	if held, ok := heldOf(o.Snapshot, id); !ok || held.Reason != holdCheckpointSkipped || !strings.Contains(held.Message, "review/approve-pr") {
		t.Fatalf("after needs-human-review: %s; want %s held as %s", describe(o.Snapshot), id, holdCheckpointSkipped)
	}
}

// gateChecker is a workflow engine's hand-off side (checkpoint.Engine) with scripted
// blockers.
type gateChecker struct {
	mu       sync.Mutex
	blockers []engine.Blocker
	err      error
	traced   []string // how, per refused hand-off
	asked    []string // want, per HandoffBlockers call
}

func (g *gateChecker) HandoffBlockers(_ context.Context, _, want string) ([]engine.Blocker, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.asked = append(g.asked, want)
	return g.blockers, g.err
}

func (g *gateChecker) TraceHandoffRefused(_ context.Context, _ engine.Caller, _ []engine.Blocker, how string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.traced = append(g.traced, how)
}

func (g *gateChecker) ForgetIssue(string) []string { return nil }

var reviewGate = engine.Blocker{SessionID: "sid-1", Workflow: "work-package", Activity: "review", Checkpoint: "approve-pr"}
