package orchestrator

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"sortie/internal/agent"
	"sortie/internal/agent/mock"
	"sortie/internal/config"
	"sortie/internal/testkit/faketracker"
	"sortie/internal/tracker"
)

// wider is the fake tracker as an adapter rebuilt with more active states sees it: its
// candidates are the issues ids names that are in one of states.
type wider struct {
	*faketracker.Tracker
	states []string
	ids    []string
}

func (w wider) FetchCandidateIssues(ctx context.Context) ([]tracker.Issue, error) {
	var out []tracker.Issue
	for _, id := range w.ids {
		if is, ok := w.Issue(id); ok && tracker.StateIn(is.State, w.states) {
			is.Comments = nil
			out = append(out, is)
		}
	}
	return out, nil
}

// rebuilds records the configurations Options.Adapters was asked about and answers
// with next (or err).
type rebuilds struct {
	mu    sync.Mutex
	asked []*config.Config
	next  Adapters
	err   error
}

func (r *rebuilds) adapters(cfg *config.Config) (Adapters, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.asked = append(r.asked, cfg)
	return r.next, r.err
}

// TestAdapters_ReloadPutsNewAdaptersInForceAndRunsKeepTheirs: a reload whose tracker
// has a new active state and whose agent is another adapter puts both in force at once
// (the issue in the new state is polled and dispatched with the new agent, its run
// records the new CLI version), while the run already going keeps its agent to the end.
func TestAdapters_ReloadPutsNewAdaptersInForceAndRunsKeepTheirs(t *testing.T) {
	cfg := testConfig(t, func(c *config.Config) {
		c.Extensions = map[string]any{"mock": map[string]any{"events_per_turn": 1,
			"issues": map[string]any{"OLD-1": map[string]any{"script": []any{"hang"}}}}}
	})
	h := newHarness(t, cfg, harnessOptions{pollOnly: true})
	start := h.orch.Adapters()
	start.AgentVersion = "1.0.0"
	h.orch.adapters.Store(&start) // as if Options.AgentVersion had said so
	inner, err := mock.New(agent.Config{Kind: mock.Kind, Options: cfg.Block("mock")})
	if err != nil {
		t.Fatal(err)
	}
	second := newTapAdapter(inner)
	r := &rebuilds{next: Adapters{Tracker: wider{Tracker: h.trk, states: []string{"Todo", "Ready"}, ids: []string{"OLD-1", "NEW-1"}},
		Agent: second, AgentVersion: "2.0.0"}}
	h.orch.opts.Adapters = r.adapters
	h.trk.Put(issue("OLD-1", "Todo"), issue("NEW-1", "Ready"))
	h.start()
	h.awaitEvent("OLD-1", agent.EventSessionStarted) // OLD-1 hangs in its turn
	if o := h.awaitStep(StepTick, ""); o.Snapshot.Candidates != 1 {
		t.Fatalf("the start-up tracker has %d candidates, want only OLD-1: %s", o.Snapshot.Candidates, describe(o.Snapshot))
	}

	h.mutateConfig(func(c *config.Config) { c.Tracker.ActiveStates = []string{"Todo", "Ready"} })
	h.awaitStep(StepExit, "NEW-1") // dispatched at once: the new tracker is polled without waiting for the interval

	r.mu.Lock()
	if len(r.asked) != 1 || r.asked[0] != h.cfg.Load() {
		t.Errorf("Options.Adapters was asked about %d configurations, want once about the one applied", len(r.asked))
	}
	r.mu.Unlock()
	if got := h.orch.Adapters(); got.Agent != second || got.AgentVersion != "2.0.0" {
		t.Errorf("adapters in force = %+v, want the new agent and version", got)
	}
	if n, m := len(second.startsOf("NEW-1")), len(h.agent.startsOf("NEW-1")); n != 1 || m != 0 {
		t.Errorf("NEW-1: %d sessions on the new agent and %d on the old, want 1 and 0", n, m)
	}
	if runs := h.runs("NEW-1"); len(runs) != 1 || runs[0].CLIVersion != "2.0.0" {
		t.Errorf("NEW-1's run records CLI version %q, want 2.0.0", runs[0].CLIVersion)
	}
	if s := h.obs.latest().Snapshot; !isRunning(s, "OLD-1") {
		t.Fatalf("the reload stopped the run in progress: %s", describe(s))
	}

	// OLD-1 finishes with the agent it started with.
	h.setState("OLD-1", "Done")
	h.refresh()
	h.awaitStep(StepExit, "OLD-1")
	if n, m := len(h.agent.startsOf("OLD-1")), len(second.startsOf("OLD-1")); n != 1 || m != 0 {
		t.Errorf("OLD-1: %d sessions on the old agent and %d on the new, want 1 and 0", n, m)
	}
	if runs := h.runs("OLD-1"); len(runs) != 1 || runs[0].CLIVersion != "1.0.0" {
		t.Errorf("OLD-1's run records CLI version %q, want the start-up 1.0.0", runs[0].CLIVersion)
	}
	h.agent.mu.Lock()
	open := h.agent.open["OLD-1"]
	h.agent.mu.Unlock()
	if open != 0 {
		t.Errorf("OLD-1's session is still open on the old agent (%d): it was not stopped by the adapter that started it", open)
	}
}

// TestAdapters_FailedRebuildKeepsTheAdaptersInForce: adapters that cannot be built keep
// the set in force, and the error is reported as a rejected WORKFLOW.md edit.
func TestAdapters_FailedRebuildKeepsTheAdaptersInForce(t *testing.T) {
	var mu sync.Mutex
	var reported []string
	cfg := testConfig(t, nil)
	h := newHarness(t, cfg, harnessOptions{pollOnly: true, activity: func(a Activity) {
		if a.Kind == ActivityReloadError {
			mu.Lock()
			reported = append(reported, a.Message)
			mu.Unlock()
		}
	}})
	r := &rebuilds{err: errors.New("tracker: tracker.active_states: unknown state \"Ready\"")}
	h.orch.opts.Adapters = r.adapters
	before := h.orch.Adapters()
	h.start()
	h.awaitStep(StepTick, "")

	h.mutateConfig(func(c *config.Config) { c.Tracker.ActiveStates = []string{"Todo", "Ready"} })
	h.awaitStep(StepConfig, "")
	if got := h.orch.Adapters(); got != before {
		t.Errorf("adapters in force = %+v, want the start-up ones %+v", got, before)
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(reported, []string{r.err.Error()}) {
		t.Errorf("reload errors reported = %q, want the build error once", reported)
	}
}
