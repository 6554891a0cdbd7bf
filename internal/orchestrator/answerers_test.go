package orchestrator

import (
	"strings"
	"testing"

	"sortie/internal/config"
	"sortie/internal/testkit/faketracker"
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
		{"answerers list", cfg("github", "Erin", "dave@example.com"), tracker.Comment{Author: "erin", AuthorLogin: "erin", AuthorAssociation: "NONE"}, ""},
		{"answerers list: email", cfg("jira", "dave@example.com"), tracker.Comment{Author: "Dave", AuthorEmail: "DAVE@example.com"}, ""},
		{"answerers list: a display name is no login", cfg("jira", "dave@example.com", "dave"), tracker.Comment{Author: "dave@example.com", AuthorID: "x"}, "not in workflows.answerers"},
		{"answerers list: others refused", cfg("github", "erin"), tracker.Comment{Author: "owner", AuthorLogin: "owner", AuthorAssociation: "OWNER"}, "not in workflows.answerers"},
		{"jira without answerers", cfg("jira"), tracker.Comment{Author: "Dave"}, ""},
	} {
		got := answerRefusal(c.cfg, tracker.Identity{}, c.cm)
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("%s: refusal %q, want %q", c.name, got, c.want)
		}
	}
}

// TestAnswerRefusal_SortiesOwnAccountAndBotsNeverAnswer: Sortie often writes with an
// owner's token, so its comments carry OWNER; they still never answer, nor does any
// app's bot account, even one listed in workflows.answerers. The account is matched by
// id, login or e-mail, not by the display name anyone can take.
func TestAnswerRefusal_SortiesOwnAccountAndBotsNeverAnswer(t *testing.T) {
	cfg := func(kind string, answerers ...string) *config.Config {
		c := &config.Config{}
		c.Tracker.Kind = kind
		c.Workflows.Answerers = answerers
		return c
	}
	gh := tracker.Identity{ID: "4242", Login: "sortie-bot"}
	jira := tracker.Identity{ID: "5b10ac8d", Email: "sortie@example.com", Name: "Sortie Bot"}
	for _, c := range []struct {
		name string
		cfg  *config.Config
		self tracker.Identity
		cm   tracker.Comment
		want string
	}{
		{"github: own comment as OWNER", cfg("github"), gh,
			tracker.Comment{Author: "sortie-bot", AuthorLogin: "sortie-bot", AuthorID: "4242", AuthorAssociation: "OWNER"}, "Sortie itself writes as"},
		{"github: own account listed as an answerer", cfg("github", "sortie-bot"), gh,
			tracker.Comment{Author: "sortie-bot", AuthorLogin: "sortie-bot", AuthorID: "4242"}, "Sortie itself writes as"},
		{"github: renamed own account, same id", cfg("github"), gh,
			tracker.Comment{Author: "new-name", AuthorLogin: "new-name", AuthorID: "4242", AuthorAssociation: "OWNER"}, "Sortie itself writes as"},
		{"github: an app's bot", cfg("github", "deploy[bot]"), tracker.Identity{App: true},
			tracker.Comment{Author: "deploy[bot]", AuthorLogin: "deploy[bot]", AuthorBot: true, AuthorAssociation: "NONE"}, "bot account"},
		{"github: a human owner", cfg("github"), gh,
			tracker.Comment{Author: "erin", AuthorLogin: "erin", AuthorID: "7", AuthorAssociation: "OWNER"}, ""},
		{"jira: own comment", cfg("jira"), jira,
			tracker.Comment{Author: "Sortie Bot", AuthorID: "5b10ac8d", AuthorEmail: "sortie@example.com"}, "Sortie itself writes as"},
		{"jira: someone named like Sortie", cfg("jira"), jira,
			tracker.Comment{Author: "Sortie Bot", AuthorID: "other"}, ""},
		{"jira: answerer by e-mail behind a display name", cfg("jira", "dave@example.com"), jira,
			tracker.Comment{Author: "Dave D.", AuthorID: "d1", AuthorEmail: "Dave@Example.com"}, ""},
		{"jira: answerer by Data Center user name", cfg("jira", "dave"), jira,
			tracker.Comment{Author: "Dave D.", AuthorID: "JIRAUSER1", AuthorLogin: "dave"}, ""},
	} {
		got := answerRefusal(c.cfg, c.self, c.cm)
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("%s: refusal %q, want %q", c.name, got, c.want)
		}
	}
}

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
	refused := h.orch.RefusedAnswers("CP-8")
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
