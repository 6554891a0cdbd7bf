package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"sync"
	"time"

	"sortie/internal/agent"
	"sortie/internal/cluster"
	"sortie/internal/config"
	"sortie/internal/metrics"
	"sortie/internal/orchestrator"
	"sortie/internal/tracker"
)

// adapterSet builds the tracker and agent adapters of each configuration the daemon
// applies (orchestrator.Adapters). It builds them while the watcher validates a new
// WORKFLOW.md, so a configuration whose adapters cannot be built, or whose changed
// agent CLI fails its preflight, is rejected like any bad edit: the last good
// configuration stays in force with its adapters, and the error is logged and shown
// as the daemon's last configuration error. An adapter is rebuilt only when what it is
// built from changed, so an edit of the prompt keeps the tracker's caches, rate-limit
// readings and watch.
//
// The tracker's identity (kind, endpoint, api_key, project, query_filter, path and its
// adapter block) and agent.kind stay the start-up configuration's until a restart
// (docs/configuration.md): issues already claimed belong to that tracker, and sessions
// to be resumed to that agent. A reload that changes them says so in a warning.
type adapterSet struct {
	ctx     context.Context // bounds the agent CLI's preflight
	log     *slog.Logger
	mets    *metrics.Metrics // counts every tracker's calls
	version string           // the build's, which trackers' User-Agent names

	// buildMu serialises startUp and validate and guards what they keep; mu guards the
	// set in force for its readers, which never wait for a preflight. cur and raw are
	// written holding both.
	buildMu sync.Mutex
	mu      sync.Mutex
	cur     orchestrator.Adapters
	raw     tracker.Tracker // cur.Tracker without the metrics wrapper

	start    *config.Config // the start-up configuration; nil before startUp
	trkCfg   tracker.Config // what cur.Tracker was built from
	agentCfg agent.Config   // what cur.Agent was built from
	local    bool           // cur.Agent passed the local preflight (no worker.ssh_hosts)
	// failedAgent and failedErr remember the last agent configuration that failed, so
	// that a bad agent.command is not run again at every poll until WORKFLOW.md changes.
	failedAgent *agentBuild
	failedErr   error
	warned      string // the restart-only settings last warned about

	// cluster, when the daemon shares a PostgreSQL store, makes one daemon at a time
	// poll the tracker (cluster.Tracker); interval is polling.interval in force.
	cluster  *cluster.Cluster
	interval func() time.Duration
}

// wrap is t as the orchestrator sees it: counted, and polled by one daemon of a cluster.
func (b *adapterSet) wrap(t tracker.Tracker) tracker.Tracker {
	if b.cluster == nil {
		return t
	}
	return b.cluster.Tracker(t, b.interval)
}

// agentBuild is what an agent adapter is built and checked from.
type agentBuild struct {
	cfg   agent.Config
	local bool
}

// startUp builds the adapters of the start-up configuration. Its errors stop the daemon.
func (b *adapterSet) startUp(cfg *config.Config) (orchestrator.Adapters, error) {
	b.buildMu.Lock()
	defer b.buildMu.Unlock()
	b.start = cfg
	if err := b.build(cfg); err != nil {
		return orchestrator.Adapters{}, err
	}
	return b.cur, nil
}

// validate builds the adapters of cfg, a new WORKFLOW.md the watcher is about to apply,
// and makes them the set in force, or returns why they cannot be built. Before startUp,
// there is nothing to compare with and nothing is built.
func (b *adapterSet) validate(cfg *config.Config) error {
	b.buildMu.Lock()
	defer b.buildMu.Unlock()
	if b.start == nil {
		return nil
	}
	b.warnRestartOnly(cfg)
	return b.build(cfg)
}

// current is Options.Adapters: the set of the configuration in force. The watcher
// applies a configuration only after validate built its adapters, so they are ready
// by the time the orchestrator hears of it.
func (b *adapterSet) current(*config.Config) (orchestrator.Adapters, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.cur, nil
}

// rateLimits is the API budget of the tracker in force, nil for a tracker without one
// (the file tracker).
func (b *adapterSet) rateLimits() []tracker.RateLimit {
	b.mu.Lock()
	raw := b.raw
	b.mu.Unlock()
	if rl, ok := tracker.As[tracker.RateLimiter](raw); ok {
		return rl.RateLimits()
	}
	return nil
}

