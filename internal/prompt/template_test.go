package prompt

import (
	"errors"
	"strings"
	"testing"

	"sortie/internal/tracker"
)

func ptr[T any](v T) *T { return &v }

func sampleIssue() tracker.Issue {
	return tracker.Issue{
		ID:          "10042",
		Identifier:  "PROJ-42",
		Title:       "Add retry logic to webhook handler",
		Description: "The webhook handler fails silently.",
		Priority:    ptr(2),
		State:       "In Progress",
		BranchName:  "proj-42-retry",
		URL:         "https://tracker.example.com/browse/PROJ-42",
		Labels:      []string{"backend", "reliability"},
		Assignee:    "alice",
		IssueType:   "Bug",
		Parent:      &tracker.ParentRef{ID: "10040", Identifier: "PROJ-40"},
		BlockedBy:   []tracker.BlockerRef{{ID: "10041", Identifier: "PROJ-41", State: "In Review"}},
		Comments:    []tracker.Comment{{ID: "c1", Author: "bob", Body: "Seen in prod.", CreatedAt: "2026-03-25T10:00:00Z"}},
		CreatedAt:   "2026-03-20T09:00:00Z",
		UpdatedAt:   "2026-03-25T14:30:00Z",
	}
}

func mustParse(t *testing.T, src string) *Template {
	t.Helper()
	tmpl, err := Parse("WORKFLOW.md", src, 1)
	if err != nil {
		t.Fatalf("Parse(%q): %v", src, err)
	}
	return tmpl
}

func render(t *testing.T, src string, d Data) string {
	t.Helper()
	out, err := mustParse(t, src).Render(d)
	if err != nil {
		t.Fatalf("Render(%q): %v", src, err)
	}
	return out
}

func TestRender_IssueFields(t *testing.T) {
	d := Data{Issue: sampleIssue(), Attempt: 2, Run: Run{TurnNumber: 3, MaxTurns: 20, IsContinuation: true}}
	tests := []struct{ src, want string }{
		{"{{ .issue.id }}", "10042"},
		{"{{ .issue.identifier }}", "PROJ-42"},
		{"{{ .issue.title }}", "Add retry logic to webhook handler"},
		{"{{ .issue.description }}", "The webhook handler fails silently."},
		{"{{ .issue.priority }}", "2"},
		{"{{ .issue.state }}", "In Progress"},
		{"{{ .issue.branch_name }}", "proj-42-retry"},
		{"{{ .issue.url }}", "https://tracker.example.com/browse/PROJ-42"},
		{"{{ .issue.labels | join \", \" }}", "backend, reliability"},
		{"{{ .issue.assignee }}", "alice"},
		{"{{ .issue.issue_type }}", "Bug"},
		{"{{ .issue.parent.identifier }}/{{ .issue.parent.id }}", "PROJ-40/10040"},
		{"{{ range .issue.comments }}{{ .author }}@{{ .created_at }}: {{ .body }} ({{ .id }}){{ end }}", "bob@2026-03-25T10:00:00Z: Seen in prod. (c1)"},
		{"{{ range .issue.blocked_by }}{{ .identifier }}={{ .state }} ({{ .id }}){{ end }}", "PROJ-41=In Review (10041)"},
		{"{{ .issue.created_at }} {{ .issue.updated_at }}", "2026-03-20T09:00:00Z 2026-03-25T14:30:00Z"},
		{"{{ .attempt }}", "2"},
		{"{{ .run.turn_number }}/{{ .run.max_turns }} {{ .run.is_continuation }}", "3/20 true"},
		{"{{ if .ci_failure }}ci{{ else }}no-ci{{ end }} {{ if .review_comments }}rc{{ else }}no-rc{{ end }}", "no-ci no-rc"},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			if got := render(t, tt.src, d); got != tt.want {
				t.Fatalf("Render(%q) = %q, want %q", tt.src, got, tt.want)
			}
		})
	}
}

