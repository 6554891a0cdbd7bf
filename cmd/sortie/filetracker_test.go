package main

import (
	"sortie/internal/daemon"

	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"sortie/internal/workspace"
)

// fileTrackerWorkflow runs the file tracker with the mock agent in one quick turn.
const fileTrackerWorkflow = `---
tracker:
  kind: file
  path: issues.json
  active_states: [Todo]
  terminal_states: [Done]
  handoff_state: Review
agent:
  kind: mock
  max_turns: 1
workspace:
  root: ./ws/root
hooks:
  after_create: |
    echo created > created-by-hook.txt
db_path: ./sortie.db
mock:
  files: {"notes/work.md": "done\n"}
---
Work on {{ .issue.identifier }}.
`

// TestFileTracker_BadIssuesFileIsReportedNotFatal: a broken issues file is logged with
// what is wrong and where, the daemon keeps running (and shuts down cleanly), and the
// file is never rewritten.
func TestFileTracker_BadIssuesFileIsReportedNotFatal(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		issues string
		want   []string // substrings of the logged error
	}{
		{
			name: "duplicate ids",
			issues: "[\n  {\"id\": \"1\", \"identifier\": \"D-1\", \"title\": \"a\", \"state\": \"Todo\"},\n" +
				"  {\"id\": \"1\", \"identifier\": \"D-2\", \"title\": \"b\", \"state\": \"Todo\"}\n]\n",
			want: []string{"tracker_payload_error", "issues.json", `issue #2 (line 3) has the same id \"1\" as issue #1 (line 2)`},
		},
		{
			name: "duplicate identifiers",
			issues: "[\n  {\"id\": \"1\", \"identifier\": \"D-1\", \"title\": \"a\", \"state\": \"Todo\"},\n" +
				"  {\"id\": \"2\", \"identifier\": \"D-1\", \"title\": \"b\", \"state\": \"Todo\"}\n]\n",
			want: []string{"tracker_payload_error", `same identifier \"D-1\"`},
		},
		{
			name: "broken JSON",
			issues: "[\n  {\"id\": \"1\", \"identifier\": \"D-1\", \"title\": \"a\", \"state\": \"Todo\"},\n" +
				"  {\"id\": \"2\" \"identifier\": \"D-2\", \"title\": \"b\", \"state\": \"Todo\"}\n]\n",
			want: []string{"tracker_payload_error", "issues.json", "line 3, column", "invalid JSON"},
		},
		{
			name:   "not an array",
			issues: "{\"issues\": []}\n",
			want:   []string{"tracker_payload_error", "top level must be a JSON array"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			issues := writeFile(t, dir, "issues.json", tt.issues)
			wf := writeFile(t, dir, "WORKFLOW.md", fileTrackerWorkflow)

			d := startDaemon(t, testEnv(t.TempDir()), wf)
			line := d.waitLine(0, commandTimeout, "fetching candidate issues failed")
			got := d.stderrText()
			if !containsAll(strings.Split(got, "\n")[line], tt.want) {
				t.Errorf("the logged error does not contain %q:\n%s", tt.want, strings.Split(got, "\n")[line])
			}
			if strings.Contains(got, "panic") || strings.Contains(got, "dispatching") {
				t.Errorf("the daemon panicked or dispatched from a broken issues file:\n%s", got)
			}
			d.signal(syscall.SIGTERM)
			if code := d.wait(commandTimeout); code != exitOK {
				t.Fatalf("SIGTERM after a bad issues file: want exit 0, got %d\n%s", code, d.stderrText())
			}
			if after := snapshotFile(t, issues); after != tt.issues {
				t.Errorf("issues.json changed:\nbefore:\n%s\nafter:\n%s", tt.issues, after)
			}
			if _, err := os.Stat(filepath.Join(dir, "ws")); err == nil {
				t.Error("a workspace was created from a broken issues file")
			}
		})
	}
}

// TestFileTracker_PathLikeIdentifierStaysInsideTheWorkspaceRoot: an identifier such as
// ../../etc names a sanitised workspace inside workspace.root; the hook and the agent
// write there and nowhere else.
func TestFileTracker_PathLikeIdentifierStaysInsideTheWorkspaceRoot(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, dir, "issues.json", `[{"id": "1", "identifier": "../../etc", "title": "escape", "state": "Todo"}]`+"\n")
	wf := writeFile(t, dir, "WORKFLOW.md", fileTrackerWorkflow)

	r := runSortie(t, dir, testEnv(t.TempDir()), "--exit-when-idle", wf)
	if r.code != exitOK {
		t.Fatalf("--exit-when-idle: want exit 0, got:\n%s", r)
	}
	root := filepath.Join(dir, "ws", "root")
	key, err := workspace.Key("../../etc")
	if err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != key || !entries[0].IsDir() {
		t.Fatalf("workspace root holds %v, want exactly the directory %q", entries, key)
	}
	ws := filepath.Join(root, key)
	for _, name := range []string{"created-by-hook.txt", filepath.Join("notes", "work.md")} {
		if _, err := os.Stat(filepath.Join(ws, name)); err != nil {
			t.Errorf("%s was not written inside the workspace: %v", name, err)
		}
	}
	// Nothing was written where ../../etc would lead from the root, nor anywhere else in
	// the directory outside the workspace root.
	if _, err := os.Lstat(filepath.Join(dir, "etc")); err == nil {
		t.Error("a directory was created at <workspace.root>/../../etc")
	}
	outside := map[string]bool{"WORKFLOW.md": true, "issues.json": true, "sortie.db": true, "sortie.db.lock": true,
		"sortie.db-wal": true, "sortie.db-shm": true, "sortie.db" + daemon.OperatorTokenSuffix: true,
		".issues.json.lock": true, ".issues.json.next": true} // the file tracker's write lock and next version, beside its file
	err = filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		switch {
		case rel == "." || rel == "ws" || rel == filepath.Join("ws", "root"):
			return nil
		case strings.HasPrefix(rel, filepath.Join("ws", "root")+string(filepath.Separator)):
			return nil
		case outside[rel]:
			return nil
		}
		t.Errorf("the run wrote %s outside the workspace root", p)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if issues := snapshotFile(t, filepath.Join(dir, "issues.json")); !strings.Contains(issues, `"state": "Review"`) {
		t.Errorf("the issue was not handed off; issues.json:\n%s", issues)
	}
}
