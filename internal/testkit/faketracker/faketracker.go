// Package faketracker is an in-memory issue tracker for tests: a tracker.Tracker,
// tracker.Watcher and tracker.Labeler that keeps state the way a real tracker does.
// Transitions, comments and labels persist and move the issue's updated_at, blockers
// report their blocker's current state, state lookups omit unknown ids, and every
// change (the daemon's or a test's) wakes the watchers. Tests can make any operation fail, once, n times or until healed,
// and read how often each operation was called.
//
// It owns no scheduling logic and is not a tracker adapter: nothing registers it by kind.
package faketracker

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"sortie/internal/tracker"
)

// Op names one tracker operation, for fault injection and call counts. The values are
// the Op of the tracker.Error the operation returns.
type Op string

// Tracker operations.
const (
	OpFetchCandidates          Op = "fetch_candidates"
	OpFetchIssue               Op = "fetch_issue"
	OpFetchStates              Op = "fetch_states_by_ids"
	OpFetchStatesByIdentifiers Op = "fetch_states_by_identifiers"
	OpFetchComments            Op = "fetch_comments"
	OpTransition               Op = "transition"
	OpComment                  Op = "comment"
	OpAddLabel                 Op = "add_label"
	OpSelf                     Op = "self"
)

// Epoch is the first updated_at the tracker stamps; each later change is one second
// after the previous one, so every change gives an issue a new updated_at.
var Epoch = time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)

var (
	_ tracker.Tracker = (*Tracker)(nil)
	_ tracker.Watcher = (*Tracker)(nil)
	_ tracker.Account = (*Tracker)(nil)
	_ tracker.Labeler = (*Tracker)(nil)
)

// Self is the account the fake tracker writes as: CommentIssue's comments are by
// the login "sortie".
var Self = tracker.Identity{Login: "sortie", Name: "Sortie"}

// Labeling is one AddLabel call that succeeded; Added is false when the issue had the
// label already.
type Labeling struct {
	IssueID string
	Label   string
	Added   bool
}

// Transition is one TransitionIssue call that succeeded.
type Transition struct {
	IssueID string
	From    string
	To      string
}

// Tracker is the in-memory tracker. Create it with New; it is safe for concurrent use.
type Tracker struct {
	active []string

	mu          sync.Mutex
	issues      map[string]*tracker.Issue
	order       []string // ids in insertion order: listing calls return this order
	stamps      int      // changes made so far; updated_at is Epoch + stamps seconds
	commentSeq  int
	faults      map[Op]*fault
	calls       map[Op]int
	failures    map[Op]int
	transitions []Transition
	labelings   []Labeling
	watchers    map[chan struct{}]struct{}
	before      map[Op]func(ctx context.Context)
}

// fault is an injected failure: the next n calls of an operation fail with err (n < 0:
// every call until healed).
type fault struct {
	n   int
	err error
}

// New returns an empty tracker whose candidates are the issues in activeStates
// (compared case-insensitively, as real adapters do).
func New(activeStates ...string) *Tracker {
	return &Tracker{
		active:   slices.Clone(activeStates),
		issues:   map[string]*tracker.Issue{},
		faults:   map[Op]*fault{},
		calls:    map[Op]int{},
		failures: map[Op]int{},
		watchers: map[chan struct{}]struct{}{},
		before:   map[Op]func(context.Context){},
	}
}

// Put adds issues, or replaces those with the same id, as a human creating or editing
// them would. An issue without UpdatedAt is stamped with the next change time; one
// without CreatedAt gets its UpdatedAt. Comments nil means none.
func (t *Tracker) Put(issues ...tracker.Issue) {
	t.mu.Lock()
	for _, is := range issues {
		c := clone(is, true)
		if c.Comments == nil {
			c.Comments = []tracker.Comment{}
		}
		if c.UpdatedAt == "" {
			c.UpdatedAt = t.stampLocked()
		}
		if c.CreatedAt == "" {
			c.CreatedAt = c.UpdatedAt
		}
		if _, ok := t.issues[c.ID]; !ok {
			t.order = append(t.order, c.ID)
		}
		t.issues[c.ID] = &c
	}
	t.mu.Unlock()
	t.notify()
}

