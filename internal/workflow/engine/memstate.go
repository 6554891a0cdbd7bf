package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"sortie/internal/store"
)

// MemoryState is the standalone server's State: sessions, checkpoints and the trace
// in memory, and, when it has a file, the sessions also there (0600, written
// atomically) so that a restarted server still accepts each session's newest token.
// The trace and checkpoints of a standalone server end with its process.
type MemoryState struct {
	path string

	mu          sync.Mutex
	sessions    map[string]store.WorkflowSession
	events      []store.TraceEvent
	checkpoints []store.Checkpoint
	nextID      int64
}

// NewMemoryState returns a State keeping sessions in path too ("" for none), reading
// the sessions already there.
func NewMemoryState(path string) (*MemoryState, error) {
	m := &MemoryState{path: path, sessions: map[string]store.WorkflowSession{}}
	if path == "" {
		return m, nil
	}
	b, err := os.ReadFile(path)
	switch {
	case os.IsNotExist(err):
		return m, nil
	case err != nil:
		return nil, fmt.Errorf("workflow state %s: %w", path, err)
	}
	var list []store.WorkflowSession
	if err := json.Unmarshal(b, &list); err != nil {
		return nil, fmt.Errorf("workflow state %s: not a session list (%v); move it aside to start afresh", path, err)
	}
	for _, s := range list {
		m.sessions[s.SessionID] = s
	}
	return m, nil
}

// maxMemoryEvents bounds the in-memory trace.
const maxMemoryEvents = 20000

func (m *MemoryState) SaveWorkflowSession(_ context.Context, s store.WorkflowSession) error {
	if err := s.Validate(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sessions[s.SessionID] = s
	return m.flush()
}

// flush writes the sessions file; m.mu is held.
func (m *MemoryState) flush() error {
	if m.path == "" {
		return nil
	}
	list := make([]store.WorkflowSession, 0, len(m.sessions))
	for _, s := range m.sessions {
		list = append(list, s)
	}
	slices.SortFunc(list, func(a, b store.WorkflowSession) int { return a.UpdatedAt.Compare(b.UpdatedAt) })
	b, err := json.Marshal(list)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(m.path), 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(m.path), ".sessions-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), m.path)
}

func (m *MemoryState) LoadWorkflowSessions(context.Context) ([]store.WorkflowSession, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	list := make([]store.WorkflowSession, 0, len(m.sessions))
	for _, s := range m.sessions {
		list = append(list, s)
	}
	slices.SortFunc(list, func(a, b store.WorkflowSession) int { return a.UpdatedAt.Compare(b.UpdatedAt) })
	return list, nil
}

func (m *MemoryState) AppendTraceEvent(_ context.Context, e store.TraceEvent) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.nextID++
	e.ID = m.nextID
	m.events = append(m.events, e)
	if len(m.events) > maxMemoryEvents {
		m.events = slices.Delete(m.events, 0, len(m.events)-maxMemoryEvents)
	}
	return e.ID, nil
}

func (m *MemoryState) TraceEvents(_ context.Context, sid string, limit int) ([]store.TraceEvent, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []store.TraceEvent
	for _, e := range m.events {
		if e.SessionID == sid {
			out = append(out, e)
		}
	}
	if len(out) > limit {
		out = out[len(out)-limit:]
	}
	return out, nil
}

func (m *MemoryState) ArmCheckpoints(_ context.Context, sid string, cps []store.Checkpoint) ([]store.Checkpoint, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	// Supersede at the new issuance's time (the engine's clock), when there is one.
	at := time.Now()
	if len(cps) > 0 && !cps[0].IssuedAt.IsZero() {
		at = cps[0].IssuedAt
	}
	var superseded []store.Checkpoint
	for i := range m.checkpoints {
		if c := &m.checkpoints[i]; c.SessionID == sid && c.Pending() {
			c.Resolution, c.ResolvedAt = store.ResolvedSuperseded, at
			superseded = append(superseded, *c)
		}
	}
	out := make([]store.Checkpoint, 0, len(cps))
	for _, c := range cps {
		m.nextID++
		c.ID = m.nextID
		for _, old := range superseded {
			if old.Activity == c.Activity && old.CheckpointID == c.CheckpointID && old.Answered() {
				c.Answer, c.AnsweredBy, c.AnswerSource, c.AnsweredAt = old.Answer, old.AnsweredBy, old.AnswerSource, old.AnsweredAt
			}
		}
		m.checkpoints = append(m.checkpoints, c)
		out = append(out, c)
	}
	return out, nil
}

func (m *MemoryState) ResolveCheckpoint(_ context.Context, sid, id, resolution string, at time.Time) (store.Checkpoint, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := range m.checkpoints {
		if c := &m.checkpoints[i]; c.SessionID == sid && c.CheckpointID == id && c.Pending() {
			c.Resolution, c.ResolvedAt = resolution, at
			return *c, nil
		}
	}
	return store.Checkpoint{}, fmt.Errorf("checkpoint %s of session %s: %w", id, sid, store.ErrNotFound)
}

func (m *MemoryState) PendingCheckpoints(context.Context) ([]store.Checkpoint, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []store.Checkpoint
	for _, c := range m.checkpoints {
		if c.Pending() {
			out = append(out, c)
		}
	}
	return out, nil
}

// AnswerCheckpoint records a human answer (tests, and any standalone front end), as
// store.WorkflowStore.AnswerCheckpoint does. The option must be one of the
// checkpoint's: an answer the agent cannot respond with would strand it.
func (m *MemoryState) AnswerCheckpoint(_ context.Context, a store.CheckpointAnswer) (store.Checkpoint, error) {
	if err := a.Validate(); err != nil {
		return store.Checkpoint{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := range m.checkpoints {
		c := &m.checkpoints[i]
		if c.SessionID != a.SessionID || c.CheckpointID != a.CheckpointID || !c.Pending() {
			continue
		}
		if c.Answered() {
			return *c, fmt.Errorf("checkpoint %s already answered: %w", a.CheckpointID, store.ErrConflict)
		}
		if len(c.Options) > 0 && !slices.ContainsFunc(c.Options, func(o store.CheckpointOption) bool { return o.ID == a.Option }) {
			ids := make([]string, len(c.Options))
			for i, o := range c.Options {
				ids[i] = o.ID
			}
			return *c, fmt.Errorf("checkpoint %s has no option %q (options: %s)", a.CheckpointID, a.Option, strings.Join(ids, ", "))
		}
		c.Answer, c.AnsweredBy, c.AnswerSource, c.AnsweredAt = a.Option, a.By, a.Source, a.At
		return *c, nil
	}
	return store.Checkpoint{}, fmt.Errorf("checkpoint %s of session %s: %w", a.CheckpointID, a.SessionID, store.ErrNotFound)
}

// IssueCheckpoints returns the newest limit checkpoints of an issue, pending or not,
// oldest of them first (store.WorkflowReader.IssueCheckpoints).
func (m *MemoryState) IssueCheckpoints(_ context.Context, issueID string, limit int) ([]store.Checkpoint, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []store.Checkpoint
	for _, c := range m.checkpoints {
		if c.IssueID == issueID {
			out = append(out, c)
		}
	}
	if len(out) > limit {
		out = out[len(out)-limit:]
	}
	return out, nil
}
