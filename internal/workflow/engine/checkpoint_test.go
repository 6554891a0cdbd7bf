package engine

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"sortie/internal/store"
	"sortie/internal/workflow/session"
)

func TestGate_BlocksGatedToolsUntilResolved(t *testing.T) {
	h := newHarness(t, writeLibrary(t, flowFiles))
	m := h.enterStart()
	if !slices.Equal(strs(m["pending_checkpoints"]), []string{"go"}) || m["checkpoint_instructions"] == nil {
		t.Fatalf("next_activity(start) = %v, want go pending with instructions", m)
	}
	if p, _ := session.Parse(testKey, h.tok); p.PendingAt != h.clk.Now().Unix() || !slices.Equal(p.Pending, []string{"go"}) {
		t.Fatalf("payload %+v: want pcp [go] and pcpt now", p)
	}
	for _, call := range []struct {
		tool string
		args obj
	}{
		{ToolGetWorkflow, obj{}},
		{ToolGetSkills, obj{}},
		{ToolGetSkill, obj{"step_id": "read"}},
		{ToolGetResource, obj{"resource_index": "5"}},
		{ToolGetTrace, obj{}},
		{ToolNextActivity, obj{"activity_id": "work"}},
	} {
		msg := h.err(call.tool, call.args, KindCheckpointsPending)
		if !strings.Contains(msg, `"go"`) || !strings.Contains(msg, "approve, reject") {
			t.Fatalf("%s: gate error %q does not name the checkpoint and its options", call.tool, msg)
		}
	}
	// get_checkpoint is not gated; re-entering the same activity is allowed and re-arms.
	h.ok(ToolGetCheckpoint, obj{"activity_id": "start", "checkpoint_id": "go"})
	h.clk.Advance(10 * time.Second)
	m = h.ok(ToolNextActivity, obj{"activity_id": "start", "step_manifest": stepsOf("read", "note")})
	if p, _ := session.Parse(testKey, h.tok); p.PendingAt != h.clk.Now().Unix() || !slices.Equal(p.Pending, []string{"go"}) {
		t.Fatalf("re-entry payload %+v: want pcp re-armed at the new time", p)
	}
	noWarnings(t, "re-entry", m)
	// Re-arming restarted the minimum response time.
	h.err(ToolRespondCheckpoint, obj{"checkpoint_id": "go", "option_id": "approve"}, KindTooEarly)
	h.clk.Advance(3 * time.Second)
	r := h.ok(ToolRespondCheckpoint, obj{"checkpoint_id": "go", "option_id": "approve"})
	if len(strs(r["remaining_checkpoints"])) != 0 {
		t.Fatalf("remaining = %v", r["remaining_checkpoints"])
	}
	for _, tool := range []string{ToolGetWorkflow, ToolGetSkills, ToolGetTrace} {
		h.ok(tool, obj{})
	}
	h.ok(ToolGetSkill, obj{"step_id": "read"})
	h.ok(ToolGetResource, obj{"resource_index": "5"})
	h.ok(ToolNextActivity, obj{"activity_id": "work", "transition_condition": "approved == true", "step_manifest": stepsOf("read", "note")})
}

func TestGetCheckpoint_DoesNotMoveTheSession(t *testing.T) {
	h := newHarness(t, writeLibrary(t, flowFiles))
	h.enterStart()
	// Reading work's checkpoint must not make "work" the current activity (the
	// upstream hole: then next_activity(work) counted as a re-entry and skipped the gate).
	m := h.ok(ToolGetCheckpoint, obj{"activity_id": "work", "checkpoint_id": "auto"})
	if m["pending"] != false || m["message"] != "Auto?" || m["blocking"] != false || m["autoAdvanceMs"] != 2500.0 {
		t.Fatalf("get_checkpoint(work/auto) = %v", m)
	}
	if p, _ := session.Parse(testKey, h.tok); p.Activity != "start" || !slices.Equal(p.Pending, []string{"go"}) {
		t.Fatalf("payload after get_checkpoint = %+v, want act start with go pending", p)
	}
	h.err(ToolNextActivity, obj{"activity_id": "work"}, KindCheckpointsPending)
	m = h.ok(ToolGetCheckpoint, obj{"activity_id": "start", "checkpoint_id": "go"})
	if m["pending"] != true || len(m["options"].([]any)) != 2 {
		t.Fatalf("get_checkpoint(start/go) = %v", m)
	}
	h.err(ToolGetCheckpoint, obj{"activity_id": "nope", "checkpoint_id": "go"}, KindActivityNotFound)
	if msg := h.err(ToolGetCheckpoint, obj{"activity_id": "start", "checkpoint_id": "nope"}, KindCheckpointNotFound); !strings.Contains(msg, "go") {
		t.Fatalf("checkpoint_not_found %q does not list the checkpoints", msg)
	}
}

