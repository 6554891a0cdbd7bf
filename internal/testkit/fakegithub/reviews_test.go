package fakegithub_test

import (
	"net/http"
	"slices"
	"testing"
	"time"

	"sortie/internal/testkit/fakegithub"
)

type reviewJSON struct {
	ID   int64 `json:"id"`
	User struct {
		Login string `json:"login"`
		ID    int64  `json:"id"`
		Type  string `json:"type"`
	} `json:"user"`
	Body              string  `json:"body"`
	State             string  `json:"state"`
	HTMLURL           string  `json:"html_url"`
	PullRequestURL    string  `json:"pull_request_url"`
	SubmittedAt       *string `json:"submitted_at"`
	CommitID          string  `json:"commit_id"`
	AuthorAssociation string  `json:"author_association"`
}

type reviewCommentJSON struct {
	ID                  int64   `json:"id"`
	PullRequestReviewID int64   `json:"pull_request_review_id"`
	Path                string  `json:"path"`
	Position            *int    `json:"position"`
	OriginalPosition    int     `json:"original_position"`
	Line                *int    `json:"line"`
	OriginalLine        *int    `json:"original_line"`
	StartLine           *int    `json:"start_line"`
	StartSide           *string `json:"start_side"`
	Side                string  `json:"side"`
	CommitID            string  `json:"commit_id"`
	OriginalCommitID    string  `json:"original_commit_id"`
	InReplyToID         int64   `json:"in_reply_to_id"`
	DiffHunk            string  `json:"diff_hunk"`
	Body                string  `json:"body"`
	User                struct {
		Login string `json:"login"`
		Type  string `json:"type"`
	} `json:"user"`
	CreatedAt string `json:"created_at"`
	UpdatedAt string `json:"updated_at"`
}

func line(n int) *int { return &n }

// TestReviews_ShapeStatesAndVisibility: reviews come oldest first in GitHub's shape; a
// bot reviewer is a Bot; a PENDING review is seen only by its author.
func TestReviews_ShapeStatesAndVisibility(t *testing.T) {
	now := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	f := fakegithub.New(t, fakegithub.WithClock(func() time.Time { return now }))
	pr := f.AddPullRequest(3, "feature", "main")
	changes := f.AddReview(3, fakegithub.User{Login: "erin"}, "CHANGES_REQUESTED", "Please cap the retries.")
	f.AddReview(3, fakegithub.User{Login: "dependabot[bot]"}, "COMMENTED", "")
	f.AddReview(3, fakegithub.User{Login: "frank"}, "PENDING", "draft thoughts")
	f.AddReview(3, fakegithub.User{Login: fakegithub.BotLogin}, "PENDING", "my own draft")
	f.AddReview(3, fakegithub.User{Login: "erin"}, "APPROVED", "")

	list, r := getJSON[[]reviewJSON](t, f, "/repos/octo/hello/pulls/3/reviews")
	var got []string
	for _, rv := range list {
		got = append(got, rv.User.Login+":"+rv.State)
	}
	if want := []string{"erin:CHANGES_REQUESTED", "dependabot[bot]:COMMENTED", fakegithub.BotLogin + ":PENDING", "erin:APPROVED"}; !slices.Equal(got, want) {
		t.Errorf("GET reviews: %v, want %v (frank's pending review is his alone)", got, want)
	}
	first := list[0]
	if first.ID != changes.ID || first.Body != "Please cap the retries." || first.CommitID != pr.Head.SHA || first.User.Type != "User" ||
		first.SubmittedAt == nil || *first.SubmittedAt != "2026-11-28T10:00:00Z" || first.AuthorAssociation != "MEMBER" ||
		first.HTMLURL != "https://github.com/octo/hello/pull/3#pullrequestreview-"+itoa(changes.ID) {
		t.Errorf("erin's review: %+v", first)
	}
	if bot := list[1]; bot.User.Type != "Bot" || bot.Body != "" {
		t.Errorf("dependabot's review: %+v, want type Bot and an empty body", bot)
	}
	if pending := list[2]; pending.SubmittedAt != nil {
		t.Errorf("a pending review: submitted_at %v, want none", *pending.SubmittedAt)
	}
	requireKeys(t, "a review", itemKeys(t, r.body), "id", "node_id", "user", "body", "state", "html_url", "pull_request_url", "author_association", "_links", "submitted_at", "commit_id")

	one, _ := getJSON[reviewJSON](t, f, "/repos/octo/hello/pulls/3/reviews/"+itoa(changes.ID))
	if one.ID != changes.ID {
		t.Errorf("GET reviews/%d: %+v", changes.ID, one)
	}
	revalidate(t, f, "/repos/octo/hello/pulls/3/reviews", func() { f.DismissReview(3, changes.ID) })
	if list, _ := getJSON[[]reviewJSON](t, f, "/repos/octo/hello/pulls/3/reviews"); list[0].State != "DISMISSED" {
		t.Errorf("after DismissReview: %s, want DISMISSED", list[0].State)
	}
}

