package fakegithub_test

import (
	"testing"

	"sortie/internal/testkit/fakegithub"
)

// TestSubmitReview_CommentsShowWithTheReview: a pending review and the comments drafted
// in it are hidden from the token's account until the review is submitted; then both
// show at once, and the lists' ETags move.
func TestSubmitReview_CommentsShowWithTheReview(t *testing.T) {
	f := fakegithub.New(t)
	f.AddPullRequest(3, "feature", "main")
	erin := fakegithub.User{Login: "erin"}
	rv := f.AddReview(3, erin, "PENDING", "")
	f.AddReviewComment(3, rv.ID, erin, "main.go", line(3), nil, "please rename x")

	if list, _ := getJSON[[]reviewJSON](t, f, "/repos/octo/hello/pulls/3/reviews"); len(list) != 0 {
		t.Fatalf("a pending review is listed: %+v", list)
	}
	if list, _ := getJSON[[]reviewCommentJSON](t, f, "/repos/octo/hello/pulls/3/comments"); len(list) != 0 {
		t.Fatalf("a pending review's comment is listed: %+v", list)
	}
	var got fakegithub.Review
	revalidate(t, f, "/repos/octo/hello/pulls/3/comments", func() { got = f.SubmitReview(3, rv.ID, "CHANGES_REQUESTED", "See inline.") })
	if got.State != "CHANGES_REQUESTED" || got.Body != "See inline." || got.SubmittedAt.IsZero() {
		t.Errorf("SubmitReview returned %+v", got)
	}
	reviews, _ := getJSON[[]reviewJSON](t, f, "/repos/octo/hello/pulls/3/reviews")
	if len(reviews) != 1 || reviews[0].State != "CHANGES_REQUESTED" || reviews[0].SubmittedAt == nil || reviews[0].Body != "See inline." {
		t.Errorf("reviews after SubmitReview: %+v", reviews)
	}
	comments, _ := getJSON[[]reviewCommentJSON](t, f, "/repos/octo/hello/pulls/3/comments")
	if len(comments) != 1 || comments[0].Body != "please rename x" || comments[0].PullRequestReviewID != rv.ID {
		t.Errorf("comments after SubmitReview: %+v", comments)
	}
}