func TestRespondCheckpoint_Modes(t *testing.T) {
	type step struct {
		advance time.Duration
		args    obj
		kind    string // "" for success
		want    obj    // body fields on success
	}
	cases := []struct {
		name  string
		enter string // activity to reach (start, or work via go=approve)
		steps []step
	}{
		{"no mode", "start", []step{{advance: 5 * time.Second, args: obj{"checkpoint_id": "go"}, kind: KindInvalidInput}}},
		{"two modes", "start", []step{{5 * time.Second, obj{"checkpoint_id": "go", "option_id": "approve", "condition_not_met": true}, KindInvalidInput, nil}}},
		{"auto_advance false is no mode", "start", []step{{5 * time.Second, obj{"checkpoint_id": "go", "auto_advance": false}, KindInvalidInput, nil}}},
		{"condition_not_met false is no mode", "start", []step{{5 * time.Second, obj{"checkpoint_id": "go", "condition_not_met": false}, KindInvalidInput, nil}}},
		{"empty option", "start", []step{{5 * time.Second, obj{"checkpoint_id": "go", "option_id": ""}, KindInvalidInput, nil}}},
		{"not pending", "start", []step{{5 * time.Second, obj{"checkpoint_id": "auto", "option_id": "ok"}, KindCheckpointNotPending, nil}}},
		{"invalid option", "start", []step{{5 * time.Second, obj{"checkpoint_id": "go", "option_id": "maybe"}, KindInvalidOption, nil}}},
		{"too early then in time", "start", []step{
			{2 * time.Second, obj{"checkpoint_id": "go", "option_id": "approve"}, KindTooEarly, nil},
			{time.Second, obj{"checkpoint_id": "go", "option_id": "approve"}, "",
				obj{"resolved": true, "resolved_option": "approve", "effect": obj{"setVariable": obj{"approved": true}}}},
		}},
		{"effects", "start", []step{{3 * time.Second, obj{"checkpoint_id": "go", "option_id": "reject"}, "",
			obj{"resolved_option": "reject", "effect": obj{"transitionTo": "done", "skipActivities": []any{"work"}}}}}},
		{"auto_advance on blocking", "start", []step{{time.Hour, obj{"checkpoint_id": "go", "auto_advance": true}, KindModeNotAllowed, nil}}},
		{"condition_not_met without condition", "start", []step{{time.Hour, obj{"checkpoint_id": "go", "condition_not_met": true}, KindModeNotAllowed, nil}}},
		// auto: autoAdvanceMs 2500 → 3 whole seconds from issuance.
		{"auto_advance timer", "work", []step{
			{2 * time.Second, obj{"checkpoint_id": "auto", "auto_advance": true}, KindTimerNotElapsed, nil},
			{time.Second, obj{"checkpoint_id": "auto", "auto_advance": true}, "",
				obj{"resolved_option": "ok", "auto_advanced": true, "effect": obj{"setVariable": obj{"size": 1.0}}, "remaining_checkpoints": []any{"maybe"}}},
		}},
		{"condition_not_met on conditional", "work", []step{
			{0, obj{"checkpoint_id": "maybe", "condition_not_met": true}, "", obj{"dismissed": true, "remaining_checkpoints": []any{"auto"}}},
			{0, obj{"checkpoint_id": "maybe", "condition_not_met": true}, KindCheckpointNotPending, nil},
		}},
		{"not required is never pending", "work", []step{{time.Hour, obj{"checkpoint_id": "later", "option_id": "fine"}, KindCheckpointNotPending, nil}}},
	}
	lib := writeLibrary(t, flowFiles)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, lib)
			h.enterStart()
			if tc.enter == "work" {
				h.clk.Advance(3 * time.Second)
				h.ok(ToolRespondCheckpoint, obj{"checkpoint_id": "go", "option_id": "approve"})
				m := h.ok(ToolNextActivity, obj{"activity_id": "work", "transition_condition": "approved == true", "step_manifest": stepsOf("read", "note")})
				if !slices.Equal(strs(m["pending_checkpoints"]), []string{"auto", "maybe"}) {
					t.Fatalf("work pending = %v, want auto and maybe (later is not required)", m["pending_checkpoints"])
				}
			}
			for i, s := range tc.steps {
				h.clk.Advance(s.advance)
				if s.kind != "" {
					h.err(ToolRespondCheckpoint, s.args, s.kind)
					continue
				}
				got := h.ok(ToolRespondCheckpoint, s.args)
				if got["checkpoint_id"] != s.args["checkpoint_id"] {
					t.Fatalf("step %d: checkpoint_id = %v", i, got["checkpoint_id"])
				}
				for k, v := range s.want {
					if !equalJSON(got[k], v) {
						t.Fatalf("step %d: %s = %v, want %v (body %v)", i, k, got[k], v, got)
					}
				}
			}
		})
	}
}

