package github

import (
	"context"
	"strings"
	"testing"

	"sortie/internal/testkit/fakegithub"
)

// The code-host client against the shared fake GitHub (which the daemon's end-to-end
// tests use): a handed-off branch's pull request is found, its failing Actions job is
// read with the log's tail (following the 302 without the token), a human's change
// request is read and a bot's dropped, and an idle poll of both costs only 304s.
func TestCodeHost_AgainstTheFakeGitHub(t *testing.T) {
	ctx := context.Background()
	clock := newTestClock()
	f := fakegithub.New(t, fakegithub.WithClock(clock.Now))
	tr := newTestTracker(t, f, clock)
	repo := f.Project()

	sha := fakegithub.SHA("fix-1")
	f.AddPullRequest(7, "sortie/issue-1", "main", fakegithub.HeadSHA(sha))
	pr, ok, err := tr.FindPullRequest(ctx, repo, "sortie/issue-1")
	if err != nil || !ok || pr.Number != 7 || pr.HeadSHA != sha {
		t.Fatalf("FindPullRequest = %+v, %v, %v; want #7 at %s", pr, ok, err, sha)
	}

	lint := f.AddCheckRun(sha, "lint", fakegithub.Completed("success"))
	test := f.AddCheckRun(sha, "test", fakegithub.Completed("failure"))
	f.SetJobLog(test.ID, fakegithub.FailedJobLog("go test ./...", "--- FAIL: TestAdd (0.00s)", "    add_test.go:9: 1+1 = 3, want 2", "FAIL"))
	res, err := tr.CI(ctx, repo, sha)
	if err != nil || res.State != CheckFailing || len(res.Failing) != 1 || res.Failing[0].Name != "test" {
		t.Fatalf("CI = %+v, %v; want failing on test only", res, err)
	}
	if err := tr.AttachFailureLog(ctx, repo, &res, 20); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.LogExcerpt, "add_test.go:9: 1+1 = 3, want 2") || strings.ContainsRune(res.LogExcerpt, '\x1b') {
		t.Fatalf("log excerpt:\n%s\nwant the failing test's line, without ANSI escapes", res.LogExcerpt)
	}
	if n := f.LogRedirectAuthLeaks(); n != 0 {
		t.Fatalf("the token was sent to the log storage %d times", n)
	}
	_ = lint

	bot := fakegithub.User{Login: "dependabot[bot]", ID: 49699333, Type: "Bot"}
	erin := fakegithub.User{Login: "erin", ID: 501, Type: "User"}
	f.AddReview(7, bot, "CHANGES_REQUESTED", "Bump it.")
	rv := f.AddReview(7, erin, "CHANGES_REQUESTED", "Please handle negative numbers.")
	line := 12
	f.AddReviewComment(7, rv.ID, erin, "add.go", &line, nil, "This overflows.")
	reviews, err := tr.ChangeRequests(ctx, repo, 7)
	if err != nil {
		t.Fatal(err)
	}
	var who []string
	for _, c := range reviews.Comments {
		who = append(who, c.Reviewer+":"+c.File)
	}
	if len(reviews.Comments) != 2 || strings.Contains(strings.Join(who, " "), "dependabot") {
		t.Fatalf("change requests = %v, want erin's review body and her comment on add.go, no bot", who)
	}

	before := f.Counts()
	if res, err := tr.CI(ctx, repo, sha); err != nil || !res.NotModified {
		t.Fatalf("an idle CI poll: %+v, %v; want every request answered 304", res, err)
	}
	if rr, err := tr.ChangeRequests(ctx, repo, 7); err != nil || !rr.NotModified {
		t.Fatalf("an idle review poll: %+v, %v; want every request answered 304", rr, err)
	}
	if after := f.Counts(); after.Charged != before.Charged {
		t.Errorf("idle polls were charged %d requests, want none", after.Charged-before.Charged)
	}
}
