package workflow

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadLibrary_ExampleInAllThreeFormats(t *testing.T) {
	l, err := LoadLibrary("testdata/library")
	if err != nil {
		t.Fatalf("LoadLibrary: %v", err)
	}
	if ws := l.Warnings(); len(ws) != 0 {
		t.Errorf("warnings = %v, want none", ws)
	}
	w, ok := l.Workflow("feature")
	if !ok {
		t.Fatal(`Workflow("feature") not found`)
	}
	if got := len(l.Workflows()); got != 1 {
		t.Errorf("Workflows() has %d entries, want 1 (meta is not listed)", got)
	}
	var got []string
	for _, a := range w.Activities {
		got = append(got, a.ArtifactPrefix+"-"+a.ID)
	}
	if want := "01-plan 02-design 03-build"; strings.Join(got, " ") != want {
		t.Errorf("activities = %q, want %q", strings.Join(got, " "), want)
	}
	design, ok := w.Activity("design")
	if !ok {
		t.Fatal(`Activity("design") not found`)
	}
	cp := design.Checkpoints[0]
	if cp.Blocking || !cp.Required || cp.AutoAdvanceMs != 30000 || cp.DefaultOption != "continue" {
		t.Errorf("design-ready = blocking %v required %v autoAdvanceMs %d default %q, want false true 30000 continue", cp.Blocking, cp.Required, cp.AutoAdvanceMs, cp.DefaultOption)
	}
	plan, _ := w.Activity("plan")
	if !plan.Checkpoints[0].Blocking {
		t.Error("approve-plan: blocking defaulted to false, want true")
	}
	if eff := plan.Checkpoints[0].Options[1].Effect; eff == nil || eff.TransitionTo != "build" || len(eff.SkipActivities) != 1 {
		t.Errorf("skip-design effect = %+v, want transitionTo build, skipActivities [design]", eff)
	}
	if s, ok := l.Skill("feature", "planning"); !ok || s.Workflow != "feature" {
		t.Errorf(`Skill("feature","planning") = %v, %v; want the feature skill`, s, ok)
	}
	if s, ok := l.Skill("feature", "session-protocol"); !ok || s.Workflow != MetaWorkflow {
		t.Errorf(`Skill("feature","session-protocol") = %v, %v; want the meta fallback`, s, ok)
	}
	if _, ok := l.Skill("feature", "nope"); ok {
		t.Error(`Skill("feature","nope") found, want not found`)
	}
	for _, ref := range []string{"5", "05", "005"} {
		r, ok := l.Resource("feature", ref)
		if !ok || r.Name != "guide" {
			t.Errorf("Resource(feature, %q) = %v, %v; want 005-guide", ref, r, ok)
		}
	}
	r, ok := l.Resource("feature", "meta/5")
	if !ok || r.ID != "bootstrap" || r.Version != "1.0.0" || strings.HasPrefix(r.Content, "---") {
		t.Errorf("Resource(feature, meta/5) = %+v, %v; want bootstrap 1.0.0 without front matter", r, ok)
	}
	if drift, ok := w.VersionDrift("1.1.0"); !ok || !strings.Contains(drift.Msg, "1.1.0") {
		t.Errorf("VersionDrift(1.1.0) = %v, %v; want a warning", drift, ok)
	}
	if _, ok := w.VersionDrift("1.2.0"); ok {
		t.Error("VersionDrift(1.2.0) warned, want no drift")
	}
}

func TestNormalizeIndex_PaddedFormsAreEqual(t *testing.T) {
	for _, in := range []string{"5", "05", "005", "0005"} {
		if got, err := NormalizeIndex(in); err != nil || got != "005" {
			t.Errorf("NormalizeIndex(%q) = %q, %v; want 005", in, got, err)
		}
	}
	for _, in := range []string{"", "x5", "-5", "1234567890"} {
		if _, err := NormalizeIndex(in); err == nil {
			t.Errorf("NormalizeIndex(%q) accepted, want an error", in)
		}
	}
}