func TestRender_EmptyIssueHasNilsAndEmptyLists(t *testing.T) {
	d := Data{Issue: tracker.Issue{ID: "1", Identifier: "X-1"}}
	tests := []struct{ src, want string }{
		{"{{ .issue.priority | toJSON }} {{ .issue.parent | toJSON }} {{ .issue.comments | toJSON }}", "null null null"},
		{"{{ .issue.labels | toJSON }} {{ .issue.blocked_by | toJSON }}", "[] []"},
		{"{{ if .issue.priority }}p{{ end }}{{ if .issue.parent }}parent{{ end }}{{ if .issue.labels }}l{{ end }}", ""},
		{"{{ range .issue.comments }}c{{ else }}none{{ end }}", "none"},
		// text/template would print "<no value>" for these nils.
		{"[{{ .issue.priority }}][{{ .issue.parent }}][{{ .ci_failure }}][{{ index .issue \"comments\" }}]", "[][][][]"},
	}
	for _, tt := range tests {
		if got := render(t, tt.src, d); got != tt.want {
			t.Errorf("Render(%q) = %q, want %q", tt.src, got, tt.want)
		}
	}
	if got := render(t, "{{ .issue.priority }}", Data{Issue: tracker.Issue{Priority: ptr(0)}}); got != "0" {
		t.Errorf("priority 0 renders as %q, want %q", got, "0")
	}
}

func TestRender_ExtraKeys(t *testing.T) {
	d := Data{Issue: sampleIssue(), Extra: map[string]any{
		"ci_failure":      map[string]any{"failing_count": 2, "ref": "abc123"},
		"review_comments": []any{map[string]any{"file": "main.go", "body": "nit"}},
	}}
	got := render(t, "{{ .ci_failure.failing_count }}@{{ .ci_failure.ref }} {{ range .review_comments }}{{ .file }}: {{ .body }}{{ end }}", d)
	if want := "2@abc123 main.go: nit"; got != want {
		t.Fatalf("Render = %q, want %q", got, want)
	}
	_, err := mustParse(t, "x").Render(Data{Extra: map[string]any{"issue": "spoof"}})
	if te, ok := errors.AsType[*TemplateError](err); !ok || te.Kind != ErrRender || !strings.Contains(err.Error(), `"issue" is reserved`) {
		t.Fatalf("Extra[issue]: err = %v, want a render error naming the reserved key", err)
	}
}

func TestRender_MissingKeyIsAnErrorWithWorkflowLine(t *testing.T) {
	src := "Line one\n\nWork on {{ .issue.nonexistent }} now.\n"
	tmpl, err := Parse("WORKFLOW.md", src, 40)
	if err != nil {
		t.Fatal(err)
	}
	out, err := tmpl.Render(Data{Issue: sampleIssue()})
	te, ok := errors.AsType[*TemplateError](err)
	if !ok {
		t.Fatalf("Render = %q, %v; want a *TemplateError", out, err)
	}
	if te.Kind != ErrRender || te.Line != 42 {
		t.Errorf("TemplateError = {Kind:%s Line:%d}, want {render 42}", te.Kind, te.Line)
	}
	if strings.Contains(out, "<no value>") {
		t.Errorf("output contains <no value>: %q", out)
	}
	want := `prompt: template render error in WORKFLOW.md (line 42): at <.issue.nonexistent>: map has no entry for key "nonexistent"`
	if err.Error() != want {
		t.Errorf("Error() =\n  %s\nwant\n  %s", err, want)
	}
}

func TestRender_OtherRenderErrors(t *testing.T) {
	tests := []struct {
		name, src string
		line      int
		contains  string
	}{
		{"missing top-level key", "{{ .nope }}", 1, `no entry for key "nope"`},
		{"field of nil parent", "a\n{{ .issue.parent.identifier }}", 2, "nil"},
		{"join with separator last", "{{ join .issue.labels \", \" }}", 1, "expected string; got []string"},
		{"lower of a non-string", "\n\n{{ lower .attempt }}", 3, "expected string; got int"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := mustParse(t, tt.src).Render(Data{Issue: tracker.Issue{Identifier: "X-1"}})
			te, ok := errors.AsType[*TemplateError](err)
			if !ok || te.Kind != ErrRender || te.Line != tt.line || !strings.Contains(err.Error(), tt.contains) {
				t.Fatalf("err = %v, want a render error at line %d mentioning %q", err, tt.line, tt.contains)
			}
		})
	}
}

