package main

import (
	"path/filepath"
	"testing"
)

// examples/workflows-claude-code validates as shipped: its WORKFLOW.md, the library in
// examples/workflows that workflows.dir points at, and the workflow workflows.workflow
// names, with no error and no warning.
func TestValidate_WorkflowsExample(t *testing.T) {
	t.Parallel()
	path := filepath.Join("..", "..", "examples", "workflows-claude-code", "WORKFLOW.md")
	r := runSortie(t, "", testEnv(t.TempDir()), "validate", "--format", "json", path)
	v := parseValidateJSON(t, r)
	if !v.Valid || r.code != exitOK {
		t.Fatalf("examples/workflows-claude-code: valid = %v, exit %d, want valid and exit %d:\n%s", v.Valid, r.code, exitOK, r.stdout)
	}
	for _, w := range v.Warnings {
		t.Errorf("examples/workflows-claude-code: warning %s: %s, want none", w.Field, w.Message)
	}
}
