package main

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// validateWorkflow is a valid WORKFLOW.md with the given workflows section.
func validateWorkflow(section string) string {
	return "---\ntracker:\n  kind: file\n  path: issues.json\n  active_states: [Todo]\nagent:\n  kind: mock\n" + section + "---\nWork on {{ .issue.identifier }}.\n"
}

func TestValidate_WorkflowLibrary(t *testing.T) {
	tests := []struct {
		name    string
		section string
		library func(t *testing.T, dir string)
		valid   bool
		errors  []string // field: message prefixes
	}{
		{name: "a valid library and workflow", section: "workflows:\n  dir: lib\n  workflow: demo\n",
			library: func(t *testing.T, dir string) { writeWorkflowLibrary(t, dir) }, valid: true},
		{name: "a workflow the library does not have", section: "workflows:\n  dir: lib\n  workflow: feature\n",
			library: func(t *testing.T, dir string) { writeWorkflowLibrary(t, dir) },
			errors:  []string{`workflows.workflow: "feature" is not a workflow of the library in `}},
		{name: "a library with errors", section: "workflows:\n  dir: lib\n",
			library: func(t *testing.T, dir string) {
				writeWorkflowLibrary(t, dir)
				writeFile(t, dir, "lib/broken/workflow.json", `{"id":"broken","version":"1.0.0","title":"Broken","initialActivity":"nowhere"}`)
				writeFile(t, dir, "lib/broken/activities/01-a.json", `{"id":"a","version":"1.0.0","name":"A","steps":[{"id":"s"}]}`)
			},
			errors: []string{"workflows.dir: " + filepath.Join("lib", "broken", "activities", "01-a.json"), "workflows.dir: " + filepath.Join("lib", "broken", "workflow.json")}},
		{name: "a missing directory", section: "workflows:\n  dir: lib\n", library: func(*testing.T, string) {},
			errors: []string{"workflows.dir: "}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, dir, "issues.json", "[]\n")
			path := writeFile(t, dir, "WORKFLOW.md", validateWorkflow(tt.section))
			tt.library(t, dir)
			r := runSortie(t, dir, nil, "validate", "--format", "json", path)
			v := parseValidateJSON(t, r)
			if v.Valid != tt.valid {
				t.Fatalf("valid = %v, want %v:\n%s", v.Valid, tt.valid, r.stdout)
			}
			var got []string
			for _, p := range v.Errors {
				got = append(got, p.Field+": "+strings.ReplaceAll(p.Message, dir+string(filepath.Separator), ""))
			}
			for _, want := range tt.errors {
				if !slices.ContainsFunc(got, func(g string) bool { return strings.HasPrefix(g, want) }) {
					t.Errorf("errors %q: want one starting %q", got, want)
				}
			}
		})
	}
}
