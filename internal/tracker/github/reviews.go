package github

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"sortie/internal/tracker"
)

// ReviewComment is one thing a reviewer asked to change: an inline comment of a review
// that requested changes, or that review's own body.
type ReviewComment struct {
	// ID is the inline comment's id, or "review-<review id>" for a review's body.
	ID string
	// File is the commented file's path; "" for a review's body.
	File string
	// StartLine and EndLine are the commented lines of File (equal for one line),
	// both 0 for a review's body or a comment on the whole file.
	StartLine, EndLine int
	Reviewer           string // the author's login
	Body               string
	ReviewID           int64
}

// ReviewResult is what ChangeRequests found.
type ReviewResult struct {
	// Comments are the actionable comments, review by review in the order they were
	// submitted: each review's body first, then its inline comments as GitHub lists
	// them. Never nil.
	Comments []ReviewComment
	// Latest is the newest submitted_at of the reviews and created_at of the comments
	// in Comments, for debouncing a reviewer still at work; zero when there are none.
	Latest time.Time
	// Requests and NotModified are as in CIResult: NotModified is true when GitHub
	// answered every request 304.
	Requests    int
	NotModified bool
}

type apiReview struct {
	ID          int64    `json:"id"`
	User        *apiUser `json:"user"`
	Body        *string  `json:"body"`
	State       string   `json:"state"` // APPROVED, CHANGES_REQUESTED, COMMENTED, DISMISSED, PENDING
	SubmittedAt string   `json:"submitted_at"`
	// AuthorAssociation is the author's relation to the repository: OWNER, MEMBER,
	// COLLABORATOR, CONTRIBUTOR, FIRST_TIME_CONTRIBUTOR, NONE, ...
	AuthorAssociation string `json:"author_association"`
}

type apiReviewComment struct {
	ID        int64    `json:"id"`
	User      *apiUser `json:"user"`
	Body      string   `json:"body"`
	Path      string   `json:"path"`
	Position  *int64   `json:"position"` // null once the diff no longer has the line
	Line      *int     `json:"line"`
	StartLine *int     `json:"start_line"`
	// SubjectType is "line" or "file"; a comment on the whole file has no line.
	SubjectType       string `json:"subject_type"`
	CreatedAt         string `json:"created_at"`
	AuthorAssociation string `json:"author_association"`
}

// ChangeRequests returns what human reviewers still ask to change on pull request pr
// of repo. A reviewer's CHANGES_REQUESTED reviews count until that reviewer approves or
// the request is dismissed, as GitHub's own review decision has it (the reference
// daemon counted every such review ever submitted); reviews by bots (user type Bot, or
// a login ending in "[bot]") never count. Of each review that counts, its non-empty body
// is a comment with ID "review-<id>", and its inline comments by humans that are not
// outdated (position null, unless on a whole file) are comments too, each id once.
//
// It lists the reviews, then each counting review's comments, every page conditionally:
// 1 + (reviews that count) requests, all 304 when nothing changed.
func (t *Tracker) ChangeRequests(ctx context.Context, repo string, pr int64) (ReviewResult, error) {
	const op = "change_requests"
	r, err := t.codeHostRepo(op, repo)
	if err != nil {
		return ReviewResult{}, err
	}
	if pr <= 0 {
		return ReviewResult{}, tracker.Errorf(tracker.ErrPayload, op, "pull request number %d is not positive; check pr_number in .sortie/scm.json", pr)
	}
	base := "/pulls/" + strconv.FormatInt(pr, 10) + "/reviews"
	var cost callCost
	var reviews []apiReview
	err = t.pagesOf(ctx, op, t.codeHostURL(r, base, url.Values{"per_page": {"100"}}), func(resp response) error {
		cost.add(resp)
		page, err := decodeReviews(resp.body)
		if err != nil {
			return t.payloadErr(op, "review list", err)
		}
		reviews = append(reviews, page...)
		return nil
	})
	if err != nil {
		return ReviewResult{}, err
	}
	res := ReviewResult{Comments: []ReviewComment{}}
	seen := map[string]bool{}
	later := func(ts time.Time) {
		if ts.After(res.Latest) {
			res.Latest = ts
		}
	}
	for _, rv := range standingChangeRequests(reviews) {
		reviewer := rv.User.Login
		added := false
		if rv.Body != nil && strings.TrimSpace(*rv.Body) != "" {
			id := "review-" + strconv.FormatInt(rv.ID, 10)
			if !seen[id] {
				seen[id], added = true, true
				res.Comments = append(res.Comments, ReviewComment{ID: id, Reviewer: reviewer, Body: *rv.Body, ReviewID: rv.ID})
			}
		}
		first := t.codeHostURL(r, base+"/"+strconv.FormatInt(rv.ID, 10)+"/comments", url.Values{"per_page": {"100"}})
		err := t.pagesOf(ctx, op, first, func(resp response) error {
			cost.add(resp)
			page, err := decodeReviewComments(resp.body)
			if err != nil {
				return t.payloadErr(op, "review comment list", err)
			}
			for _, c := range page {
				id := strconv.FormatInt(c.ID, 10)
				if c.ID <= 0 || seen[id] || !human(c.User) || !trusted(c.AuthorAssociation) || outdated(&c) || strings.TrimSpace(c.Body) == "" {
					continue
				}
				seen[id], added = true, true
				rc := ReviewComment{ID: id, File: c.Path, Reviewer: c.User.Login, Body: c.Body, ReviewID: rv.ID}
				rc.StartLine, rc.EndLine = lines(c.StartLine, c.Line)
				res.Comments = append(res.Comments, rc)
				later(parseTime(c.CreatedAt))
			}
			return nil
		})
		if err != nil {
			return ReviewResult{}, err
		}
		if added {
			later(parseTime(rv.SubmittedAt))
		}
	}
	res.Requests, res.NotModified = cost.requests, cost.notModified()
	return res, nil
}

