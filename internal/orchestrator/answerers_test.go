package orchestrator

import (
	"strings"
	"testing"

	"sortie/internal/config"
	"sortie/internal/testkit/faketracker"
)

// TestCheckpoint_SortiesOwnCommentNeverAnswers: a "/sortie choose" comment by the
// account Sortie writes as (faketracker.Self) is refused and listed, even with that
// login in workflows.answerers; a human's then answers.
func TestCheckpoint_SortiesOwnCommentNeverAnswers(t *testing.T) {
	cfg := checkpointConfig(t)
	cfg.Workflows.Answerers = []string{faketracker.Self.Login, "erin"}
	h := newHarness(t, cfg, harnessOptions{pollOnly: true, checkpoints: true})
	h.trk.Put(issue("CP-8", "Todo"))
	armOnFirstTurn(t, h, "CP-8", approvePlan("CP-8"))
	h.start()
	h.awaitStep(StepExit, "CP-8")

	if err := h.trk.AddComment("CP-8", faketracker.Self.Login, "/sortie choose approve"); err != nil {
		t.Fatal(err)
	}
	h.advance(config.DefaultPollingInterval)
	o := h.awaitStep(StepTick, "")
	if held, ok := heldOf(o.Snapshot, "CP-8"); !ok || held.Reason != holdAwaiting {
		t.Fatalf("Sortie's own comment lifted the hold: %s", describe(o.Snapshot))
	}
	refused := h.desk.RefusedAnswers("CP-8")
	if len(refused) != 1 || !strings.Contains(refused[0].Reason, "Sortie itself writes as") {
		t.Fatalf("refused answers = %+v, want Sortie's own comment", refused)
	}

	if err := h.trk.AddComment("CP-8", "erin", "/sortie choose approve"); err != nil {
		t.Fatal(err)
	}
	h.advance(config.DefaultPollingInterval)
	h.await("erin's answer lifts the hold", func(o Observation) bool {
		_, held := heldOf(o.Snapshot, "CP-8")
		return !held
	})
}

// TestCheckpoint_RefusedTrackerAnswersAreListedAndChangeNothing: a "/sortie choose"
// comment by someone not in workflows.answerers leaves the checkpoint unanswered and is
// listed for the issue page; an answerer's comment then answers it.
func TestCheckpoint_RefusedTrackerAnswersAreListedAndChangeNothing(t *testing.T) {
	cfg := checkpointConfig(t)
	cfg.Workflows.Answerers = []string{"erin"}
	h := newHarness(t, cfg, harnessOptions{pollOnly: true, checkpoints: true})
	h.trk.Put(issue("CP-9", "Todo"))
	armOnFirstTurn(t, h, "CP-9", approvePlan("CP-9"))
	h.start()
	h.awaitStep(StepExit, "CP-9")

	if err := h.trk.AddComment("CP-9", "mallory", "/sortie choose approve"); err != nil {
		t.Fatal(err)
	}
	h.advance(config.DefaultPollingInterval)
	o := h.awaitStep(StepTick, "")
	if held, ok := heldOf(o.Snapshot, "CP-9"); !ok || held.Reason != holdAwaiting {
		t.Fatalf("mallory's comment lifted the hold: %s", describe(o.Snapshot))
	}
	refused := h.desk.RefusedAnswers("CP-9")
	if len(refused) != 1 || refused[0].Author != "mallory" || refused[0].Option != "approve" ||
		!strings.Contains(refused[0].Reason, "not in workflows.answerers") {
		t.Fatalf("refused answers = %+v, want mallory's", refused)
	}

	if err := h.trk.AddComment("CP-9", "Erin", "/sortie choose approve"); err != nil {
		t.Fatal(err)
	}
	h.advance(config.DefaultPollingInterval)
	h.await("erin's answer lifts the hold", func(o Observation) bool {
		_, held := heldOf(o.Snapshot, "CP-9")
		return !held
	})
}

// TestCheckpoint_NoTrackerAnswerWhileSortiesAccountIsUnknown: when the tracker cannot
// say which account Sortie writes as, no comment answers (it could be Sortie's own);
// once it can, a human's answer that waited is read.
func TestCheckpoint_NoTrackerAnswerWhileSortiesAccountIsUnknown(t *testing.T) {
	cfg := checkpointConfig(t)
	cfg.Workflows.Answerers = []string{"erin"}
	h := newHarness(t, cfg, harnessOptions{pollOnly: true, checkpoints: true})
	h.trk.Put(issue("CP-7", "Todo"))
	armOnFirstTurn(t, h, "CP-7", approvePlan("CP-7"))
	h.trk.FailAlways(faketracker.OpSelf, nil)
	h.start()
	h.awaitStep(StepExit, "CP-7")

	if err := h.trk.AddComment("CP-7", "erin", "/sortie choose approve"); err != nil {
		t.Fatal(err)
	}
	h.advance(config.DefaultPollingInterval)
	o := h.awaitStep(StepTick, "")
	if held, ok := heldOf(o.Snapshot, "CP-7"); !ok || held.Reason != holdAwaiting {
		t.Fatalf("an answer was read while Sortie's own account was unknown: %s", describe(o.Snapshot))
	}
	if h.trk.Calls(faketracker.OpSelf) == 0 {
		t.Fatal("the orchestrator never asked the tracker which account it writes as")
	}
	h.trk.Heal(faketracker.OpSelf)
	h.advance(config.DefaultPollingInterval)
	h.await("erin's answer is read once the account is known", func(o Observation) bool {
		_, held := heldOf(o.Snapshot, "CP-7")
		return !held
	})
}
