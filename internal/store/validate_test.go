package store

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestValidate_NamesEveryProblemInFieldOrder(t *testing.T) {
	now := time.Unix(1, 0)
	cases := []struct {
		name string
		err  error
		want string
	}{
		{"run: everything missing", Run{}.Validate(),
			"issue id is empty\nidentifier is empty\nattempt must be 1 or more (got 0)\nagent kind is empty\nstarted_at is zero"},
		{"run: complete", Run{IssueID: "1", Identifier: "P-1", Attempt: 1, AgentKind: "mock", StartedAt: now}.Validate(), ""},
		{"retry: everything missing", Retry{}.Validate(),
			"issue id is empty\nidentifier is empty\nattempt must be 1 or more (got 0)\ndue_at is zero\n" +
				`kind must be "continuation", "failure" or "resume" (got "")`},
		{"retry: complete", Retry{IssueID: "1", Identifier: "P-1", Attempt: 2, DueAt: now, Kind: RetryFailure}.Validate(), ""},
		{"hold: everything missing", Hold{}.Validate(),
			"issue id is empty\nidentifier is empty\nreason is empty\nsince is zero"},
		{"hold: complete", Hold{IssueID: "1", Identifier: "P-1", Reason: "blocked", Since: now}.Validate(), ""},
		{"session: everything missing", Session{}.Validate(),
			"issue id is empty\nsession id is empty\nagent kind is empty"},
		{"session: complete", Session{IssueID: "1", SessionID: "s", AgentKind: "mock"}.Validate(), ""},
		{"reaction watch: everything missing", ReactionWatch{PRNumber: -1}.Validate(),
			"issue id is empty\nidentifier is empty\nhanded_off_at is zero\npr number must be 0 or more (got -1)"},
		{"reaction watch: complete", ReactionWatch{IssueID: "1", Identifier: "P-1", HandedOffAt: now}.Validate(), ""},
		{"reaction key: bad", CheckReactionKey("", "lint"), "issue id is empty\n" + `reaction kind "lint" is not "ci" or "review"`},
		{"reaction key: good", CheckReactionKey("1", ReactionReview), ""},
		{"run end: review metadata not JSON", RunEnd{Status: StatusSucceeded, EndedAt: now, ReviewMetadata: "{"}.Validate(),
			"review metadata is not valid JSON"},
		{"run end: review metadata too long", RunEnd{Status: StatusSucceeded, EndedAt: now,
			ReviewMetadata: fmt.Sprintf("%q", strings.Repeat("x", MaxReviewMetadataBytes))}.Validate(),
			fmt.Sprintf("review metadata is %d bytes, more than the %d allowed", MaxReviewMetadataBytes+2, MaxReviewMetadataBytes)},
		{"run end: with review metadata", RunEnd{Status: StatusSucceeded, EndedAt: now, ReviewMetadata: `{"ok":true}`}.Validate(), ""},
	}
	for _, c := range cases {
		got := ""
		if c.err != nil {
			got = c.err.Error()
		}
		if got != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got, c.want)
		}
	}
}
