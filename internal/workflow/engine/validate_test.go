package engine

import (
	"context"
	"maps"
	"strings"
	"testing"
	"time"

	"sortie/internal/workflow/session"
)

// toWork takes a fresh session through start (go approved) and returns the
// harness positioned to leave start.
func toLeaveStart(t *testing.T, h *harness) {
	t.Helper()
	h.enterStart()
	h.clk.Advance(3 * time.Second)
	h.ok(ToolRespondCheckpoint, obj{"checkpoint_id": "go", "option_id": "approve"})
}

func TestValidation_Transitions(t *testing.T) {
	lib := writeLibrary(t, flowFiles)
	full := stepsOf("read", "note")
	cases := []struct {
		name string
		args obj
		want []string // parts of one warning; nil for none
	}{
		{"declared conditional transition", obj{"activity_id": "work", "transition_condition": "approved == true", "step_manifest": full}, nil},
		{"default transition, default claimed", obj{"activity_id": "done", "transition_condition": "default", "step_manifest": full}, nil},
		{"default transition, nothing claimed", obj{"activity_id": "done", "step_manifest": full}, nil},
		{"checkpoint-sourced transition", obj{"activity_id": "done", "transition_condition": "checkpoint:go:reject", "step_manifest": full}, nil},
		{"conditional transition without a condition", obj{"activity_id": "work", "step_manifest": full},
			[]string{"conditional", "approved == true"}},
		{"conditional transition claimed as default", obj{"activity_id": "work", "transition_condition": "default", "step_manifest": full},
			[]string{"conditional"}},
		{"condition mismatch", obj{"activity_id": "work", "transition_condition": "approved == false", "step_manifest": full},
			[]string{"Condition mismatch", `"approved == false"`, "approved == true"}},
		// done is reached by the default transition or by go's reject option.
		{"condition claimed for the default", obj{"activity_id": "done", "transition_condition": "approved == true", "step_manifest": full},
			[]string{"Condition mismatch", "checkpoint:go:reject"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, lib)
			toLeaveStart(t, h)
			m := h.ok(ToolNextActivity, tc.args)
			if tc.want == nil {
				noWarnings(t, tc.name, m)
				return
			}
			wantWarning(t, m, tc.want...)
			if n := len(warnings(t, m)); n != 1 {
				t.Fatalf("warnings %q: want exactly one", warnings(t, m))
			}
			if p, _ := session.Parse(testKey, h.tok); p.Cond != tc.args["transition_condition"] && tc.args["transition_condition"] != nil {
				t.Fatalf("cond = %q, want the claimed %q", p.Cond, tc.args["transition_condition"])
			}
		})
	}

	t.Run("first activity is not initialActivity", func(t *testing.T) {
		h := newHarness(t, lib)
		h.start("flow")
		msg := h.err(ToolNextActivity, obj{"activity_id": "done"}, KindNotATransition)
		for _, want := range []string{`"done"`, "initialActivity", `"start"`, "free_entry"} {
			if !strings.Contains(msg, want) {
				t.Errorf("refusal %q does not mention %s", msg, want)
			}
		}
		h.ok(ToolNextActivity, obj{"activity_id": "start"}) // the token was not spent
	})
	t.Run("not a transition", func(t *testing.T) {
		h := newHarness(t, lib)
		toLeaveStart(t, h)
		h.ok(ToolNextActivity, obj{"activity_id": "work", "transition_condition": "approved == true", "step_manifest": full})
		h.clk.Advance(3 * time.Second)
		h.ok(ToolRespondCheckpoint, obj{"checkpoint_id": "auto", "auto_advance": true})
		h.ok(ToolRespondCheckpoint, obj{"checkpoint_id": "maybe", "condition_not_met": true})
		msg := h.err(ToolNextActivity, obj{"activity_id": "start", "step_manifest": stepsOf("build")}, KindNotATransition)
		if !strings.Contains(msg, `"start" from "work"`) || !strings.Contains(msg, "transitions: done") {
			t.Fatalf("refusal %q does not name the move and the transitions", msg)
		}
		h.ok(ToolNextActivity, obj{"activity_id": "done", "step_manifest": stepsOf("build")})
		// An activity without transitions ends the workflow: nothing leaves it but a
		// re-entry.
		if msg := h.err(ToolNextActivity, obj{"activity_id": "work"}, KindNotATransition); !strings.Contains(msg, "ends the workflow") {
			t.Fatalf("refusal %q does not say done ends the workflow", msg)
		}
		noWarnings(t, "re-entering done", h.ok(ToolNextActivity, obj{"activity_id": "done"}))
	})
	t.Run("free_entry", func(t *testing.T) {
		files := maps.Clone(flowFiles)
		files["flow/activities/03-done.toon"] += "free_entry: true\n"
		h := newHarness(t, writeLibrary(t, files))
		h.start("flow")
		noWarnings(t, "entering done first", h.ok(ToolNextActivity, obj{"activity_id": "done"}))
		h.ok(ToolNextActivity, obj{"activity_id": "done"})
		if msg := h.err(ToolNextActivity, obj{"activity_id": "work"}, KindNotATransition); !strings.Contains(msg, `"work" from "done"`) {
			t.Fatalf("refusal %q", msg)
		}
	})
	t.Run("condition claimed for a plain default", func(t *testing.T) {
		h := newHarness(t, lib)
		toLeaveStart(t, h)
		h.ok(ToolNextActivity, obj{"activity_id": "work", "transition_condition": "approved == true", "step_manifest": full})
		h.clk.Advance(3 * time.Second)
		h.ok(ToolRespondCheckpoint, obj{"checkpoint_id": "auto", "auto_advance": true})
		h.ok(ToolRespondCheckpoint, obj{"checkpoint_id": "maybe", "condition_not_met": true})
		wantWarning(t, h.ok(ToolNextActivity, obj{"activity_id": "done", "transition_condition": "size == 1", "step_manifest": stepsOf("build")}),
			`"size == 1"`, "default one with no condition")
	})
	t.Run("unknown activity", func(t *testing.T) {
		h := newHarness(t, lib)
		toLeaveStart(t, h)
		if msg := h.err(ToolNextActivity, obj{"activity_id": "nowhere"}, KindActivityNotFound); !strings.Contains(msg, "start, work, done") {
			t.Fatalf("activity_not_found %q does not list the activities", msg)
		}
	})
}

