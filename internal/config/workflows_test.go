package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoad_WorkflowsDirIsResolvedAgainstTheWorkflowFile(t *testing.T) {
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, "lib"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, dir string
		want      func(wfDir string) string
	}{
		{"relative", "lib", func(wfDir string) string { return filepath.Join(wfDir, "lib") }},
		{"home", "~/lib", func(string) string { return filepath.Join(home, "lib") }},
		{"variable", "$LIBS/lib", func(string) string { return filepath.Join(home, "lib") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.MkdirAll(filepath.Join(dir, "lib"), 0o755); err != nil {
				t.Fatal(err)
			}
			path := writeFile(t, dir, "WORKFLOW.md", "---\n"+minimal+"workflows:\n  dir: "+tt.dir+"\n  workflow: work-package\n---\nhi\n")
			env := baseEnv()
			env["HOME"], env["LIBS"] = home, home
			cfg, problems := Check(path, Options{Env: fakeEnv(env)})
			if cfg == nil {
				t.Fatalf("Check failed:\n%s", problemLines(problems))
			}
			if want := tt.want(dir); cfg.Workflows.Dir != want || cfg.Workflows.Workflow != "work-package" {
				t.Fatalf("Workflows = %+v, want dir %s and workflow work-package", cfg.Workflows, want)
			}
		})
	}
}

func TestLoad_NoWorkflowsSection(t *testing.T) {
	cfg, _ := mustLoad(t, minimal, nil)
	if w := cfg.Workflows; w.Dir != "" || w.Workflow != "" || len(w.Answerers) != 0 {
		t.Fatalf("Workflows = %+v, want zero without a workflows section", cfg.Workflows)
	}
}

func TestLoad_WorkflowsErrors(t *testing.T) {
	tests := []struct {
		name, section, want string
	}{
		{"missing directory", "workflows:\n  dir: nowhere\n", "workflows.dir: %s/nowhere does not exist; create the workflow library there or fix the path (relative paths are resolved against %s)"},
		{"a file, not a directory", "workflows:\n  dir: WORKFLOW.md\n", "workflows.dir: %s/WORKFLOW.md is not a directory; set it to the workflow library directory"},
		{"not a string", "workflows:\n  dir: [a]\n", "workflows.dir: must be a string (got a list)"},
		{"empty", "workflows:\n  dir: \"\"\n", "workflows.dir: is empty; set it to the workflow library directory or remove the workflows section"},
		{"unset variable", "workflows:\n  dir: $NO_SUCH_LIB\n", "workflows.dir: environment variable NO_SUCH_LIB is not set"},
		{"workflow without a library", "workflows:\n  workflow: work-package\n", `workflows.workflow: needs workflows.dir: the workflow "work-package" must come from a library`},
		{"not a map", "workflows: lib\n", `workflows: must be a map (got "lib")`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, problems, dir := checkFrontMatter(t, minimal+tt.section, nil)
			want := "config: " + strings.ReplaceAll(tt.want, "%s", dir)
			if cfg != nil || !hasProblem(problems, SeverityError, want) {
				t.Fatalf("problems:\n%swant the error %q", problemLines(problems), want)
			}
		})
	}
}

func TestLoad_WorkflowsUnknownKeyWarns(t *testing.T) {
	_, problems, _ := checkFrontMatter(t, minimal+"workflows:\n  directory: lib\n", nil)
	want := "config: workflows.directory: unknown key in workflows; it is ignored (known: dir, workflow, answerers)"
	if !hasProblem(problems, SeverityWarning, want) {
		t.Fatalf("problems:\n%swant the warning %q", problemLines(problems), want)
	}
}

func TestLoad_WorkflowsAnswerers(t *testing.T) {
	cfg, _ := mustLoad(t, minimalWith("workflows:\n  answerers: [erin, \" dave@example.com \"]\n"), nil)
	if got := cfg.Workflows.Answerers; len(got) != 2 || got[0] != "erin" || got[1] != "dave@example.com" {
		t.Errorf("answerers = %q, want erin and dave@example.com", got)
	}
}
