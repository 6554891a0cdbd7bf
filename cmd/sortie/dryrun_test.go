package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDryRun_PrintsDecisionsAndOpensNoDatabase: every candidate gets a dispatch or skip
// line with its reason, following the dispatch order and slot limits, and nothing is
// created: no database, no lock, no workspace.
func TestDryRun_PrintsDecisionsAndOpensNoDatabase(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, dir, "issues.json", `[
  {"id": "1", "identifier": "A-1", "title": "first", "priority": 1, "state": "Todo"},
  {"id": "2", "identifier": "A-2", "title": "second todo", "priority": 3, "state": "Todo"},
  {"id": "3", "identifier": "A-3", "title": "in progress", "priority": 2, "state": "In Progress"},
  {"id": "4", "identifier": "A-4", "title": "in progress too", "priority": 4, "state": "In Progress"},
  {"id": "5", "identifier": "A-5", "title": "blocked", "priority": 5, "state": "Todo",
   "blocked_by": [{"id": "9", "identifier": "A-9"}]},
  {"id": "6", "identifier": "A-6", "title": "no slot left", "priority": 6, "state": "Todo"},
  {"id": "7", "identifier": "A-7", "title": "finished", "priority": 1, "state": "Done"},
  {"id": "9", "identifier": "A-9", "title": "blocker", "priority": 1, "state": "Backlog"}
]
`)
	wf := writeFile(t, dir, "WORKFLOW.md", `---
tracker:
  kind: file
  path: issues.json
  active_states: [Todo, In Progress]
  terminal_states: [Done]
agent:
  kind: mock
  max_concurrent_agents: 3
  max_concurrent_agents_by_state:
    todo: 1
workspace:
  root: ./workspaces
db_path: ./sortie.db
---
Work on {{ .issue.identifier }}.
`)
	before := snapshotFile(t, filepath.Join(dir, "issues.json"))

	r := runSortie(t, dir, nil, "--dry-run", wf)
	if r.code != exitOK {
		t.Fatalf("--dry-run: want exit 0, got:\n%s", r)
	}
	want := []struct{ id, state, verdict string }{
		{"A-1", "Todo", "dispatch"},
		{"A-3", "In Progress", "dispatch"},
		{"A-2", "Todo", "skip: no free slot for state Todo (agent.max_concurrent_agents_by_state)"},
		{"A-4", "In Progress", "dispatch"},
		{"A-5", "Todo", "skip: blocked by A-9"},
		{"A-6", "Todo", "skip: no free agent slot (agent.max_concurrent_agents)"},
	}
	lines := strings.Split(strings.TrimRight(r.stdout, "\n"), "\n")
	if len(lines) != len(want)+1 || lines[0] != "6 candidate issues, 3 agent slots" {
		t.Fatalf("--dry-run: want a header and %d candidate lines, got:\n%s", len(want), r.stdout)
	}
	row := regexp.MustCompile(`^\s+(\S+)\s+(.+?)\s{2,}(dispatch|skip: .*)$`)
	for i, w := range want {
		m := row.FindStringSubmatch(lines[i+1])
		if m == nil || m[1] != w.id || m[2] != w.state || m[3] != w.verdict {
			t.Errorf("--dry-run line %d = %q, want %s %s %q", i+1, lines[i+1], w.id, w.state, w.verdict)
		}
	}
	if strings.Contains(r.stdout, "A-7") {
		t.Errorf("--dry-run listed A-7, which is Done and no candidate:\n%s", r.stdout)
	}

	for _, name := range []string{"sortie.db", "sortie.db.lock", "sortie.db-wal", ".sortie.db", "workspaces"} {
		if _, err := os.Lstat(filepath.Join(dir, name)); err == nil {
			t.Errorf("--dry-run created %s; it must open no database and start nothing", name)
		}
	}
	if after := snapshotFile(t, filepath.Join(dir, "issues.json")); after != before {
		t.Errorf("--dry-run changed issues.json:\n%s", after)
	}
}

// snapshotFile returns the file's content, for byte-for-byte comparisons.
func snapshotFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestDryRun_NamesAMissingRequiredLabel: tracker.required_labels keeps an issue without
// every label from dispatch, and the dry run says which label it lacks.
func TestDryRun_NamesAMissingRequiredLabel(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, dir, "issues.json", `[
  {"id": "1", "identifier": "A-1", "title": "ready", "priority": 1, "state": "Todo", "labels": ["Agent", "backend"]},
  {"id": "2", "identifier": "A-2", "title": "half", "priority": 2, "state": "Todo", "labels": ["agent"]}
]
`)
	wf := writeFile(t, dir, "WORKFLOW.md", `---
tracker:
  kind: file
  path: issues.json
  active_states: [Todo]
  terminal_states: [Done]
  required_labels: [agent, " Backend "]
agent:
  kind: mock
---
Work on {{ issue.identifier }}.
`)
	r := runSortie(t, dir, nil, "--dry-run", wf)
	if r.code != exitOK {
		t.Fatalf("--dry-run: want exit 0, got:\n%s", r)
	}
	row := regexp.MustCompile(`(?m)^\s+A-2\s+Todo\s{2,}skip: missing required label "backend"$`)
	if !row.MatchString(r.stdout) || !regexp.MustCompile(`(?m)^\s+A-1\s+Todo\s{2,}dispatch$`).MatchString(r.stdout) {
		t.Fatalf("--dry-run: want A-1 dispatched and A-2 skipped for its missing label, got:\n%s", r.stdout)
	}
}
