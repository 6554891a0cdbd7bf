package prompt

import (
	"errors"
	"strings"
	"testing"
	"unicode"

	"sortie/internal/tracker"
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

// FuzzLiquid renders arbitrary Liquid templates against issues with arbitrary text: the
// template is the operator's, but an issue's title, description, labels and comments
// are written by whoever can file an issue. Whatever the input, nothing panics, every
// failure is a *TemplateError, and issue text is never evaluated as template.
func FuzzLiquid(f *testing.F) {
	seeds := []struct{ src, text string }{
		{symphonyPrompt, "plain"},
		{"{{ issue.title }}", "{{ issue.id }}{% include 'x' %}"},
		{"{{ issue.description | split: ' ' | join: ',' }}", "a b c"},
		{"{% for l in issue.labels %}{{ l | upcase }}{% endfor %}", "é{%"},
		{"{% for b in issue.blocked_by %}{{ b.identifier }}{% endfor %}{{ issue.comments | map: 'body' | join: ';' }}", "\x00\xff"},
		{"{% assign t = issue.title | truncate: 5 %}{{ t }}{{ t.size }}", "0123456789"},
		{"{% case issue.title %}{% when 'x' %}x{% else %}y{% endcase %}", "x"},
		{"{{ issue.title | date: '%Y' }} {{ issue.priority | plus: 1 }} {{ attempt | times: 2 }}", "2026-01-02"},
		{"{{ issue['title'] }} {{ issue.labels[0] }} {{ issue.labels.last }}", "t"},
		{"{% if issue.title contains 'x' and attempt > 1 or run.turn_number == 2 %}y{% endif %}", "x"},
		{"{{ 99999999999999999999 }}", ""},
		{"{% for i in (1..3) %}{% cycle 'a', 'b' %}{% endfor %}", ""},
		{"{% raw %}{{ x }}{% endraw %}{% comment %}{{ y }}{% endcomment %}", ""},
		{"{{ issue.title | slice: -3, 2 }} {{ issue.description | strip_html | escape }}", "<b>x</b>"},
	}
	for _, s := range seeds {
		f.Add(s.src, s.text)
	}
	f.Fuzz(func(t *testing.T, src, text string) {
		// One loop at most: nested loops over (1..999) cost 10^6 iterations or more, the
		// operator's own doing, as for Go templates (boundedForFuzz).
		if !boundedForFuzz(src) || len(text) > 4096 || strings.Count(src, "for")+strings.Count(src, "tablerow") > 1 {
			t.Skip()
		}
		tmpl, err := ParseEngine("WORKFLOW.md", src, 10, EngineLiquid)
		if err != nil {
			if _, ok := errors.AsType[*TemplateError](err); !ok {
				t.Fatalf("Parse error %T is not *TemplateError: %v", err, err)
			}
			return
		}
		is := sampleIssue()
		is.Title, is.Description, is.State = text, text, text
		is.Labels = append(is.Labels, text)
		is.BlockedBy[0].Identifier = text
		is.Comments[0].Body = text
		for _, d := range []Data{
			{Issue: is, Attempt: 1, Run: Run{TurnNumber: 2, MaxTurns: 3, IsContinuation: true}},
			{Issue: tracker.Issue{Title: text}},
		} {
			out, err := tmpl.Render(d)
			if err != nil {
				if _, ok := errors.AsType[*TemplateError](err); !ok {
					t.Fatalf("Render error %T is not *TemplateError: %v", err, err)
				}
				continue
			}
			if len(out) > MaxPromptBytes {
				t.Fatalf("rendered %d bytes, over MaxPromptBytes", len(out))
			}
			if src == "{{ issue.title }}" && out != text {
				t.Fatalf("title rendered as %q, want it verbatim", out)
			}
		}
	})
}