func TestRespondCheckpoint_MinResponseOptions(t *testing.T) {
	lib := writeLibrary(t, flowFiles)
	h := newHarness(t, lib, func(o *Options) { o.MinResponse = -1 })
	h.enterStart()
	h.ok(ToolRespondCheckpoint, obj{"checkpoint_id": "go", "option_id": "approve"})

	h = newHarness(t, lib, func(o *Options) { o.MinResponse = 10 * time.Second })
	h.enterStart()
	h.clk.Advance(9 * time.Second)
	h.err(ToolRespondCheckpoint, obj{"checkpoint_id": "go", "option_id": "approve"}, KindTooEarly)
	h.clk.Advance(time.Second)
	h.ok(ToolRespondCheckpoint, obj{"checkpoint_id": "go", "option_id": "approve"})
}

func TestRespondCheckpoint_ClearsGateAndRecordsResolution(t *testing.T) {
	h := newHarness(t, writeLibrary(t, flowFiles))
	h.enterStart()
	h.clk.Advance(3 * time.Second)
	h.ok(ToolRespondCheckpoint, obj{"checkpoint_id": "go", "option_id": "approve"})
	if p, _ := session.Parse(testKey, h.tok); len(p.Pending) != 0 || p.PendingAt != 0 {
		t.Fatalf("payload %+v: want pcp empty and pcpt 0", p)
	}
	h.mu.Lock()
	calls := slices.Clone(h.calls)
	h.mu.Unlock()
	if len(calls) != 2 || calls[0].hook != "armed" || calls[1].hook != "resolved" ||
		calls[1].cps[0].Resolution != store.ResolvedOption || calls[1].cps[0].CheckpointID != "go" {
		t.Fatalf("hook calls = %+v, want armed then resolved(go, option)", calls)
	}
	if rows, _ := h.st.PendingCheckpoints(context.Background()); len(rows) != 0 {
		t.Fatalf("pending rows after resolution: %+v", rows)
	}
}

func TestHumans_OptionMustBeTheHumansAnswer(t *testing.T) {
	h := newHarness(t, writeLibrary(t, flowFiles), humans)
	m := h.enterStart()
	if !strings.Contains(m["checkpoint_instructions"].(string), "END YOUR TURN") {
		t.Fatalf("humans-mode instructions = %q", m["checkpoint_instructions"])
	}
	sid := func() string { p, _ := session.Parse(testKey, h.tok); return p.SessionID }()

	// No minimum response time in humans mode, but no answer yet.
	msg := h.err(ToolRespondCheckpoint, obj{"checkpoint_id": "go", "option_id": "approve"}, KindAwaitingHuman)
	if !strings.Contains(msg, "end your turn") {
		t.Fatalf("awaiting_human %q does not tell the agent to end its turn", msg)
	}
	c := h.ok(ToolGetCheckpoint, obj{"activity_id": "start", "checkpoint_id": "go"})
	if c["awaiting_human"] != true {
		t.Fatalf("get_checkpoint before an answer = %v", c)
	}
	ctx := context.Background()
	ans := store.CheckpointAnswer{SessionID: sid, CheckpointID: "go", Option: "bogus", By: "alice", Source: store.AnswerDashboard, At: h.clk.Now()}
	if _, err := h.st.AnswerCheckpoint(ctx, ans); err == nil {
		t.Fatal("AnswerCheckpoint accepted an option the checkpoint does not have")
	}
	ans.Option = "reject"
	if _, err := h.st.AnswerCheckpoint(ctx, ans); err != nil {
		t.Fatal(err)
	}
	c = h.ok(ToolGetCheckpoint, obj{"activity_id": "start", "checkpoint_id": "go"})
	if ha, _ := c["human_answer"].(obj); ha["option_id"] != "reject" || ha["answered_by"] != "alice" {
		t.Fatalf("get_checkpoint after the answer = %v", c)
	}
	if msg := h.err(ToolRespondCheckpoint, obj{"checkpoint_id": "go", "option_id": "approve"}, KindWrongOption); !strings.Contains(msg, `"reject"`) {
		t.Fatalf("wrong_option %q does not name the human's choice", msg)
	}
	h.err(ToolRespondCheckpoint, obj{"checkpoint_id": "go", "option_id": "nope"}, KindInvalidOption)

	// Re-entering the activity carries the answer over to the new issuance.
	h.ok(ToolNextActivity, obj{"activity_id": "start", "step_manifest": stepsOf("read", "note")})
	h.mu.Lock()
	armed := h.calls[len(h.calls)-1]
	h.mu.Unlock()
	if armed.hook != "armed" || armed.cps[0].Answer != "reject" || armed.cps[0].AnsweredBy != "alice" {
		t.Fatalf("re-armed rows = %+v, want the answer carried over", armed)
	}
	r := h.ok(ToolRespondCheckpoint, obj{"checkpoint_id": "go", "option_id": "reject"})
	if r["resolved_option"] != "reject" {
		t.Fatalf("respond = %v", r)
	}
	h.mu.Lock()
	last := h.calls[len(h.calls)-1]
	h.mu.Unlock()
	if last.hook != "resolved" || last.cps[0].Answer != "reject" || last.cps[0].Resolution != store.ResolvedOption {
		t.Fatalf("Resolved hook = %+v", last)
	}
	// A resolved checkpoint does not carry its answer into a later issuance.
	h.ok(ToolNextActivity, obj{"activity_id": "start", "step_manifest": stepsOf("read", "note")})
	h.err(ToolRespondCheckpoint, obj{"checkpoint_id": "go", "option_id": "reject"}, KindAwaitingHuman)
}

