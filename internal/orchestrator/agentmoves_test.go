package orchestrator

import "testing"

// TestAgentMoves_AMoveNotMadeIsNotTheAgents: the record of an agent's own moves
// (AgentMoving, as the agent tools call it around a tracker_api transition or a
// linear_graphql update) keeps a move the tracker made, puts back the record held
// before after one it refused, never undoes a later move, and starts afresh in a new
// run (forget).
func TestAgentMoves_AMoveNotMadeIsNotTheAgents(t *testing.T) {
	var m agentMoves
	recorded := func() string {
		s, ok := m.movedTo("1")
		if !ok {
			return "<none>"
		}
		return s
	}
	m.moving("1", "In Review")(true)
	if got := recorded(); got != "In Review" {
		t.Fatalf("after a move made: recorded %q, want In Review", got)
	}
	m.moving("1", "Done")(false)
	if got := recorded(); got != "In Review" {
		t.Fatalf("after a refused move to Done: recorded %q, want In Review, the move made before", got)
	}
	// Two moves under way: the first one's refusal does not undo the second.
	settleFirst := m.moving("1", "Todo")
	m.moving("1", "Done")(true)
	settleFirst(false)
	if got := recorded(); got != "Done" {
		t.Fatalf("after a later move made and an earlier one refused: recorded %q, want Done", got)
	}
	// In a new run, a refused move leaves no record: a human's move to Done later is
	// not mistaken for the agent's.
	m.forget("1")
	m.moving("1", "Done")(false)
	if got := recorded(); got != "<none>" {
		t.Fatalf("a refused first move left the record %q", got)
	}
}