// Update applies edit to the issue with the given id as a human edit: updated_at moves
// and watchers wake. It fails if there is no such issue. edit must not keep the pointer.
func (t *Tracker) Update(id string, edit func(*tracker.Issue)) error {
	t.mu.Lock()
	is, ok := t.issues[id]
	if !ok {
		t.mu.Unlock()
		return fmt.Errorf("faketracker: update: no issue with id %q", id)
	}
	edit(is)
	is.ID = id
	is.UpdatedAt = t.stampLocked()
	t.mu.Unlock()
	t.notify()
	return nil
}

// SetState moves an issue to state as a human would (not recorded in Transitions).
func (t *Tracker) SetState(id, state string) error {
	return t.Update(id, func(is *tracker.Issue) { is.State = state })
}

// AddComment adds a comment as a human would; updated_at moves.
func (t *Tracker) AddComment(id, author, body string) error {
	return t.Update(id, func(is *tracker.Issue) {
		is.Comments = append(is.Comments, t.newCommentLocked(author, body))
	})
}

// Delete removes an issue; later lookups report tracker_not_found.
func (t *Tracker) Delete(id string) {
	t.mu.Lock()
	if _, ok := t.issues[id]; ok {
		delete(t.issues, id)
		t.order = slices.DeleteFunc(t.order, func(s string) bool { return s == id })
	}
	t.mu.Unlock()
	t.notify()
}

// Issue returns a copy of the issue with the given id, comments included.
func (t *Tracker) Issue(id string) (tracker.Issue, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	is, ok := t.issues[id]
	if !ok {
		return tracker.Issue{}, false
	}
	return t.resolvedLocked(is, true), true
}

// Transitions returns the successful TransitionIssue calls so far, oldest first.
func (t *Tracker) Transitions() []Transition {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.transitions)
}

// TransitionsOf returns the target states of the successful TransitionIssue calls for
// one issue, oldest first.
func (t *Tracker) TransitionsOf(id string) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []string
	for _, tr := range t.transitions {
		if tr.IssueID == id {
			out = append(out, tr.To)
		}
	}
	return out
}

// Labelings returns the successful AddLabel calls so far, oldest first.
func (t *Tracker) Labelings() []Labeling {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.labelings)
}

// FailNext makes the next n calls of op fail with err (a tracker_transport_error when
// err is nil). It replaces any fault already set for op.
func (t *Tracker) FailNext(op Op, n int, err error) {
	t.setFault(op, n, err)
}

// FailAlways makes every call of op fail with err (a tracker_transport_error when err is
// nil) until Heal.
func (t *Tracker) FailAlways(op Op, err error) {
	t.setFault(op, -1, err)
}

// Heal removes the fault set for op.
func (t *Tracker) Heal(op Op) {
	t.mu.Lock()
	delete(t.faults, op)
	t.mu.Unlock()
}

func (t *Tracker) setFault(op Op, n int, err error) {
	if err == nil {
		err = tracker.Errorf(tracker.ErrTransport, string(op), "injected failure")
	}
	t.mu.Lock()
	t.faults[op] = &fault{n: n, err: err}
	t.mu.Unlock()
}

// BeforeCall makes every later call of op run f first, on the caller's goroutine and
// without the tracker's lock, so f may block (to hold a caller at a precise point) or
// change the tracker. A nil f removes the hook.
func (t *Tracker) BeforeCall(op Op, f func(ctx context.Context)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if f == nil {
		delete(t.before, op)
		return
	}
	t.before[op] = f
}

