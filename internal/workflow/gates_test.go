package workflow

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// gatesLibrary writes a workflow "flow" whose activities are the given YAML files, and
// loads it.
func gatesLibrary(t *testing.T, activities map[string]string) *Library {
	t.Helper()
	l, err := loadGates(t, activities)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func loadGates(t *testing.T, activities map[string]string) (*Library, error) {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{"flow/workflow.yaml": "id: flow\nversion: 1.0.0\ntitle: Flow\ninitialActivity: plan\n"}
	for name, body := range activities {
		files["flow/activities/"+name] = body
	}
	for rel, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return LoadLibrary(dir)
}

func act(id, rest string) string {
	return "id: " + id + "\nversion: 1.0.0\nname: " + id + "\n" + rest
}

const blockingCP = "checkpoints:\n  - {id: %s, name: N, message: M, options: [{id: yes, label: Yes}]}\n"

func cp(id string) string { return strings.ReplaceAll(blockingCP, "%s", id) }

// gateFlow: plan (gate) → implement (blocking cp, but quick avoids it) | quick →
// review (a blocking gate and a non-blocking checkpoint) → done.
func gateFlow(doneExtra string) map[string]string {
	return map[string]string{
		"01-plan.yaml":      act("plan", cp("approve-plan")+"transitions: [{to: implement, isDefault: true}, {to: quick, condition: {type: simple, variable: small, operator: exists}}]\n"),
		"02-implement.yaml": act("implement", cp("design-ok")+"transitions: [{to: review, isDefault: true}]\n"),
		"03-quick.yaml":     act("quick", "transitions: [{to: review, isDefault: true}]\n"),
		"04-review.yaml": act("review", "checkpoints:\n  - {id: approve, name: N, message: M, options: [{id: yes, label: Yes}]}\n"+
			"  - {id: fyi, name: N, message: M, blocking: false, defaultOption: ok, autoAdvanceMs: 1000, options: [{id: ok, label: OK}]}\n"+
			"  - {id: optional, name: N, message: M, required: false, options: [{id: ok, label: OK}]}\n"+
			"transitions: [{to: done, isDefault: true}]\n"),
		"05-done.yaml": act("done", doneExtra),
	}
}

func TestGates_BlockingCheckpointsOnEveryPathToTheEnd(t *testing.T) {
	l := gatesLibrary(t, gateFlow(""))
	w, _ := l.Workflow("flow")
	want := []Gate{{"plan", "approve-plan"}, {"review", "approve"}}
	if got := w.Gates(); !slices.Equal(got, want) {
		t.Fatalf("Gates() = %+v, want %+v: implement's checkpoint is avoidable through quick, fyi is not blocking, optional not required", got, want)
	}
	if len(l.Warnings()) != 0 {
		t.Fatalf("warnings %v, want none", l.Warnings())
	}
}

func TestGates_AFreeEntryEndMakesEveryLaterCheckpointAvoidable(t *testing.T) {
	l := gatesLibrary(t, gateFlow("free_entry: true\n"))
	w, _ := l.Workflow("flow")
	if got, want := w.Gates(), []Gate{{"plan", "approve-plan"}}; !slices.Equal(got, want) {
		t.Fatalf("Gates() = %+v, want only the initial activity's %+v", got, want)
	}
	if a, _ := w.Activity("done"); !a.FreeEntry {
		t.Fatal("free_entry: true did not decode")
	}
	var msgs []string
	for _, p := range l.Warnings() {
		msgs = append(msgs, p.String())
	}
	if len(msgs) != 1 || !strings.Contains(msgs[0], "free_entry") || !strings.Contains(msgs[0], `"done" ends the workflow`) {
		t.Fatalf("warnings %q, want one about the free-entry end", msgs)
	}
}

func TestGates_AFreeEntryActivityIsNotUnreachable(t *testing.T) {
	acts := gateFlow("")
	acts["06-escalate.yaml"] = act("escalate", "free_entry: true\ntransitions: [{to: review, isDefault: true}]\n")
	l := gatesLibrary(t, acts)
	for _, p := range l.Warnings() {
		t.Errorf("warning %s, want none: a free_entry activity is reachable from anywhere", p)
	}
	w, _ := l.Workflow("flow")
	if got, want := w.Gates(), []Gate{{"plan", "approve-plan"}, {"review", "approve"}}; !slices.Equal(got, want) {
		t.Fatalf("Gates() = %+v, want %+v: escalate leads to review", got, want)
	}
}

func TestGates_FreeEntryMustBeABoolean(t *testing.T) {
	_, err := loadGates(t, gateFlow("free_entry: sometimes\n"))
	if err == nil || !strings.Contains(err.Error(), "free_entry") {
		t.Fatalf("LoadLibrary with free_entry: sometimes = %v, want an error naming free_entry", err)
	}
}

// A loop's activity without transitions returns to the loop: it does not end the
// workflow, so the checkpoint after the loop stays a gate.
func TestGates_ALoopActivityIsNotAnEnd(t *testing.T) {
	l := gatesLibrary(t, map[string]string{
		"01-plan.yaml":   act("plan", "loops: [{id: each, name: Each, type: forEach, variable: f, over: files, activities: [fix]}]\ntransitions: [{to: review, isDefault: true}]\n"),
		"02-fix.yaml":    act("fix", ""),
		"03-review.yaml": act("review", cp("approve")+"transitions: [{to: done, isDefault: true}]\n"),
		"04-done.yaml":   act("done", ""),
	})
	w, _ := l.Workflow("flow")
	if got, want := w.Gates(), []Gate{{"review", "approve"}}; !slices.Equal(got, want) {
		t.Fatalf("Gates() = %+v, want %+v", got, want)
	}
	fix, _ := w.Activity("fix")
	if got := w.Next(fix); !slices.Contains(got, "plan") {
		t.Fatalf("Next(fix) = %q, want the loop's activity plan", got)
	}
}
