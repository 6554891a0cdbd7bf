package workflow

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// exampleLibrary is the library shipped in examples/workflows.
const exampleLibrary = "../../examples/workflows"

// loadExample loads the example library and fails the test on any error or
// warning: the example is what operators copy, so it must be clean.
func loadExample(t *testing.T) *Library {
	t.Helper()
	l, err := LoadLibrary(exampleLibrary)
	if err != nil {
		t.Fatalf("LoadLibrary(%s): %v", exampleLibrary, err)
	}
	for _, w := range l.Warnings() {
		t.Errorf("warning: %s", w)
	}
	return l
}

func TestExampleLibrary_WorkPackageActivitiesInOrder(t *testing.T) {
	l := loadExample(t)
	w, ok := l.Workflow("work-package")
	if !ok {
		t.Fatal(`Workflow("work-package") not found`)
	}
	if w.InitialActivity != "understand" {
		t.Errorf("initialActivity = %q, want understand", w.InitialActivity)
	}
	var got []string
	for _, a := range w.Activities {
		got = append(got, a.ArtifactPrefix+"-"+a.ID)
	}
	want := "01-understand 02-plan 03-approve-plan 04-implement 05-verify 06-ready-for-review 07-handoff"
	if strings.Join(got, " ") != want {
		t.Errorf("activities = %q, want %q", strings.Join(got, " "), want)
	}
	if ws := l.Workflows(); len(ws) != 1 || ws[0].ID != "work-package" {
		t.Errorf("Workflows() = %d workflows, want only work-package (meta is not listed)", len(ws))
	}
	if w.ExecutionModel == nil {
		t.Fatal("executionModel missing")
	}
	var roles []string
	for _, r := range w.ExecutionModel.Roles {
		roles = append(roles, r.ID)
	}
	if strings.Join(roles, ",") != "orchestrator,worker" {
		t.Errorf("roles = %v, want orchestrator, worker", roles)
	}
}

func TestExampleLibrary_Checkpoints(t *testing.T) {
	l := loadExample(t)
	w, ok := l.Workflow("work-package")
	if !ok {
		t.Fatal(`Workflow("work-package") not found`)
	}
	type option struct{ id, transitionTo string }
	tests := []struct {
		activity, checkpoint string
		blocking             bool
		conditional          bool
		defaultOption        string
		autoAdvanceMs        int64
		options              []option
	}{
		{
			activity: "approve-plan", checkpoint: "approve-plan", blocking: true,
			options: []option{{"approve", "implement"}, {"revise", "plan"}, {"abandon", "handoff"}},
		},
		{
			activity: "verify", checkpoint: "deviation-notice", blocking: false, conditional: true,
			defaultOption: "continue", autoAdvanceMs: 600000,
			options: []option{{"continue", ""}, {"replan", "plan"}},
		},
		{
			activity: "ready-for-review", checkpoint: "ready-for-review", blocking: true,
			options: []option{{"hand-off", "handoff"}, {"more-work", "implement"}},
		},
	}
	seen := 0
	for _, tt := range tests {
		a, ok := w.Activity(tt.activity)
		if !ok {
			t.Errorf("activity %q not found", tt.activity)
			continue
		}
		// next_activity arms every required checkpoint at once and gates the
		// skills until they are resolved, so a checkpoint shares its activity
		// with no skill steps except when it is conditional and usually
		// dismissed at once.
		if len(a.Checkpoints) != 1 {
			t.Errorf("%s: %d checkpoints, want 1", tt.activity, len(a.Checkpoints))
			continue
		}
		if !tt.conditional && len(a.Steps) != 0 {
			t.Errorf("%s: %d steps beside a blocking checkpoint, want none", tt.activity, len(a.Steps))
		}
		cp := a.Checkpoints[0]
		if cp.ID != tt.checkpoint || !cp.Required || cp.Blocking != tt.blocking || (cp.Condition != nil) != tt.conditional ||
			cp.DefaultOption != tt.defaultOption || cp.AutoAdvanceMs != tt.autoAdvanceMs {
			t.Errorf("%s: checkpoint %q required %v blocking %v conditional %v default %q autoAdvanceMs %d; want %q true %v %v %q %d",
				tt.activity, cp.ID, cp.Required, cp.Blocking, cp.Condition != nil, cp.DefaultOption, cp.AutoAdvanceMs,
				tt.checkpoint, tt.blocking, tt.conditional, tt.defaultOption, tt.autoAdvanceMs)
		}
		var got []option
		for _, o := range cp.Options {
			to := ""
			if o.Effect != nil {
				to = o.Effect.TransitionTo
			}
			got = append(got, option{o.ID, to})
		}
		if !slices.Equal(got, tt.options) {
			t.Errorf("%s: options (id, transitionTo) = %v, want %v", tt.checkpoint, got, tt.options)
		}
		seen++
	}
	total := 0
	for _, a := range w.Activities {
		total += len(a.Checkpoints)
	}
	if total != seen {
		t.Errorf("work-package has %d checkpoints, want only the %d above", total, seen)
	}
}