// Calls returns how many times op was called, failed calls included.
func (t *Tracker) Calls(op Op) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.calls[op]
}

// Failures returns how many calls of op failed because of an injected fault.
func (t *Tracker) Failures(op Op) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.failures[op]
}

// lockFor runs op's BeforeCall hook, if any, then takes t.mu.
func (t *Tracker) lockFor(ctx context.Context, op Op) {
	t.mu.Lock()
	f := t.before[op]
	if f == nil {
		return
	}
	t.mu.Unlock()
	f(ctx)
	t.mu.Lock()
}

// beginLocked counts a call of op and returns the error it must fail with, if any. It
// is called with t.mu held.
func (t *Tracker) beginLocked(ctx context.Context, op Op) error {
	t.calls[op]++
	if err := ctx.Err(); err != nil {
		return &tracker.Error{Kind: tracker.ErrTransport, Op: string(op), Err: err}
	}
	f, ok := t.faults[op]
	if !ok {
		return nil
	}
	if f.n > 0 {
		f.n--
		if f.n == 0 {
			delete(t.faults, op)
		}
	}
	t.failures[op]++
	return f.err
}

// FetchCandidateIssues returns the issues in an active state, in insertion order, with
// nil comments and blocker states resolved.
func (t *Tracker) FetchCandidateIssues(ctx context.Context) ([]tracker.Issue, error) {
	t.lockFor(ctx, OpFetchCandidates)
	defer t.mu.Unlock()
	if err := t.beginLocked(ctx, OpFetchCandidates); err != nil {
		return nil, err
	}
	out := make([]tracker.Issue, 0, len(t.order))
	for _, id := range t.order {
		is := t.issues[id]
		if tracker.StateIn(is.State, t.active) {
			out = append(out, t.resolvedLocked(is, false))
		}
	}
	return out, nil
}

// FetchIssueByID returns one issue with its comments (empty, not nil, when none), or a
// tracker_not_found error.
func (t *Tracker) FetchIssueByID(ctx context.Context, id string) (tracker.Issue, error) {
	t.lockFor(ctx, OpFetchIssue)
	defer t.mu.Unlock()
	if err := t.beginLocked(ctx, OpFetchIssue); err != nil {
		return tracker.Issue{}, err
	}
	is, ok := t.issues[id]
	if !ok {
		return tracker.Issue{}, notFound(OpFetchIssue, id)
	}
	return t.resolvedLocked(is, true), nil
}

// FetchIssueStatesByIDs returns id → state for the known ids; unknown ones are omitted.
func (t *Tracker) FetchIssueStatesByIDs(ctx context.Context, ids []string) (map[string]string, error) {
	t.lockFor(ctx, OpFetchStates)
	defer t.mu.Unlock()
	if err := t.beginLocked(ctx, OpFetchStates); err != nil {
		return nil, err
	}
	out := make(map[string]string, len(ids))
	for _, id := range ids {
		if is, ok := t.issues[id]; ok {
			out[id] = is.State
		}
	}
	return out, nil
}

// FetchIssueStatesByIdentifiers returns identifier → state for the known identifiers;
// unknown ones are omitted.
func (t *Tracker) FetchIssueStatesByIdentifiers(ctx context.Context, identifiers []string) (map[string]string, error) {
	t.lockFor(ctx, OpFetchStatesByIdentifiers)
	defer t.mu.Unlock()
	if err := t.beginLocked(ctx, OpFetchStatesByIdentifiers); err != nil {
		return nil, err
	}
	out := make(map[string]string, len(identifiers))
	for _, ident := range identifiers {
		for _, id := range t.order {
			if is := t.issues[id]; is.Identifier == ident {
				out[ident] = is.State
				break
			}
		}
	}
	return out, nil
}

