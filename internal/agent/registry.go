package agent

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"sortie/internal/option"
)

// Config is what an adapter is built from: the generic agent fields the adapter needs
// and its own top-level block of WORKFLOW.md (e.g. `claude-code:`) as Options.
type Config struct {
	Kind         string
	Command      string
	TurnTimeout  time.Duration
	ReadTimeout  time.Duration
	StallTimeout time.Duration
	Options      map[string]any
	WorkflowDir  string
	// Env is the environment of the adapter's own runs of the CLI outside a session,
	// such as the `--version` preflight: the same filtered environment agent turns get,
	// without the daemon's tracker and notification secrets. nil means this process's
	// environment, which only tests should rely on.
	Env []string
}

// DefaultReadTimeout bounds a CLI's start-up reads (the --version preflight) when
// agent.read_timeout_ms is not set.
const DefaultReadTimeout = 5 * time.Second

// Program is agent.command split into the program and its leading arguments, or def
// alone when agent.command is empty.
func (c Config) Program(def string) []string {
	if fields := strings.Fields(c.Command); len(fields) > 0 {
		return fields
	}
	return []string{def}
}

// ReadTimeoutOrDefault is agent.read_timeout_ms, or DefaultReadTimeout when unset.
func (c Config) ReadTimeoutOrDefault() time.Duration {
	if c.ReadTimeout > 0 {
		return c.ReadTimeout
	}
	return DefaultReadTimeout
}

// Meta describes what an adapter kind requires of the configuration.
type Meta struct {
	// RequiresCommand: the adapter runs a CLI that must be found before a session
	// starts (the preflight); without agent.command and a DefaultCommand, New fails.
	RequiresCommand bool
	// DefaultCommand is used when agent.command is empty.
	DefaultCommand string
	// Env names the variables of the daemon's environment the CLI needs besides the
	// ones every agent gets (agentenv.Base): its provider's keys and settings. A name
	// ending in "*" is a prefix. A side channel (agentenv.SideChannel), a SORTIE_*
	// variable or a secret WORKFLOW.md names never passes, whatever is listed here.
	Env []string
	// EnvFrom, when not nil, names more such variables that depend on the adapter's
	// configuration (codex: the env_key of a model provider it is configured with).
	EnvFrom func(Config) []string
	// Options declares the keys of the adapter's own block of WORKFLOW.md, the
	// top-level one named after its kind: the adapter reads its block by it, and
	// config checks Symphony's `codex:` block by it without building the adapter.
	Options option.Set
}

// Factory builds an Adapter from its configuration.
type Factory func(Config) (Adapter, error)

type registration struct {
	factory Factory
	meta    Meta
}

var (
	regMu    sync.RWMutex
	registry = map[string]registration{}
)

// Register makes an adapter kind available. It panics on a duplicate kind.
func Register(kind string, meta Meta, f Factory) {
	regMu.Lock()
	defer regMu.Unlock()
	if _, dup := registry[kind]; dup {
		panic("agent: duplicate registration of kind " + kind)
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

// EnvNames are the daemon's variables the CLI of cfg.Kind inherits besides
// agentenv.Base: its Meta's Env and what its EnvFrom finds in cfg. nil for an unknown
// kind.
func EnvNames(cfg Config) []string {
	m, _ := Lookup(cfg.Kind)
	names := append([]string(nil), m.Env...)
	if m.EnvFrom != nil {
		names = append(names, m.EnvFrom(cfg)...)
	}
	return names
}

// New builds the adapter for cfg.Kind. An unknown kind fails with the list of known ones.
func New(cfg Config) (Adapter, error) {
	regMu.RLock()
	r, ok := registry[cfg.Kind]
	regMu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("unknown agent kind %q (known: %s)", cfg.Kind, strings.Join(Kinds(), ", "))
	}
	if cfg.Command == "" {
		if r.meta.DefaultCommand == "" && r.meta.RequiresCommand {
			return nil, fmt.Errorf("agent kind %q needs agent.command", cfg.Kind)
		}
		cfg.Command = r.meta.DefaultCommand
	}
	return r.factory(cfg)
}