// build rebuilds the adapters whose configuration differs from the set in force and,
// when every one builds, puts the new set in force. Called with b.buildMu held.
func (b *adapterSet) build(cfg *config.Config) error {
	next, raw := b.cur, b.raw
	tc := b.trackerConfig(cfg)
	newTracker := raw == nil || !reflect.DeepEqual(tc, b.trkCfg)
	if newTracker {
		t, err := tracker.New(tc)
		if err != nil {
			return fmt.Errorf("tracker: %w", err)
		}
		raw, next.Tracker = t, b.wrap(b.mets.Tracker(t))
	}
	ab := agentBuild{cfg: b.agentConfig(cfg), local: len(cfg.Worker.SSHHosts) == 0}
	// The agent is rebuilt when its configuration changed, and checked again when it
	// starts to run locally: with SSH hosts the local CLI was not checked.
	newAgent := next.Agent == nil || !reflect.DeepEqual(ab.cfg, b.agentCfg) || (ab.local && !b.local)
	if newAgent {
		if b.failedAgent != nil && reflect.DeepEqual(ab, *b.failedAgent) {
			return b.failedErr
		}
		a, version, err := b.newAgent(cfg, ab.cfg)
		if err != nil {
			b.failedAgent, b.failedErr = &ab, err
			return err
		}
		next.Agent, next.AgentVersion = a, version
	}
	b.failedAgent, b.failedErr = nil, nil
	b.trkCfg, b.agentCfg, b.local = tc, ab.cfg, ab.local
	b.mu.Lock()
	b.cur, b.raw = next, raw
	b.mu.Unlock()
	return nil
}

// newAgent builds an agent adapter and runs its preflight.
func (b *adapterSet) newAgent(cfg *config.Config, ac agent.Config) (agent.Adapter, string, error) {
	a, err := agent.New(ac)
	if err != nil {
		return nil, "", fmt.Errorf("agent: %w", err)
	}
	if w, ok := a.(agent.Warner); ok {
		for _, msg := range w.Warnings() {
			b.log.Warn("agent configuration", "warning", msg)
		}
	}
	version, err := PreflightAgent(b.ctx, cfg, a, b.log)
	if err != nil {
		return nil, "", fmt.Errorf("agent: %w", err)
	}
	return a, version, nil
}

// trackerConfig is the tracker configuration of cfg with the start-up tracker's
// identity: only the states follow a reload.
func (b *adapterSet) trackerConfig(cfg *config.Config) tracker.Config {
	tc := TrackerConfig(b.start, b.version)
	now := TrackerConfig(cfg, b.version)
	tc.ActiveStates, tc.TerminalStates, tc.HandoffState = now.ActiveStates, now.TerminalStates, now.HandoffState
	return tc
}

// agentConfig is the agent configuration of cfg for the start-up agent.kind.
func (b *adapterSet) agentConfig(cfg *config.Config) agent.Config {
	c := *cfg
	c.Agent.Kind = b.start.Agent.Kind
	return AgentConfig(&c)
}

// warnRestartOnly logs the settings of cfg that differ from the start-up ones but
// apply only after a restart. It names the settings, never their values: api_key is a
// credential.
func (b *adapterSet) warnRestartOnly(cfg *config.Config) {
	was, now := TrackerConfig(b.start, b.version), TrackerConfig(cfg, b.version)
	var changed []string
	for _, f := range []struct {
		name    string
		changed bool
	}{
		{"tracker.kind", was.Kind != now.Kind},
		{"tracker.endpoint", was.Endpoint != now.Endpoint},
		{"tracker.api_key", was.APIKey != now.APIKey},
		{"tracker.project", was.Project != now.Project},
		{"tracker.query_filter", was.QueryFilter != now.QueryFilter},
		{"tracker.path and the tracker's block (" + was.Kind + ":)", !reflect.DeepEqual(was.Options, now.Options)},
		{"agent.kind", b.start.Agent.Kind != cfg.Agent.Kind},
		{"agent.run_as", b.start.Agent.RunAs != cfg.Agent.RunAs},
	} {
		if f.changed {
			changed = append(changed, f.name)
		}
	}
	// A rejected file is validated again at every poll; one warning per change is enough.
	list := strings.Join(changed, ", ")
	if list == b.warned {
		return
	}
	b.warned = list
	if list != "" {
		b.log.Warn("WORKFLOW.md changes settings that apply only after a restart; the daemon keeps the start-up ones",
			"settings", list)
	}
}
