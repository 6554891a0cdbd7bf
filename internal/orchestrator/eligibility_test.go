package orchestrator

import (
	"slices"
	"testing"

	"sortie/internal/config"
	"sortie/internal/testkit/faketracker"
	"sortie/internal/tracker"
)

func TestMissingLabel(t *testing.T) {
	tests := []struct {
		name             string
		required, labels []string
		want             string
		missing          bool
	}{
		{"no requirement", nil, nil, "", false},
		{"all present", []string{"agent", "backend"}, []string{"Backend", "misc", "AGENT"}, "", false},
		{"whitespace and case ignored", []string{"ready for agent"}, []string{"  Ready For Agent "}, "", false},
		{"first missing is named", []string{"agent", "backend"}, []string{"agent"}, "backend", true},
		{"no labels at all", []string{"agent"}, nil, "agent", true},
		{"blank requirement matches nothing", []string{""}, []string{"", " "}, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, missing := missingLabel(tt.required, tt.labels)
			if got != tt.want || missing != tt.missing {
				t.Fatalf("missingLabel(%q, %q) = %q, %v; want %q, %v", tt.required, tt.labels, got, missing, tt.want, tt.missing)
			}
		})
	}
}

func TestPlan_MissingRequiredLabelIsTheReason(t *testing.T) {
	cfg := testConfig(t, func(c *config.Config) { c.Tracker.RequiredLabels = []string{"agent", "backend"} })
	trk := faketracker.New("Todo", "Done")
	trk.Put(
		tracker.Issue{ID: "A", Identifier: "A", Title: "t", State: "Todo", Priority: prio(1), Labels: []string{"Agent", "backend "}},
		tracker.Issue{ID: "B", Identifier: "B", Title: "t", State: "Todo", Priority: prio(2), Labels: []string{"agent"}},
		tracker.Issue{ID: "C", Identifier: "C", Title: "t", State: "Todo", Priority: prio(3)},
		tracker.Issue{ID: "D", Identifier: "D", Title: "t", State: "Done"},
	)
	decisions, err := Plan(t.Context(), cfg, trk)
	if err != nil {
		t.Fatalf("Plan: %v", err)
	}
	want := []struct{ id, reason string }{
		{"A", ""},
		{"B", `missing required label "backend"`},
		{"C", `missing required label "agent"`},
		{"D", whyTerminal},
	}
	if len(decisions) != len(want) {
		t.Fatalf("decisions = %d, want %d", len(decisions), len(want))
	}
	for i, w := range want {
		if d := decisions[i]; d.Issue.ID != w.id || d.Reason != w.reason {
			t.Errorf("decision %d = %s %q, want %s %q", i+1, d.Issue.ID, d.Reason, w.id, w.reason)
		}
	}
}

func TestDispatch_OnlyIssuesWithEveryRequiredLabel(t *testing.T) {
	cfg := testConfig(t, func(c *config.Config) { c.Tracker.RequiredLabels = []string{"agent"} })
	h := newHarness(t, cfg, harnessOptions{})
	labelled := issue("LABELLED", "Todo")
	labelled.Labels = []string{" AGENT "}
	h.trk.Put(labelled, issue("PLAIN", "Todo"))
	h.start()
	first := h.awaitStep(StepTick, "")
	if got := runningIDs(first.Snapshot); !slices.Equal(got, []string{"LABELLED"}) {
		t.Fatalf("first tick dispatched %v, want only [LABELLED]", got)
	}
	h.await("LABELLED done", func(o Observation) bool { return o.Step == StepExit && o.IssueID == "LABELLED" })
	h.refresh()
	h.awaitStep(StepTick, "")
	if err := h.stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if got := h.statuses("PLAIN"); len(got) != 0 {
		t.Fatalf("runs of PLAIN = %v, want none", got)
	}
}
