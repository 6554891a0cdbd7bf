package mcp

import (
	"slices"
	"testing"

	"sortie/internal/mcp/tools"
)

func TestOffered(t *testing.T) {
	tests := []struct {
		g    Gates
		want []string
	}{
		{Gates{}, nil},
		{Gates{Workspace: true}, []string{"sortie_status"}},
		{Gates{DB: true}, []string{"workspace_history", "cost_budget"}},
		{Gates{Workspace: true, DB: true}, []string{"sortie_status", "workspace_history", "cost_budget"}},
		{Gates{TrackerAPI: true}, []string{"tracker_api"}},
		{Gates{NotifyOperator: true}, []string{"notify_operator"}},
		{Gates{true, true, true, true}, []string{"sortie_status", "workspace_history", "cost_budget", "tracker_api", "notify_operator"}},
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
	if got := ToolDocs(Offered(Gates{true, true, true, true})); len(got) != len(tools.Specs()) {
		t.Errorf("ToolDocs of every tool returned %d docs, want %d", len(got), len(tools.Specs()))
	}
}