// FetchIssueComments returns an issue's comments, oldest first, or tracker_not_found.
func (t *Tracker) FetchIssueComments(ctx context.Context, id string) ([]tracker.Comment, error) {
	t.lockFor(ctx, OpFetchComments)
	defer t.mu.Unlock()
	if err := t.beginLocked(ctx, OpFetchComments); err != nil {
		return nil, err
	}
	is, ok := t.issues[id]
	if !ok {
		return nil, notFound(OpFetchComments, id)
	}
	out := slices.Clone(is.Comments)
	if out == nil {
		out = []tracker.Comment{}
	}
	return out, nil
}

// TransitionIssue moves an issue to targetState (any name is accepted) and records the
// transition; updated_at moves and watchers wake.
func (t *Tracker) TransitionIssue(ctx context.Context, id, targetState string) error {
	t.lockFor(ctx, OpTransition)
	if err := t.beginLocked(ctx, OpTransition); err != nil {
		t.mu.Unlock()
		return err
	}
	is, ok := t.issues[id]
	if !ok {
		t.mu.Unlock()
		return notFound(OpTransition, id)
	}
	t.transitions = append(t.transitions, Transition{IssueID: id, From: is.State, To: targetState})
	is.State = targetState
	is.UpdatedAt = t.stampLocked()
	t.mu.Unlock()
	t.notify()
	return nil
}

// CommentIssue appends a comment by "sortie"; updated_at moves and watchers wake.
func (t *Tracker) CommentIssue(ctx context.Context, id, text string) error {
	t.lockFor(ctx, OpComment)
	if err := t.beginLocked(ctx, OpComment); err != nil {
		t.mu.Unlock()
		return err
	}
	is, ok := t.issues[id]
	if !ok {
		t.mu.Unlock()
		return notFound(OpComment, id)
	}
	is.Comments = append(is.Comments, t.newCommentLocked(Self.Login, text))
	is.UpdatedAt = t.stampLocked()
	t.mu.Unlock()
	t.notify()
	return nil
}

// AddLabel implements tracker.Labeler: it adds label, lowercased as adapters report
// labels, to the issue's labels and records the call; updated_at moves and watchers
// wake. A label the issue has already (case-insensitively) changes nothing, as on the
// real trackers, and is recorded with Added false.
func (t *Tracker) AddLabel(ctx context.Context, id, label string) error {
	t.lockFor(ctx, OpAddLabel)
	if err := t.beginLocked(ctx, OpAddLabel); err != nil {
		t.mu.Unlock()
		return err
	}
	is, ok := t.issues[id]
	if !ok {
		t.mu.Unlock()
		return notFound(OpAddLabel, id)
	}
	l := strings.ToLower(strings.TrimSpace(label))
	if l == "" {
		t.mu.Unlock()
		return tracker.Errorf(tracker.ErrPayload, string(OpAddLabel), "empty label")
	}
	if slices.Contains(is.Labels, l) {
		t.labelings = append(t.labelings, Labeling{IssueID: id, Label: label})
		t.mu.Unlock()
		return nil
	}
	t.labelings = append(t.labelings, Labeling{IssueID: id, Label: label, Added: true})
	is.Labels = append(is.Labels, l)
	is.UpdatedAt = t.stampLocked()
	t.mu.Unlock()
	t.notify()
	return nil
}

// Self implements tracker.Account: the daemon's comments are by Self.
func (t *Tracker) Self(ctx context.Context) (tracker.Identity, error) {
	t.lockFor(ctx, OpSelf)
	defer t.mu.Unlock()
	if err := t.beginLocked(ctx, OpSelf); err != nil {
		return tracker.Identity{}, err
	}
	return Self, nil
}

// Watch returns a channel that receives a value, coalesced, after each change, and is
// closed when ctx ends.
func (t *Tracker) Watch(ctx context.Context) <-chan struct{} {
	ch := make(chan struct{}, 1)
	t.mu.Lock()
	t.watchers[ch] = struct{}{}
	t.mu.Unlock()
	go func() {
		<-ctx.Done()
		t.mu.Lock()
		delete(t.watchers, ch)
		t.mu.Unlock()
		close(ch)
	}()
	return ch
}