func TestExampleLibrary_TransitionsDeclareCheckpointTargets(t *testing.T) {
	l := loadExample(t)
	w, _ := l.Workflow("work-package")
	for _, a := range w.Activities {
		declared := map[string]bool{}
		defaults := 0
		for _, tr := range a.Transitions {
			declared[tr.To] = true
			if tr.IsDefault {
				defaults++
			}
		}
		if a.ID == "handoff" {
			if len(a.Transitions) != 0 {
				t.Errorf("handoff: %d transitions, want none (it is the last activity)", len(a.Transitions))
			}
			continue
		}
		if defaults != 1 {
			t.Errorf("%s: %d default transitions, want 1", a.ID, defaults)
		}
		for _, c := range a.Checkpoints {
			for _, o := range c.Options {
				if o.Effect != nil && o.Effect.TransitionTo != "" && !declared[o.Effect.TransitionTo] {
					t.Errorf("%s: option %s.%s goes to %q, which is not a transition of the activity", a.ID, c.ID, o.ID, o.Effect.TransitionTo)
				}
			}
		}
	}
}

func TestExampleLibrary_StepSkillsResolve(t *testing.T) {
	l := loadExample(t)
	w, _ := l.Workflow("work-package")
	steps := 0
	for _, a := range w.Activities {
		for _, s := range a.Steps {
			steps++
			if s.Skill == "" {
				t.Errorf("%s.%s: no skill", a.ID, s.ID)
				continue
			}
			if _, ok := l.Skill(w.ID, s.Skill); !ok {
				t.Errorf("%s.%s: skill %q does not resolve", a.ID, s.ID, s.Skill)
			}
		}
	}
	if steps == 0 {
		t.Error("work-package has no steps")
	}
	for _, id := range w.Skills {
		if s, ok := l.Skill(w.ID, id); !ok || s.Workflow != MetaWorkflow {
			t.Errorf("workflow skill %q: found %v, want it from meta", id, ok)
		}
	}
	for _, id := range []string{"session-protocol", "execute-activity", "orchestrator-management", "worker-management"} {
		if s, ok := l.Skill(w.ID, id); !ok || s.Workflow != MetaWorkflow {
			t.Errorf("universal skill %q: found %v, want it in meta/skills", id, ok)
		}
	}
}

// TestExampleLibrary_SkillResourcesResolve checks every resource reference
// of every skill file. A meta skill is delivered under the session's
// workflow, where a bare index would name that workflow's resource, so meta
// skills must write meta/NN.
func TestExampleLibrary_SkillResourcesResolve(t *testing.T) {
	l := loadExample(t)
	files, err := filepath.Glob(filepath.Join(exampleLibrary, "*", "skills", "*"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no skill files under %s (err %v)", exampleLibrary, err)
	}
	refs := 0
	for _, f := range files {
		wf := filepath.Base(filepath.Dir(filepath.Dir(f)))
		m := indexedName().FindStringSubmatch(filepath.Base(f))
		if m == nil {
			t.Errorf("%s: not an NN-{id} file name", f)
			continue
		}
		s, ok := l.Skill(wf, m[2])
		if !ok || s.Workflow != wf {
			t.Errorf("%s: Skill(%q, %q) not found in its own workflow", f, wf, m[2])
			continue
		}
		for _, ref := range s.Resources {
			refs++
			if wf == MetaWorkflow && !strings.HasPrefix(ref, MetaWorkflow+"/") {
				t.Errorf("%s: resource %q: a meta skill must write meta/NN", f, ref)
			}
			r, ok := l.Resource(s.Workflow, ref)
			if !ok {
				t.Errorf("%s: resource %q does not resolve", f, ref)
				continue
			}
			if r.ID == "" || r.Version == "" || strings.TrimSpace(r.Content) == "" {
				t.Errorf("%s: resource %q has id %q version %q and %d bytes; want front matter and a body", f, ref, r.ID, r.Version, len(r.Content))
			}
		}
	}
	if refs == 0 {
		t.Error("no skill references a resource")
	}
	if _, err := os.Stat(filepath.Join(exampleLibrary, "meta", "resources", "00-bootstrap.md")); err != nil {
		t.Errorf("meta/resources/00-bootstrap.md, which discover returns: %v", err)
	}
}
