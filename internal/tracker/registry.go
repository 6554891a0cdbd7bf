package tracker

import (
	"fmt"
	"sort"
	"strings"
	"sync"

	"sortie/internal/option"
)

// Config is what a tracker adapter is built from: the typed tracker fields of
// WORKFLOW.md plus the adapter's own top-level block (e.g. `file:`), passed through as
// Options. Paths in Options are relative to WorkflowDir.
type Config struct {
	Kind     string
	Endpoint string
	APIKey   string
	Project  string
	// Team scopes a tracker to one team (Linear's team key, tracker.team_key) where
	// Project is empty; "" elsewhere.
	Team string
	// Assignee limits the issues a tracker returns as candidates to those assigned to
	// one user (tracker.assignee, else $LINEAR_ASSIGNEE; tracker.kind linear only):
	// "me" for the owner of APIKey, or a user's id or e-mail, as written (trimmed, case
	// kept). "" means no assignee filter.
	Assignee       string
	QueryFilter    string
	ActiveStates   []string
	TerminalStates []string
	HandoffState   string
	Options        map[string]any
	// Provider is tracker.provider as written (Symphony's adapter-owned object),
	// preserved unchanged for the adapter; nil when absent.
	Provider    map[string]any
	WorkflowDir string
	UserAgent   string
}

// Meta describes what an adapter kind requires of the configuration.
type Meta struct {
	RequiresProject bool
	RequiresAPIKey  bool
	// Options declares the keys of the adapter's own block of WORKFLOW.md, the
	// top-level block named after its kind (`jira:`), which reaches it as
	// Config.Options. The adapter reads the block by it (option.Read); config learns the
	// keys from here and warns about any other key in the block, which the adapter
	// ignores. Empty: the adapter reads no key of a block of its own.
	Options option.Set
}

// Factory builds a Tracker from its configuration.
type Factory func(Config) (Tracker, error)

type registration struct {
	factory Factory
	meta    Meta
}

var (
	regMu    sync.RWMutex
	registry = map[string]registration{}
)

// Register makes an adapter kind available. It panics on a duplicate kind: that is a
// programming error caught at start-up.
func Register(kind string, meta Meta, f Factory) {
	regMu.Lock()
	defer regMu.Unlock()
	if _, dup := registry[kind]; dup {
		panic("tracker: duplicate registration of kind " + kind)
	}
	registry[kind] = registration{factory: f, meta: meta}
}

// Kinds returns the registered kinds, sorted.
func Kinds() []string {
	regMu.RLock()
	defer regMu.RUnlock()
	kinds := make([]string, 0, len(registry))
	for k := range registry {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	return kinds
}

// Lookup returns the metadata of a registered kind.
func Lookup(kind string) (Meta, bool) {
	regMu.RLock()
	defer regMu.RUnlock()
	r, ok := registry[kind]
	return r.meta, ok
}

// New builds the adapter for cfg.Kind. An unknown kind fails with the list of known ones.
func New(cfg Config) (Tracker, error) {
	regMu.RLock()
	r, ok := registry[cfg.Kind]
	regMu.RUnlock()
	if !ok {
		return nil, &Error{Kind: ErrUnsupportedKind, Message: fmt.Sprintf("unknown tracker kind %q (known: %s)", cfg.Kind, strings.Join(Kinds(), ", "))}
	}
	if r.meta.RequiresAPIKey && strings.TrimSpace(cfg.APIKey) == "" {
		return nil, &Error{Kind: ErrMissingAPIKey, Message: fmt.Sprintf("tracker kind %q needs tracker.api_key", cfg.Kind)}
	}
	if r.meta.RequiresProject && strings.TrimSpace(cfg.Project) == "" {
		return nil, &Error{Kind: ErrMissingProject, Message: fmt.Sprintf("tracker kind %q needs tracker.project", cfg.Kind)}
	}
	return r.factory(cfg)
}
