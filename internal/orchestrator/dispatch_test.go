package orchestrator

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"sortie/internal/config"
	"sortie/internal/store"
	"sortie/internal/testkit/faketracker"
	"sortie/internal/tracker"
)

func TestSortForDispatch_PriorityThenOldestThenIdentifier(t *testing.T) {
	is := func(ident string, p *int, created string) tracker.Issue {
		return tracker.Issue{ID: ident, Identifier: ident, Priority: p, CreatedAt: created}
	}
	cases := []struct {
		name string
		in   []tracker.Issue
		want []string
	}{
		{
			name: "priority ascending",
			in:   []tracker.Issue{is("A", prio(3), ""), is("B", prio(1), ""), is("C", prio(2), "")},
			want: []string{"B", "C", "A"},
		},
		{
			name: "no priority last",
			in:   []tracker.Issue{is("A", nil, "2026-01-01T00:00:00Z"), is("B", prio(4), "2026-02-01T00:00:00Z"), is("C", prio(0), "")},
			want: []string{"C", "B", "A"},
		},
		{
			name: "same priority: oldest created_at first",
			in: []tracker.Issue{is("A", prio(2), "2026-01-03T00:00:00Z"), is("B", prio(2), "2026-01-01T00:00:00Z"),
				is("C", prio(2), "2026-01-02T00:00:00Z")},
			want: []string{"B", "C", "A"},
		},
		{
			name: "unknown created_at after known ones",
			in:   []tracker.Issue{is("A", nil, ""), is("B", nil, "2026-01-05T00:00:00Z")},
			want: []string{"B", "A"},
		},
		{
			name: "ties broken by identifier",
			in:   []tracker.Issue{is("C", prio(1), "t"), is("A", prio(1), "t"), is("B", prio(1), "t")},
			want: []string{"A", "B", "C"},
		},
		{
			name: "all nil priorities and dates: identifier",
			in:   []tracker.Issue{is("Z-2", nil, ""), is("Z-10", nil, ""), is("A-1", nil, "")},
			want: []string{"A-1", "Z-10", "Z-2"},
		},
		{
			name: "mixed",
			in: []tracker.Issue{is("E", nil, ""), is("D", nil, "2026-01-01T00:00:00Z"), is("C", prio(2), ""),
				is("B", prio(2), "2026-01-09T00:00:00Z"), is("A", prio(1), "")},
			want: []string{"A", "B", "C", "D", "E"},
		},
		{name: "empty", in: nil, want: nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			orig := slices.Clone(c.in)
			out := SortForDispatch(c.in)
			var got []string
			for _, is := range out {
				got = append(got, is.Identifier)
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("order = %v, want %v", got, c.want)
			}
			for i := range orig {
				if c.in[i].ID != orig[i].ID {
					t.Fatalf("input modified: %v, want it unchanged", c.in)
				}
			}
		})
	}
}

// dispatchOrder returns the identifiers of all runs in the order they started.
func dispatchOrder(t *testing.T, h *harness) []string {
	t.Helper()
	runs, err := h.st.RecentRuns(t.Context(), 1000)
	if err != nil {
		t.Fatalf("RecentRuns: %v", err)
	}
	slices.Reverse(runs)
	var out []string
	for _, r := range runs {
		out = append(out, r.Identifier)
	}
	return out
}