func TestHumans_AutoAdvanceAndDismissal(t *testing.T) {
	h := newHarness(t, writeLibrary(t, flowFiles), humans)
	h.enterStart()
	sid := func() string { p, _ := session.Parse(testKey, h.tok); return p.SessionID }()
	ctx := context.Background()
	answer := func(cp, opt, source string) {
		t.Helper()
		if _, err := h.st.AnswerCheckpoint(ctx, store.CheckpointAnswer{SessionID: sid, CheckpointID: cp, Option: opt, By: "bob", Source: source, At: h.clk.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	answer("go", "approve", store.AnswerTracker)
	h.ok(ToolRespondCheckpoint, obj{"checkpoint_id": "go", "option_id": "approve"})
	h.ok(ToolNextActivity, obj{"activity_id": "work", "transition_condition": "approved == true", "step_manifest": stepsOf("read", "note")})
	// A human chose "stop" on the non-blocking checkpoint: auto_advance may not override it.
	answer("auto", "stop", store.AnswerDashboard)
	h.clk.Advance(time.Minute)
	h.err(ToolRespondCheckpoint, obj{"checkpoint_id": "auto", "auto_advance": true}, KindWrongOption)
	h.ok(ToolRespondCheckpoint, obj{"checkpoint_id": "auto", "option_id": "stop"})
	h.ok(ToolRespondCheckpoint, obj{"checkpoint_id": "maybe", "condition_not_met": true})
	h.ok(ToolNextActivity, obj{"activity_id": "done", "transition_condition": "default", "step_manifest": stepsOf("build")})

	// The daemon's timer answered: auto_advance and the default option both work.
	h2 := newHarness(t, writeLibrary(t, flowFiles), humans)
	h2.enterStart()
	sid2 := func() string { p, _ := session.Parse(testKey, h2.tok); return p.SessionID }()
	h2.st.AnswerCheckpoint(ctx, store.CheckpointAnswer{SessionID: sid2, CheckpointID: "go", Option: "approve", Source: store.AnswerAPI, At: h2.clk.Now()})
	h2.ok(ToolRespondCheckpoint, obj{"checkpoint_id": "go", "option_id": "approve"})
	h2.ok(ToolNextActivity, obj{"activity_id": "work", "transition_condition": "approved == true", "step_manifest": stepsOf("read", "note")})
	h2.st.AnswerCheckpoint(ctx, store.CheckpointAnswer{SessionID: sid2, CheckpointID: "auto", Option: "ok", Source: store.AnswerAutoAdvance, At: h2.clk.Now()})
	h2.clk.Advance(3 * time.Second)
	if r := h2.ok(ToolRespondCheckpoint, obj{"checkpoint_id": "auto", "auto_advance": true}); r["resolved_option"] != "ok" {
		t.Fatalf("auto_advance after the timer's answer = %v", r)
	}
}

// equalJSON compares decoded JSON values.
func equalJSON(a, b any) bool {
	return jsonText(a) == jsonText(b)
}