// standingChangeRequests returns the CHANGES_REQUESTED reviews by humans that still
// stand, in submission order: those after the reviewer's last approval or dismissal.
// A comment-only review changes nothing, as on GitHub.
func standingChangeRequests(reviews []apiReview) []apiReview {
	ordered := slices.Clone(reviews)
	slices.SortStableFunc(ordered, func(a, b apiReview) int {
		return parseTime(a.SubmittedAt).Compare(parseTime(b.SubmittedAt))
	})
	standing := map[string][]apiReview{} // by reviewer login, lowercased
	for _, rv := range ordered {
		if rv.ID <= 0 || !human(rv.User) || !trusted(rv.AuthorAssociation) {
			continue
		}
		who := strings.ToLower(rv.User.Login)
		switch strings.ToUpper(rv.State) {
		case "CHANGES_REQUESTED":
			standing[who] = append(standing[who], rv)
		case "APPROVED", "DISMISSED":
			delete(standing, who)
		}
	}
	var out []apiReview
	for _, rvs := range standing {
		out = append(out, rvs...)
	}
	slices.SortFunc(out, func(a, b apiReview) int {
		return cmp.Or(parseTime(a.SubmittedAt).Compare(parseTime(b.SubmittedAt)), cmp.Compare(a.ID, b.ID))
	})
	// A review listed twice (it moved between pages while they were read) counts once.
	return slices.CompactFunc(out, func(a, b apiReview) bool { return a.ID == b.ID })
}

// trusted reports whether a review's or comment's author association is one of the
// repository's own people: its owner, a member of its organisation or a collaborator.
// On a public repository anyone can request changes; what a passer-by (CONTRIBUTOR,
// FIRST_TIMER, NONE, ...) writes must not start an agent's run or reach its prompt.
func trusted(association string) bool {
	switch strings.ToUpper(strings.TrimSpace(association)) {
	case "OWNER", "MEMBER", "COLLABORATOR":
		return true
	}
	return false
}

// human reports whether u is a person: not a GitHub App's bot account.
func human(u *apiUser) bool {
	return u != nil && u.Login != "" && !strings.EqualFold(u.Type, "Bot") && !strings.HasSuffix(strings.ToLower(u.Login), "[bot]")
}

// outdated reports whether a comment's line is gone from the pull request's diff:
// GitHub then sends position null. A comment on a whole file never had a position.
func outdated(c *apiReviewComment) bool {
	return c.Position == nil && !strings.EqualFold(c.SubjectType, "file")
}

// lines maps a comment's start_line and line to the commented range: start_line, or
// line for a one-line comment, through line.
func lines(start, line *int) (int, int) {
	end := 0
	if line != nil && *line > 0 {
		end = *line
	}
	from := end
	if start != nil && *start > 0 && *start <= end {
		from = *start
	}
	return from, end
}

// decodeReviews reads one page of a pull request's review list.
func decodeReviews(body []byte) ([]apiReview, error) {
	var list []apiReview
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, err
	}
	return list, nil
}

// decodeReviewComments reads one page of a review's comment list.
func decodeReviewComments(body []byte) ([]apiReviewComment, error) {
	var list []apiReviewComment
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, err
	}
	return list, nil
}

// ReviewFingerprint identifies a set of review comments: the hex SHA-256 of their
// sorted, distinct ids joined by "\n" (the reference daemon's fingerprint), "" for none.
// It does not depend on the comments' order.
func ReviewFingerprint(cs []ReviewComment) string {
	if len(cs) == 0 {
		return ""
	}
	ids := make([]string, len(cs))
	for i, c := range cs {
		ids[i] = c.ID
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	sum := sha256.Sum256([]byte(strings.Join(ids, "\n")))
	return hex.EncodeToString(sum[:])
}