func TestDispatch_OneSlotFollowsDispatchOrder(t *testing.T) {
	cfg := testConfig(t, func(c *config.Config) {
		c.Agent.MaxConcurrentAgents = 1
		c.Tracker.HandoffState = "Human Review"
	})
	h := newHarness(t, cfg, harnessOptions{exitWhenIdle: true})
	// Put in an order unrelated to the expected one.
	h.trk.Put(
		tracker.Issue{ID: "i1", Identifier: "NOPRIO-OLD", Title: "t", State: "Todo", CreatedAt: "2025-01-01T00:00:00Z"},
		tracker.Issue{ID: "i2", Identifier: "P2-NEW", Title: "t", State: "Todo", Priority: prio(2), CreatedAt: "2026-02-01T00:00:00Z"},
		tracker.Issue{ID: "i3", Identifier: "P1", Title: "t", State: "In Progress", Priority: prio(1), CreatedAt: "2026-03-01T00:00:00Z"},
		tracker.Issue{ID: "i4", Identifier: "P2-OLD", Title: "t", State: "Todo", Priority: prio(2), CreatedAt: "2026-01-01T00:00:00Z"},
		tracker.Issue{ID: "i5", Identifier: "P2-OLD-B", Title: "t", State: "Todo", Priority: prio(2), CreatedAt: "2026-01-01T00:00:00Z"},
		tracker.Issue{ID: "i6", Identifier: "NOPRIO-A", Title: "t", State: "Todo", CreatedAt: "2025-01-01T00:00:00Z"},
	)
	h.invariants = append(h.invariants, func(o Observation) string {
		if n := len(o.Snapshot.Running); n > 1 {
			return fmt.Sprintf("%d running, want at most 1 (max_concurrent_agents)", n)
		}
		return ""
	})
	h.start()
	if err := h.wait(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	want := []string{"P1", "P2-OLD", "P2-OLD-B", "P2-NEW", "NOPRIO-A", "NOPRIO-OLD"}
	if got := dispatchOrder(t, h); !slices.Equal(got, want) {
		t.Fatalf("dispatch order = %v, want %v", got, want)
	}
}

func TestDispatch_GlobalAndPerStateSlotsAreNeverExceeded(t *testing.T) {
	const global, todoLimit = 3, 1
	cfg := testConfig(t, func(c *config.Config) {
		c.Agent.MaxConcurrentAgents = global
		c.Agent.MaxConcurrentAgentsByState = map[string]int{"todo": todoLimit}
		c.Tracker.HandoffState = "Human Review"
		c.Extensions = map[string]any{"mock": map[string]any{"delay_ms": 20, "events_per_turn": 1}}
	})
	h := newHarness(t, cfg, harnessOptions{exitWhenIdle: true})
	for i := range 12 {
		state := "Todo"
		if i%2 == 1 {
			state = "In Progress"
		}
		if i%4 == 0 {
			state = "TODO" // state keys are matched case-insensitively
		}
		h.trk.Put(issue(fmt.Sprintf("S-%02d", i), state))
	}
	var maxGlobal, maxTodo int
	h.invariants = append(h.invariants, func(o Observation) string {
		todo := 0
		for _, r := range o.Snapshot.Running {
			if strings.EqualFold(r.State, "todo") {
				todo++
			}
		}
		maxGlobal, maxTodo = max(maxGlobal, len(o.Snapshot.Running)), max(maxTodo, todo)
		var errs []string
		if len(o.Snapshot.Running) > global {
			errs = append(errs, fmt.Sprintf("%d running, want at most %d", len(o.Snapshot.Running), global))
		}
		if todo > todoLimit {
			errs = append(errs, fmt.Sprintf("%d running in state todo, want at most %d", todo, todoLimit))
		}
		return strings.Join(errs, "; ")
	})
	h.start()
	if err := h.wait(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if got := len(dispatchOrder(t, h)); got != 12 {
		t.Fatalf("runs = %d, want 12 (every issue once)", got)
	}
	// The limits must have been reached, or the test proved nothing.
	if maxGlobal != global || maxTodo != todoLimit {
		t.Fatalf("peak running = %d (todo %d), want %d (todo %d)", maxGlobal, maxTodo, global, todoLimit)
	}
}

func TestDispatch_BlockedUntilEveryBlockerIsTerminal(t *testing.T) {
	cfg := testConfig(t, func(c *config.Config) { c.Tracker.HandoffState = "Human Review" })
	h := newHarness(t, cfg, harnessOptions{})
	h.trk.Put(
		issue("BLOCKER", "Backlog"), // neither active nor terminal: never dispatched itself
		tracker.Issue{ID: "B", Identifier: "B", Title: "t", State: "Todo",
			BlockedBy: []tracker.BlockerRef{{ID: "BLOCKER", Identifier: "BLOCKER"}}},
		tracker.Issue{ID: "C", Identifier: "C", Title: "t", State: "Todo",
			BlockedBy: []tracker.BlockerRef{{ID: "EXT", Identifier: "EXT-1"}}}, // unknown blocker, empty state
		issue("FREE", "Todo"),
	)
	h.start()
	first := h.awaitStep(StepTick, "")
	if got := runningIDs(first.Snapshot); !slices.Equal(got, []string{"FREE"}) {
		t.Fatalf("first tick dispatched %v, want only [FREE] (B and C are blocked)", got)
	}
	h.await("FREE handed off", func(o Observation) bool { return o.Step == StepExit && o.IssueID == "FREE" })

	h.setState("BLOCKER", "Done")
	o := h.await("B dispatched", func(o Observation) bool { return isRunning(o.Snapshot, "B") })
	if isRunning(o.Snapshot, "C") {
		t.Fatalf("C dispatched, want it blocked (its blocker has no state)")
	}
	h.await("B done", func(o Observation) bool { return o.Step == StepExit && o.IssueID == "B" })
	// More ticks never release C.
	h.refresh()
	h.awaitStep(StepTick, "")
	if err := h.stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if got := h.statuses("C"); len(got) != 0 {
		t.Fatalf("runs of C = %v, want none", got)
	}
	if got := h.statuses("B"); !slices.Equal(got, []store.RunStatus{store.StatusHandedOff}) {
		t.Fatalf("runs of B = %v, want [handed_off]", got)
	}
}

// TestDispatch_StaleCandidateIsNeverWorkedOn: the issue is closed between the poll that
// listed it and its worker's start; the worker's own read sees it and nothing runs.
func TestDispatch_StaleCandidateIsNeverWorkedOn(t *testing.T) {
	for _, change := range []string{"closed", "deleted"} {
		t.Run(change, func(t *testing.T) {
			cfg := testConfig(t, nil)
			h := newHarness(t, cfg, harnessOptions{pollOnly: true})
			h.trk.Put(issue("STALE-1", "Todo"))
			var fired atomic.Bool
			h.trk.BeforeCall(faketracker.OpFetchIssue, func(context.Context) {
				if fired.CompareAndSwap(false, true) {
					if change == "closed" {
						h.trk.SetState("STALE-1", "Done")
					} else {
						h.trk.Delete("STALE-1")
					}
				}
			})
			h.start()
			o := h.awaitStep(StepExit, "STALE-1")
			if !settled(o.Snapshot, "STALE-1") {
				t.Fatalf("after the worker: %s, want STALE-1 released", describe(o.Snapshot))
			}
			if starts := h.agent.startsOf("STALE-1"); len(starts) != 0 {
				t.Fatalf("agent sessions = %d, want none", len(starts))
			}
			if runs := h.runs("STALE-1"); len(runs) != 0 {
				t.Fatalf("run rows = %v, want none (nothing ran)", h.statuses("STALE-1"))
			}
		})
	}
}

// TestDispatch_NothingIsDispatchedWhileCandidatesCannotBeFetched: a failing candidate
// poll dispatches nothing, even from the last good list, and says why in snapshots;
// the next good poll resumes dispatching.
func TestDispatch_NothingIsDispatchedWhileCandidatesCannotBeFetched(t *testing.T) {
	cfg := testConfig(t, func(c *config.Config) { c.Tracker.HandoffState = "Human Review" })
	h := newHarness(t, cfg, harnessOptions{pollOnly: true, exitWhenIdle: true})
	h.trk.FailAlways(faketracker.OpFetchCandidates, nil)
	h.trk.Put(issue("LATE-1", "Todo"))
	h.start()
	for i := range 2 {
		o := h.awaitStep(StepTick, "")
		if o.Snapshot.LastPollOK || !strings.Contains(o.Snapshot.LastError, "injected failure") || len(o.Snapshot.Running) != 0 {
			t.Fatalf("poll %d with the tracker down: ok=%v error=%q running=%v, want a failed poll, its error, nothing running",
				i+1, o.Snapshot.LastPollOK, o.Snapshot.LastError, runningIDs(o.Snapshot))
		}
		h.advance(cfg.Polling.Interval)
	}
	h.trk.Heal(faketracker.OpFetchCandidates)
	h.advance(cfg.Polling.Interval)
	if err := h.wait(); err != nil { // exits once LATE-1 is handed off
		t.Fatalf("Run: %v", err)
	}
	if got := h.statuses("LATE-1"); !slices.Equal(got, []store.RunStatus{store.StatusHandedOff}) {
		t.Fatalf("runs = %v, want [handed_off]", got)
	}
}

func TestIsActive_EmptyActiveListMeansEveryNonTerminalState(t *testing.T) {
	cfg := &config.Config{}
	cfg.Tracker.TerminalStates = []string{"Done"}
	for state, want := range map[string]bool{"Anything": true, "done": false, " DONE ": false} {
		if got := isActive(cfg, state); got != want {
			t.Errorf("isActive(%q) with no active_states = %v, want %v", state, got, want)
		}
	}
	cfg.Tracker.ActiveStates = []string{"Todo"}
	for state, want := range map[string]bool{"todo": true, "Anything": false} {
		if got := isActive(cfg, state); got != want {
			t.Errorf("isActive(%q) with active_states [Todo] = %v, want %v", state, got, want)
		}
	}
}