// TestReviewComments_ShapeOutdatedAndReplies: review comments carry GitHub's line and
// position fields; an outdated one has a null position and line and keeps its original
// commit; a reply names its parent; a push moves a current comment's commit_id.
func TestReviewComments_ShapeOutdatedAndReplies(t *testing.T) {
	f := fakegithub.New(t)
	pr := f.AddPullRequest(3, "feature", "main")
	rv := f.AddReview(3, fakegithub.User{Login: "erin"}, "CHANGES_REQUESTED", "See inline.")
	c1 := f.AddReviewComment(3, rv.ID, fakegithub.User{Login: "erin"}, "retry.go", line(42), nil, "Cap this at 5.")
	c2 := f.AddReviewComment(3, rv.ID, fakegithub.User{Login: "erin"}, "retry.go", line(12), line(10), "These three lines race.")
	old := f.AddReviewComment(3, rv.ID, fakegithub.User{Login: "erin"}, "main.go", line(7), nil, "Was wrong.", fakegithub.Outdated())
	other := f.AddReview(3, fakegithub.User{Login: "sortie-bot"}, "COMMENTED", "")
	reply := f.AddReviewComment(3, other.ID, fakegithub.User{Login: fakegithub.BotLogin}, "retry.go", line(42), nil, "Done.", fakegithub.InReplyTo(c1.ID))

	list, r := getJSON[[]reviewCommentJSON](t, f, "/repos/octo/hello/pulls/3/comments")
	if len(list) != 4 || list[0].ID != c1.ID || list[3].ID != reply.ID {
		t.Fatalf("GET pulls/3/comments: %d comments %+v, want 4 by id", len(list), list)
	}
	one := list[0]
	if one.Path != "retry.go" || one.Line == nil || *one.Line != 42 || one.OriginalLine == nil || *one.OriginalLine != 42 ||
		one.Position == nil || *one.Position != 4 || one.OriginalPosition != 4 || one.StartLine != nil || one.StartSide != nil ||
		one.Side != "RIGHT" || one.CommitID != pr.Head.SHA || one.OriginalCommitID != pr.Head.SHA ||
		one.PullRequestReviewID != rv.ID || one.DiffHunk == "" || one.InReplyToID != 0 || one.Body != "Cap this at 5." {
		t.Errorf("a one-line comment: %+v", one)
	}
	if multi := list[1]; multi.ID != c2.ID || multi.StartLine == nil || *multi.StartLine != 10 || multi.StartSide == nil || *multi.StartSide != "RIGHT" {
		t.Errorf("a multi-line comment: %+v, want start_line 10 on the RIGHT", multi)
	}
	if o := list[2]; o.ID != old.ID || o.Position != nil || o.Line != nil || o.OriginalLine == nil || *o.OriginalLine != 7 || o.OriginalPosition == 0 {
		t.Errorf("an outdated comment: %+v, want null position and line, original_line 7", o)
	}
	if rp := list[3]; rp.InReplyToID != c1.ID || rp.PullRequestReviewID != other.ID {
		t.Errorf("a reply: %+v, want in_reply_to_id %d in review %d", rp, c1.ID, other.ID)
	}
	requireKeys(t, "a review comment", itemKeys(t, r.body), "url", "pull_request_review_id", "id", "node_id", "diff_hunk", "path", "position",
		"original_position", "commit_id", "original_commit_id", "user", "body", "created_at", "updated_at", "html_url", "pull_request_url",
		"author_association", "_links", "start_line", "original_start_line", "start_side", "line", "original_line", "side", "subject_type")

	byReview, _ := getJSON[[]reviewCommentJSON](t, f, "/repos/octo/hello/pulls/3/reviews/"+itoa(rv.ID)+"/comments")
	if len(byReview) != 3 {
		t.Errorf("GET reviews/%d/comments: %d comments, want the review's 3", rv.ID, len(byReview))
	}
	if page, r := getJSON[[]reviewCommentJSON](t, f, "/repos/octo/hello/pulls/3/comments?per_page=3&page=2"); len(page) != 1 || r.header.Get("Link") != "" {
		t.Errorf("page 2 of 3 a page: %d comments, Link %q; want 1, none", len(page), r.header.Get("Link"))
	}

	revalidate(t, f, "/repos/octo/hello/pulls/3/comments", func() { f.Push(3, fakegithub.SHA("fix")) })
	list, _ = getJSON[[]reviewCommentJSON](t, f, "/repos/octo/hello/pulls/3/comments")
	if list[0].CommitID != fakegithub.SHA("fix") || list[0].OriginalCommitID != pr.Head.SHA || list[2].CommitID != pr.Head.SHA {
		t.Errorf("after a push: current comment at %s (made on %s), outdated at %s; want the new head, the old, the old", list[0].CommitID, list[0].OriginalCommitID, list[2].CommitID)
	}
	revalidate(t, f, "/repos/octo/hello/pulls/3/reviews/"+itoa(rv.ID)+"/comments", func() { f.OutdateReviewComment(c1.ID) })
	if list, _ = getJSON[[]reviewCommentJSON](t, f, "/repos/octo/hello/pulls/3/comments"); list[0].Position != nil || list[0].CommitID != pr.Head.SHA {
		t.Errorf("after OutdateReviewComment: %+v, want a null position at the commit it was made on", list[0])
	}
}

// TestReviewComments_PendingAreHidden: the comments of another's pending review are not
// listed, and its review is 404.
func TestReviewComments_PendingAreHidden(t *testing.T) {
	f := fakegithub.New(t)
	f.AddPullRequest(3, "feature", "main")
	pending := f.AddReview(3, fakegithub.User{Login: "frank"}, "PENDING", "")
	f.AddReviewComment(3, pending.ID, fakegithub.User{Login: "frank"}, "a.go", line(1), nil, "hmm")
	if list, _ := getJSON[[]reviewCommentJSON](t, f, "/repos/octo/hello/pulls/3/comments"); len(list) != 0 {
		t.Errorf("comments with frank's review pending: %+v, want none", list)
	}
	if r := get(t, f, "/repos/octo/hello/pulls/3/reviews/"+itoa(pending.ID)+"/comments"); r.status != http.StatusNotFound {
		t.Errorf("comments of frank's pending review: %d, want 404", r.status)
	}
}