// library copies the example library to a temporary directory and applies
// edits: a path with content "" is removed.
func library(t *testing.T, edits map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	err := filepath.WalkDir("testdata/library", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel("testdata/library", p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dir, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	for rel, content := range edits {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if content == "" {
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// activity is a minimal valid activity file with extra TOON lines.
func activity(id string, extra string) string {
	return "id: " + id + "\nversion: 1.0.0\nname: " + id + "\n" + extra
}

func TestLoadLibrary_RejectsInvalidDefinitions(t *testing.T) {
	tests := []struct {
		name  string
		edits map[string]string
		want  string // file: field: message, file relative to the library
	}{
		{"unknown transition target", map[string]string{
			"feature/activities/03-build.json": "",
			"feature/activities/03-build.toon": activity("build", "transitions[1]{to}:\n  desgin\n"),
		}, `feature/activities/03-build.toon: transitions[0].to: unknown activity "desgin"`},
		{"unknown effect transitionTo", map[string]string{
			"feature/activities/04-ship.toon": activity("ship", "checkpoints[1]:\n  - id: go\n    name: Go\n    message: Go?\n    options[1]:\n      - id: yes\n        label: Yes\n        effect:\n          transitionTo: desgin\n"),
		}, `feature/activities/04-ship.toon: checkpoints[0].options[0].effect.transitionTo: unknown activity "desgin"`},
		{"unknown skipActivities entry", map[string]string{
			"feature/activities/04-ship.yaml": activity("ship", "checkpoints:\n  - {id: go, name: Go, message: M, options: [{id: y, label: Y, effect: {skipActivities: [nope]}}]}\n"),
		}, `feature/activities/04-ship.yaml: checkpoints[0].options[0].effect.skipActivities[0]: unknown activity "nope"`},
		{"unknown decision branch target", map[string]string{
			"feature/activities/04-ship.yaml": activity("ship", "decisions:\n  - {id: d, name: D, branches: [{id: a, label: A}, {id: b, label: B, transitionTo: nope}]}\n"),
		}, `feature/activities/04-ship.yaml: decisions[0].branches[1].transitionTo: unknown activity "nope"`},
		{"unknown initialActivity", map[string]string{
			"feature/workflow.toon": "id: feature\nversion: 1.0.0\ntitle: F\ninitialActivity: nope\n",
		}, `feature/workflow.toon: initialActivity: unknown activity "nope"`},
		{"duplicate activity id", map[string]string{
			"feature/activities/04-plan.yaml": activity("plan", ""),
		}, `feature/activities/04-plan.yaml: id: duplicate activity id "plan"`},
		{"activity id differs from its file name", map[string]string{
			"feature/activities/04-ship.yaml": activity("shipit", ""),
		}, `feature/activities/04-ship.yaml: id: "shipit" does not match the file name "ship"`},
		{"activity index clash", map[string]string{
			"feature/activities/001-ship.yaml": activity("ship", ""),
		}, `clashes with`},
		{"duplicate step id", map[string]string{
			"feature/activities/04-ship.yaml": activity("ship", "steps: [{id: a, name: A}, {id: a, name: B}]\n"),
		}, `feature/activities/04-ship.yaml: steps[1].id: duplicate step id "a"`},
		{"duplicate checkpoint id", map[string]string{
			"feature/activities/04-ship.yaml": activity("ship", "checkpoints: [{id: c, name: C, message: M, options: [{id: o, label: O}]}, {id: c, name: C, message: M, options: [{id: o, label: O}]}]\n"),
		}, `checkpoints[1].id: duplicate checkpoint id "c"`},
		{"duplicate option id", map[string]string{
			"feature/activities/04-ship.yaml": activity("ship", "checkpoints: [{id: c, name: C, message: M, options: [{id: o, label: O}, {id: o, label: P}]}]\n"),
		}, `checkpoints[0].options[1].id: duplicate option id "o"`},
		{"duplicate variable", map[string]string{
			"feature/workflow.toon": "id: feature\nversion: 1.0.0\ntitle: F\nvariables[2]{name,type}:\n  a,string\n  a,number\n",
		}, `feature/workflow.toon: variables[1].name: duplicate variable id "a"`},
		{"duplicate workflow file", map[string]string{
			"feature/workflow.json": `{"id":"feature","version":"1.0.0","title":"F"}`,
		}, `feature/workflow.json: a second workflow file beside workflow.toon`},
		{"defaultOption not an option", map[string]string{
			"feature/activities/04-ship.yaml": activity("ship", "checkpoints: [{id: c, name: C, message: M, defaultOption: maybe, options: [{id: o, label: O}]}]\n"),
		}, `checkpoints[0].defaultOption: "maybe" is not one of the checkpoint's options`},
		{"autoAdvanceMs on a blocking checkpoint", map[string]string{
			"feature/activities/04-ship.yaml": activity("ship", "checkpoints: [{id: c, name: C, message: M, defaultOption: o, autoAdvanceMs: 1000, options: [{id: o, label: O}]}]\n"),
		}, `checkpoints[0].autoAdvanceMs: a blocking checkpoint never auto-advances`},
		{"autoAdvanceMs without defaultOption", map[string]string{
			"feature/activities/04-ship.yaml": activity("ship", "checkpoints: [{id: c, name: C, message: M, blocking: false, autoAdvanceMs: 1000, options: [{id: o, label: O}]}]\n"),
		}, `checkpoints[0].autoAdvanceMs: auto-advance needs a defaultOption`},
		{"negative autoAdvanceMs", map[string]string{
			"feature/activities/04-ship.yaml": activity("ship", "checkpoints: [{id: c, name: C, message: M, blocking: false, defaultOption: o, autoAdvanceMs: -5, options: [{id: o, label: O}]}]\n"),
		}, `checkpoints[0].autoAdvanceMs: must be positive (got -5)`},
		{"checkpoint without options", map[string]string{
			"feature/activities/04-ship.yaml": activity("ship", "checkpoints: [{id: c, name: C, message: M}]\n"),
		}, `checkpoints[0].options: missing`},
		{"condition with unknown operator", map[string]string{
			"feature/activities/04-ship.yaml": activity("ship", "transitions: [{to: plan, condition: {type: simple, variable: x, operator: '=', value: 1}}]\n"),
		}, `transitions[0].condition.operator: unknown operator "="`},
		{"condition with unknown type", map[string]string{
			"feature/activities/04-ship.yaml": activity("ship", "transitions: [{to: plan, condition: {type: xor}}]\n"),
		}, `transitions[0].condition.type: unknown condition type "xor"`},
		{"and with one condition", map[string]string{
			"feature/activities/04-ship.yaml": activity("ship", "transitions: [{to: plan, condition: {type: and, conditions: [{type: simple, variable: x, operator: exists}]}}]\n"),
		}, `transitions[0].condition.conditions: an "and" condition combines at least 2`},
		{"not without condition", map[string]string{
			"feature/activities/04-ship.yaml": activity("ship", "steps: [{id: s, name: S, condition: {type: not}}]\n"),
		}, `steps[0].condition.condition: missing`},
		{"ordered operator on a non-number", map[string]string{
			"feature/activities/04-ship.yaml": activity("ship", "transitions: [{to: plan, condition: {type: simple, variable: x, operator: '>', value: abc}}]\n"),
		}, `transitions[0].condition.value: operator > compares numbers`},
		{"comparison without a value", map[string]string{
			"feature/activities/04-ship.yaml": activity("ship", "transitions: [{to: plan, condition: {type: simple, variable: x, operator: '=='}}]\n"),
		}, `transitions[0].condition.value: missing`},
		{"two default transitions", map[string]string{
			"feature/activities/04-ship.yaml": activity("ship", "transitions: [{to: plan, isDefault: true}, {to: build, isDefault: true}]\n"),
		}, `transitions[1].isDefault: a second default transition`},
		{"unparsable TOON", map[string]string{
			"feature/activities/04-ship.toon": "id: ship\n  name: [bad\n",
		}, `feature/activities/04-ship.toon: cannot parse: toon: line`},
		{"unparsable YAML", map[string]string{
			"feature/activities/04-ship.yaml": "id: [ship\n",
		}, `feature/activities/04-ship.yaml: cannot parse: yaml:`},
		{"unparsable JSON", map[string]string{
			"feature/activities/04-ship.json": `{"id": "ship",`,
		}, `feature/activities/04-ship.json: cannot parse: json:`},
		{"mistyped field", map[string]string{
			"feature/activities/04-ship.json": `{"id": "ship", "version": "1.0.0", "name": "S", "checkpoints": [{"autoAdvanceMs": "soon"}]}`,
		}, `feature/activities/04-ship.json: checkpoints.autoAdvanceMs: cannot use a JSON string`},
		{"stray file in activities", map[string]string{
			"feature/activities/notes.txt": "hello",
		}, `feature/activities/notes.txt: not a definition file`},
		{"resource index clash", map[string]string{
			"feature/resources/5-other.md": "other",
		}, `resource index 005 clashes with`},
		{"unknown step skill", map[string]string{
			"feature/activities/04-ship.yaml": activity("ship", "steps: [{id: s, name: S, skill: nope}]\n"),
		}, `feature/activities/04-ship.yaml: steps[0].skill: unknown skill "nope"`},
		{"unknown workflow skill", map[string]string{
			"feature/workflow.toon": "id: feature\nversion: 1.0.0\ntitle: F\nskills[1]: nope\n",
		}, `feature/workflow.toon: skills[0]: unknown skill "nope"`},
		{"unknown skill resource", map[string]string{
			"feature/skills/02-extra.yaml": "id: extra\nversion: 1.0.0\ncapability: C\nresources: [\"9\"]\n",
		}, `feature/skills/02-extra.yaml: resources[0]: unknown resource "9"`},
		{"workflow id differs from directory", map[string]string{
			"feature/workflow.toon": "id: feat\nversion: 1.0.0\ntitle: F\n",
		}, `feature/workflow.toon: id: "feat" does not match the directory name "feature"`},
		{"bad workflow version", map[string]string{
			"feature/workflow.toon": "id: feature\nversion: one\ntitle: F\n",
		}, `feature/workflow.toon: version: "one" is not a version`},
		{"root-level legacy workflow file", map[string]string{
			"other.toon": "id: other\n",
		}, `other.toon: a root-level workflow file is not read`},
		{"workflow directory without a workflow file", map[string]string{
			"empty/activities/01-a.toon": activity("a", ""),
		}, `empty: no workflow file`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := library(t, tt.edits)
			l, err := LoadLibrary(dir)
			var le *LoadError
			if !errors.As(err, &le) {
				t.Fatalf("LoadLibrary = %v, %v; want a *LoadError containing %q", l, err, tt.want)
			}
			if l != nil {
				t.Error("LoadLibrary returned a library with its error, want nil")
			}
			msg := strings.ReplaceAll(err.Error(), dir+string(filepath.Separator), "")
			msg = filepath.ToSlash(msg)
			if !strings.Contains(msg, tt.want) {
				t.Errorf("error does not contain %q:\n%s", tt.want, msg)
			}
		})
	}
}

func TestLoadLibrary_ReportsEveryProblemNotJustTheFirst(t *testing.T) {
	dir := library(t, map[string]string{
		"feature/activities/04-ship.yaml": activity("ship", "transitions: [{to: a}, {to: b}]\n"),
		"feature/activities/05-bad.json":  `{`,
	})
	_, err := LoadLibrary(dir)
	var le *LoadError
	if !errors.As(err, &le) || len(le.Problems) != 3 {
		t.Fatalf("LoadLibrary error = %v, want 3 problems (two unknown targets, one parse error)", err)
	}
}

func TestLoadLibrary_WarningsAreAdvisory(t *testing.T) {
	dir := library(t, map[string]string{
		"feature/activities/04-orphan.yaml": activity("orphan", "steps: [{id: s, name: S, condition: {type: simple, variable: undeclared, operator: exists}}]\n"),
	})
	l, err := LoadLibrary(dir)
	if err != nil {
		t.Fatalf("LoadLibrary: %v, want success with warnings", err)
	}
	var got []string
	for _, w := range l.Warnings() {
		got = append(got, filepath.ToSlash(strings.TrimPrefix(w.String(), dir+string(filepath.Separator))))
	}
	want := []string{
		`feature/activities/04-orphan.yaml: activity "orphan" is unreachable from "plan"`,
		`feature/activities/04-orphan.yaml: steps[0].condition: variable "undeclared" is not declared in the workflow`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestParseActivity_SingleFileInEachFormat(t *testing.T) {
	for _, name := range []string{"01-plan.toon", "02-design.yaml", "03-build.json"} {
		p := filepath.Join("testdata/library/feature/activities", name)
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ParseActivity(p, data); err != nil {
			t.Errorf("ParseActivity(%s): %v", name, err)
		}
	}
}
