package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestInit_WritesAWorkflowThatRunsToCompletion: init writes both files, the workflow
// validates, and it runs its one issue to the handoff state with --exit-when-idle.
func TestInit_WritesAWorkflowThatRunsToCompletion(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	env := testEnv(tmp)
	dir := filepath.Join(tmp, "project")

	r := runSortie(t, tmp, env, "init", dir)
	if r.code != exitOK {
		t.Fatalf("init: want exit 0, got:\n%s", r)
	}
	for _, name := range []string{"WORKFLOW.md", "issues.json"} {
		p := filepath.Join(dir, name)
		want, err := assets.ReadFile("assets/init/" + name)
		if err != nil {
			t.Fatal(err)
		}
		if got := snapshotFile(t, p); got != string(want) {
			t.Errorf("init wrote %s different from the embedded asset", p)
		}
		if !strings.Contains(r.stdout, "wrote "+p) {
			t.Errorf("init did not report writing %s:\n%s", p, r)
		}
	}
	wf := filepath.Join(dir, "WORKFLOW.md")

	if v := runSortie(t, tmp, env, "validate", wf); v.code != exitOK || v.stderr != "" {
		t.Fatalf("validate of the init workflow: want exit 0 and no problems, got:\n%s", v)
	}

	// It refuses to overwrite, and leaves both files as they were.
	wfBefore, issuesBefore := snapshotFile(t, wf), snapshotFile(t, filepath.Join(dir, "issues.json"))
	again := runSortie(t, tmp, env, "init", dir)
	if again.code != exitFailure || !strings.Contains(again.stderr, "already exists") {
		t.Fatalf("init over an existing project: want exit 1 saying the file already exists, got:\n%s", again)
	}
	if snapshotFile(t, wf) != wfBefore || snapshotFile(t, filepath.Join(dir, "issues.json")) != issuesBefore {
		t.Error("init changed files it refused to overwrite")
	}
	// A directory with only one of the two files is refused too, and nothing is written.
	partial := filepath.Join(tmp, "partial")
	writeFile(t, partial, "issues.json", "[]\n")
	if p := runSortie(t, tmp, env, "init", partial); p.code != exitFailure {
		t.Errorf("init into a directory holding issues.json: want exit 1, got:\n%s", p)
	}
	if _, err := os.Stat(filepath.Join(partial, "WORKFLOW.md")); err == nil {
		t.Error("init wrote WORKFLOW.md next to an existing issues.json it refused to overwrite")
	}

	run := runSortie(t, dir, env, "--exit-when-idle", wf)
	if run.code != exitOK {
		t.Fatalf("running the init workflow with --exit-when-idle: want exit 0, got:\n%s", run)
	}
	issues := snapshotFile(t, filepath.Join(dir, "issues.json"))
	if !strings.Contains(issues, `"state": "Human Review"`) {
		t.Errorf("after the run TASK-1 should be in Human Review, issues.json is:\n%s", issues)
	}
	runs := runsByIssue(t, filepath.Join(dir, ".sortie.db"))
	if got := runs["1"]; len(got) != 1 || got[0].Status != "handed_off" {
		t.Errorf("runs of TASK-1 = %+v, want one handed_off run", got)
	}
}
