// Package agenttools is the daemon's side of the Tier 2 agent tools and of
// notify_operator's rate limit: a Service, an agentsock.Handler, answers what the agents'
// MCP sidecars ask over the agent socket (docs/agent-tools.md) with what only the daemon
// holds: tracker_api and linear_graphql with the tracker's credentials, scoped to the
// configured project and the session's issue; notify_operator through the operator's
// notification backends, within notify_operator.rate_limit; the workflow tools through
// the workflow engine; workspace_history and cost_budget from the run history.
//
// It is not scheduling, and does not import the orchestrator: what it needs of it (wake
// the loop, record an agent's move of its own issue, the tracker in force after a reload)
// is given to New as functions and interfaces in Options. The daemon listens on the
// socket first (agentsock.Listen), builds the orchestrator with it as its token Granter,
// then builds the Service with the orchestrator's Refresh, AgentMoving and Tracker, and
// only then serves the socket with it (agentsock.Server.Start).
package agenttools