func TestValidation_StepManifest(t *testing.T) {
	lib := writeLibrary(t, flowFiles)
	cases := []struct {
		name     string
		manifest any // nil: omitted
		want     [][]string
	}{
		{"complete", stepsOf("read", "note"), nil},
		{"omitted", nil, [][]string{{"No step_manifest provided", `"start"`, "read, note"}}},
		{"empty", []obj{}, [][]string{{"Missing steps in manifest: read, note"}}},
		{"missing", stepsOf("read"), [][]string{{"Missing steps in manifest: note"}}},
		{"unexpected", stepsOf("read", "note", "loop-step"), [][]string{{"Unexpected steps in manifest: loop-step"}}},
		{"order", stepsOf("note", "read"), [][]string{{"Step order mismatch at position 0", `expected "read"`, `got "note"`}}},
		{"empty output", []obj{{"step_id": "read", "output": "  "}, {"step_id": "note", "output": "x"}}, [][]string{{`Step "read" has empty output`}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, lib)
			toLeaveStart(t, h)
			args := obj{"activity_id": "work", "transition_condition": "approved == true"}
			if tc.manifest != nil {
				args["step_manifest"] = tc.manifest
			}
			m := h.ok(ToolNextActivity, args)
			if tc.want == nil {
				noWarnings(t, tc.name, m)
				return
			}
			for _, w := range tc.want {
				wantWarning(t, m, w...)
			}
			if len(warnings(t, m)) != len(tc.want) {
				t.Fatalf("warnings %q, want %d", warnings(t, m), len(tc.want))
			}
		})
	}
	t.Run("activity without steps needs none", func(t *testing.T) {
		h := newHarness(t, lib)
		toLeaveStart(t, h)
		h.ok(ToolNextActivity, obj{"activity_id": "done", "step_manifest": stepsOf("read", "note")})
		noWarnings(t, "leave done", h.ok(ToolNextActivity, obj{"activity_id": "done"}))
	})
}

func TestValidation_ActivityManifest(t *testing.T) {
	lib := writeLibrary(t, flowFiles)
	cases := []struct {
		name     string
		manifest []obj
		want     [][]string
	}{
		{"good", []obj{{"activity_id": "start", "outcome": "approved", "transition_condition": "approved == true"},
			{"activity_id": "work", "outcome": "built", "transition_condition": "default"},
			{"activity_id": "start", "outcome": "rejected", "transition_condition": "checkpoint:go:reject"},
			{"activity_id": "done", "outcome": "done"}}, nil},
		{"empty", []obj{}, [][]string{{"activity_manifest is empty"}}},
		{"unknown activity", []obj{{"activity_id": "ghost", "outcome": "x"}}, [][]string{{"activity_manifest[0]", `unknown activity "ghost"`}}},
		{"empty outcome", []obj{{"activity_id": "start", "outcome": ""}}, [][]string{{"activity_manifest[0]", "empty outcome"}}},
		{"condition matches nothing", []obj{{"activity_id": "start", "outcome": "x", "transition_condition": "approved == false"}},
			[][]string{{"activity_manifest[0]", `"approved == false" matches no transition`}}},
		{"default where there is none", []obj{{"activity_id": "done", "outcome": "x", "transition_condition": "default"}},
			[][]string{{"matches no transition", `"done"`}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, lib)
			toLeaveStart(t, h)
			m := h.ok(ToolNextActivity, obj{"activity_id": "work", "transition_condition": "approved == true",
				"step_manifest": stepsOf("read", "note"), "activity_manifest": tc.manifest})
			if tc.want == nil {
				noWarnings(t, tc.name, m)
				return
			}
			for _, w := range tc.want {
				wantWarning(t, m, w...)
			}
			if len(warnings(t, m)) != len(tc.want) {
				t.Fatalf("warnings %q, want %d", warnings(t, m), len(tc.want))
			}
		})
	}
}