func TestRender_EmptyTemplates(t *testing.T) {
	for _, src := range []string{"", "{{/* only a comment */}}", `{{ define "unused" }}x{{ end }}`} {
		if got := render(t, src, Data{}); got != "" {
			t.Errorf("Render(%q) = %q, want empty", src, got)
		}
	}
}

func TestRender_OutputIsBounded(t *testing.T) {
	_, err := mustParse(t, `{{ range 5000000 }}xxxxxxxx{{ end }}`).Render(Data{})
	if te, ok := errors.AsType[*TemplateError](err); !ok || te.Kind != ErrRender || !strings.Contains(err.Error(), "exceeds") {
		t.Fatalf("err = %v, want a render error about the size limit", err)
	}
}

func TestParse_ErrorsReportWorkflowLine(t *testing.T) {
	tests := []struct {
		name      string
		src       string
		firstLine int
		wantLine  int
		contains  string
	}{
		{"unknown function", "ok\n\n{{ upper .issue.title }}", 12, 14, `function "upper" not defined`},
		{"bad action", "{{ .issue.title }\n", 5, 5, `unexpected "}"`},
		{"unclosed if", "a\n{{ if .attempt }}\nb", 1, 3, "unexpected EOF"},
		{"firstLine below 1 treated as 1", "\n{{ end }}", 0, 2, "unexpected {{end}}"},
		{"builtin printf is still parsed", "{{ printf \"%d\" }", 1, 1, `unexpected "}"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("/etc/sortie/WORKFLOW.md", tt.src, tt.firstLine)
			te, ok := errors.AsType[*TemplateError](err)
			if !ok {
				t.Fatalf("Parse err = %v, want *TemplateError", err)
			}
			if te.Kind != ErrParse || te.Line != tt.wantLine {
				t.Errorf("TemplateError = {Kind:%s Line:%d}, want {parse %d}", te.Kind, te.Line, tt.wantLine)
			}
			prefix := "prompt: template parse error in /etc/sortie/WORKFLOW.md (line "
			if msg := err.Error(); !strings.HasPrefix(msg, prefix) || !strings.Contains(msg, tt.contains) {
				t.Errorf("Error() = %q, want prefix %q and %q", msg, prefix, tt.contains)
			}
		})
	}
}

func TestParse_InternalPrintFunctionIsNotCallable(t *testing.T) {
	if _, err := Parse("WORKFLOW.md", "{{ sortie_print_value 1 }}", 1); err == nil {
		t.Fatal("Parse accepted a call to the internal print function; templates get exactly toJSON, join and lower")
	}
}

func TestFuncs(t *testing.T) {
	d := Data{Issue: sampleIssue(), Extra: map[string]any{"mixed": []any{"a", 1, nil, true}}}
	tests := []struct{ src, want string }{
		{`{{ .issue.labels | toJSON }}`, `["backend","reliability"]`},
		{`{{ .issue.parent | toJSON }}`, `{"id":"10040","identifier":"PROJ-40"}`},
		{`{{ toJSON .issue.title }}`, `"Add retry logic to webhook handler"`},
		{`{{ .issue.labels | join " | " }}`, `backend | reliability`},
		{`{{ .mixed | join "," }}`, `a,1,,true`},
		{`{{ join "," .ci_failure }}`, ``},
		{`{{ .issue.state | lower }}`, `in progress`},
		{`{{ lower "ÄBC" }}`, `äbc`},
	}
	for _, tt := range tests {
		if got := render(t, tt.src, d); got != tt.want {
			t.Errorf("Render(%s) = %q, want %q", tt.src, got, tt.want)
		}
	}
}

func TestTemplate_ConcurrentRender(t *testing.T) {
	tmpl := mustParse(t, "{{ .issue.identifier }} {{ .attempt }}")
	done := make(chan string, 8)
	for i := range 8 {
		go func() {
			out, err := tmpl.Render(Data{Issue: tracker.Issue{Identifier: "P-1"}, Attempt: i})
			if err != nil {
				out = err.Error()
			}
			done <- out
		}()
	}
	for range 8 {
		if out := <-done; !strings.HasPrefix(out, "P-1 ") {
			t.Errorf("concurrent Render = %q", out)
		}
	}
}
