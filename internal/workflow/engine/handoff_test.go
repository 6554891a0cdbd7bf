package engine

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"sortie/internal/store"
	"sortie/internal/workflow/session"
)

// In flowFiles, start is the initial activity: its blocking checkpoint go is the one
// gate (work is avoidable by start's default transition to done).
func TestHandoffBlockers_AGateNeedsAHumansAnswer(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, writeLibrary(t, flowFiles), humans)
	me := Caller{IssueID: "10042", Identifier: "PROJ-42", RunID: 3}
	blockers := func(want string) []Blocker {
		t.Helper()
		bs, err := h.e.HandoffBlockers(ctx, me.IssueID, want)
		if err != nil {
			t.Fatal(err)
		}
		return bs
	}

	// No session: nothing to check, unless the daemon names the workflow to run.
	if bs := blockers(""); len(bs) != 0 {
		t.Fatalf("no session: blockers %+v, want none", bs)
	}
	if bs := blockers("flow"); len(bs) != 1 || bs[0].SessionID != "" || !strings.Contains(bs[0].String(), "no session of workflow flow") {
		t.Fatalf("no session of workflows.workflow: blockers %+v, want start/go, no session", bs)
	}

	h.tok = ""
	h.okAs(me, ToolStartSession, obj{"workflow_id": "flow"})
	sid := func() string { p, _ := session.Parse(testKey, h.tok); return p.SessionID }()
	if bs := blockers("flow"); len(bs) != 1 || bs[0].Reached || bs[0].SessionID != sid || bs[0].Activity != "start" || bs[0].Checkpoint != "go" {
		t.Fatalf("fresh session: blockers %+v, want start/go, not reached", bs)
	}
	h.okAs(me, ToolNextActivity, obj{"activity_id": "start"})
	bs := blockers("")
	if len(bs) != 1 || !bs[0].Reached || !strings.Contains(bs[0].String(), "never answered by a human") {
		t.Fatalf("at the checkpoint: blockers %+v, want start/go, reached", bs)
	}

	// Refused: recorded in the session's trace.
	h.e.TraceHandoffRefused(ctx, me, bs, "the run ended")
	events, _ := h.st.TraceEvents(ctx, sid, 100)
	last := events[len(events)-1]
	if last.Tool != TraceHandoff || last.OK || !strings.HasPrefix(last.Error, KindHandoffRefused+": the run ended") ||
		!strings.Contains(last.Error, "start/go") || last.RunID != 3 {
		t.Fatalf("last trace event %+v, want the refused hand-off", last)
	}
	if _, err := h.st.AnswerCheckpoint(ctx, store.CheckpointAnswer{SessionID: sid, CheckpointID: "go", Option: "approve",
		By: "alice", Source: store.AnswerDashboard, At: h.clk.Now()}); err != nil {
		t.Fatal(err)
	}
	if bs := blockers("flow"); len(bs) != 0 {
		t.Fatalf("after alice's answer: blockers %+v, want none", bs)
	}
	h.okAs(me, ToolRespondCheckpoint, obj{"checkpoint_id": "go", "option_id": "approve"})
	tr := h.okAs(me, ToolGetTrace, obj{})
	if !strings.Contains(mustJSON(t, tr), KindHandoffRefused) {
		t.Fatalf("get_trace %v does not show the refused hand-off", tr)
	}
	// Another issue's sessions are not this one's.
	if bs, _ := h.e.HandoffBlockers(ctx, "other", ""); len(bs) != 0 {
		t.Fatalf("another issue: blockers %+v", bs)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The red-team move, entering an activity past the checkpoint's, is refused, and the
// refusal is in the session's trace.
func TestNextActivity_SkippingTheCheckpointIsRefusedAndTraced(t *testing.T) {
	h := newHarness(t, writeLibrary(t, flowFiles), humans)
	h.start("flow")
	h.err(ToolNextActivity, obj{"activity_id": "work"}, KindNotATransition)
	p, _ := session.Parse(testKey, h.tok)
	events, _ := h.st.TraceEvents(context.Background(), p.SessionID, 10)
	if len(events) == 0 {
		t.Fatal("no trace events")
	}
	if last := events[len(events)-1]; last.Tool != ToolNextActivity || last.OK || !strings.HasPrefix(last.Error, KindNotATransition+": ") {
		t.Fatalf("last trace event %+v, want the refused next_activity", last)
	}
}
