package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// validateJSON is the document `sortie validate --format json` prints.
type validateJSON struct {
	Valid    bool          `json:"valid"`
	Path     string        `json:"path"`
	Database string        `json:"database"`
	Errors   []problemJSON `json:"errors"`
	Warnings []problemJSON `json:"warnings"`
}

type problemJSON struct {
	Severity string `json:"severity"`
	Check    string `json:"check"`
	Field    string `json:"field"`
	Message  string `json:"message"`
}

func parseValidateJSON(t *testing.T, r result) validateJSON {
	t.Helper()
	var v validateJSON
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("validate --format json: stdout is not the documented JSON document: %v\n%s", err, r)
	}
	if v.Errors == nil || v.Warnings == nil {
		t.Errorf("validate --format json: errors and warnings must be arrays, never null\n%s", r.stdout)
	}
	return v
}

// copyDir copies the regular files of src into a new temporary directory, so a test
// never writes next to the repository's testdata.
func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, dst, e.Name(), string(data))
	}
	return dst
}

func TestValidate_ReferenceWorkflowIsValid(t *testing.T) {
	t.Parallel()
	dir := copyDir(t, filepath.Join("testdata", "reference"))
	wf := filepath.Join(dir, "WORKFLOW.md")

	text := runSortie(t, "", nil, "validate", wf)
	if text.code != exitOK {
		t.Fatalf("validate: want exit 0 for the reference workflow, got:\n%s", text)
	}
	if want := wf + " is valid (0 warnings)"; strings.TrimSpace(text.stdout) != want {
		t.Errorf("validate stdout = %q, want %q", text.stdout, want)
	}
	if text.stderr != "" {
		t.Errorf("validate printed problems for the reference workflow:\n%s", text.stderr)
	}

	js := runSortie(t, "", nil, "validate", "--format", "json", wf)
	if js.code != exitOK {
		t.Fatalf("validate --format json: want exit 0, got:\n%s", js)
	}
	v := parseValidateJSON(t, js)
	if !v.Valid || v.Path != wf || len(v.Errors) != 0 || len(v.Warnings) != 0 {
		t.Errorf("validate --format json = %+v, want valid, path %s, no errors or warnings", v, wf)
	}
	if _, err := os.Stat(filepath.Join(dir, "sortie.db")); err == nil {
		t.Error("validate created the database; it must open none")
	}
}

// badBase is a valid workflow that the table below breaks one way at a time.
const badBase = `---
tracker:
  kind: file
  path: issues.json
  active_states: [Todo]
  terminal_states: [Done]
agent:
  kind: mock
`

