package engine

import (
	"strings"
	"testing"
	"time"

	"sortie/internal/workflow/session"
)

func TestGetWorkflow_SummaryAndFull(t *testing.T) {
	h := newHarness(t, writeLibrary(t, flowFiles))
	h.start("flow")
	m := h.ok(ToolGetWorkflow, obj{})
	if m["id"] != "flow" || m["version"] != "1.0.0" || m["initialActivity"] != "start" || m["description"] == nil ||
		len(m["variables"].([]any)) != 2 || strs(m["skills"])[0] != "proto" {
		t.Fatalf("summary = %v", m)
	}
	acts := m["activities"].([]any)
	if len(acts) != 3 || jsonText(acts[0]) != `{"id":"start","name":"Start","required":true}` {
		t.Fatalf("summary activities = %v, want stubs", acts)
	}
	noWarnings(t, "summary", m)
	m = h.ok(ToolGetWorkflow, obj{"summary": false})
	full := m["activities"].([]any)
	if len(full) != 3 || full[0].(obj)["steps"] == nil || full[1].(obj)["checkpoints"] == nil {
		t.Fatalf("full activities = %v, want complete definitions", full)
	}
	if m["session_token"] != h.tok || m["validation"] == nil {
		t.Fatalf("full body lacks session_token or validation: %v", m)
	}
}

func TestNextActivity_ReturnsTheDefinition(t *testing.T) {
	h := newHarness(t, writeLibrary(t, flowFiles))
	h.start("flow")
	m := h.ok(ToolNextActivity, obj{"activity_id": "start"})
	if m["id"] != "start" || len(m["steps"].([]any)) != 2 || len(m["loops"].([]any)) != 1 || len(m["transitions"].([]any)) != 2 ||
		m["artifactPrefix"] != "01" {
		t.Fatalf("next_activity(start) = %v", m)
	}
	p, _ := session.Parse(testKey, h.tok)
	if p.Activity != "start" || p.Cond != "" {
		t.Fatalf("payload %+v", p)
	}
}

func TestGetSkills_WorkflowSkillsWithResourceRefs(t *testing.T) {
	h := newHarness(t, writeLibrary(t, flowFiles))
	h.start("flow")
	m := h.ok(ToolGetSkills, obj{})
	skills := m["skills"].(obj)
	proto, ok := skills["proto"].(obj)
	if m["scope"] != "workflow" || len(skills) != 1 || !ok {
		t.Fatalf("get_skills = %v, want only the workflow's skill proto", m)
	}
	// proto is a meta skill: its bare "01" is meta's resource, qualified for a flow session.
	if jsonText(proto["_resources"]) != `[{"id":"guide","index":"meta/01","version":"1.1.0"}]` || proto["resources"] != nil {
		t.Fatalf("proto = %v", proto)
	}
}

func TestGetSkill_Resolution(t *testing.T) {
	lib := writeLibrary(t, flowFiles)
	h := newHarness(t, lib)
	h.start("flow")
	h.err(ToolGetSkill, obj{"step_id": "read"}, KindNoActivity)
	h.ok(ToolNextActivity, obj{"activity_id": "start"})
	h.clk.Advance(3 * time.Second)
	h.ok(ToolRespondCheckpoint, obj{"checkpoint_id": "go", "option_id": "approve"})

	m := h.ok(ToolGetSkill, obj{"step_id": "read"})
	s := m["skill"].(obj)
	if s["id"] != "own-skill" || s["resources"] != nil || s["rules"] == nil ||
		jsonText(s["_resources"]) != `[{"id":"notes","index":"5","version":"2.0.0"},{"id":"guide","index":"meta/1","version":"1.1.0"}]` {
		t.Fatalf("get_skill(read) = %v", s)
	}
	if p, _ := session.Parse(testKey, h.tok); p.Skill != "own-skill" {
		t.Fatalf("skill = %q, want own-skill", p.Skill)
	}
	// A loop step; its skill is meta's.
	if s := h.ok(ToolGetSkill, obj{"step_id": "loop-step"})["skill"].(obj); s["id"] != "proto" || s["capability"] != "Keep the token current." {
		t.Fatalf("get_skill(loop-step) = %v", s)
	}
	if msg := h.err(ToolGetSkill, obj{"step_id": "note"}, KindSkillNotFound); !strings.Contains(msg, "has no skill") {
		t.Fatalf("step without a skill: %q", msg)
	}
	if msg := h.err(ToolGetSkill, obj{"step_id": "nope"}, KindStepNotFound); !strings.Contains(msg, "read, note, loop-step") {
		t.Fatalf("unknown step: %q does not list the steps", msg)
	}

	// The workflow's own skill of the same id comes before meta's.
	h.lib.Store(writeLibrary(t, withFiles(flowFiles, map[string]string{
		"flow/skills/02-proto.yaml": "id: proto\nversion: 2.0.0\ncapability: Flow's own proto.\n"})))
	if s := h.ok(ToolGetSkill, obj{"step_id": "loop-step"})["skill"].(obj); s["capability"] != "Flow's own proto." || s["_resources"] != nil {
		t.Fatalf("get_skill(loop-step) with a workflow skill = %v", s)
	}
}

func TestGetResource_Indices(t *testing.T) {
	h := newHarness(t, writeLibrary(t, flowFiles))
	h.start("flow")
	for _, tc := range []struct{ index, content, id string }{
		{"5", "Flow notes.\n", "notes"},
		{"05", "Flow notes.\n", "notes"},
		{"005", "Flow notes.\n", "notes"},
		{"meta/1", "The guide.\n", "guide"},
		{"meta/001", "The guide.\n", "guide"},
		{"meta/0", "Start with list_workflows.\n", ""},
	} {
		r := h.ok(ToolGetResource, obj{"resource_index": tc.index})["resource"].(obj)
		if r["index"] != tc.index || r["content"] != tc.content || (r["id"] == nil) != (tc.id == "") || (tc.id != "" && r["id"] != tc.id) {
			t.Fatalf("get_resource(%q) = %v", tc.index, r)
		}
	}
	for _, idx := range []string{"6", "x", "", "other/1", "nowhere/1", "meta/", "-1", "1234567890"} {
		h.err(ToolGetResource, obj{"resource_index": idx}, KindResourceNotFound)
	}
}
