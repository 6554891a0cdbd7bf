package mcp

import (
	"slices"
	"strings"
	"sync"

	"sortie/internal/agentsock"
	"sortie/internal/mcp/tools"
	"sortie/internal/prompt"
	"sortie/internal/workflow/engine"
)

// Gates are the conditions under which the sidecar offers each tool
// (spec/agent-tools-tiers.md: the agent is never offered a tool it cannot use).
type Gates struct {
	// Workspace: SORTIE_WORKSPACE is set. Offers sortie_status.
	Workspace bool
	// Runs: the run history can be read. The daemon grants the runs capability over
	// the agent socket, or, for a sidecar an operator runs by hand with --db,
	// SORTIE_ISSUE_ID is set and that database opens read-only. Offers
	// workspace_history and cost_budget.
	Runs bool
	// TrackerAPI and NotifyOperator: SORTIE_AGENT_SOCKET and SORTIE_AGENT_TOKEN are
	// set, the daemon answers the session query, and grants the capability. Offer
	// tracker_api and notify_operator.
	TrackerAPI, NotifyOperator bool
	// LinearGraphQL: as TrackerAPI, and the daemon's tracker is Linear (the
	// linear_graphql capability). Offers linear_graphql.
	LinearGraphQL bool
	// Workflows: the daemon grants the workflows capability (it has a workflow
	// library, workflows.dir), or the sidecar runs its own engine (--workflows).
	// Offers the twelve workflow tools (spec/workflow-tools-api.md).
	Workflows bool
}

// SessionGates are the gates of a sidecar started with env, the env block the daemon
// writes for one session into .sortie/mcp.json, by a daemon that grants caps, when
// the agent socket answers. It is Start's decision made ahead of time, so that the
// daemon's first-turn prompt lists the tools that session's sidecar registers and no
// other: a session without a socket and token (an agent on an SSH host) gets only
// sortie_status, since everything else comes through the socket. An env Start would
// refuse (ParseEnv fails) offers nothing.
func SessionGates(env map[string]string, caps agentsock.Capabilities) Gates {
	e, err := ParseEnv(func(name string) string { return env[name] })
	if err != nil {
		return Gates{}
	}
	g := Gates{Workspace: e.Workspace != ""}
	if e.AgentSocket != "" && e.AgentToken != "" {
		g.Runs, g.TrackerAPI, g.NotifyOperator, g.Workflows = caps.Runs, caps.TrackerAPI, caps.NotifyOperator, caps.Workflows
		g.LinearGraphQL = caps.LinearGraphQL
	}
	return g
}

// Offered returns the tools a sidecar whose gates are g registers, in registration
// order. It is the one decision both the sidecar and the daemon (for the first-turn
// prompt) use.
func Offered(g Gates) []string {
	var names []string
	if g.Workspace {
		names = append(names, tools.NameStatus)
	}
	if g.Runs {
		names = append(names, tools.NameHistory, tools.NameBudget)
	}
	if g.TrackerAPI {
		names = append(names, tools.NameTracker)
	}
	if g.LinearGraphQL {
		names = append(names, tools.NameLinearGraphQL)
	}
	if g.NotifyOperator {
		names = append(names, tools.NameNotify)
	}
	if g.Workflows {
		names = append(names, engine.Names()...)
	}
	return names
}

// ToolDocs returns the first-turn prompt's description of each named tool, in the order
// given; names of tools that do not exist are skipped. Tools without arguments carry no
// schema, and neither do the workflow tools (twelve schemas would crowd the prompt; the
// agent reads them from tools/list and the workflow itself says which to call), so the
// prompt stays short. The specs never change, so each list is worked out once (every
// session's first prompt asks again).
func ToolDocs(names []string) []prompt.ToolDoc {
	key := strings.Join(names, "\x00")
	if docs, ok := toolDocs.Load(key); ok {
		return slices.Clone(docs.([]prompt.ToolDoc))
	}
	docs := toolDocsOf(names)
	toolDocs.Store(key, docs)
	return slices.Clone(docs)
}

// toolDocs memoises ToolDocs by the names, joined. The lists a daemon asks for are the
// few combinations of its gates.
var toolDocs sync.Map

func toolDocsOf(names []string) []prompt.ToolDoc {
	specs := tools.Specs()
	workflowSpecs := engine.Specs()
	var docs []prompt.ToolDoc
	for _, name := range names {
		if i := slices.IndexFunc(workflowSpecs, func(s engine.Spec) bool { return s.Name == name }); i >= 0 {
			docs = append(docs, prompt.ToolDoc{Name: name, Description: workflowSpecs[i].Description})
			continue
		}
		i := slices.IndexFunc(specs, func(s tools.Spec) bool { return s.Name == name })
		if i < 0 {
			continue
		}
		s := specs[i]
		doc := prompt.ToolDoc{Name: s.Name, Description: s.Description}
		if len(s.Params()) > 0 {
			doc.InputSchema = s.InputSchema
		}
		docs = append(docs, doc)
	}
	return docs
}
