package prompt

import (
	"errors"
	"strings"
	"testing"
	"unicode"
)

// FuzzParseRender feeds arbitrary template sources through Parse, Render and
// TurnPrompt. Whatever the input, nothing panics and every failure is a *TemplateError.
func FuzzParseRender(f *testing.F) {
	seeds := []string{
		"",
		"plain text",
		"{{ .issue.identifier }}: {{ .issue.title }}",
		"{{ .issue.labels | join \", \" }} {{ .issue | toJSON }} {{ .issue.state | lower }}",
		"{{ if .issue.parent }}{{ .issue.parent.identifier }}{{ end }}",
		"{{ range .issue.blocked_by }}- {{ .identifier }} ({{ .state }})\n{{ end }}",
		"{{ range $i, $c := .issue.comments }}{{ $i }} {{ $c.body }}{{ else }}none{{ end }}",
		"{{ with .ci_failure }}{{ .ref }}{{ else }}ok{{ end }}",
		"{{ .issue.nonexistent }}",
		"{{ .issue.priority }} {{ printf \"%v\" .attempt }} {{ index .issue.labels 0 }}",
		"{{ define \"x\" }}{{ .run.turn_number }}{{ end }}{{ template \"x\" . }}",
		"{{ $x := .attempt }}{{ if eq $x 0 }}first{{ end }}",
		"{{ .issue.title",
		"{{/* comment */}}{{- .issue.id -}}",
		"{{ slice .issue.title 1 3 }} {{ len .issue.labels }}",
	}
	for _, s := range seeds {
		f.Add(s)
	}
	data := Data{Issue: sampleIssue(), Attempt: 1, Run: Run{TurnNumber: 1, MaxTurns: 3}}
	f.Fuzz(func(t *testing.T, src string) {
		if !boundedForFuzz(src) {
			t.Skip()
		}
		tmpl, err := Parse("WORKFLOW.md", src, 10)
		if err != nil {
			if _, ok := errors.AsType[*TemplateError](err); !ok {
				t.Fatalf("Parse error %T is not *TemplateError: %v", err, err)
			}
			return
		}
		out, err := tmpl.Render(data)
		if err != nil {
			if _, ok := errors.AsType[*TemplateError](err); !ok {
				t.Fatalf("Render error %T is not *TemplateError: %v", err, err)
			}
			return
		}
		if len(out) > MaxPromptBytes {
			t.Fatalf("rendered %d bytes, over MaxPromptBytes", len(out))
		}
		_ = TurnPrompt(out, 1, nil)
		_ = TurnPrompt(out, 2, nil)
	})
}

// boundedForFuzz skips sources whose cost text/template itself makes unbounded or
// merely slow: long numbers (a range over 10^9, a printf width of 10^9), nested ranges
// beyond two, and more than one template/block keyword (a template that calls itself
// recurses 100 000 levels deep before text/template stops it, exponentially so when it
// calls itself twice). Those costs are an operator's own doing in WORKFLOW.md; this
// target looks for panics and untyped errors, not slow templates.
func boundedForFuzz(src string) bool {
	if len(src) > 2048 {
		return false
	}
	run := 0
	for _, r := range src {
		if unicode.IsDigit(r) {
			if run++; run > 3 {
				return false
			}
		} else {
			run = 0
		}
	}
	return strings.Count(src, "template")+strings.Count(src, "block") <= 1 &&
		strings.Count(src, "range") <= 2
}