func TestValidate_ReportsEachProblemWithItsField(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		workflow string
		// mark is a substring of the line the problem is reported on (in WORKFLOW.md),
		// or "" when no line is expected.
		mark     string
		wantCode int
		severity string
		field    string   // "" for problems with the file as a whole
		message  []string // substrings of the message
	}{
		{
			name:     "malformed YAML names its WORKFLOW.md line",
			workflow: badBase + "  max_turns: 3\n  command: a: b\n---\nhi\n",
			mark:     "command: a: b",
			wantCode: exitFailure, severity: "error",
			message: []string{"invalid YAML front matter", "mapping values are not allowed"},
		},
		{
			name:     "front matter that is a list",
			workflow: "---\n- tracker\n- agent\n---\nhi\n",
			wantCode: exitFailure, severity: "error",
			message: []string{"front matter must be a YAML map (got list)"},
		},
		{
			name:     "unknown agent kind lists the known ones",
			workflow: strings.Replace(badBase, "kind: mock", "kind: aider", 1) + "---\nhi\n",
			wantCode: exitFailure, severity: "error", field: "agent.kind",
			message: []string{"unknown agent kind", "claude-code, codex, copilot-cli, gemini, mock, opencode", `(got "aider")`},
		},
		{
			name:     "unknown tracker kind lists the known ones",
			workflow: strings.Replace(badBase, "kind: file", "kind: trello", 1) + "---\nhi\n",
			wantCode: exitFailure, severity: "error", field: "tracker.kind",
			message: []string{"unknown tracker kind", "file, github, jira", `(got "trello")`},
		},
		{
			name:     "negative integer",
			workflow: badBase + "  max_sessions: -1\n---\nhi\n",
			wantCode: exitFailure, severity: "error", field: "agent.max_sessions",
			message: []string{"must be non-negative (got -1)"},
		},
		{
			name:     "fractional integer",
			workflow: badBase + "  max_turns: 2.5\n---\nhi\n",
			wantCode: exitFailure, severity: "error", field: "agent.max_turns",
			message: []string{"whole number", "2.5"},
		},
		{
			name: "missing $VAR in the GitHub api_key",
			workflow: "---\ntracker:\n  kind: github\n  api_key: $E2E_UNSET_GITHUB_TOKEN\n  project: acme/widgets\n" +
				"  active_states: [open]\n  terminal_states: [closed]\nagent:\n  kind: mock\n---\nhi\n",
			wantCode: exitFailure, severity: "error", field: "tracker.api_key",
			message: []string{"E2E_UNSET_GITHUB_TOKEN", "not set"},
		},
		{
			name:     "unknown top-level key is only a warning",
			workflow: badBase + "trackr:\n  kind: file\n---\nhi\n",
			wantCode: exitOK, severity: "warning", field: "trackr",
			message: []string{"unknown top-level key"},
		},
		{
			name:     "a key the agent adapter refuses is an error naming it",
			workflow: badBase + "mock:\n  scirpt: [success]\n---\nhi\n",
			wantCode: exitFailure, severity: "error", field: "mock",
			message: []string{"mock.scirpt: unknown key"},
		},
		{
			name:     "a key the agent adapter ignores is a warning naming it",
			workflow: strings.Replace(badBase, "kind: mock", "kind: claude-code", 1) + "claude-code:\n  permision_mode: plan\n---\nhi\n",
			wantCode: exitOK, severity: "warning", field: "claude-code",
			message: []string{"permision_mode"},
		},
		{
			name:     "template error names its WORKFLOW.md line",
			workflow: badBase + "---\nYou are working on {{ .issue.identifier }}.\n\nThen {{ if }} this.\n",
			mark:     "{{ if }}",
			wantCode: exitFailure, severity: "error", field: "prompt",
			message: []string{"template parse error", "missing value for if"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			writeFile(t, dir, "issues.json", "[]\n")
			wf := writeFile(t, dir, "WORKFLOW.md", tt.workflow)
			message := tt.message
			if tt.mark != "" {
				line := lineOf(t, tt.workflow, tt.mark)
				if tt.field == "" {
					message = append(message, wf+":"+strconv.Itoa(line)+":")
				} else {
					message = append(message, "(line "+strconv.Itoa(line)+")")
				}
			}
			env := testEnv(t.TempDir())

			text := runSortie(t, "", env, "validate", wf)
			if text.code != tt.wantCode {
				t.Fatalf("validate: want exit %d, got:\n%s", tt.wantCode, text)
			}
			prefix := tt.severity + ": "
			if tt.field != "" {
				prefix += tt.field + ": "
			}
			var line string
			for _, l := range strings.Split(text.stderr, "\n") {
				if strings.HasPrefix(l, prefix) && containsAll(l, message) {
					line = l
				}
			}
			if line == "" {
				t.Errorf("validate: want a stderr line starting %q containing %q, got:\n%s", prefix, message, text.stderr)
			}
			if strings.Contains(text.stderr, ": : ") || strings.Contains(text.stderr, "prompt: prompt:") {
				t.Errorf("validate: a problem line has an empty or repeated label:\n%s", text.stderr)
			}
			summary := " is invalid: "
			if tt.wantCode == exitOK {
				summary = " is valid (1 warnings)"
			}
			if !strings.Contains(text.stdout, wf+summary) {
				t.Errorf("validate stdout = %q, want it to contain %q", text.stdout, wf+summary)
			}

			js := runSortie(t, "", env, "validate", "--format", "json", wf)
			if js.code != tt.wantCode {
				t.Fatalf("validate --format json: want exit %d, got:\n%s", tt.wantCode, js)
			}
			v := parseValidateJSON(t, js)
			if v.Valid != (tt.wantCode == exitOK) || v.Path != wf {
				t.Errorf("validate --format json: valid=%v path=%q, want valid=%v path=%q", v.Valid, v.Path, tt.wantCode == exitOK, wf)
			}
			list := v.Errors
			if tt.severity == "warning" {
				list = v.Warnings
				if len(v.Errors) != 0 {
					t.Errorf("validate --format json: want no errors, got %+v", v.Errors)
				}
			}
			found := false
			for _, p := range list {
				if p.Severity == tt.severity && p.Field == tt.field && containsAll(p.Message, message) {
					found = true
				}
				if p.Check == "" {
					t.Errorf("validate --format json: problem %+v has no check", p)
				}
			}
			if !found {
				t.Errorf("validate --format json: want a %s with field %q and message containing %q, got %+v",
					tt.severity, tt.field, message, list)
			}
		})
	}
}

// lineOf returns the 1-based line of text that contains mark.
func lineOf(t *testing.T, text, mark string) int {
	t.Helper()
	for i, l := range strings.Split(text, "\n") {
		if strings.Contains(l, mark) {
			return i + 1
		}
	}
	t.Fatalf("%q is not in the workflow", mark)
	return 0
}

// referenceExamples is Sortie 1.9's example directory, third-party data beside the
// repository (/work/shared/testdata/README.md), read in place when present, as in CI.
var referenceExamples = filepath.Join("..", "..", "..", "shared", "testdata", "sortie-1.9", "examples")

