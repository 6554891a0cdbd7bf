package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"

	"sortie/internal/agent/cgroup"
	"sortie/internal/agent/proc"
	"sortie/internal/agent/remote"
	"sortie/internal/agentsock"
	"sortie/internal/agenttools"
	"sortie/internal/config"
	"sortie/internal/mcp"
	"sortie/internal/notify"
	"sortie/internal/orchestrator"
	"sortie/internal/prompt"
	"sortie/internal/runas"
	"sortie/internal/workspace"
)

// runCgroups is the tree of this daemon's per-run cgroups, one per database so that a
// restarted daemon finds its predecessor's; nil, with a note in the log, where cgroup
// v2 is not writable (the supervisor then owns each run's processes alone).
func runCgroups(cfg *config.Config, log *slog.Logger) *cgroup.Tree {
	t, err := cgroup.Setup("sortie-" + cfg.DBKey())
	if err != nil {
		log.Info("runs get no cgroups of their own; the supervisor alone stops what agents leave behind", "reason", err.Error())
		return nil
	}
	log.Info("each run gets its own cgroup", "cgroups", t.Dir())
	return t
}

// remoteStopper stops a process group on an SSH host of worker.ssh_hosts with the local
// ssh client, as the agent adapters do when they stop a remote turn, for the agents a
// crashed daemon left running there.
func remoteStopper(current func() *config.Config) func(ctx context.Context, host string, pgid int) error {
	return func(ctx context.Context, host string, pgid int) error {
		target, err := remote.ParseTarget(host)
		if err != nil {
			return err
		}
		ssh, err := exec.LookPath("ssh")
		if err != nil {
			return fmt.Errorf("the ssh client: %w", err)
		}
		cfg := current()
		return remote.Stop(ctx, ssh, orchestrator.CLIEnv(cfg, os.Environ()), target, cfg.Worker.SSHStrictHostKeyChecking, pgid, proc.DefaultGrace)
	}
}

// agentRunAs resolves agent.run_as (runas.ForAgents): the user local agents and
// hooks run as, nil for the daemon's own. The user must be able to reach what its
// processes use: this executable (the agents' MCP sidecar and `sortie confine`),
// WORKFLOW.md (which the sidecar loads) and the agent socket, which is opened to the
// user's group. It must not be able to read the daemon's private files.
func agentRunAs(cfg *config.Config, workflowPath, exe string, sock *agentsock.Server, private []string, logger *slog.Logger) (*runas.User, error) {
	return runas.ForAgents(cfg.Agent.RunAs, []runas.Need{
		{Path: exe, Access: runas.Read | runas.Exec, What: "the sortie executable, which runs the agents' MCP server"},
		{Path: workflowPath, Access: runas.Read, What: "WORKFLOW.md, which the agents' MCP server loads"},
		{Path: sock.Path(), Access: runas.Write, What: "the agent socket", Share: sock.ShareWithGroup},
	}, private, logger)
}

// startAgentTools opens the agent socket next to the database and prepares what every
// session gets: the sortie-tools MCP entry (this binary), the socket's capability
// tokens and the first-turn tool list (docs/agent-tools.md), which offers what caps
// says the daemon serves. Calls wait until serveAgentTools serves the socket.
func startAgentTools(sockBase string, caps func() agentsock.Capabilities) (workspace.Extensions, *agentsock.Server, error) {
	dbPath, err := filepath.Abs(sockBase)
	if err != nil {
		return workspace.Extensions{}, nil, err
	}
	sock, err := agentsock.Listen(agentsock.SocketPath(dbPath))
	if err != nil {
		return workspace.Extensions{}, nil, err
	}
	exe, err := os.Executable()
	if err == nil {
		exe, err = filepath.EvalSymlinks(exe)
	}
	if err != nil {
		sock.Close()
		return workspace.Extensions{}, nil, fmt.Errorf("finding this executable for the agents' MCP server: %w", err)
	}
	// Each session is told about the tools its own sidecar will register, given the env
	// it gets and what this daemon grants: an agent on an SSH host has no socket.
	promptTools := func(env map[string]string) []prompt.ToolDoc {
		return mcp.ToolDocs(mcp.Offered(mcp.SessionGates(env, caps())))
	}
	return workspace.Extensions{Executable: exe, Socket: sock, PromptTools: promptTools}, sock, nil
}

// agentToolOptions are the options of the daemon's side of the Tier 2 tools that need
// no orchestrator: current is the configuration in force; history serves the run
// history; wf, when not nil, answers the workflow tools (workflows.dir), which are then
// offered to every session that reaches the socket; notify_operator goes through n's
// backends when it has any; rateLimited counts the notify_operator calls its rate limit
// refuses, by scope (the metrics).
func agentToolOptions(current func() *config.Config, history agenttools.RunReader, n *notify.Notifier,
	wf *daemonWorkflows, rateLimited func(scope string)) agenttools.Options {
	o := agenttools.Options{Config: current, History: history, NotifyRateLimited: rateLimited}
	if wf != nil {
		o.Workflows = wf.eng
	}
	if n.Enabled() {
		o.Deliver = func(ctx context.Context, sess agentsock.Session, req agentsock.NotifyRequest) (agentsock.NotifyResult, error) {
			return deliverAgentMessage(ctx, n, notify.Notification{Event: notify.EventAgent, Severity: req.Severity,
				Title: req.Title, Message: req.Message, IssueID: sess.IssueID, IssueIdentifier: sess.Identifier})
		}
	}
	return o
}

// serveAgentTools builds the daemon's side of the Tier 2 tools from o and serves the
// agent socket with it: tracker_api reaches the tracker in force (orch.Tracker(), which
// a reload may replace) and tells orch of the agent's own moves.
func serveAgentTools(sock *agentsock.Server, orch *orchestrator.Orchestrator, o agenttools.Options) {
	o.Tracker, o.Refresh, o.AgentMoving = orch.Tracker(), func() { orch.Refresh() }, orch.AgentMoving
	sock.Start(agenttools.New(o))
}

// alerter sends the daemon's own alerts through the notification backends.
func alerter(n *notify.Notifier) func(context.Context, orchestrator.Alert) error {
	if !n.Enabled() {
		return nil
	}
	return func(ctx context.Context, a orchestrator.Alert) error {
		return n.Send(ctx, notify.Notification{Event: alertEvent(a.Event), Severity: a.Severity, Title: a.Title,
			Message: a.Message, IssueID: a.Issue.ID, IssueIdentifier: a.Issue.Identifier, IssueURL: a.Issue.URL, Time: a.Time})
	}
}

// alertEvent is the notification event of an orchestrator alert: the hold reasons, and
// budget_exhausted, are event names, except a non-retryable error, which is "failed".
func alertEvent(e string) string {
	if e == "error" {
		return notify.EventFailed
	}
	return e
}

// deliverAgentMessage sends a notify_operator message and tells the agent the truth:
// which backends took it, or, when every backend's filters turn it away, that it was
// not delivered and why.
func deliverAgentMessage(ctx context.Context, n *notify.Notifier, msg notify.Notification) (agentsock.NotifyResult, error) {
	if why := n.Filtered(msg); why != "" {
		return agentsock.NotifyResult{Reason: why}, nil
	}
	if err := n.Send(ctx, msg); err != nil {
		return agentsock.NotifyResult{}, err
	}
	return agentsock.NotifyResult{Delivered: true, Backends: n.Recipients(msg)}, nil
}
