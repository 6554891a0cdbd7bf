package orchestrator

import "testing"

// TestAgentMoving_AMoveNotMadeIsNotTheAgents: the record of an agent's own moves
// (AgentMoving, as the agent tools call it around a tracker_api transition or a
// linear_graphql update) keeps a move the tracker made, puts back the record held
// before after one it refused, never undoes a later move, and starts afresh in a new
// run; an issue not running here records nothing.
func TestAgentMoving_AMoveNotMadeIsNotTheAgents(t *testing.T) {
	o := &Orchestrator{}
	run := func() *progress {
		p := &progress{}
		o.published.Store(&view{running: []runningRef{{RunningView: RunningView{IssueID: "1"}, progress: p}}})
		return p
	}
	p := run()
	recorded := func() string {
		if s := p.agentMove(); s != "" {
			return s
		}
		return "<none>"
	}
	o.AgentMoving("1", "In Review")(true)
	if got := recorded(); got != "In Review" {
		t.Fatalf("after a move made: recorded %q, want In Review", got)
	}
	o.AgentMoving("1", "Done")(false)
	if got := recorded(); got != "In Review" {
		t.Fatalf("after a refused move to Done: recorded %q, want In Review, the move made before", got)
	}
	// Two moves under way: the first one's refusal does not undo the second.
	settleFirst := o.AgentMoving("1", "Todo")
	o.AgentMoving("1", "Done")(true)
	settleFirst(false)
	if got := recorded(); got != "Done" {
		t.Fatalf("after a later move made and an earlier one refused: recorded %q, want Done", got)
	}
	// In a new run, a refused move leaves no record: a human's move to Done later is
	// not mistaken for the agent's.
	p = run()
	o.AgentMoving("1", "Done")(false)
	if got := recorded(); got != "<none>" {
		t.Fatalf("a refused first move left the record %q", got)
	}
	// An issue this daemon does not run: nothing to record, nothing to settle.
	o.AgentMoving("2", "Done")(false)
}
