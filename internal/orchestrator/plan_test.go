package orchestrator

import (
	"strings"
	"testing"

	"sortie/internal/config"
	"sortie/internal/testkit/faketracker"
	"sortie/internal/tracker"
)

func TestPlan_ReasonsFollowDispatchRules(t *testing.T) {
	cfg := testConfig(t, func(c *config.Config) {
		c.Agent.MaxConcurrentAgents = 3
		c.Agent.MaxConcurrentAgentsByState = map[string]int{"in progress": 1}
	})
	// The tracker's query returns more than the workflow's active states (a broader
	// query filter, say), so every rule has something to reject.
	trk := faketracker.New("Todo", "In Progress", "Done", "Backlog")
	trk.Put(
		tracker.Issue{ID: "A", Identifier: "A", Title: "t", State: "Todo", Priority: prio(1)},
		tracker.Issue{ID: "B", Identifier: "B", Title: "t", State: "In Progress", Priority: prio(2)},
		tracker.Issue{ID: "C", Identifier: "C", Title: "t", State: "in progress", Priority: prio(3)},
		tracker.Issue{ID: "D", Identifier: "D", Title: "t", State: "Todo", Priority: prio(4)},
		tracker.Issue{ID: "E", Identifier: "E", Title: "t", State: "Todo", Priority: prio(5)},
		tracker.Issue{ID: "F", Identifier: "F", Title: "t", State: "Done"},
		tracker.Issue{ID: "G", Identifier: "G", Title: "t", State: "Backlog"},
		tracker.Issue{ID: "H", Identifier: "H", State: "Todo"},
		tracker.Issue{ID: "I", Identifier: "I", Title: "t", State: "Todo",
			BlockedBy: []tracker.BlockerRef{{ID: "G", Identifier: "G"}, {ID: "F", Identifier: "F"}}},
		tracker.Issue{ID: "K", Identifier: "K", Title: "t", State: "Todo",
			BlockedBy: []tracker.BlockerRef{{ID: "ext", Identifier: "EXT-1"}}},
	)
	decisions, err := Plan(t.Context(), cfg, trk)
	if err != nil {
		t.Fatalf("Plan: %v", err)
	}
	want := []struct{ id, reason string }{
		{"A", ""},
		{"B", ""},
		{"C", "no free slot for state in progress (agent.max_concurrent_agents_by_state)"},
		{"D", ""},
		{"E", "no free agent slot (agent.max_concurrent_agents)"},
		{"F", whyTerminal},
		{"G", whyNotActive},
		{"H", whyMissingFields},
		{"I", whyBlocked + "G"},
		{"K", whyBlocked + "EXT-1"},
	}
	if len(decisions) != len(want) {
		t.Fatalf("decisions = %d, want %d", len(decisions), len(want))
	}
	for i, w := range want {
		d := decisions[i]
		if d.Issue.ID != w.id || d.Reason != w.reason {
			t.Errorf("decision %d = %s %q, want %s %q", i+1, d.Issue.ID, d.Reason, w.id, w.reason)
		}
	}
	if got := trk.Transitions(); len(got) != 0 {
		t.Errorf("Plan moved issues %v, want it to write nothing", got)
	}
}

func TestPlan_TrackerErrorIsReturned(t *testing.T) {
	cfg := testConfig(t, nil)
	trk := faketracker.New("Todo")
	trk.FailNext(faketracker.OpFetchCandidates, 1, tracker.Errorf(tracker.ErrAuth, "fetch_candidates", "bad token"))
	decisions, err := Plan(t.Context(), cfg, trk)
	if tracker.KindOf(err) != tracker.ErrAuth || decisions != nil {
		t.Fatalf("Plan = %v, %v; want no decisions and the tracker's %s error", decisions, err, tracker.ErrAuth)
	}
	if !strings.Contains(err.Error(), "bad token") {
		t.Fatalf("error %q does not carry the tracker's message", err)
	}
}
