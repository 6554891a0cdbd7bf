package prompt

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sortie/internal/tracker"
)

// exampleWorkflow is the package's own example WORKFLOW.md.
var exampleWorkflow = filepath.Join("testdata", "WORKFLOW.md")

// referenceWorkflow is Sortie 1.9's sample WORKFLOW.md, third-party data beside the
// repository (/work/shared/testdata/README.md), read in place when present, as in CI:
// its prompt must run here unchanged.
var referenceWorkflow = filepath.Join("..", "..", "..", "shared", "testdata", "sortie-1.9", "examples", "WORKFLOW.md")

// exampleCase is one rendering of an example workflow's prompt and what it must and
// must not show.
type exampleCase struct {
	name     string
	data     Data
	want     []string
	dontWant []string
}

// examples are the workflows the tests render, with their expectations.
var examples = []struct {
	name    string
	path    string
	shared  bool
	comment string // text of the template's leading comment, never rendered
	cases   []exampleCase
}{
	{
		name: "own", path: exampleWorkflow, comment: "Prompt of the package's example workflow",
		cases: []exampleCase{
			{
				name: "first dispatch",
				data: Data{Issue: sampleIssue(), Run: Run{TurnNumber: 1, MaxTurns: 15}},
				want: []string{
					"**PROJ-42** (Add retry logic to webhook handler)",
					"#### What the ticket says\n\nThe webhook handler fails silently.",
					"## How to start",
					"## Link\n\nhttps://tracker.example.com/browse/PROJ-42",
					"backend / reliability",
					"## Part of\n\nPROJ-40",
					"* PROJ-41, currently In Review",
				},
				dontWant: []string{"## Picking up again", "## Earlier attempts"},
			},
			{
				name:     "continuation turn of a retry",
				data:     Data{Issue: sampleIssue(), Attempt: 2, Run: Run{TurnNumber: 3, MaxTurns: 15, IsContinuation: true}},
				want:     []string{"## Picking up again", "Turn 3/15.", "Attempt number 2;"},
				dontWant: []string{"## How to start"},
			},
			{
				name:     "bare issue",
				data:     Data{Issue: sampleIssueBare(), Run: Run{TurnNumber: 1, MaxTurns: 15}},
				want:     []string{"**X-1** (Bare)"},
				dontWant: []string{"#### What the ticket says", "## Tags", "## Part of", "## Waiting on", "## Link"},
			},
		},
	},
	{
		name: "reference", path: referenceWorkflow, shared: true, comment: "Sortie sample workflow",
		cases: []exampleCase{
			{
				name: "first dispatch",
				data: Data{Issue: sampleIssue(), Run: Run{TurnNumber: 1, MaxTurns: 15}},
				want: []string{
					"**PROJ-42**: Add retry logic to webhook handler",
					"The webhook handler fails silently.",
					"## Approach",
					"Ticket: https://tracker.example.com/browse/PROJ-42",
					"backend, reliability",
					"PROJ-40",
					"- **PROJ-41** (In Review)",
				},
				dontWant: []string{"## Continuation", "## Retry"},
			},
			{
				name:     "continuation turn of a retry",
				data:     Data{Issue: sampleIssue(), Attempt: 2, Run: Run{TurnNumber: 3, MaxTurns: 15, IsContinuation: true}},
				want:     []string{"## Continuation", "(turn 3 of 15)", "This is retry attempt 2."},
				dontWant: []string{"## Approach"},
			},
			{
				name:     "bare issue",
				data:     Data{Issue: sampleIssueBare(), Run: Run{TurnNumber: 1, MaxTurns: 15}},
				want:     []string{"**X-1**: Bare"},
				dontWant: []string{"### Description", "## Labels", "## Parent issue", "## Blockers", "## Reference"},
			},
		},
	},
}

// readWorkflow reads an example workflow; a shared one that is not beside the
// repository skips the test, saying what was skipped.
func readWorkflow(t *testing.T, path string, shared bool) []byte {
	t.Helper()
	raw, err := os.ReadFile(path)
	if shared && errors.Is(err, os.ErrNotExist) {
		t.Skipf("skipped: ../shared/testdata/sortie-1.9/examples/WORKFLOW.md not present (third-party sortie 1.9 compatibility data, run in CI)")
	}
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// splitWorkflow returns the template body after the front matter's closing `---` line
// and the file line the body starts on.
func splitWorkflow(t *testing.T, path string, shared bool) (body string, firstLine int) {
	t.Helper()
	lines := strings.SplitAfter(string(readWorkflow(t, path, shared)), "\n")
	seen := 0
	for i, l := range lines {
		if strings.TrimRight(l, " \t\r\n") == "---" {
			seen++
			if seen == 2 {
				return strings.Join(lines[i+1:], ""), i + 2
			}
		}
	}
	t.Fatalf("%s: no closing --- line", path)
	return "", 0
}

func TestExampleWorkflow_Renders(t *testing.T) {
	for _, ex := range examples {
		t.Run(ex.name, func(t *testing.T) {
			body, firstLine := splitWorkflow(t, ex.path, ex.shared)
			tmpl, err := Parse("WORKFLOW.md", body, firstLine)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			for _, tt := range ex.cases {
				t.Run(tt.name, func(t *testing.T) {
					out, err := tmpl.Render(tt.data)
					if err != nil {
						t.Fatalf("Render: %v", err)
					}
					for _, w := range tt.want {
						if !strings.Contains(out, w) {
							t.Errorf("rendered prompt lacks %q:\n%s", w, out)
						}
					}
					for _, w := range append(tt.dontWant, "<no value>", ex.comment) {
						if strings.Contains(out, w) {
							t.Errorf("rendered prompt contains %q:\n%s", w, out)
						}
					}
				})
			}
		})
	}
}

func TestExampleWorkflow_ErrorLineIsTheFileLine(t *testing.T) {
	for _, ex := range examples {
		t.Run(ex.name, func(t *testing.T) {
			body, firstLine := splitWorkflow(t, ex.path, ex.shared)
			// Append a bad reference on a new last line and expect that line of the file.
			if !strings.HasSuffix(body, "\n") {
				body += "\n"
			}
			wantLine := firstLine + strings.Count(body, "\n")
			tmpl, err := Parse("WORKFLOW.md", body+"{{ .issue.nonexistent }}", firstLine)
			if err != nil {
				t.Fatal(err)
			}
			_, err = tmpl.Render(Data{Issue: sampleIssue()})
			te, ok := errors.AsType[*TemplateError](err)
			if !ok || te.Line != wantLine {
				t.Fatalf("err = %v, want a render error at WORKFLOW.md line %d", err, wantLine)
			}
		})
	}
}

func sampleIssueBare() tracker.Issue {
	return tracker.Issue{ID: "1", Identifier: "X-1", Title: "Bare"}
}
