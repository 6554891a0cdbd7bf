package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRun_ProfilesAndResources: --cpuprofile, --memprofile and --trace each leave a
// file, and the daemon logs what it used when it exits.
func TestRun_ProfilesAndResources(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, dir, "issues.json", `[]`)
	wf := writeFile(t, dir, "WORKFLOW.md", `---
tracker:
  kind: file
  path: issues.json
  active_states: [Todo]
  terminal_states: [Done]
agent:
  kind: mock
db_path: ./sortie.db
server: {port: 0}
---
Work on {{ .issue.identifier }}.
`)
	out := t.TempDir()
	cpu, mem, tr := filepath.Join(out, "cpu.pprof"), filepath.Join(out, "heap.pprof"), filepath.Join(out, "trace.out")
	r := runSortie(t, dir, nil, "--exit-when-idle", "--log-format", "json", "--cpuprofile", cpu, "--memprofile", mem, "--trace", tr, wf)
	if r.code != exitOK {
		t.Fatalf("sortie: %s", r)
	}
	for _, f := range []string{cpu, mem, tr} {
		if fi, err := os.Stat(f); err != nil || fi.Size() == 0 {
			t.Errorf("%s: %v, want a non-empty file", f, err)
		}
	}
	if !strings.Contains(r.stderr, `"msg":"resources used"`) || !strings.Contains(r.stderr, `"max_rss_kb":`) {
		t.Errorf("no resources line at exit:\n%s", r.stderr)
	}
	bad := runSortie(t, dir, nil, "--exit-when-idle", "--cpuprofile", filepath.Join(out, "missing", "cpu.pprof"), wf)
	if bad.code != exitFailure || !strings.Contains(bad.stderr, "--cpuprofile") {
		t.Errorf("an unwritable --cpuprofile: exit %d, want %d naming the flag\n%s", bad.code, exitFailure, bad)
	}
}
