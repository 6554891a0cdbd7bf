package orchestrator

import (
	"context"
	"testing"
	"time"

	"sortie/internal/store"
	"sortie/internal/workspace"
)

// A workspace an older Sortie named for an issue (32 bits of hash) is that issue's only
// when the daemon's own run records say one of its runs worked there: another issue
// whose identifier shares the old name gets no say.
func TestLegacyWorkspaceOwner_AsksTheRunRecords(t *testing.T) {
	h := newHarness(t, testConfig(t, nil), harnessOptions{})
	ctx := context.Background()
	if _, err := h.st.StartRun(ctx, store.Run{IssueID: "victim", Identifier: "o/r#1", Attempt: 1, AgentKind: "mock", StartedAt: time.Unix(1, 0),
		Status: store.StatusRunning, Workspace: "/ws/o_r_1-deadbeef"}); err != nil {
		t.Fatal(err)
	}
	if !h.orch.legacyWorkspaceOwner(workspace.Issue{ID: "victim", Identifier: "o/r#1"}, "/ws/o_r_1-deadbeef") {
		t.Error("the issue whose run worked in the workspace is not its owner")
	}
	if h.orch.legacyWorkspaceOwner(workspace.Issue{ID: "attacker", Identifier: "o/r_1"}, "/ws/o_r_1-deadbeef") {
		t.Error("an issue that never ran there was taken for the workspace's owner")
	}
	if h.orch.legacyWorkspaceOwner(workspace.Issue{ID: "victim", Identifier: "o/r#1"}, "/ws/elsewhere") {
		t.Error("a workspace none of the issue's runs used was taken for its")
	}
}
