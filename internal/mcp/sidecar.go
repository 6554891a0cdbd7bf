package mcp

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"sortie/internal/agentsock"
	"sortie/internal/config"
	"sortie/internal/mcp/tools"
	"sortie/internal/store/sqlite"
)

// Start-up bounds. The agent CLI waits for the sidecar before its first model call, so
// a dependency that does not answer quickly is treated as absent.
const (
	DefaultProbeTimeout = 3 * time.Second // the agent socket's session query
	dbOpenTimeout       = 5 * time.Second // opening --db read-only
)

// Options configures a sidecar.
type Options struct {
	Env Env
	// Config is the loaded WORKFLOW.md (see ConfigEnv): sortie_status's max_turns when
	// the state file lacks it, and cost_budget's budget and rates with DBPath. It may
	// be nil with a session environment (a daemon's agent gets the daemon's settings
	// through the socket; its WORKFLOW.md may not load without the daemon's
	// overrides), and with Workflows alone (a standalone workflow server offers
	// nothing else, and Env is unused).
	Config *config.Config
	// DBPath is a database to read the run history from, read-only, for a sidecar an
	// operator runs by hand (`sortie mcp-server --db PATH`). The daemon never sets it:
	// its agents read their history through the agent socket. It needs Config and
	// Env.IssueID.
	DBPath string
	// Workflows, when set, is this process's own workflow engine (`sortie mcp-server
	// --workflows DIR`): the twelve workflow tools are answered by it, with a zero
	// Caller, instead of by the daemon.
	Workflows tools.WorkflowEngine
	// Version is reported in serverInfo.
	Version string
	Log     *slog.Logger
	// Now is sortie_status's clock; nil means time.Now.
	Now func() time.Time
	// ProbeTimeout bounds the start-up query to the daemon's agent socket; 0 means
	// DefaultProbeTimeout.
	ProbeTimeout time.Duration
}

// Sidecar is a started sortie-tools server: the tools its gates allowed and what they
// hold open. Close it when the session ends.
type Sidecar struct {
	Gates    Gates
	registry Registry
	server   *sdk.Server
	db       *sqlite.Store
}

