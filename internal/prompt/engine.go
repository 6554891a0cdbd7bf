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
//     (`{{ issue.title }}`, `{{ attempt }}`, `{%- if attempt -%}`), or with a name a
//     Liquid tag defined (`{% for block in … %}{{ block.id }}`).
//   - Neither (plain text, or only literals such as `{{ "x" }}`): Go, the historical
//     dialect; such a template renders the same in both.
//   - Both: an error naming the first line of each, asking for prompt.engine. A template
//     is never silently rendered in the wrong dialect.
//
// Go string literals and comments and Liquid raw and comment blocks are not looked into.
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

// scanMarkers finds the first Go and the first Liquid marker in src. It reads each
// action once, from its opening delimiter to its close, so what is inside a Go string
// literal or comment is never taken for a marker (`{{ printf "{%s}" .x }}`), nor the
// body of a Liquid {% raw %} or {% comment %} block. A name that a Liquid tag defines
// (for, tablerow, assign, capture, increment, decrement) is Liquid when an output
// starts with it, even if Go has a word of that name (`{% for block in … %}{{ block.id }}`).
func scanMarkers(src string) (goAt, liquidAt *marker) {
	line := 1
	defined := map[string]bool{}
	i := 0
	// skipTo moves i to end, counting the lines it passes.
	skipTo := func(end int) {
		line += strings.Count(src[i:end], "\n")
		i = end
	}
	for i < len(src) && (goAt == nil || liquidAt == nil) {
		switch {
		case src[i] == '\n':
			line++
			i++
			continue
		case src[i] != '{' || i+1 >= len(src) || src[i+1] != '{' && src[i+1] != '%':
			i++
			continue
		}
		open := src[i+1]
		rest := strings.TrimPrefix(src[i+2:], "-")
		// A Go comment is `{{/*` or `{{- /*`, with no space before the slash in the first.
		if open == '{' && strings.HasPrefix(rest, "/*") {
			goAt = firstMarker(goAt, line, "{{/*")
			if end := goCommentEnd(src, len(src)-len(rest)); end > 0 {
				skipTo(end)
				continue
			}
			i += 2
			continue
		}
		rest = strings.TrimLeft(rest, " \t\r\n")
		if rest == "" {
			i += 2
			continue
		}
		if open == '%' {
			if !isNameStart(rest[0]) {
				i += 2
				continue
			}
			name := leadingName(rest)
			liquidAt = firstMarker(liquidAt, line, "{% "+name)
			end := actionEnd(src, i+2, "%}", false)
			if end < 0 {
				i += 2
				continue
			}
			if v := definedName(name, rest[len(name):]); v != "" {
				defined[v] = true
			}
			skipTo(end)
			if name == "raw" || name == "comment" {
				skipTo(liquidBlockEnd(src, i, "end"+name))
			}
			continue
		}
		goAction := false
		switch c := rest[0]; {
		case c == '.' || c == '$' || strings.HasPrefix(rest, "/*"):
			goAt = firstMarker(goAt, line, "{{ "+shortPrefix(rest))
			goAction = true
			if strings.HasPrefix(rest, "/*") {
				if end := goCommentEnd(src, len(src)-len(rest)); end > 0 {
					skipTo(end)
					continue
				}
			}
		case isNameStart(c):
			name := leadingName(rest)
			after := strings.TrimLeft(rest[len(name):], " \t")
			switch {
			case defined[name]:
				liquidAt = firstMarker(liquidAt, line, "{{ "+name)
			// A Go function call with a Go argument, `{{ upper .issue.title }}`, is no
			// Liquid at all: Liquid has no space-separated arguments.
			case slices.Contains(goWords, name) || after != rest[len(name):] && after != "" && (after[0] == '.' || after[0] == '$'):
				goAt = firstMarker(goAt, line, "{{ "+name)
				goAction = true
			case name != "true" && name != "false" && name != "nil":
				liquidAt = firstMarker(liquidAt, line, "{{ "+name)
			default:
				goAction = true // a literal: read it as Go does
			}
		default:
			goAction = true
		}
		if end := actionEnd(src, i+2, "}}", goAction); end > 0 {
			skipTo(end)
			continue
		}
		i += 2
	}
	return goAt, liquidAt
}

// actionEnd is the offset just after the delimiter close that ends the action whose
// text starts at from; -1 when the action never closes. A Go action skips its string
// literals ("…" and '…' with escapes, `…`), as Go's lexer does; a Liquid one ends at
// the first close, as the Liquid engine's scanner does.
func actionEnd(src string, from int, close string, goRules bool) int {
	for j := from; j < len(src); j++ {
		switch c := src[j]; {
		case strings.HasPrefix(src[j:], close):
			return j + len(close)
		case goRules && (c == '"' || c == '\'' || c == '`'):
			k := j + 1
			for k < len(src) && src[k] != c {
				if c != '`' && src[k] == '\\' {
					k++
				}
				k++
			}
			if k >= len(src) {
				return -1
			}
			j = k
		}
	}
	return -1
}

// goCommentEnd is the offset just after the Go comment action whose `/*` is at start:
// after its `*/` and the `}}` (or ` -}}`) that follows; -1 when the comment never ends.
func goCommentEnd(src string, start int) int {
	k := strings.Index(src[start+2:], "*/")
	if k < 0 {
		return -1
	}
	end := start + 2 + k + 2
	rest := strings.TrimLeft(src[end:], " \t\r\n")
	rest = strings.TrimPrefix(rest, "-")
	if strings.HasPrefix(rest, "}}") {
		return len(src) - len(rest) + 2
	}
	return end
}

// liquidBlockEnd is the offset just after the first `{% endtag %}` at or after from (a
// raw or comment block's end: neither nests), or len(src) when there is none.
func liquidBlockEnd(src string, from int, endTag string) int {
	for j := from; j+1 < len(src); j++ {
		if src[j] != '{' || src[j+1] != '%' {
			continue
		}
		rest := strings.TrimLeft(strings.TrimPrefix(src[j+2:], "-"), " \t\r\n")
		if leadingName(rest) != endTag {
			continue
		}
		if end := actionEnd(src, j+2, "%}", false); end > 0 {
			return end
		}
	}
	return len(src)
}

// definedName is the variable a Liquid tag named tag defines, given the text after
// the tag's name, or "".
func definedName(tag, args string) string {
	switch tag {
	case "for", "tablerow", "assign", "capture", "increment", "decrement":
		args = strings.TrimLeft(args, " \t\r\n")
		if args != "" && isNameStart(args[0]) {
			return leadingName(args)
		}
	}
	return ""
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
