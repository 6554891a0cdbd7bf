package prompt

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sortie/internal/tracker"
)

// exampleWorkflow is the reference system's sample WORKFLOW.md; its prompt must run
// here unchanged.
// It lives in the shared test data beside the repository (see ../shared/testdata).
var exampleWorkflow = filepath.Join("..", "..", "..", "shared", "testdata", "sortie-1.9", "examples", "WORKFLOW.md")

// splitWorkflow returns the template body after the front matter's closing `---` line
// and the file line the body starts on.
func splitWorkflow(t *testing.T, path string) (body string, firstLine int) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		t.Skipf("%s not available", path)
	}
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(raw), "\n")
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
	body, firstLine := splitWorkflow(t, exampleWorkflow)
	tmpl, err := Parse("WORKFLOW.md", body, firstLine)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	tests := []struct {
		name     string
		data     Data
		want     []string
		dontWant []string
	}{
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
			dontWant: []string{"## Continuation", "## Retry", "Sortie sample workflow"},
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
	}
	for _, tt := range tests {
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
			for _, w := range append(tt.dontWant, "<no value>") {
				if strings.Contains(out, w) {
					t.Errorf("rendered prompt contains %q:\n%s", w, out)
				}
			}
		})
	}
}

func TestExampleWorkflow_ErrorLineIsTheFileLine(t *testing.T) {
	body, firstLine := splitWorkflow(t, exampleWorkflow)
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
}

func sampleIssueBare() tracker.Issue {
	return tracker.Issue{ID: "1", Identifier: "X-1", Title: "Bare"}
}
