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
