package reactions

import (
	"context"
	"slices"
	"sync"
	"time"

	"sortie/internal/store"
)

// memStore is store.ReactionStore in memory, with the semantics the interface
// documents (the drivers' conformance tests hold them to the same).
type memStore struct {
	mu      sync.Mutex
	watches map[string]store.ReactionWatch
	states  map[[2]string]store.ReactionState
}

func newMemStore() *memStore {
	return &memStore{watches: map[string]store.ReactionWatch{}, states: map[[2]string]store.ReactionState{}}
}

func (m *memStore) SaveReactionWatch(_ context.Context, w store.ReactionWatch) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.watches[w.IssueID] = w
	return nil
}

func (m *memStore) DeleteReactionWatch(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.watches, id)
	return nil
}

func (m *memStore) LoadReactionWatches(context.Context) ([]store.ReactionWatch, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []store.ReactionWatch
	for _, w := range m.watches {
		out = append(out, w)
	}
	slices.SortFunc(out, func(a, b store.ReactionWatch) int { return a.HandedOffAt.Compare(b.HandedOffAt) })
	return out, nil
}

func (m *memStore) ObserveReaction(_ context.Context, id, kind, fp string, now time.Time) (store.ReactionState, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := [2]string{id, kind}
	st, ok := m.states[k]
	if !ok {
		st = store.ReactionState{IssueID: id, Kind: kind}
	}
	if st.Fingerprint != fp {
		st.Fingerprint, st.Dispatched = fp, false
	}
	st.UpdatedAt = now
	m.states[k] = st
	return st, nil
}

func (m *memStore) MarkReactionDispatched(_ context.Context, id, kind, fp string, now time.Time) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := [2]string{id, kind}
	st, ok := m.states[k]
	if !ok || st.Fingerprint != fp || st.Dispatched {
		return false, nil
	}
	st.Dispatched, st.Attempts, st.UpdatedAt = true, st.Attempts+1, now
	m.states[k] = st
	return true, nil
}

func (m *memStore) ResetReaction(_ context.Context, id, kind string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.states, [2]string{id, kind})
	return nil
}

func (m *memStore) EscalateReaction(_ context.Context, id, kind string, now time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := [2]string{id, kind}
	st := m.states[k]
	st.IssueID, st.Kind, st.Escalated, st.UpdatedAt = id, kind, true, now
	m.states[k] = st
	return nil
}

func (m *memStore) ReactionStates(_ context.Context, id string) ([]store.ReactionState, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []store.ReactionState
	for k, st := range m.states {
		if k[0] == id {
			out = append(out, st)
		}
	}
	return out, nil
}

func (m *memStore) DeleteReactions(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.watches, id)
	for k := range m.states {
		if k[0] == id {
			delete(m.states, k)
		}
	}
	return nil
}

func (m *memStore) ReleaseReactionDispatch(_ context.Context, id, kind, fp string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := [2]string{id, kind}
	st, ok := m.states[k]
	if ok && st.Fingerprint == fp && st.Dispatched {
		st.Dispatched, st.Attempts = false, max(st.Attempts-1, 0)
		m.states[k] = st
	}
	return nil
}
