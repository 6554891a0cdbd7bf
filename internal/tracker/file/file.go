// Package file is the tracker adapter for a local JSON file of issues (kind "file"): the
// format of reference §3.3, re-read on every call behind a stat-based cache, with
// transitions and comments written back to the file atomically and a file watch so a
// saved edit reaches the orchestrator at once. It owns the issues file and nothing else:
// which issues to run and when is the orchestrator's business.
//
// The format, persistence and watching are documented for operators in
// docs/trackers/file.md.
package file

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"sortie/internal/tracker"
)

// MaxFileBytes is the largest issues file the adapter reads, in bytes (64 MiB). A bigger
// file is rejected with tracker_payload_error rather than read into memory.
const MaxFileBytes = 64 << 20

var (
	_ tracker.Tracker = (*Tracker)(nil)
	_ tracker.Watcher = (*Tracker)(nil)
	_ tracker.Labeler = (*Tracker)(nil)
)

// Tracker reads and writes one issues file. It is safe for concurrent use; transitions
// and comments made through one Tracker are serialised. Build it with New.
type Tracker struct {
	path         string   // absolute; may be a symlink, which writes follow
	activeStates []string // compared case-insensitively
	// A transition may target only an active or terminal state or the handoff state,
	// as configured (in_progress_state is one of the active states).
	terminalStates []string
	handoffState   string

	now          func() time.Time // stamps updated_at and created_at; replaced in tests
	newCommentID func() string

	mu    sync.Mutex // guards cache and written
	cache *snapshot
	// written is the content of our last write; a watch event that finds exactly
	// these bytes in the file is our own doing and wakes nobody.
	written []byte

	writeMu sync.Mutex // serialises read-modify-write cycles
	queueMu sync.Mutex // guards queue
	queue   []*request // edits waiting for the next write (modify)
	// beforeRename, when set by a test, runs after the new content is safely in the
	// temporary file and before the final check that the file did not change meanwhile.
	beforeRename func()
}

// New builds a file tracker from cfg. The issues file path is cfg.Options["path"]
// (filled from `file.path` or `tracker.path` in WORKFLOW.md); a relative path is resolved
// against cfg.WorkflowDir. Candidates are the issues whose state is in
// cfg.ActiveStates. Transitions may target only a configured state (active, terminal or
// handoff). New does not open the file: a missing or malformed file is reported
// by each call, so fixing it needs no restart.
func New(cfg tracker.Config) (tracker.Tracker, error) {
	path, err := issuesPath(cfg)
	if err != nil {
		return nil, err
	}
	return &Tracker{
		path:           path,
		activeStates:   slices.Clone(cfg.ActiveStates),
		terminalStates: slices.Clone(cfg.TerminalStates),
		handoffState:   strings.TrimSpace(cfg.HandoffState),
		now:            time.Now,
		newCommentID:   randomCommentID,
	}, nil
}

// knownState returns the configured state that state names, compared
// case-insensitively, in its configured casing.
func (t *Tracker) knownState(state string) (string, bool) {
	state = strings.TrimSpace(state)
	for _, s := range slices.Concat(t.activeStates, t.terminalStates, []string{t.handoffState}) {
		if s = strings.TrimSpace(s); s != "" && strings.EqualFold(s, state) {
			return s, true
		}
	}
	return "", false
}

// Path returns the absolute path of the issues file, as configured (not following a
// symlink).
func (t *Tracker) Path() string { return t.path }

// FetchCandidateIssues returns the issues whose state is one of the configured active
// states (case-insensitively), in file order, with nil comments.
func (t *Tracker) FetchCandidateIssues(ctx context.Context) ([]tracker.Issue, error) {
	const op = "fetch_candidates"
	doc, err := t.load(ctx, op)
	if err != nil {
		return nil, err
	}
	out := make([]tracker.Issue, 0, len(doc.issues))
	for i := range doc.issues {
		if tracker.StateIn(doc.issues[i].State, t.activeStates) {
			out = append(out, cloneIssue(doc.issues[i], false))
		}
	}
	return out, nil
}

// FetchIssueByID returns the issue with the given id, comments included (empty, not nil,
// when the file has none). An unknown id is tracker_not_found.
func (t *Tracker) FetchIssueByID(ctx context.Context, id string) (tracker.Issue, error) {
	const op = "fetch_issue"
	doc, err := t.load(ctx, op)
	if err != nil {
		return tracker.Issue{}, err
	}
	i, ok := doc.byID[id]
	if !ok {
		return tracker.Issue{}, t.notFound(op, id)
	}
	return cloneIssue(doc.issues[i], true), nil
}

// FetchIssueStatesByIDs returns id → state for the ids present in the file; unknown ids
// are omitted.
func (t *Tracker) FetchIssueStatesByIDs(ctx context.Context, ids []string) (map[string]string, error) {
	return t.statesBy(ctx, "fetch_states_by_ids", ids, func(d *document) map[string]int { return d.byID })
}

// FetchIssueStatesByIdentifiers returns identifier → state for the identifiers present in
// the file; unknown ones are omitted.
func (t *Tracker) FetchIssueStatesByIdentifiers(ctx context.Context, identifiers []string) (map[string]string, error) {
	return t.statesBy(ctx, "fetch_states_by_identifiers", identifiers, func(d *document) map[string]int { return d.byIdentifier })
}

func (t *Tracker) statesBy(ctx context.Context, op string, keys []string, index func(*document) map[string]int) (map[string]string, error) {
	out := make(map[string]string, len(keys))
	if len(keys) == 0 {
		return out, nil
	}
	doc, err := t.load(ctx, op)
	if err != nil {
		return nil, err
	}
	idx := index(doc)
	for _, k := range keys {
		if i, ok := idx[k]; ok {
			out[k] = doc.issues[i].State
		}
	}
	return out, nil
}

// FetchIssueComments returns the comments of the issue with the given id, oldest first
// (file order), empty when it has none. An unknown id is tracker_not_found.
func (t *Tracker) FetchIssueComments(ctx context.Context, id string) ([]tracker.Comment, error) {
	const op = "fetch_comments"
	doc, err := t.load(ctx, op)
	if err != nil {
		return nil, err
	}
	i, ok := doc.byID[id]
	if !ok {
		return nil, t.notFound(op, id)
	}
	out := slices.Clone(doc.issues[i].Comments)
	if out == nil {
		out = []tracker.Comment{}
	}
	return out, nil
}

func (t *Tracker) notFound(op, id string) error {
	return tracker.Errorf(tracker.ErrNotFound, op, "no issue with id %q in %s", id, t.path)
}

// cloneIssue copies an issue out of a cached document so a caller that modifies what it
// was given cannot change what the next caller sees.
func cloneIssue(src *tracker.Issue, withComments bool) tracker.Issue {
	c := src.Clone()
	switch {
	case !withComments:
		c.Comments = nil
	case c.Comments == nil:
		c.Comments = []tracker.Comment{}
	}
	return c
}
