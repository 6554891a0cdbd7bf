package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"sortie/internal/agent"
	"sortie/internal/config"
	"sortie/internal/orchestrator"
	"sortie/internal/tracker"
)

// TrackerConfig is the tracker adapter's configuration: the typed tracker fields plus
// the adapter's own top-level block (e.g. `file:`), whose keys never override them.
// version is the build's, which the tracker's User-Agent names.
func TrackerConfig(cfg *config.Config, version string) tracker.Config {
	opts := map[string]any{}
	for k, v := range cfg.Block(cfg.Tracker.Kind) {
		opts[k] = v
	}
	if p := cfg.TrackerPath(); p != "" {
		opts["path"] = p
	}
	return tracker.Config{
		Kind: cfg.Tracker.Kind, Endpoint: cfg.Tracker.Endpoint, APIKey: cfg.Tracker.APIKey,
		Project: cfg.Tracker.Project, Team: cfg.Tracker.Team, QueryFilter: cfg.Tracker.QueryFilter,
		Provider:     cfg.Tracker.Provider,
		Assignee:     cfg.Tracker.Assignee,
		ActiveStates: cfg.Tracker.ActiveStates, TerminalStates: cfg.Tracker.TerminalStates,
		HandoffState: cfg.Tracker.HandoffState, Options: opts, WorkflowDir: cfg.Dir,
		UserAgent: "sortie/" + version,
	}
}

// PreflightAgent asks the agent CLI for its version, which is recorded with every run.
// When agents run locally, a CLI that cannot say its version cannot run a turn either,
// so the daemon refuses to start; with SSH hosts the local CLI does not matter. A CLI
// that runs but prints something other than a version is recorded as unknown ("").
func PreflightAgent(ctx context.Context, cfg *config.Config, a agent.Adapter, log *slog.Logger) (string, error) {
	v, ok := a.(agent.Versioner)
	if !ok || len(cfg.Worker.SSHHosts) > 0 {
		return "", nil
	}
	version, err := v.Version(ctx)
	if err != nil {
		return "", fmt.Errorf("%s preflight: %w", cfg.Agent.Kind, err)
	}
	if version == "" {
		log.Warn("the agent CLI's --version printed no version on its first line; runs record the version as unknown",
			"agent", cfg.Agent.Kind)
	}
	return version, nil
}

// AgentConfig is the agent adapter's configuration. Its Env, for the CLI's version
// preflight, is the environment agent turns get: none of the daemon's secrets.
func AgentConfig(cfg *config.Config) agent.Config {
	return agent.Config{
		Kind: cfg.Agent.Kind, Command: cfg.Agent.Command, TurnTimeout: cfg.Agent.TurnTimeout,
		ReadTimeout: cfg.Agent.ReadTimeout, StallTimeout: cfg.Agent.StallTimeout,
		Options: cfg.Block(cfg.Agent.Kind), WorkflowDir: cfg.Dir, Env: orchestrator.CLIEnv(cfg, os.Environ()),
	}
}
