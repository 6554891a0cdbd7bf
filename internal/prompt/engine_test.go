package prompt

import (
	"errors"
	"strings"
	"testing"
)

func TestDetectEngine(t *testing.T) {
	tests := []struct {
		name, src string
		want      Engine
	}{
		{"plain text is Go", "Fix the bug.\n", EngineGo},
		{"literal only is Go", `{{ "x" }}`, EngineGo},
		{"Go field", "{{ .issue.title }}", EngineGo},
		{"Go trimmed field", "{{- .issue.title -}}", EngineGo},
		{"Go variable", "{{ $x := 1 }}", EngineGo},
		{"Go comment", "{{/* note */}}", EngineGo},
		{"Go keyword", "{{ if .attempt }}x{{ end }}", EngineGo},
		{"Go function", `{{ join ", " .issue.labels }}`, EngineGo},
		{"Go call of an unknown function", "{{ upper .issue.title }}", EngineGo},
		{"Liquid output", "{{ issue.identifier }}", EngineLiquid},
		{"Liquid bare name", "retry {{ attempt }}", EngineLiquid},
		{"Liquid tag", "{% if attempt %}retry{% endif %}", EngineLiquid},
		{"Liquid trimmed tag", "{%- if attempt -%}retry{%- endif -%}", EngineLiquid},
		{"Liquid filter", `{{ issue.labels | join: ", " }}`, EngineLiquid},
		{"percent without a name is text", "100{% }", EngineGo},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DetectEngine(tt.src)
			if err != nil || got != tt.want {
				t.Fatalf("DetectEngine(%q) = %q, %v; want %q", tt.src, got, err, tt.want)
			}
		})
	}
}

func TestParse_MixedDialectsFailWithBothLines(t *testing.T) {
	src := "Work on {{ .issue.identifier }}.\n\n{% if attempt %}retry{% endif %}\n"
	_, err := Parse("WORKFLOW.md", src, 20)
	te, ok := errors.AsType[*TemplateError](err)
	if !ok || te.Kind != ErrParse || te.Line != 22 {
		t.Fatalf("err = %v, want a parse error at line 22", err)
	}
	for _, want := range []string{"line 20: `{{ .issue.identifier`", "line 22: `{% if`", "prompt.engine"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	// An explicit engine settles it: in Go, the Liquid tag is text.
	tmpl, err := ParseEngine("WORKFLOW.md", src, 20, EngineGo)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := tmpl.Render(Data{Issue: sampleIssue()}); err != nil || !strings.Contains(out, "{% if attempt %}") {
		t.Fatalf("Render = %q, %v", out, err)
	}
}

func TestParseEngine_UnknownEngine(t *testing.T) {
	_, err := ParseEngine("WORKFLOW.md", "x", 1, "jinja")
	if te, ok := errors.AsType[*TemplateError](err); !ok || te.Kind != ErrParse || !strings.Contains(err.Error(), `"jinja"`) {
		t.Fatalf("err = %v, want a parse error naming the engine", err)
	}
}

func TestParseEngine_ExplicitLiquidOnPlainText(t *testing.T) {
	tmpl, err := ParseEngine("WORKFLOW.md", "{{ \"a\" | upcase }}", 1, EngineLiquid)
	if err != nil {
		t.Fatal(err)
	}
	if tmpl.Engine() != EngineLiquid {
		t.Fatalf("Engine = %q", tmpl.Engine())
	}
	if out, err := tmpl.Render(Data{}); err != nil || out != "A" {
		t.Fatalf("Render = %q, %v; want A", out, err)
	}
}
