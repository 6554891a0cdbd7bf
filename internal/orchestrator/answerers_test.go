package orchestrator

import (
	"strings"
	"testing"

	"sortie/internal/config"
	"sortie/internal/tracker"
)

// TestAnswerRefusal_OnlyHumansWithASayAnswer: who may answer a checkpoint with a
// tracker comment.
func TestAnswerRefusal_OnlyHumansWithASayAnswer(t *testing.T) {
	cfg := func(kind string, answerers ...string) *config.Config {
		c := &config.Config{}
		c.Tracker.Kind = kind
		c.Workflows.Answerers = answerers
		return c
	}
	for _, c := range []struct {
		name string
		cfg  *config.Config
		cm   tracker.Comment
		want string // a part of the refusal; "" to accept
	}{
		{"file tracker: never", cfg("file"), tracker.Comment{Author: "erin"}, "dashboard or through the API only"},
		{"github owner", cfg("github"), tracker.Comment{Author: "erin", AuthorAssociation: "OWNER"}, ""},
		{"github member", cfg("github"), tracker.Comment{Author: "erin", AuthorAssociation: "MEMBER"}, ""},
		{"github collaborator", cfg("github"), tracker.Comment{Author: "erin", AuthorAssociation: "COLLABORATOR"}, ""},
		{"github stranger", cfg("github"), tracker.Comment{Author: "mallory", AuthorAssociation: "NONE"}, `"mallory" is NONE`},
		{"github contributor", cfg("github"), tracker.Comment{Author: "mallory", AuthorAssociation: "CONTRIBUTOR"}, "not OWNER, MEMBER or COLLABORATOR"},
		{"github without association", cfg("github"), tracker.Comment{Author: "mallory"}, `"mallory" is NONE`},
		{"answerers list", cfg("github", "Erin", "dave@example.com"), tracker.Comment{Author: "erin", AuthorAssociation: "NONE"}, ""},
		{"answerers list: email", cfg("jira", "dave@example.com"), tracker.Comment{Author: "DAVE@example.com"}, ""},
		{"answerers list: others refused", cfg("github", "erin"), tracker.Comment{Author: "owner", AuthorAssociation: "OWNER"}, "not in workflows.answerers"},
		{"jira without answerers", cfg("jira"), tracker.Comment{Author: "Dave"}, ""},
	} {
		got := answerRefusal(c.cfg, c.cm)
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("%s: refusal %q, want %q", c.name, got, c.want)
		}
	}
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
	refused := h.orch.RefusedAnswers("CP-9")
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
