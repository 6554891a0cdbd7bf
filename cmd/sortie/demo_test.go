package main

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestDemo_RunsToItsSummaryAndWritesNothingInTheRepository runs `sortie demo` from the
// repository root, as `make run` does, and checks where each issue ended up.
func TestDemo_RunsToItsSummaryAndWritesNothingInTheRepository(t *testing.T) {
	t.Parallel()
	repo, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	statusBefore := gitStatus(t, repo)
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "demo")

	// The demo takes a few seconds; a minute means it is stuck (a guard, not a benchmark).
	r := runSortieWithin(t, time.Minute, repo, testEnv(tmp), "demo", "--dir", dir)
	if r.code != exitOK {
		t.Fatalf("sortie demo: want exit 0, got:\n%s", r)
	}
	if !strings.HasPrefix(r.stdout, "Sortie demo in "+dir+"\n") {
		t.Errorf("sortie demo does not name its directory first:\n%s", r.stdout)
	}

	got := parseDemoSummary(t, r.stdout)
	want := map[string]demoRow{
		"DEMO-1": {state: "Human Review", runs: []string{"handed_off"}},
		"DEMO-2": {state: "Todo", runs: nil, note: "blocked by DEMO-1"},
		"DEMO-3": {state: "Human Review", runs: []string{"failed", "handed_off"}},
		"DEMO-4": {state: "In Progress", runs: []string{"blocked"}, note: "held"},
		"DEMO-5": {state: "Human Review", runs: []string{"handed_off"}},
		"DEMO-6": {state: "Human Review", runs: []string{"handed_off"}},
		"DEMO-7": {state: "Done", runs: nil, note: "never dispatched"},
	}
	for id, w := range want {
		g, ok := got[id]
		switch {
		case !ok:
			t.Errorf("the summary has no line for %s:\n%s", id, r.stdout)
		case g.state != w.state || !slices.Equal(g.runs, w.runs) || !strings.Contains(g.note, w.note):
			t.Errorf("%s: state %q, runs %v, note %q; want state %q, runs %v, a note with %q",
				id, g.state, g.runs, g.note, w.state, w.runs, w.note)
		}
	}
	if len(got) != len(want) {
		t.Errorf("the summary has %d issues, want %d:\n%s", len(got), len(want), r.stdout)
	}

	// The demo's files all went into --dir, and the repository is as it was.
	if statusAfter := gitStatus(t, repo); !slices.Equal(statusAfter, statusBefore) {
		t.Errorf("sortie demo changed the repository (git status --porcelain --ignored):\nbefore:\n%s\nafter:\n%s",
			strings.Join(statusBefore, "\n"), strings.Join(statusAfter, "\n"))
	}
	for _, name := range []string{"WORKFLOW.md", "issues.json", "sortie.db", "workspaces"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("the demo directory lacks %s: %v", name, err)
		}
	}
}

// demoRow is one issue of the demo's summary: its tracker state, the statuses of its
// runs oldest first, and the note after them.
type demoRow struct {
	state string
	runs  []string
	note  string
}

// parseDemoSummary reads the lines under "Where the issues ended up:", such as
//
//	DEMO-3  Human Review  run1:failed run2:handed_off
//	DEMO-4  In Progress   run1:blocked  (held: the agent asked for a human)
func parseDemoSummary(t *testing.T, stdout string) map[string]demoRow {
	t.Helper()
	_, summary, ok := strings.Cut(stdout, "Where the issues ended up:\n")
	if !ok {
		t.Fatalf("sortie demo printed no summary:\n%s", stdout)
	}
	line := regexp.MustCompile(`^  (DEMO-\d+)\s+(.*?)((?:\s+run\d+:\S+)*)(?:\s+\((.*)\))?$`)
	run := regexp.MustCompile(`run\d+:(\S+)`)
	rows := map[string]demoRow{}
	for _, l := range strings.Split(summary, "\n") {
		if l == "" {
			break
		}
		m := line.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("unexpected summary line %q", l)
		}
		row := demoRow{state: strings.TrimSpace(m[2]), note: m[4]}
		for _, r := range run.FindAllStringSubmatch(m[3], -1) {
			row.runs = append(row.runs, r[1])
		}
		rows[m[1]] = row
	}
	return rows
}

// gitStatus lists every change in the working tree, untracked and ignored files
// included (the database is ignored by .gitignore). It skips the test outside a git
// checkout.
func gitStatus(t *testing.T, repo string) []string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	cmd := exec.Command("git", "status", "--porcelain", "--ignored", "--untracked-files=all")
	cmd.Dir = repo
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Skipf("git status in %s: %v %s", repo, err, stderr.String())
	}
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	slices.Sort(lines)
	return lines
}

// TestExamplesDemo_IsACopyOfTheEmbeddedDemo: examples/demo documents exactly the files
// `sortie demo` writes.
func TestExamplesDemo_IsACopyOfTheEmbeddedDemo(t *testing.T) {
	t.Parallel()
	const resync = "resync with: cp cmd/sortie/assets/demo/* examples/demo/ (from the repository root)"
	examples := filepath.Join("..", "..", "examples", "demo")
	embedded, err := fs.ReadDir(assets, "assets/demo")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range embedded {
		names = append(names, e.Name())
		want, err := assets.ReadFile("assets/demo/" + e.Name())
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(examples, e.Name()))
		if err != nil {
			t.Errorf("examples/demo/%s: %v; %s", e.Name(), err, resync)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("examples/demo/%s differs from cmd/sortie/assets/demo/%s; %s", e.Name(), e.Name(), resync)
		}
	}
	entries, err := os.ReadDir(examples)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !slices.Contains(names, e.Name()) {
			t.Errorf("examples/demo/%s is not in cmd/sortie/assets/demo; add it there or remove it (%s)", e.Name(), resync)
		}
	}
}
