package prompt

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
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
		{"Go string literal holding a Liquid tag", `{{ printf "{%s}" .issue.title }}`, EngineGo},
		{"Go raw string and char literals", "{{ printf `{% if x %}` }}{{ index .issue.title 0 | printf \"%c\" }}{{ if eq 'x' 'y' }}{{ end }}", EngineGo},
		{"Go literal only, quoting Liquid", `{{ "{{ issue.title }} {% if %}" }}`, EngineGo},
		{"Go comment quoting Liquid", "{{/* {% if attempt %} {{ issue.title }} */}}{{ .issue.title }}", EngineGo},
		{"Go trimmed comment quoting Liquid", "{{- /* {% if attempt %}\n{{ issue.title }} */ -}}\n{{ .issue.title }}", EngineGo},
		{"Go action holding braces in a string", `{{ .issue.title | printf "%s }} {%% raw %%}" }}`, EngineGo},
		{"Liquid loop variable named like a Go word", "{% for block in issue.blocked_by %}{{ block.identifier }}{% endfor %}", EngineLiquid},
		{"Liquid assigned and captured Go words", "{% assign len = issue.labels.size %}{% capture print %}x{% endcapture %}{{ len }}{{ print }}", EngineLiquid},
		{"Liquid comment quoting Go", "{% comment %}{{ .x }}{% endcomment %}{{ issue.title }}", EngineLiquid},
		{"Liquid raw quoting Go", "{{ issue.title }} {%- raw -%}{{ .x }} {{ if .y }}{%- endraw -%}", EngineLiquid},
		{"Liquid string quoting Go", `{{ issue.title | append: "{{ .x" }}`, EngineLiquid},
		{"Liquid string quoting a Liquid tag", `{{ issue.title | append: "{% raw %}{{ .x" }}`, EngineLiquid},
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

// Go words used as Liquid names are Liquid only where Liquid defined them, and what a
// raw or comment block hides stops at its end.
func TestDetectEngine_StillMixed(t *testing.T) {
	for _, src := range []string{
		"{% for b in issue.blocked_by %}{{ b.identifier }}{% endfor %}{{ block .x }}",
		"{% raw %}{{ .x }}{% endraw %}{{ .y }}",
		"{% comment %}x{% endcomment %}\n{{ .issue.title }}",
		"{{ .issue.title }} {% if attempt %}x{% endif %}",
	} {
		if got, err := DetectEngine(src); err == nil {
			t.Errorf("DetectEngine(%q) = %q; want the mixed-dialect error", src, got)
		}
	}
	// Lines are still counted across what detection skips.
	_, err := Parse("WORKFLOW.md", "{{/* a\nb */}}{{ printf `x\ny` }}\n{% raw %}\n{% endraw %}{% if attempt %}{% endif %}", 1)
	if !strings.Contains(fmt.Sprint(err), "line 1: `{{/*`") || !strings.Contains(fmt.Sprint(err), "line 4: `{% raw`") {
		t.Errorf("err = %v; want the Go marker at line 1 and the Liquid one at line 4", err)
	}
}

// Every WORKFLOW.md the project ships or keeps as a fixture is detected as the dialect
// it is written in: a Go template (one that parses as Go and has no Liquid tag) as Go,
// any other as Liquid.
func TestDetectEngine_WorkflowCorpus(t *testing.T) {
	n := 0
	for _, dir := range []string{"../../examples", "../../cmd/sortie/testdata", "../../internal/config/testdata", "testdata"} {
		n += checkDetectedDialects(t, dir)
	}
	if n < 15 {
		t.Errorf("checked %d WORKFLOW files; want the whole corpus (15 or more)", n)
	}
	t.Run("shared", func(t *testing.T) {
		const shared = "../../../shared/testdata"
		if _, err := os.Stat(shared); err != nil {
			t.Skipf("skipping the WORKFLOW files of %s (the conformance data beside the repository): %v", shared, err)
		}
		checkDetectedDialects(t, shared)
	})
}

// checkDetectedDialects checks every WORKFLOW*.md below dir that does not name its
// dialect, and returns how many it checked.
func checkDetectedDialects(t *testing.T, dir string) int {
	t.Helper()
	n := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasPrefix(d.Name(), "WORKFLOW") || !strings.HasSuffix(d.Name(), ".md") {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		front, body, ok := strings.Cut(string(b), "\n---\n")
		if !ok || !strings.HasPrefix(front, "---") {
			body = string(b)
		}
		if strings.Contains(front, "\n  engine:") {
			return nil // the file names its dialect
		}
		n++
		want := EngineLiquid
		if _, err := ParseEngine(path, body, 1, EngineGo); err == nil && !strings.Contains(body, "{%") {
			want = EngineGo
		}
		if got, err := DetectEngine(body); got != want {
			t.Errorf("%s: DetectEngine = %q, %v; want %q", path, got, err, want)
		}
		return nil
	})
	if err != nil {
		t.Errorf("%s: %v", dir, err)
	}
	return n
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
