package store

import (
	"context"
	"fmt"
	"time"
)

// Reaction kinds.
const (
	ReactionCI     = "ci"
	ReactionReview = "review"
)

// ReactionWatch is a handed-off issue whose pull request Sortie watches for CI
// failures and change requests (internal/reactions). At most one per issue; a new
// hand-off replaces it.
type ReactionWatch struct {
	IssueID    string
	Identifier string
	// Workspace is the issue's workspace path; SessionID the agent session a reaction
	// run resumes; Branch the workspace's branch (read from files the agent wrote:
	// untrusted, used only as a query parameter); PRNumber the pull request once found
	// (0 until then).
	Workspace string
	SessionID string
	Branch    string
	PRNumber  int
	// HandedOffAt is when the issue was (last) handed off.
	HandedOffAt time.Time
}

// Validate checks the fields SaveReactionWatch needs.
func (w ReactionWatch) Validate() error {
	var c checks
	c.empty("issue id", w.IssueID)
	c.empty("identifier", w.Identifier)
	c.zero("handed_off_at", w.HandedOffAt)
	if w.PRNumber < 0 {
		c.add(fmt.Errorf("pr number must be 0 or more (got %d)", w.PRNumber))
	}
	return c.err()
}

// CheckReactionKey checks the key of a reaction state: an issue id and a known kind
// (ReactionCI or ReactionReview). The ReactionStore methods that take one refuse an
// invalid one.
func CheckReactionKey(issueID, kind string) error {
	var c checks
	c.empty("issue id", issueID)
	if kind != ReactionCI && kind != ReactionReview {
		c.add(fmt.Errorf("reaction kind %q is not %q or %q", kind, ReactionCI, ReactionReview))
	}
	return c.err()
}

// ReactionState is what Sortie remembers of one reaction kind of one issue across
// restarts and hand-offs: the fingerprint of the failure or change request last seen
// (the head SHA for CI, a hash of the sorted comment ids for reviews), whether a run
// was dispatched for it, how many runs this kind has had, and whether the issue was
// escalated to humans for it.
type ReactionState struct {
	IssueID     string
	Kind        string // ReactionCI or ReactionReview
	Fingerprint string
	Dispatched  bool
	Attempts    int
	Escalated   bool
	UpdatedAt   time.Time
}

// ReactionStore keeps the watches and reaction states. Every method is safe for
// concurrent use; several daemons may share one PostgreSQL store. Methods taking an
// (issueID, kind) key refuse an invalid one (CheckReactionKey); ObserveReaction and
// MarkReactionDispatched also refuse an empty fingerprint.
type ReactionStore interface {
	// SaveReactionWatch inserts or replaces the watch of w.IssueID. An invalid watch
	// (w.Validate) is an error.
	SaveReactionWatch(ctx context.Context, w ReactionWatch) error
	// DeleteReactionWatch stops watching an issue; its reaction states stay (they
	// count attempts across hand-offs). Deleting a missing one is not an error.
	DeleteReactionWatch(ctx context.Context, issueID string) error
	// LoadReactionWatches returns every watch, oldest hand-off first.
	LoadReactionWatches(ctx context.Context) ([]ReactionWatch, error)
	// ObserveReaction records fingerprint fp as the one now seen for (issueID, kind)
	// and returns the state after it: a new fingerprint resets Dispatched (a failure
	// not acted on yet); the same one leaves the state as it was. Attempts and
	// Escalated are kept either way.
	ObserveReaction(ctx context.Context, issueID, kind, fp string, now time.Time) (ReactionState, error)
	// MarkReactionDispatched sets Dispatched and adds one to Attempts, only if the
	// state's fingerprint is still fp and it was not dispatched: it reports whether
	// this call did it (false: another daemon, or an earlier run, already did).
	MarkReactionDispatched(ctx context.Context, issueID, kind, fp string, now time.Time) (bool, error)
	// ReleaseReactionDispatch takes back MarkReactionDispatched when the run it
	// recorded never reached the agent: Dispatched is cleared and the attempt given
	// back, only if the state's fingerprint is still fp and it is dispatched.
	ReleaseReactionDispatch(ctx context.Context, issueID, kind, fp string) error
	// ResetReaction clears (issueID, kind): CI passed, or the change requests were
	// resolved. Attempts go back to 0 and Escalated to false: the state is forgotten
	// (ReactionStates no longer lists it) and the next ObserveReaction starts a new
	// one. Resetting a missing one is not an error.
	ResetReaction(ctx context.Context, issueID, kind string) error
	// EscalateReaction marks (issueID, kind) escalated to humans. A state not observed
	// yet is made, with an empty fingerprint, so that the escalation is kept.
	EscalateReaction(ctx context.Context, issueID, kind string, now time.Time) error
	// ReactionStates returns the states of issueID, ordered by kind (none is not an
	// error).
	ReactionStates(ctx context.Context, issueID string) ([]ReactionState, error)
	// DeleteReactions forgets the issue's watch and states (the issue is terminal or
	// gone).
	DeleteReactions(ctx context.Context, issueID string) error
}
