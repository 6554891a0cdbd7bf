package metrics

import (
	"context"

	"sortie/internal/tracker"
)

// trackerOp is a tracker operation, named as in the reference's
// sortie_tracker_requests_total{operation}.
type trackerOp int

const (
	opFetchCandidates trackerOp = iota
	opFetchIssue
	opFetchStatesByIDs
	opFetchStatesByIdentifiers
	opFetchComments
	opTransition
	opComment
	opCount
)

var trackerOpNames = [opCount]string{
	opFetchCandidates:          "fetch_candidates",
	opFetchIssue:               "fetch_issue",
	opFetchStatesByIDs:         "fetch_states_by_ids",
	opFetchStatesByIdentifiers: "fetch_states_by_identifiers",
	opFetchComments:            "fetch_comments",
	opTransition:               "transition",
	opComment:                  "comment",
}

func (op trackerOp) String() string { return trackerOpNames[op] }

// Tracker wraps t so that every call is counted in sortie_tracker_requests_total by
// operation and result (error when the call returned one, cancellation included). The
// wrapper implements tracker.Watcher when t does, without counting Watch, and Unwrap
// returns t. Wrap a tracker once, and pass the wrapper to everything that calls it. A nil
// t gives nil.
func (m *Metrics) Tracker(t tracker.Tracker) tracker.Tracker {
	if t == nil {
		return nil
	}
	c := &countingTracker{t: t, ops: &m.trackerByOp}
	if w, ok := t.(tracker.Watcher); ok {
		return &watchingTracker{countingTracker: c, w: w}
	}
	return c
}

// countingTracker counts the calls it passes to t.
type countingTracker struct {
	t   tracker.Tracker
	ops *[opCount]resultPair
}

// watchingTracker is a countingTracker whose tracker can also be watched; the
// orchestrator finds tracker.Watcher by a type assertion.
type watchingTracker struct {
	*countingTracker
	w tracker.Watcher
}

// Watch passes through to the wrapped tracker.
func (w *watchingTracker) Watch(ctx context.Context) <-chan struct{} { return w.w.Watch(ctx) }

// Unwrap returns the wrapped tracker, for callers that look for an optional interface
// the wrapper does not pass through.
func (c *countingTracker) Unwrap() tracker.Tracker { return c.t }

func (c *countingTracker) count(op trackerOp, err error) { c.ops[op].count(err != nil) }

// FetchCandidateIssues implements tracker.Tracker.
func (c *countingTracker) FetchCandidateIssues(ctx context.Context) ([]tracker.Issue, error) {
	is, err := c.t.FetchCandidateIssues(ctx)
	c.count(opFetchCandidates, err)
	return is, err
}

// FetchIssueByID implements tracker.Tracker.
func (c *countingTracker) FetchIssueByID(ctx context.Context, id string) (tracker.Issue, error) {
	is, err := c.t.FetchIssueByID(ctx, id)
	c.count(opFetchIssue, err)
	return is, err
}

// FetchIssueStatesByIDs implements tracker.Tracker.
func (c *countingTracker) FetchIssueStatesByIDs(ctx context.Context, ids []string) (map[string]string, error) {
	states, err := c.t.FetchIssueStatesByIDs(ctx, ids)
	c.count(opFetchStatesByIDs, err)
	return states, err
}

// FetchIssueStatesByIdentifiers implements tracker.Tracker.
func (c *countingTracker) FetchIssueStatesByIdentifiers(ctx context.Context, identifiers []string) (map[string]string, error) {
	states, err := c.t.FetchIssueStatesByIdentifiers(ctx, identifiers)
	c.count(opFetchStatesByIdentifiers, err)
	return states, err
}

// FetchIssueComments implements tracker.Tracker.
func (c *countingTracker) FetchIssueComments(ctx context.Context, id string) ([]tracker.Comment, error) {
	comments, err := c.t.FetchIssueComments(ctx, id)
	c.count(opFetchComments, err)
	return comments, err
}

// TransitionIssue implements tracker.Tracker.
func (c *countingTracker) TransitionIssue(ctx context.Context, id, targetState string) error {
	err := c.t.TransitionIssue(ctx, id, targetState)
	c.count(opTransition, err)
	return err
}

// CommentIssue implements tracker.Tracker.
func (c *countingTracker) CommentIssue(ctx context.Context, id, text string) error {
	err := c.t.CommentIssue(ctx, id, text)
	c.count(opComment, err)
	return err
}
