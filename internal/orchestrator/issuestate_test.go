package orchestrator

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"sortie/internal/agent"
	"sortie/internal/config"
	"sortie/internal/store"
)

// When a running issue turns terminal, its workspace goes and so does what its agent's
// CLI kept of it (agent.IssueStateRemover), named by the issue's id as its sessions
// were.
func TestCleanup_RemovesTheTerminalIssuesAgentState(t *testing.T) {
	cfg := testConfig(t, func(c *config.Config) {
		c.Extensions = map[string]any{"mock": hangingAgent}
	})
	h := newHarness(t, cfg, harnessOptions{})
	h.trk.Put(issue("TERM-1", "Todo"), issue("KEEP-2", "Todo"))
	h.start()
	h.awaitEvent("TERM-1", agent.EventSessionStarted)
	h.awaitEvent("KEEP-2", agent.EventSessionStarted)
	h.setState("TERM-1", "Done")
	h.awaitStep(StepExit, "TERM-1")
	if err := h.stop(); err != nil { // the removal runs in the background; Run waits for it
		t.Fatalf("Run: %v", err)
	}
	want := []string{"TERM-1 " + workspacePath(t, cfg, "TERM-1")}
	if got := h.agent.removedState(); !slices.Equal(got, want) {
		t.Errorf("agent state removed for %q, want %q (not for KEEP-2, stopped by the shutdown)", got, want)
	}
}

// The sweep knows a terminal issue's workspace by its name only: the issue's ids come
// from the runs that used that workspace here (not those on an SSH host).
func TestSweep_RemovesTheAgentStateOfTheWorkspacesRuns(t *testing.T) {
	cfg := testConfig(t, nil)
	h := newHarness(t, cfg, harnessOptions{exitWhenIdle: true})
	h.trk.Put(issue("DONE-1", "Done"))
	ws := filepath.Join(cfg.Workspace.Root, "DONE-1")
	if err := os.MkdirAll(ws, 0o750); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, r := range []store.Run{
		{IssueID: "id-1", Identifier: "DONE-1", Workspace: ws},
		{IssueID: "id-old", Identifier: "DONE-1", Workspace: ws},
		{IssueID: "id-remote", Identifier: "DONE-1", Workspace: ws, SSHHost: "build-1"},
		{IssueID: "id-elsewhere", Identifier: "DONE-1", Workspace: "/elsewhere/DONE-1"},
	} {
		r.Attempt, r.AgentKind, r.StartedAt = 1, "mock", t0
		id, err := h.st.StartRun(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		if err := h.st.FinishRun(ctx, id, store.RunEnd{Status: store.StatusHandedOff, EndedAt: t0.Add(time.Minute)}); err != nil {
			t.Fatal(err)
		}
	}
	h.start()
	if err := h.wait(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	got := h.agent.removedState()
	slices.Sort(got)
	if want := []string{"id-1 " + ws, "id-old " + ws}; !slices.Equal(got, want) {
		t.Errorf("agent state removed for %q, want %q", got, want)
	}
}
