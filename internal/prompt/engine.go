package prompt

import (
	"fmt"
	"slices"
	"strings"
)

// Engine is a template dialect: Go text/template or Liquid (Symphony's).
type Engine string

// Template dialects. EngineAuto detects the dialect from the template (DetectEngine).
const (
	EngineAuto   Engine = ""
	EngineGo     Engine = "go"
	EngineLiquid Engine = "liquid"
)

// Engines returns the dialects prompt.engine may name.
func Engines() []Engine { return []Engine{EngineGo, EngineLiquid} }

// goWords are the names a Go template action can start with besides `.`, `$` and a
// comment: text/template's keywords and builtins and the prompt functions. None of them
// is a name a Liquid template's data has, so `{{ if` is Go and `{{ issue` is Liquid.
var goWords = []string{
	"if", "else", "end", "range", "with", "define", "template", "block", "break", "continue",
	"and", "or", "not", "len", "index", "slice", "printf", "print", "println",
	"eq", "ne", "lt", "le", "gt", "ge", "call", "html", "js", "urlquery",
	"toJSON", "join", "lower",
}

// marker is the first place a dialect showed itself: a WORKFLOW.md-relative body line
// and the text seen there.
type marker struct {
	line int // 1-based line of the template body
	text string
}

// DetectEngine returns the dialect src is written in, and the body-relative lines that
// decided it. The rule (docs/prompts.md):
//
//   - Go: an action that starts with `.`, `$`, a comment `/*`, a Go keyword or function
//     (`{{ .issue.title }}`, `{{ if .attempt }}`, `{{ join ", " .issue.labels }}`), or
//     any name followed by a Go argument (`{{ upper .issue.title }}`).
//   - Liquid: a tag `{% name` or an output that starts with any other name
//     (`{{ issue.title }}`, `{{ attempt }}`, `{%- if attempt -%}`).
//   - Neither (plain text, or only literals such as `{{ "x" }}`): Go, the historical
//     dialect; such a template renders the same in both.
//   - Both: an error naming the first line of each, asking for prompt.engine. A template
//     is never silently rendered in the wrong dialect.
func DetectEngine(src string) (Engine, error) {
	e, err := detect(src)
	if err != nil {
		return "", err
	}
	return e, nil
}

// mixedError is a template with markers of both dialects. Line is the body line of the
// later one, where the mix shows.
type mixedError struct {
	goAt, liquidAt marker
}

func (e *mixedError) Error() string {
	return fmt.Sprintf("the template mixes Go-template syntax (line %d: %s) and Liquid syntax (line %d: %s); "+
		"set prompt.engine to go or liquid in the front matter", e.goAt.line, e.goAt.text, e.liquidAt.line, e.liquidAt.text)
}

func (e *mixedError) line() int { return max(e.goAt.line, e.liquidAt.line) }

// detect is DetectEngine with the lines kept in the error.
func detect(src string) (Engine, *mixedError) {
	goAt, liquidAt := scanMarkers(src)
	switch {
	case goAt != nil && liquidAt != nil:
		return "", &mixedError{goAt: *goAt, liquidAt: *liquidAt}
	case liquidAt != nil:
		return EngineLiquid, nil
	}
	return EngineGo, nil
}

// scanMarkers finds the first Go and the first Liquid marker in src.
func scanMarkers(src string) (goAt, liquidAt *marker) {
	line := 1
	for i := 0; i < len(src) && (goAt == nil || liquidAt == nil); i++ {
		switch {
		case src[i] == '\n':
			line++
			continue
		case src[i] != '{' || i+1 >= len(src):
			continue
		}
		open := src[i+1]
		if open != '{' && open != '%' {
			continue
		}
		rest := src[i+2:]
		rest = strings.TrimPrefix(rest, "-")
		// A Go comment is `{{/*` or `{{- /*`, with no space before the slash in the first.
		if open == '{' && strings.HasPrefix(rest, "/*") {
			goAt = firstMarker(goAt, line, "{{/*")
			continue
		}
		rest = strings.TrimLeft(rest, " \t\r\n")
		if rest == "" {
			continue
		}
		if open == '%' {
			if isNameStart(rest[0]) {
				liquidAt = firstMarker(liquidAt, line, "{% "+leadingName(rest))
			}
			continue
		}
		switch c := rest[0]; {
		case c == '.' || c == '$' || strings.HasPrefix(rest, "/*"):
			goAt = firstMarker(goAt, line, "{{ "+shortPrefix(rest))
		case isNameStart(c):
			name := leadingName(rest)
			after := strings.TrimLeft(rest[len(name):], " \t")
			switch {
			// A Go function call with a Go argument, `{{ upper .issue.title }}`, is no
			// Liquid at all: Liquid has no space-separated arguments.
			case slices.Contains(goWords, name) || after != rest[len(name):] && after != "" && (after[0] == '.' || after[0] == '$'):
				goAt = firstMarker(goAt, line, "{{ "+name)
			case name != "true" && name != "false" && name != "nil":
				liquidAt = firstMarker(liquidAt, line, "{{ "+name)
			}
		}
	}
	return goAt, liquidAt
}

func firstMarker(m *marker, line int, text string) *marker {
	if m != nil {
		return m
	}
	return &marker{line: line, text: "`" + text + "`"}
}

func isNameStart(c byte) bool { return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

func isNameByte(c byte) bool { return isNameStart(c) || '0' <= c && c <= '9' }

// leadingName is the identifier at the start of s.
func leadingName(s string) string {
	n := 0
	for n < len(s) && isNameByte(s[n]) {
		n++
	}
	return s[:n]
}

// shortPrefix is s up to the first space or closing brace, at most 24 bytes, for an
// error message.
func shortPrefix(s string) string {
	end := strings.IndexAny(s, " \t\r\n}|")
	if end < 0 {
		end = len(s)
	}
	return strings.ToValidUTF8(s[:min(end, 24)], "")
}