// TestValidate_CompatExamples checks that workflows in sortie 1.x's layout (every
// site-specific value from the environment, the agent's own block, hooks) validate
// unchanged once the variables they document are set: the package's own in
// testdata/compat, and Sortie 1.9's examples when the shared data is there.
func TestValidate_CompatExamples(t *testing.T) {
	t.Parallel()
	jiraEnv := []string{"SORTIE_JIRA_ENDPOINT=https://acme.atlassian.net", "SORTIE_JIRA_API_KEY=me@example.com:token",
		"SORTIE_JIRA_PROJECT=ACME", "SORTIE_REPO_URL=https://example.com/acme.git"}
	githubEnv := []string{"GITHUB_TOKEN=github_pat_example", "SORTIE_GITHUB_PROJECT=acme/widgets",
		"SORTIE_REPO_URL=https://example.com/acme.git"}
	tests := []struct {
		set, dir, file string
		env            []string
	}{
		{"own", filepath.Join("testdata", "compat"), "WORKFLOW.md", jiraEnv},
		{"own", filepath.Join("testdata", "compat"), "WORKFLOW.copilot.md", githubEnv},
		{"reference", referenceExamples, "WORKFLOW.md", jiraEnv},
		{"reference", referenceExamples, "WORKFLOW.copilot.md", githubEnv},
	}
	for _, tt := range tests {
		t.Run(tt.set+"/"+tt.file, func(t *testing.T) {
			t.Parallel()
			wf, err := filepath.Abs(filepath.Join(tt.dir, tt.file))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(wf); err != nil && tt.set == "reference" {
				t.Skipf("skipped: ../shared/testdata/sortie-1.9/examples/%s not present (third-party sortie 1.9 compatibility data, run in CI)", tt.file)
			}
			tmp := t.TempDir()
			env := testEnv(tmp, append(tt.env, "SORTIE_WORKSPACE_ROOT="+filepath.Join(tmp, "workspaces"))...)
			r := runSortie(t, "", env, "validate", wf)
			if r.code != exitOK {
				t.Fatalf("validate %s: want exit 0, got:\n%s", tt.file, r)
			}
			v := parseValidateJSON(t, runSortie(t, "", env, "validate", "--format", "json", wf))
			if !v.Valid {
				t.Errorf("validate --format json %s: want valid, got %+v", tt.file, v)
			}
			for _, w := range v.Warnings {
				t.Logf("warning (allowed): %s: %s", w.Field, w.Message)
			}
			// Without its variables the workflow is refused, naming each one.
			bare := runSortie(t, "", testEnv(tmp), "validate", wf)
			if bare.code != exitFailure {
				t.Fatalf("validate %s without its variables: want exit %d, got:\n%s", tt.file, exitFailure, bare)
			}
			for _, kv := range tt.env {
				name, _, _ := strings.Cut(kv, "=")
				if name == "SORTIE_REPO_URL" { // used by hooks, which the shell expands
					continue
				}
				if !strings.Contains(bare.stderr, name) {
					t.Errorf("validate %s without its variables does not name %s:\n%s", tt.file, name, bare)
				}
			}
		})
	}
}

// What only the tracker adapter knows is checked too: GitHub's rules for repository
// names, without any request.
func TestValidate_GitHubProjectRulesOfTheAdapter(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for project, want := range map[string]string{
		"octo/repo.git":          "tracker.project: drop the .git suffix",
		"oc to/x":                "tracker.project: the owner must be a GitHub user or organisation name",
		"https://github.com/o/r": "tracker.project: must be owner/repo",
	} {
		wf := writeFile(t, dir, "WORKFLOW.md", "---\ntracker:\n  kind: github\n  project: \""+project+"\"\n  api_key: x\n  active_states: [todo]\nagent: {kind: mock}\n---\nhi\n")
		r := runSortie(t, dir, nil, "validate", wf)
		if r.code != exitFailure || !strings.Contains(r.stderr, want) {
			t.Errorf("project %q: %s\nwant %q", project, r, want)
		}
	}
}

// The shipped examples for the remote trackers validate once their variables are set.
func TestValidate_TrackerExamples(t *testing.T) {
	t.Parallel()
	env := testEnv(t.TempDir(), "GITHUB_TOKEN=ghp_example", "JIRA_API_KEY=bot@example.com:token",
		"JIRA_ENDPOINT=https://example.atlassian.net", "JIRA_PROJECT=PROJ", "SORTIE_REPO_URL=https://github.com/octo/app.git")
	for _, ex := range []string{"github", "jira", "claude-code"} {
		r := runSortie(t, "", env, "validate", filepath.Join("..", "..", "examples", ex, "WORKFLOW.md"))
		if r.code != exitOK {
			t.Errorf("examples/%s: %s", ex, r)
		}
	}
}