// PollOnly returns the tracker without its Watch method, for code paths that must be
// driven by polls alone. Like a wrapper in the daemon (the metrics' counting tracker),
// it hides the tracker's optional interfaces but unwraps to it, so tracker.As still
// finds its Account.
func (t *Tracker) PollOnly() tracker.Tracker { return pollOnly{t} }

type pollOnly struct{ tracker.Tracker }

// Unwrap returns the tracker, for tracker.As.
func (p pollOnly) Unwrap() tracker.Tracker { return p.Tracker }

// WithoutLabels returns the tracker as one that cannot put labels on issues (a
// tracker without tracker.Labeler), for tests of what happens then. It keeps Watch and
// Self; it does not unwrap, so tracker.As finds no Labeler through it.
func (t *Tracker) WithoutLabels() tracker.Tracker { return noLabels{t} }

// noLabels is the Tracker without AddLabel.
type noLabels struct{ t *Tracker }

func (n noLabels) FetchCandidateIssues(ctx context.Context) ([]tracker.Issue, error) {
	return n.t.FetchCandidateIssues(ctx)
}

func (n noLabels) FetchIssueByID(ctx context.Context, id string) (tracker.Issue, error) {
	return n.t.FetchIssueByID(ctx, id)
}

func (n noLabels) FetchIssueStatesByIDs(ctx context.Context, ids []string) (map[string]string, error) {
	return n.t.FetchIssueStatesByIDs(ctx, ids)
}

func (n noLabels) FetchIssueStatesByIdentifiers(ctx context.Context, ids []string) (map[string]string, error) {
	return n.t.FetchIssueStatesByIdentifiers(ctx, ids)
}

func (n noLabels) FetchIssueComments(ctx context.Context, id string) ([]tracker.Comment, error) {
	return n.t.FetchIssueComments(ctx, id)
}

func (n noLabels) TransitionIssue(ctx context.Context, id, state string) error {
	return n.t.TransitionIssue(ctx, id, state)
}

func (n noLabels) CommentIssue(ctx context.Context, id, text string) error {
	return n.t.CommentIssue(ctx, id, text)
}

func (n noLabels) Watch(ctx context.Context) <-chan struct{} { return n.t.Watch(ctx) }

func (n noLabels) Self(ctx context.Context) (tracker.Identity, error) { return n.t.Self(ctx) }

func (t *Tracker) notify() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for ch := range t.watchers {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

func (t *Tracker) stampLocked() string {
	t.stamps++
	return Epoch.Add(time.Duration(t.stamps) * time.Second).Format(time.RFC3339)
}

func (t *Tracker) newCommentLocked(author, body string) tracker.Comment {
	t.commentSeq++
	return tracker.Comment{ID: "c" + strconv.Itoa(t.commentSeq), Author: author, AuthorLogin: author, Body: body,
		CreatedAt: Epoch.Add(time.Duration(t.stamps+1) * time.Second).Format(time.RFC3339)}
}

// resolvedLocked copies is for a caller, with each known blocker's current state.
func (t *Tracker) resolvedLocked(is *tracker.Issue, withComments bool) tracker.Issue {
	c := clone(*is, withComments)
	for i, b := range c.BlockedBy {
		if blocker, ok := t.issues[b.ID]; ok {
			c.BlockedBy[i].State = blocker.State
		}
	}
	return c
}

func clone(is tracker.Issue, withComments bool) tracker.Issue {
	c := is.Clone()
	switch {
	case !withComments:
		c.Comments = nil
	case c.Comments == nil:
		c.Comments = []tracker.Comment{}
	}
	return c
}

func notFound(op Op, id string) error {
	return tracker.Errorf(tracker.ErrNotFound, string(op), "no issue with id %q", id)
}
