package fakegithub

import (
	"fmt"
	"slices"
)

// SubmitReview submits pending review id of pull request pr with state (APPROVED,
// CHANGES_REQUESTED or COMMENTED) and body, as the reviewer's "Submit review" button
// does (POST /pulls/{n}/reviews/{id}/events): the review and every comment drafted in
// it become visible at once, submitted now, and the pull request's updated_at moves
// on. A review with inline comments is made this way on GitHub, so a client polling
// never sees the review without its comments: AddReview PENDING, AddReviewComment on
// it, then SubmitReview. It panics when there is no such review, it is not PENDING, or
// state is not a submitted review's.
func (s *Server) SubmitReview(pr, id int64, state, body string) Review {
	if !slices.Contains([]string{"APPROVED", "CHANGES_REQUESTED", "COMMENTED"}, state) {
		panic(fmt.Sprintf("fakegithub: SubmitReview(%d, %d): state %q is not APPROVED, CHANGES_REQUESTED or COMMENTED", pr, id, state))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	rv := s.mustReview(pr, id)
	if rv.State != "PENDING" {
		panic(fmt.Sprintf("fakegithub: SubmitReview(%d, %d): the review is %s, not PENDING", pr, id, rv.State))
	}
	rv.State, rv.Body, rv.SubmittedAt = state, body, s.now()
	s.bump(s.issues[pr])
	return *rv
}