// A PostgreSQL URL is checked, and shown, without its password: in text, in JSON, in
// problems.
func TestValidate_DatabaseURLNeverShowsItsPassword(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, dir, "issues.json", "[]")
	body := "---\ntracker: {kind: file, path: issues.json, active_states: [Todo]}\nagent: {kind: mock}\ndatabase_url: $PG_URL\n---\nDo {{ .issue.title }}.\n"
	wf := writeFile(t, dir, "WORKFLOW.md", body)
	for _, tt := range []struct {
		name, url string
		code      int
		want      string
	}{
		{"good", "postgres://sortie:hunter2pw@db.internal:5432/sortie?sslmode=disable", exitOK, "PostgreSQL postgres://sortie:xxxxx@db.internal:5432/sortie"},
		{"bad sslmode", "postgres://sortie:hunter2pw@db.internal/sortie?sslmode=sometimes", exitFailure, "database_url"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			env := testEnv(t.TempDir(), "PG_URL="+tt.url)
			for _, args := range [][]string{{"validate", wf}, {"validate", "--format", "json", wf}} {
				r := runSortie(t, "", env, args...)
				if r.code != tt.code || !strings.Contains(r.stdout+r.stderr, tt.want) {
					t.Errorf("%v: want exit %d and %q, got:\n%s", args, tt.code, tt.want, r)
				}
				if strings.Contains(r.stdout+r.stderr, "hunter2pw") {
					t.Errorf("%v printed the password:\n%s", args, r)
				}
			}
		})
	}
}

// A Symphony WORKFLOW.md validates cleanly as its users wrote it (Linear, the codex:
// block, a Liquid prompt), as does the shipped Symphony example; without LINEAR_API_KEY
// the variable is named.
func TestValidate_SymphonyWorkflows(t *testing.T) {
	t.Parallel()
	for _, wf := range []string{
		filepath.Join("..", "..", "internal", "config", "testdata", "symphony", "WORKFLOW.md"),
		filepath.Join("..", "..", "examples", "symphony", "WORKFLOW.md"),
	} {
		t.Run(wf, func(t *testing.T) {
			t.Parallel()
			tmp := t.TempDir()
			env := testEnv(tmp, "LINEAR_API_KEY=lin_api_example", "HOME="+tmp)
			v := parseValidateJSON(t, runSortie(t, "", env, "validate", "--format", "json", wf))
			if !v.Valid || len(v.Warnings) > 0 {
				t.Fatalf("validate %s: want valid with no warnings, got %+v", wf, v)
			}
			bare := runSortie(t, "", testEnv(tmp, "LINEAR_API_KEY=", "HOME="+tmp), "validate", wf)
			if bare.code != exitFailure || !strings.Contains(bare.stderr, "LINEAR_API_KEY") {
				t.Fatalf("validate %s without LINEAR_API_KEY: want exit %d naming it, got:\n%s", wf, exitFailure, bare)
			}
		})
	}
}

// Template errors carry the WORKFLOW.md line in both dialects, and prompt.engine picks
// the dialect where the template alone would not.
func TestValidate_TemplateErrorsNameTheFileLine(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const front = "---\ntracker: {kind: file, path: issues.json, active_states: [Todo]}\nagent: {kind: mock}\n%s---\nIntro.\n\n%s\n"
	tests := []struct {
		name, extra, body, want string
	}{
		{"go", "", "{{ .issue.title }} {{ upper .issue.title }}", `prompt: template parse error in %s (line 7): function "upper" not defined`},
		{"liquid variable", "", "{{ issue.title }} {{ issue.nope }}", `prompt: template parse error in %s (line 7): unknown variable issue.nope`},
		{"liquid filter", "", "{% if attempt %}\n{{ issue.title | shout }}{% endif %}", `prompt: template parse error in %s (line 8): unknown filter "shout"`},
		{"mixed", "", "{{ .issue.title }}\n{% if attempt %}x{% endif %}", `prompt: template parse error in %s (line 8): the template mixes Go-template syntax (line 7`},
		{"engine settles it", "prompt: {engine: liquid}\n", "{{ \"x\" | shout }}", `prompt: template parse error in %s (line 8): unknown filter "shout"`},
	}
	for _, tt := range tests {
		wf := writeFile(t, dir, tt.name+".md", strings.Replace(strings.Replace(front, "%s", tt.extra, 1), "%s", tt.body, 1))
		r := runSortie(t, dir, nil, "validate", wf)
		want := "error: prompt: " + strings.TrimPrefix(strings.Replace(tt.want, "%s", wf, 1), "prompt: ")
		if r.code != exitFailure || !strings.Contains(r.stderr, want) {
			t.Errorf("%s: want exit %d and %q, got:\n%s", tt.name, exitFailure, want, r)
		}
	}
}
