package mcp

import (
	"maps"
	"slices"
	"testing"

	"sortie/internal/agentsock"
	"sortie/internal/mcp/tools"
	"sortie/internal/workflow/engine"
)

func TestOffered(t *testing.T) {
	tests := []struct {
		g    Gates
		want []string
	}{
		{Gates{}, nil},
		{Gates{Workspace: true}, []string{"sortie_status"}},
		{Gates{Runs: true}, []string{"workspace_history", "cost_budget"}},
		{Gates{Workspace: true, Runs: true}, []string{"sortie_status", "workspace_history", "cost_budget"}},
		{Gates{TrackerAPI: true}, []string{"tracker_api"}},
		{Gates{TrackerAPI: true, LinearGraphQL: true}, []string{"tracker_api", "linear_graphql"}},
		{Gates{NotifyOperator: true}, []string{"notify_operator"}},
		{Gates{Workspace: true, Runs: true, TrackerAPI: true, NotifyOperator: true}, []string{"sortie_status", "workspace_history", "cost_budget", "tracker_api", "notify_operator"}},
		{Gates{Workflows: true}, engine.Names()},
		{Gates{Workspace: true, NotifyOperator: true, Workflows: true}, append([]string{"sortie_status", "notify_operator"}, engine.Names()...)},
	}
	for _, tt := range tests {
		if got := Offered(tt.g); !slices.Equal(got, tt.want) {
			t.Errorf("Offered(%+v) = %v, want %v", tt.g, got, tt.want)
		}
	}
}

func TestToolDocs(t *testing.T) {
	docs := ToolDocs([]string{"tracker_api", "no_such_tool", "sortie_status"})
	if len(docs) != 2 || docs[0].Name != "tracker_api" || docs[1].Name != "sortie_status" {
		t.Fatalf("ToolDocs = %+v; want tracker_api then sortie_status, the unknown name skipped", docs)
	}
	if string(docs[0].InputSchema) != string(tools.TrackerSpec.InputSchema) || docs[0].Description != tools.TrackerSpec.Description {
		t.Errorf("tracker_api doc = %+v; want its spec's description and schema", docs[0])
	}
	if docs[1].InputSchema != nil || docs[1].Description == "" {
		t.Errorf("sortie_status doc = %+v; want a description and no schema (it takes no arguments)", docs[1])
	}
	all := Gates{Workspace: true, Runs: true, TrackerAPI: true, LinearGraphQL: true, NotifyOperator: true, Workflows: true}
	if got := ToolDocs(Offered(all)); len(got) != len(tools.Specs())+len(engine.Specs()) {
		t.Errorf("ToolDocs of every tool returned %d docs, want %d", len(got), len(tools.Specs())+len(engine.Specs()))
	}
}

// The first-turn prompt lists every workflow tool the sidecar offers, with its
// description and without its schema.
func TestToolDocs_WorkflowTools(t *testing.T) {
	docs := ToolDocs(Offered(Gates{Workflows: true}))
	specs := engine.Specs()
	if len(docs) != len(specs) {
		t.Fatalf("ToolDocs of the workflow tools returned %d docs, want %d", len(docs), len(specs))
	}
	for i, d := range docs {
		if d.Name != specs[i].Name || d.Description != specs[i].Description || d.InputSchema != nil {
			t.Errorf("doc %d = %+v; want %s with its description and no schema", i, d, specs[i].Name)
		}
	}
}

// The first-turn prompt's gates follow what the session's sidecar is given: without
// the agent socket and a token (an agent on an SSH host) no Tier 2 or daemon workflow
// tool, whatever the daemon grants.
func TestSessionGates(t *testing.T) {
	local := map[string]string{
		EnvWorkspace: "/ws/PROJ-1", EnvIssueID: "1", EnvRunID: "7",
		agentsock.EnvSocket: "/run/sortie/agent.sock", agentsock.EnvToken: "tok",
	}
	without := func(names ...string) map[string]string {
		env := maps.Clone(local)
		for _, n := range names {
			delete(env, n)
		}
		return env
	}
	all := agentsock.Capabilities{TrackerAPI: true, NotifyOperator: true, Workflows: true, Runs: true}
	withDB := maps.Clone(local)
	withDB["SORTIE_DB_PATH"] = "/srv/sortie.db"
	tests := []struct {
		name string
		env  map[string]string
		caps agentsock.Capabilities
		want Gates
	}{
		{"local session", local, all, Gates{Workspace: true, Runs: true, TrackerAPI: true, NotifyOperator: true, Workflows: true}},
		{"local, no notification backend", local, agentsock.Capabilities{TrackerAPI: true, Runs: true}, Gates{Workspace: true, Runs: true, TrackerAPI: true}},
		{"a daemon without run history", local, agentsock.Capabilities{TrackerAPI: true}, Gates{Workspace: true, TrackerAPI: true}},
		// The run history comes through the socket too: a session without one gets
		// only sortie_status, and a database path in the env changes nothing.
		{"no socket (SSH host)", without(agentsock.EnvSocket, agentsock.EnvToken), all, Gates{Workspace: true}},
		{"socket without a token", without(agentsock.EnvToken), all, Gates{Workspace: true}},
		{"a database path instead of a socket", func() map[string]string {
			env := maps.Clone(withDB)
			delete(env, agentsock.EnvSocket)
			return env
		}(), all, Gates{Workspace: true}},
		{"no issue id: the token says it", without(EnvIssueID), all, Gates{Workspace: true, Runs: true, TrackerAPI: true, NotifyOperator: true, Workflows: true}},
		{"an env the sidecar refuses", map[string]string{EnvWorkspace: "relative/path"}, all, Gates{}},
	}
	for _, tt := range tests {
		if got := SessionGates(tt.env, tt.caps); got != tt.want {
			t.Errorf("%s: SessionGates = %+v, want %+v", tt.name, got, tt.want)
		}
	}
}