func TestValidation_VersionDriftOnEverySessionTool(t *testing.T) {
	h := newHarness(t, writeLibrary(t, flowFiles))
	toLeaveStart(t, h)
	bumped := writeLibrary(t, withFiles(flowFiles, map[string]string{
		"flow/workflow.yaml": strings.Replace(flowFiles["flow/workflow.yaml"], "version: 1.0.0", "version: 1.1.0", 1)}))
	h.lib.Store(bumped)
	for _, call := range []struct {
		tool string
		args obj
	}{
		{ToolGetWorkflow, obj{}},
		{ToolGetSkills, obj{}},
		{ToolGetSkill, obj{"step_id": "read"}},
		{ToolGetResource, obj{"resource_index": "5"}},
		{ToolGetTrace, obj{}},
		{ToolGetCheckpoint, obj{"activity_id": "start", "checkpoint_id": "go"}},
		{ToolStartSession, obj{"workflow_id": "flow"}},
		{ToolNextActivity, obj{"activity_id": "work", "transition_condition": "approved == true", "step_manifest": stepsOf("read", "note")}},
	} {
		args := call.args
		if call.tool == ToolStartSession {
			args = obj{"workflow_id": "flow", "session_token": h.tok}
		}
		wantWarning(t, h.ok(call.tool, args), "version drift", "1.1.0", "1.0.0")
	}
	h.clk.Advance(3 * time.Second)
	wantWarning(t, h.ok(ToolRespondCheckpoint, obj{"checkpoint_id": "auto", "auto_advance": true}), "version drift")
	// The warnings are in the trace.
	events, _ := h.st.TraceEvents(context.Background(), sessionID(t, h.tok), 100)
	last := events[len(events)-1]
	if last.Tool != ToolRespondCheckpoint || len(last.Warnings) != 1 || !strings.Contains(last.Warnings[0], "version drift") {
		t.Fatalf("last trace event = %+v, want respond_checkpoint with the drift warning", last)
	}
	// A fresh session on the bumped library has no drift.
	h.start("flow")
	noWarnings(t, "fresh session", h.ok(ToolGetSkills, obj{}))
}

func TestValidation_SkillAssociation(t *testing.T) {
	h := newHarness(t, writeLibrary(t, flowFiles))
	toLeaveStart(t, h)
	h.ok(ToolGetSkill, obj{"step_id": "read"})
	// The skill loaded in start belongs to start: no warning on leaving it, and it does
	// not follow the session into work (the token's skill is reset on entry).
	noWarnings(t, "leave start", h.ok(ToolNextActivity, obj{"activity_id": "work", "transition_condition": "approved == true",
		"step_manifest": stepsOf("read", "note")}))
	if p, _ := session.Parse(testKey, h.tok); p.Skill != "" {
		t.Fatalf("skill = %q after entering work, want empty", p.Skill)
	}
	h.clk.Advance(3 * time.Second)
	h.ok(ToolRespondCheckpoint, obj{"checkpoint_id": "auto", "auto_advance": true})
	h.ok(ToolRespondCheckpoint, obj{"checkpoint_id": "maybe", "condition_not_met": true})
	noWarnings(t, "leave work", h.ok(ToolNextActivity, obj{"activity_id": "done", "step_manifest": stepsOf("build")}))

	// A skill that is no longer the activity's (the library changed under the session).
	h2 := newHarness(t, writeLibrary(t, flowFiles))
	toLeaveStart(t, h2)
	h2.ok(ToolGetSkill, obj{"step_id": "read"})
	h2.lib.Store(writeLibrary(t, withFiles(flowFiles, map[string]string{
		"flow/activities/01-start.yaml": strings.Replace(flowFiles["flow/activities/01-start.yaml"], "skill: own-skill", "skill: proto", 1)})))
	wantWarning(t, h2.ok(ToolNextActivity, obj{"activity_id": "work", "transition_condition": "approved == true",
		"step_manifest": stepsOf("read", "note")}), `skill "own-skill"`, `"start"`)
}

func sessionID(t testing.TB, tok string) string {
	t.Helper()
	p, err := session.Parse(testKey, tok)
	if err != nil {
		t.Fatal(err)
	}
	return p.SessionID
}