// Start decides the gates and registers the tools they allow. An absent dependency only
// leaves its tools out, with a log line saying why: an agent socket that does not
// answer or does not grant a capability, a --db database that does not open. It fails
// only on programming errors; configuration errors are caught earlier by ParseEnv and
// config.Load.
//
// The run history (workspace_history, cost_budget) is the daemon's, read over the agent
// socket for the token's issue, unless an operator gave DBPath. With a local engine
// (Options.Workflows) the workflow tools are offered whatever the daemon grants;
// without one, they are offered when the daemon grants the workflows capability, and
// forwarded to it.
func Start(ctx context.Context, o Options) (*Sidecar, error) {
	log := o.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	switch {
	case o.Config == nil && o.Workflows != nil && o.Env == (Env{}):
		return startWorkflowsOnly(o, log), nil
	case o.Config == nil && o.Env == (Env{}):
		return nil, errors.New("mcp: Start needs a session environment, the loaded workflow configuration or a workflow engine")
	case o.Config == nil && o.DBPath != "":
		return nil, errors.New("mcp: Start needs the loaded workflow configuration to read a database (the budget and rates are in it)")
	}
	e := o.Env
	s := &Sidecar{}

	s.Gates.Workspace = e.Workspace != ""
	if !s.Gates.Workspace {
		log.Info("sortie_status not offered: SORTIE_WORKSPACE is not set")
	}

	var runs tools.RunReader
	switch {
	case o.DBPath == "":
	case e.IssueID == "":
		log.Info("workspace_history and cost_budget not offered from --db: SORTIE_ISSUE_ID is not set")
	default:
		octx, cancel := context.WithTimeout(ctx, dbOpenTimeout)
		db, err := sqlite.OpenReadOnly(octx, o.DBPath)
		cancel()
		if err != nil {
			log.Warn("workspace_history and cost_budget not offered: the --db database does not open read-only", "error", err)
		} else {
			s.db, s.Gates.Runs, runs = db, true, db
		}
	}

	var daemon *agentsock.Client
	if e.AgentSocket == "" || e.AgentToken == "" {
		log.Info("the daemon's tools (tracker_api, notify_operator, workflow tools, and the run history for workspace_history and cost_budget) not offered: SORTIE_AGENT_SOCKET and SORTIE_AGENT_TOKEN must both be set",
			"socket_set", e.AgentSocket != "", "token_set", e.AgentToken != "")
	} else {
		daemon = agentsock.Dial(e.AgentSocket, e.AgentToken)
		timeout := o.ProbeTimeout
		if timeout <= 0 {
			timeout = DefaultProbeTimeout
		}
		pctx, cancel := context.WithTimeout(ctx, timeout)
		info, err := daemon.Session(pctx)
		cancel()
		switch {
		case err != nil:
			log.Warn("the daemon's tools (tracker_api, notify_operator, workflow tools, and the run history) not offered: the daemon's agent socket did not answer the session query",
				"socket", e.AgentSocket, "error", err)
		default:
			if e.IssueID != "" && info.IssueID != e.IssueID {
				log.Warn("the daemon's token belongs to another issue than SORTIE_ISSUE_ID; the daemon's tools act on the token's issue",
					"token_issue_id", info.IssueID, "issue_id", e.IssueID)
			}
			s.Gates.TrackerAPI = info.Capabilities.TrackerAPI
			s.Gates.NotifyOperator = info.Capabilities.NotifyOperator
			s.Gates.LinearGraphQL = info.Capabilities.LinearGraphQL
			if !s.Gates.TrackerAPI {
				log.Info("tracker_api not offered: the daemon grants no tracker_api capability (no tracker project configured)")
			}
			if !s.Gates.NotifyOperator {
				log.Info("notify_operator not offered: the daemon grants no notify_operator capability (no notification backend configured)")
			}
			switch {
			case s.Gates.Runs:
				log.Info("the run history comes from --db, not from the daemon")
			case info.Capabilities.Runs:
				// The token's issue, whatever SORTIE_ISSUE_ID says: the daemon answers
				// for that one only.
				e.IssueID = info.IssueID
				s.Gates.Runs, runs = true, daemonRuns{c: daemon, issueID: info.IssueID}
			default:
				log.Info("workspace_history and cost_budget not offered: the daemon grants no runs capability")
			}
			s.Gates.Workflows = info.Capabilities.Workflows
			if !s.Gates.Workflows && o.Workflows == nil {
				log.Info("workflow tools not offered: the daemon grants no workflows capability (no workflows.dir configured)")
			}
		}
	}

	var workflowTools []tools.Tool
	switch {
	case o.Workflows != nil:
		if s.Gates.Workflows {
			log.Info("the daemon offers workflow tools too; this sidecar answers them with its own engine (--workflows)")
		}
		s.Gates.Workflows = true
		workflowTools = tools.LocalWorkflows(o.Workflows)
	case s.Gates.Workflows:
		workflowTools = tools.DaemonWorkflows(daemon, e.ToolTimeout)
	}

	cfg := o.Config
	if cfg == nil {
		cfg = &config.Config{} // the daemon answers what the tools need
	}
	for _, name := range Offered(s.Gates) {
		var t tools.Tool
		switch name {
		case tools.NameStatus:
			t = tools.NewStatus(e.Workspace, cfg.Agent.MaxTurns, o.Now)
		case tools.NameHistory:
			t = tools.NewHistory(runs, e.IssueID)
		case tools.NameBudget:
			t = tools.NewBudget(tools.BudgetOptions{
				Runs:      runs,
				IssueID:   e.IssueID,
				Budget:    budgetOf(cfg),
				Rate:      rateOf(cfg),
				Workspace: e.Workspace,
				RunID:     e.RunID,
				Live:      e.RunID != 0 || e.SessionID != "",
			})
		case tools.NameTracker:
			t = tools.NewTracker(daemon, e.ToolTimeout)
		case tools.NameNotify:
			t = tools.NewNotify(daemon, e.ToolTimeout)
		case tools.NameLinearGraphQL:
			t = tools.NewLinearGraphQL(daemon, e.ToolTimeout)
		default:
			i := slices.IndexFunc(workflowTools, func(w tools.Tool) bool { return w.Spec().Name == name })
			if i < 0 {
				panic("mcp: Offered returned " + name + ", which Start cannot build")
			}
			t = workflowTools[i]
		}
		s.registry.Register(t)
	}
	s.server = NewServer(&s.registry, o.Version, log)
	log.Info("sortie-tools ready", "tools", s.registry.Names(), "issue_identifier", e.IssueIdentifier,
		"run_id", e.RunID, "attempt", e.Attempt)
	return s, nil
}

// startWorkflowsOnly is a standalone workflow server: the workflow tools of the local
// engine and nothing else.
func startWorkflowsOnly(o Options, log *slog.Logger) *Sidecar {
	s := &Sidecar{Gates: Gates{Workflows: true}}
	for _, t := range tools.LocalWorkflows(o.Workflows) {
		s.registry.Register(t)
	}
	s.server = NewServer(&s.registry, o.Version, log)
	log.Info("sortie-tools ready (workflow tools only)", "tools", s.registry.Names())
	return s
}

// budgetOf is the per-issue budget cost_budget reports against with --db: the one the
// orchestrator enforces during a run (agent.max_tokens, agent.max_cost_usd). Through
// the agent socket the daemon says it (daemonRuns).
func budgetOf(cfg *config.Config) tools.Budget {
	return tools.Budget{MaxTokens: cfg.Agent.MaxTokens, MaxCostUSD: cfg.Agent.MaxCostUSD}
}

// rateOf returns token_rates for agent.kind, or nil when none is configured.
func rateOf(cfg *config.Config) *tools.Rate {
	r, ok := cfg.TokenRates[cfg.Agent.Kind]
	if !ok {
		return nil
	}
	rate := tools.Rate(r)
	return &rate
}

// Tools returns the names of the registered tools, in registration order.
func (s *Sidecar) Tools() []string { return s.registry.Names() }

// Serve speaks MCP over t until the client disconnects (nil) or ctx ends.
func (s *Sidecar) Serve(ctx context.Context, t sdk.Transport) error {
	return s.server.Run(ctx, t)
}

// Server is the MCP server, for callers that connect transports themselves.
func (s *Sidecar) Server() *sdk.Server { return s.server }

// Close releases the --db database.
func (s *Sidecar) Close() error {
	if s.db != nil {
		return s.db.Close()
	}
	return nil
}
