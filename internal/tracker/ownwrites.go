package tracker

import (
	"slices"
	"strings"
	"sync"
)

// OwnWrites is the ledger of Sortie's own changes to issues, for holds. A hold lifts
// when a human changes the issue (spec/agent-extensions.md: "The issue re-dispatches
// only when the tracker state changes (e.g., a human moves it back ...)"; Sortie also
// counts a comment or an edit), and the tracker's updated_at is how a poll sees a
// change. But Sortie's own comments move updated_at too, and a hold lifted by the
// completion comment of the run that caused it would run the agent again, have it
// block again, comment again, and so on at every poll. So after each of its writes
// Sortie reads the issue back and records the state and updated_at it found: a poll
// that sees one of those is not a human's change (the hold adopts it as its baseline),
// a poll during a write waits for its read-back, and anything else lifts the hold.
//
// The race this leaves: a human's change that lands between Sortie's write and its
// read-back is taken for Sortie's. When the read-back shows a comment by another
// author after Sortie's newest comment, the value is not recorded, so the commonest
// case (someone answering the comment at once) still lifts the hold; an edit in that
// window of milliseconds, or a comment from the very account Sortie posts with, is
// only seen at the human's next change. Trackers that give a write's resulting
// updated_at in its response would close the window; tracker.Tracker does not.
//
// The zero value is ready to use; it is safe for concurrent use.
type OwnWrites struct {
	mu      sync.Mutex
	issues  map[string]*ownIssue
	changed chan struct{} // closed and replaced when a write ends (tests wait on it)
}

// ownIssue is what the ledger knows of one issue.
type ownIssue struct {
	inflight int         // writes (and read-backs) begun and not ended
	bodies   []string    // Sortie's newest comments on it, trimmed
	marks    []issueMark // the issue as read back after Sortie's writes, newest last
}

// issueMark is an issue's state and updated_at, verbatim.
type issueMark struct{ state, updatedAt string }

// ownKeep bounds the comments and marks kept per issue: a hold sees at most a few of
// Sortie's writes.
const ownKeep = 8

// OwnVerdict is what the ledger says of a change a poll saw.
type OwnVerdict int

const (
	NotOwn     OwnVerdict = iota // a change Sortie did not make: a human's
	OwnPending                   // Sortie is writing to the issue; judge at a later poll
	OwnWrite                     // the issue as Sortie's own write left it
)

func (w *OwnWrites) entry(id string) *ownIssue {
	if w.issues == nil {
		w.issues = map[string]*ownIssue{}
	}
	e, ok := w.issues[id]
	if !ok {
		e = &ownIssue{}
		w.issues[id] = e
	}
	return e
}

// Begin records that Sortie is about to change issue id; End must follow.
func (w *OwnWrites) Begin(id string) {
	w.mu.Lock()
	w.entry(id).inflight++
	w.mu.Unlock()
}

// Posted records the text of a comment Sortie posted on issue id.
func (w *OwnWrites) Posted(id, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	e := w.entry(id)
	e.bodies = append(e.bodies, strings.TrimSpace(text))
	if len(e.bodies) > ownKeep {
		e.bodies = e.bodies[len(e.bodies)-ownKeep:]
	}
}

// End ends a write begun with Begin; is is the issue read back after it, nil when the
// read failed.
func (w *OwnWrites) End(id string, is *Issue) {
	w.mu.Lock()
	defer w.mu.Unlock()
	e := w.entry(id)
	e.inflight--
	if is != nil && !answeredSince(is.Comments, e.bodies) {
		e.marks = append(e.marks, issueMark{is.State, is.UpdatedAt})
		if len(e.marks) > ownKeep {
			e.marks = e.marks[len(e.marks)-ownKeep:]
		}
	}
	if w.changed != nil {
		close(w.changed)
		w.changed = nil
	}
}

// answeredSince reports whether someone other than the author of Sortie's newest
// comment (one of ours, by text) commented after it. Without such a comment in cs (a
// tracker that rewrites comment text), it reports false.
func answeredSince(cs []Comment, ours []string) bool {
	last := -1
	for i, c := range cs {
		if slices.Contains(ours, strings.TrimSpace(c.Body)) {
			last = i
		}
	}
	if last < 0 {
		return false
	}
	for _, c := range cs[last+1:] {
		if c.Author != cs[last].Author {
			return true
		}
	}
	return false
}

// Explains judges a poll's view of issue id (its state and updated_at) against
// Sortie's writes.
func (w *OwnWrites) Explains(id, state, updatedAt string) OwnVerdict {
	w.mu.Lock()
	defer w.mu.Unlock()
	e, ok := w.issues[id]
	switch {
	case !ok:
		return NotOwn
	case e.inflight > 0:
		return OwnPending
	case slices.Contains(e.marks, issueMark{state, updatedAt}):
		return OwnWrite
	}
	return NotOwn
}

// Forget drops what the ledger knows of issues keep rejects and Sortie is not writing
// to, so it does not grow with every issue ever commented on.
func (w *OwnWrites) Forget(keep func(id string) bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for id, e := range w.issues {
		if e.inflight == 0 && !keep(id) {
			delete(w.issues, id)
		}
	}
}

// Idle returns whether no write to issue id is under way, and if one is, a channel
// closed when a write (of any issue) ends.
func (w *OwnWrites) Idle(id string) (bool, <-chan struct{}) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if e, ok := w.issues[id]; !ok || e.inflight == 0 {
		return true, nil
	}
	if w.changed == nil {
		w.changed = make(chan struct{})
	}
	return false, w.changed
}
