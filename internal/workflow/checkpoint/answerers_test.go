package checkpoint

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
		{"answerers list", cfg("github", "Erin", "dave@example.com"), tracker.Comment{Author: "erin", AuthorLogin: "erin", AuthorAssociation: "NONE"}, ""},
		{"answerers list: email", cfg("jira", "dave@example.com"), tracker.Comment{Author: "Dave", AuthorEmail: "DAVE@example.com"}, ""},
		{"answerers list: a display name is no login", cfg("jira", "dave@example.com", "dave"), tracker.Comment{Author: "dave@example.com", AuthorID: "x"}, "not in workflows.answerers"},
		{"answerers list: others refused", cfg("github", "erin"), tracker.Comment{Author: "owner", AuthorLogin: "owner", AuthorAssociation: "OWNER"}, "not in workflows.answerers"},
		{"jira without answerers", cfg("jira"), tracker.Comment{Author: "Dave"}, ""},
	} {
		got := AnswerRefusal(c.cfg, tracker.Identity{}, c.cm)
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
		got := AnswerRefusal(c.cfg, c.self, c.cm)
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("%s: refusal %q, want %q", c.name, got, c.want)
		}
	}
}
