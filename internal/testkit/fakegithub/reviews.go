package fakegithub

import (
	"cmp"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Review is a pull request review.
type Review struct {
	ID    int64
	PR    int64 // the pull request's number
	User  User
	State string // APPROVED, CHANGES_REQUESTED, COMMENTED, DISMISSED or PENDING
	Body  string // "" is served as "", as GitHub does
	// CommitID is the head commit the review was made on.
	CommitID string
	// AuthorAssociation is OWNER, MEMBER, COLLABORATOR, CONTRIBUTOR, NONE, ...
	AuthorAssociation string
	SubmittedAt       time.Time // zero for a PENDING review, which is not submitted
}

var reviewStates = []string{"APPROVED", "CHANGES_REQUESTED", "COMMENTED", "DISMISSED", "PENDING"}

// AddReview adds a review of pull request pr by user (a Login is enough: the type is
// Bot when it ends in "[bot]") on its current head, submitted now unless state is
// PENDING; mutate, when given, changes it before it is stored. As on GitHub, a PENDING
// review is seen only by its author (through the API, only when that is the token's
// account, BotLogin), and a submitted one moves the pull request's updated_at. It
// panics when there is no such pull request or state is not a review's.
func (s *Server) AddReview(pr int64, user User, state, body string, mutate ...func(*Review)) Review {
	if !slices.Contains(reviewStates, state) {
		panic(fmt.Sprintf("fakegithub: AddReview(%d): state %q is none of %v", pr, state, reviewStates))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.mustPull(pr)
	u := s.account(user)
	rv := &Review{ID: s.newID(), PR: pr, User: u, State: state, Body: body, CommitID: p.head.SHA, AuthorAssociation: association(u)}
	if state != "PENDING" {
		rv.SubmittedAt = s.now()
	}
	for _, m := range mutate {
		m(rv)
	}
	s.reviews[pr] = append(s.reviews[pr], rv)
	if state != "PENDING" {
		s.bump(s.issues[pr])
	}
	return *rv
}

// DismissReview dismisses review id of pull request pr, as a maintainer may: its state
// becomes DISMISSED. It panics when there is no such review.
func (s *Server) DismissReview(pr, id int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rv := s.mustReview(pr, id)
	rv.State = "DISMISSED"
	s.bump(s.issues[pr])
}

// account is user as stored: a known login's account, or user itself (made up, with
// a new id, when it has none) the first time the login is named.
func (s *Server) account(user User) User {
	if u, ok := s.users[user.Login]; ok || user.ID == 0 {
		if !ok {
			u = s.user(user.Login)
		}
		return u
	}
	if user.Type == "" {
		user.Type = "User"
	}
	s.users[user.Login] = user
	return user
}

func (s *Server) mustReview(pr, id int64) *Review {
	for _, rv := range s.reviews[pr] {
		if rv.ID == id {
			return rv
		}
	}
	panic(fmt.Sprintf("fakegithub: pull request #%d has no review %d", pr, id))
}

// ReviewComment is a comment on a line of a pull request's diff, part of a review.
type ReviewComment struct {
	ID       int64
	PR       int64 // the pull request's number
	ReviewID int64
	User     User
	Path     string // the file, relative to the repository's root
	// Line is the line of the file the comment is on (the last of a range starting at
	// StartLine; nil StartLine for one line), in the diff's Side: RIGHT (the head) or
	// LEFT (the base). OriginalLine and OriginalStartLine are where it was made.
	Line, StartLine                 *int
	OriginalLine, OriginalStartLine *int
	Side                            string
	// Position is the comment's line in the diff, counted from the hunk's @@ line;
	// GitHub serves it as null once the line has changed since: the comment is
	// outdated. OriginalPosition is its position where it was made.
	Position         *int
	OriginalPosition int
	// CommitID is the commit the comment applies to: the head, while it is not
	// outdated. OriginalCommitID is the commit it was made on.
	CommitID, OriginalCommitID string
	InReplyToID                int64  // the comment it answers; 0 for none
	DiffHunk                   string // the diff up to the line
	Body                       string
	AuthorAssociation          string
	CreatedAt, UpdatedAt       time.Time
}

// ReviewCommentOption changes a review comment before AddReviewComment stores it.
type ReviewCommentOption func(*ReviewComment)

// Outdated makes the comment outdated: its line has changed since it was made, so
// position, line and start_line are null and commit_id stays at the commit it was made
// on.
func Outdated() ReviewCommentOption {
	return func(c *ReviewComment) { c.Position, c.Line, c.StartLine = nil, nil, nil }
}

// InReplyTo makes the comment a reply to comment id, in its thread.
func InReplyTo(id int64) ReviewCommentOption { return func(c *ReviewComment) { c.InReplyToID = id } }

// AddReviewComment adds a comment by user (as AddReview takes it) to review reviewID of
// pull request pr, on line (and from startLine, when not nil) of path on the RIGHT
// side, made on the review's commit, now. The diff hunk is made up: the four lines up
// to line, the last added. It moves the pull request's updated_at. It panics when
// there is no such review or (for a reply) comment, or line is nil: the fake has no
// file-level comments.
func (s *Server) AddReviewComment(pr, reviewID int64, user User, path string, line, startLine *int, body string, opts ...ReviewCommentOption) ReviewComment {
	if line == nil {
		panic(fmt.Sprintf("fakegithub: AddReviewComment(%d, %d): a review comment needs a line; file-level comments are not faked", pr, reviewID))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	rv := s.mustReview(pr, reviewID)
	u := s.account(user)
	first := max(1, *line-3)
	var hunk strings.Builder
	fmt.Fprintf(&hunk, "@@ -%d,%d +%d,%d @@", first, *line-first, first, *line-first+1)
	for n := first; n < *line; n++ {
		fmt.Fprintf(&hunk, "\n line %d of %s", n, path)
	}
	fmt.Fprintf(&hunk, "\n+line %d of %s", *line, path)
	pos := *line - first + 1
	now := s.now()
	c := &ReviewComment{
		ID: s.newID(), PR: pr, ReviewID: reviewID, User: u, Path: path,
		Line: intPtr(line), StartLine: intPtr(startLine), OriginalLine: intPtr(line), OriginalStartLine: intPtr(startLine),
		Side: "RIGHT", Position: &pos, OriginalPosition: pos, CommitID: rv.CommitID, OriginalCommitID: rv.CommitID,
		DiffHunk: hunk.String(), Body: body, AuthorAssociation: association(u), CreatedAt: now, UpdatedAt: now,
	}
	for _, o := range opts {
		o(c)
	}
	if c.InReplyToID != 0 && !slices.ContainsFunc(s.reviewComments[pr], func(x *ReviewComment) bool { return x.ID == c.InReplyToID }) {
		panic(fmt.Sprintf("fakegithub: AddReviewComment(%d, %d): no review comment %d on the pull request to reply to", pr, reviewID, c.InReplyToID))
	}
	s.reviewComments[pr] = append(s.reviewComments[pr], c)
	s.bump(s.issues[pr])
	return s.reviewCommentNow(c)
}

// OutdateReviewComment makes review comment id outdated, as a push that changes its
// line does (Push alone does not: the fake has no diffs). It panics when there is no
// such comment.
func (s *Server) OutdateReviewComment(id int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, cs := range s.reviewComments {
		for _, c := range cs {
			if c.ID == id {
				Outdated()(c)
				return
			}
		}
	}
	panic(fmt.Sprintf("fakegithub: no review comment %d", id))
}

func intPtr(p *int) *int {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// reviewCommentNow is a copy of c as it is now: a comment still current follows the
// pull request's head.
func (s *Server) reviewCommentNow(c *ReviewComment) ReviewComment {
	out := *c
	out.Line, out.StartLine, out.OriginalLine, out.OriginalStartLine = intPtr(c.Line), intPtr(c.StartLine), intPtr(c.OriginalLine), intPtr(c.OriginalStartLine)
	out.Position = intPtr(c.Position)
	if c.Position != nil {
		out.CommitID = s.pulls[c.PR].head.SHA
	}
	return out
}

// visible reports whether the token's account sees a review: a PENDING one only when
// it is the author.
func visible(rv *Review) bool { return rv.State != "PENDING" || rv.User.Login == BotLogin }

type wireReview struct {
	ID                int64               `json:"id"`
	NodeID            string              `json:"node_id"`
	User              wireUser            `json:"user"`
	Body              string              `json:"body"`
	State             string              `json:"state"`
	HTMLURL           string              `json:"html_url"`
	PullRequestURL    string              `json:"pull_request_url"`
	AuthorAssociation string              `json:"author_association"`
	Links             map[string]wireHref `json:"_links"`
	SubmittedAt       *string             `json:"submitted_at,omitempty"` // absent while PENDING
	CommitID          string              `json:"commit_id"`
}

func (s *Server) wireReview(rv *Review) wireReview {
	html := fmt.Sprintf("%s/pull/%d#pullrequestreview-%d", s.webRepo(), rv.PR, rv.ID)
	pr := fmt.Sprintf("%s/pulls/%d", s.apiRepo(), rv.PR)
	return wireReview{
		ID: rv.ID, NodeID: "PRR_" + strconv.FormatInt(rv.ID, 10), User: s.wireUser(rv.User), Body: rv.Body,
		State: rv.State, HTMLURL: html, PullRequestURL: pr, AuthorAssociation: rv.AuthorAssociation,
		Links:       map[string]wireHref{"html": {html}, "pull_request": {pr}},
		SubmittedAt: tsOrNull(rv.SubmittedAt), CommitID: rv.CommitID,
	}
}

type wireReviewComment struct {
	URL                 string              `json:"url"`
	PullRequestReviewID int64               `json:"pull_request_review_id"`
	ID                  int64               `json:"id"`
	NodeID              string              `json:"node_id"`
	DiffHunk            string              `json:"diff_hunk"`
	Path                string              `json:"path"`
	Position            *int                `json:"position"`
	OriginalPosition    int                 `json:"original_position"`
	CommitID            string              `json:"commit_id"`
	OriginalCommitID    string              `json:"original_commit_id"`
	InReplyToID         int64               `json:"in_reply_to_id,omitempty"`
	User                wireUser            `json:"user"`
	Body                string              `json:"body"`
	CreatedAt           string              `json:"created_at"`
	UpdatedAt           string              `json:"updated_at"`
	HTMLURL             string              `json:"html_url"`
	PullRequestURL      string              `json:"pull_request_url"`
	AuthorAssociation   string              `json:"author_association"`
	Links               map[string]wireHref `json:"_links"`
	StartLine           *int                `json:"start_line"`
	OriginalStartLine   *int                `json:"original_start_line"`
	StartSide           *string             `json:"start_side"`
	Line                *int                `json:"line"`
	OriginalLine        *int                `json:"original_line"`
	Side                string              `json:"side"`
	SubjectType         string              `json:"subject_type"`
}

func (s *Server) wireReviewComment(stored *ReviewComment) wireReviewComment {
	c := s.reviewCommentNow(stored)
	self := fmt.Sprintf("%s/pulls/comments/%d", s.apiRepo(), c.ID)
	html := fmt.Sprintf("%s/pull/%d#discussion_r%d", s.webRepo(), c.PR, c.ID)
	pr := fmt.Sprintf("%s/pulls/%d", s.apiRepo(), c.PR)
	w := wireReviewComment{
		URL: self, PullRequestReviewID: c.ReviewID, ID: c.ID, NodeID: "PRRC_" + strconv.FormatInt(c.ID, 10),
		DiffHunk: c.DiffHunk, Path: c.Path, Position: c.Position, OriginalPosition: c.OriginalPosition,
		CommitID: c.CommitID, OriginalCommitID: c.OriginalCommitID, InReplyToID: c.InReplyToID,
		User: s.wireUser(c.User), Body: c.Body, CreatedAt: ts(c.CreatedAt), UpdatedAt: ts(c.UpdatedAt),
		HTMLURL: html, PullRequestURL: pr, AuthorAssociation: c.AuthorAssociation,
		Links:     map[string]wireHref{"self": {self}, "html": {html}, "pull_request": {pr}},
		StartLine: c.StartLine, OriginalStartLine: c.OriginalStartLine, Line: c.Line, OriginalLine: c.OriginalLine,
		Side: c.Side, SubjectType: "line",
	}
	if c.OriginalStartLine != nil {
		w.StartSide = &w.Side
	}
	return w
}

func (s *Server) listReviews(r *http.Request, pr int64) reply {
	items := []any{}
	for _, rv := range s.reviews[pr] {
		if visible(rv) {
			items = append(items, s.wireReview(rv))
		}
	}
	return s.pageAny(r, items)
}

// review is review id (a path segment) of pull request pr, when the token's account
// sees it.
func (s *Server) review(pr int64, id string) *Review {
	for _, rv := range s.reviews[pr] {
		if strconv.FormatInt(rv.ID, 10) == id && visible(rv) {
			return rv
		}
	}
	return nil
}

func (s *Server) getReview(pr int64, id string) reply {
	rv := s.review(pr, id)
	if rv == nil {
		return notFound()
	}
	return okJSON(s.wireReview(rv))
}

func (s *Server) listReviewComments(r *http.Request, pr int64, id string) reply {
	rv := s.review(pr, id)
	if rv == nil {
		return notFound()
	}
	items := []any{}
	for _, c := range s.reviewComments[pr] {
		if c.ReviewID == rv.ID {
			items = append(items, s.wireReviewComment(c))
		}
	}
	return s.pageAny(r, items)
}

// listPullComments is every review comment the token's account sees on pull request
// pr: by id, or by sort=created|updated in direction (asc unless desc); since keeps
// those updated at or after it.
func (s *Server) listPullComments(r *http.Request, pr int64) reply {
	q := r.URL.Query()
	var since time.Time
	if v := q.Get("since"); v != "" {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return failJSON(http.StatusUnprocessableEntity, "Validation Failed")
		}
		since = t
	}
	var list []*ReviewComment
	for _, c := range s.reviewComments[pr] {
		if s.review(pr, strconv.FormatInt(c.ReviewID, 10)) != nil && !c.UpdatedAt.Before(since) {
			list = append(list, c)
		}
	}
	if sortBy := q.Get("sort"); sortBy == "created" || sortBy == "updated" {
		slices.SortStableFunc(list, func(a, b *ReviewComment) int {
			c := a.CreatedAt.Compare(b.CreatedAt)
			if sortBy == "updated" {
				c = a.UpdatedAt.Compare(b.UpdatedAt)
			}
			c = cmp.Or(c, cmp.Compare(a.ID, b.ID))
			if q.Get("direction") == "desc" {
				return -c
			}
			return c
		})
	}
	items := make([]any, len(list))
	for i, c := range list {
		items[i] = s.wireReviewComment(c)
	}
	return s.pageAny(r, items)
}
