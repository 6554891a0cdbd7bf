package prompt

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/osteele/liquid/parser"

	"sortie/internal/tracker"
)

// The strictness check of Liquid templates. It runs over the parsed template, before
// any render, so `sortie validate` reports with their WORKFLOW.md lines:
//
//   - a variable that is neither in the data (issue, attempt, run, ...) nor assigned,
//     captured or looped over by the template;
//   - a field the data does not have (`issue.nope`, `run.turns`, `b.nope` in a loop over
//     issue.blocked_by), known from the shape of the data itself (dataShape);
//   - a filter the engine does not define;
//   - `{% include %}`, which would read files next to WORKFLOW.md into the prompt.
//
// What it cannot see (a field of an object reached through a filter or a key index, or
// of an extension value such as ci_failure) fails at render instead (liquidObject). An
// index into a list (`issue.labels[0]`) has the shape of the list's elements.

// shape is what the check knows of a value: anything, a scalar, an object with known
// fields, or a list of elements of one shape.
type shape struct {
	kind   shapeKind
	fields map[string]*shape
	elem   *shape
}

type shapeKind int

const (
	shapeAny shapeKind = iota
	shapeScalar
	shapeObject
	shapeList
)

var anyShape = &shape{kind: shapeAny}

// shapeOf infers the shape of a value of templateData's map.
func shapeOf(v any) *shape {
	switch v := v.(type) {
	case nil:
		return anyShape
	case map[string]any:
		s := &shape{kind: shapeObject, fields: map[string]*shape{}}
		for k, x := range v {
			s.fields[k] = shapeOf(x)
		}
		return s
	case []any:
		if len(v) == 0 {
			return &shape{kind: shapeList, elem: anyShape}
		}
		return &shape{kind: shapeList, elem: shapeOf(v[0])}
	case []string:
		return &shape{kind: shapeList, elem: &shape{kind: shapeScalar}}
	}
	return &shape{kind: shapeScalar}
}

// dataShape is the shape of the data every Liquid render gets, inferred from the data
// of an issue with every field set (with Symphony's aliases, as liquidBindings adds
// them), so it cannot drift from data.go.
var dataShape = sync.OnceValue(func() map[string]*shape {
	p := 1
	full := tracker.Issue{
		ID: "1", Identifier: "X-1", Title: "t", Description: "d", Priority: &p, State: "s",
		BranchName: "b", URL: "u", Labels: []string{"l"}, Assignee: "a", IssueType: "t",
		Parent:    &tracker.ParentRef{ID: "1", Identifier: "X-1"},
		BlockedBy: []tracker.BlockerRef{{ID: "1", Identifier: "X-1", State: "s"}},
		Comments:  []tracker.Comment{{ID: "1", Author: "a", Body: "b", CreatedAt: "c"}},
		CreatedAt: "c", UpdatedAt: "u",
	}
	m, err := Data{Issue: full}.templateData()
	if err != nil {
		panic(err) // no Extra: cannot fail
	}
	out := map[string]*shape{}
	for k, v := range withSymphonyAliases(m) {
		out[k] = shapeOf(v)
	}
	return out
})

// liquidFilters are the filters of the engine's standard set (filters.AddStandardFilters
// at the pinned version; TestLiquid_FilterListMatchesEngine keeps this list true).
var liquidFilters = []string{
	"abs", "append", "capitalize", "ceil", "compact", "concat", "date", "default", "divided_by",
	"downcase", "escape", "escape_once", "first", "floor", "inspect", "join", "json", "last",
	"lstrip", "map", "minus", "modulo", "newline_to_br", "plus", "prepend", "remove",
	"remove_first", "replace", "replace_first", "reverse", "round", "rstrip", "size", "slice",
	"sort", "sort_natural", "split", "strip", "strip_html", "strip_newlines", "times",
	"truncate", "truncatewords", "type", "uniq", "upcase", "url_decode", "url_encode",
}

// filterHints name the Liquid filter for names from other template languages.
var filterHints = map[string]string{
	"upper": "upcase", "lower": "downcase", "length": "size", "toJSON": "json", "tojson": "json",
	"trim": "strip", "title": "capitalize",
}

// checker walks a parsed template. scopes[0] holds what {% assign %} and {% capture %}
// define (Liquid has one scope for those); a loop pushes a scope for its variable.
type checker struct {
	name   string
	data   map[string]*shape
	scopes []map[string]*shape
}

func checkLiquid(name string, root parser.ASTNode) error {
	c := &checker{name: name, data: dataShape(), scopes: []map[string]*shape{{}}}
	return c.node(root)
}

func (c *checker) errorf(tok parser.Token, format string, a ...any) error {
	return &TemplateError{Kind: ErrParse, Name: c.name, Line: tok.SourceLoc.LineNo, Err: fmt.Errorf(format, a...)}
}

func (c *checker) nodes(ns []parser.ASTNode) error {
	for _, n := range ns {
		if err := c.node(n); err != nil {
			return err
		}
	}
	return nil
}

func (c *checker) node(n parser.ASTNode) error {
	switch n := n.(type) {
	case *parser.ASTSeq:
		return c.nodes(n.Children)
	case *parser.ASTObject:
		_, err := c.expr(n.Token, n.Args, false)
		return err
	case *parser.ASTTag:
		return c.tag(n.Token)
	case *parser.ASTBlock:
		return c.block(n)
	}
	return nil
}

func (c *checker) tag(tok parser.Token) error {
	switch tok.Name {
	case "include":
		return c.errorf(tok, "{%% include %%} is not supported: a prompt template cannot read other files")
	case "assign":
		name, value, ok := strings.Cut(tok.Args, "=")
		if !ok {
			return nil // the engine rejected it already
		}
		s, err := c.expr(tok, value, false)
		if err != nil {
			return err
		}
		c.scopes[0][strings.TrimSpace(name)] = s
	}
	return nil
}

func (c *checker) block(b *parser.ASTBlock) error {
	switch b.Name {
	case "comment", "raw":
		return nil
	case "for", "tablerow":
		return c.loop(b)
	case "capture":
		if err := c.nodes(b.Body); err != nil {
			return err
		}
		c.scopes[0][strings.TrimSpace(b.Args)] = &shape{kind: shapeScalar}
		return nil
	}
	if _, err := c.expr(b.Token, b.Args, false); err != nil {
		return err
	}
	if err := c.nodes(b.Body); err != nil {
		return err
	}
	for _, cl := range b.Clauses {
		if _, err := c.expr(cl.Token, cl.Args, false); err != nil {
			return err
		}
		if err := c.nodes(cl.Body); err != nil {
			return err
		}
	}
	return nil
}

// forloopShape is the shape of forloop, which the engine sets in the body of a for and
// of a tablerow loop (render/iteration_tags.go at the pinned version).
var forloopShape = &shape{kind: shapeObject, fields: map[string]*shape{
	"index": {kind: shapeScalar}, "index0": {kind: shapeScalar},
	"rindex": {kind: shapeScalar}, "rindex0": {kind: shapeScalar},
	"first": {kind: shapeScalar}, "last": {kind: shapeScalar}, "length": {kind: shapeScalar},
}}

// loop checks `{% for x in collection modifiers %}` and its body, where x has the
// shape of the collection's elements and forloop exists. tablerowloop does not: the
// engine never sets it, so it would print nothing.
func (c *checker) loop(b *parser.ASTBlock) error {
	toks := lexLiquid(b.Args)
	if len(toks) < 2 || toks[0].kind != tokIdent || toks[1].text != "in" {
		return nil // the engine rejected it already
	}
	elem, err := c.expr(b.Token, b.Args[toks[1].end:], true)
	if err != nil {
		return err
	}
	switch elem.kind {
	case shapeList:
		elem = elem.elem
	case shapeObject, shapeScalar:
		elem = anyShape
	}
	scope := map[string]*shape{toks[0].text: elem, "forloop": forloopShape}
	c.scopes = append(c.scopes, scope)
	defer func() { c.scopes = c.scopes[:len(c.scopes)-1] }()
	if err := c.nodes(b.Body); err != nil {
		return err
	}
	for _, cl := range b.Clauses {
		if err := c.nodes(cl.Body); err != nil {
			return err
		}
	}
	return nil
}

// lookup finds a variable: the innermost loop first, then assignments, then the data.
func (c *checker) lookup(name string) (*shape, bool) {
	for i := len(c.scopes) - 1; i >= 0; i-- {
		if s, ok := c.scopes[i][name]; ok {
			return s, true
		}
	}
	s, ok := c.data[name]
	return s, ok
}

// expr checks the expression src of tok and returns the shape of its value when it is
// a plain variable path, else anyShape. In a loop header, the modifiers (limit:,
// offset:, cols:, reversed) are allowed after the collection.
func (c *checker) expr(tok parser.Token, src string, loopHeader bool) (*shape, error) {
	toks := lexLiquid(src)
	result := anyShape
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		afterPipe := i > 0 && toks[i-1].text == "|"
		switch {
		case afterPipe && (t.kind == tokIdent || t.kind == tokKeyword):
			if !slices.Contains(liquidFilters, t.text) {
				hint := ""
				if h, ok := filterHints[t.text]; ok {
					hint = fmt.Sprintf("; did you mean %s?", h)
				}
				return nil, c.errorf(tok, "unknown filter %q%s (docs/prompts.md lists the filters)", t.text, hint)
			}
		case t.kind == tokIdent && loopHeader && t.text == "reversed":
		case t.kind == tokIdent:
			s, ok := c.lookup(t.text)
			if !ok {
				return nil, c.errorf(tok, "%s", c.unknownVariable(t.text))
			}
			path := t.text
		follow:
			for i+1 < len(toks) {
				switch next := toks[i+1]; {
				case next.kind == tokProperty:
					i++
					ns, err := property(s, path, next.text)
					if err != nil {
						return nil, c.errorf(tok, "%v", err)
					}
					s, path = ns, path+"."+next.text
				case next.kind == tokPunct && next.text == "[":
					// An index: the element of a list; of anything else, unknown here
					// (liquidObject checks a key at render).
					end := closingBracket(toks, i+1)
					if end < 0 {
						break follow
					}
					index := src[next.end : toks[end].end-1]
					if _, err := c.expr(tok, index, false); err != nil {
						return nil, err
					}
					if s.kind == shapeList {
						s = s.elem
					} else {
						s = anyShape
					}
					path += "[" + strings.TrimSpace(index) + "]"
					i = end
				default:
					break follow
				}
			}
			plain := i == len(toks)-1 || loopHeader && (toks[i+1].kind == tokKeyword || toks[i+1].text == "reversed")
			if t == toks[0] && plain {
				result = s
			}
		}
	}
	return result, nil
}

// closingBracket is the index of the `]` that closes the `[` at toks[open], or -1.
func closingBracket(toks []liquidToken, open int) int {
	depth := 0
	for j := open; j < len(toks); j++ {
		if toks[j].kind != tokPunct {
			continue
		}
		switch toks[j].text {
		case "[":
			depth++
		case "]":
			if depth--; depth == 0 {
				return j
			}
		}
	}
	return -1
}

// property is the shape of path.name, or an error when the shape of path rules name out.
func property(s *shape, path, name string) (*shape, error) {
	switch s.kind {
	case shapeObject:
		if f, ok := s.fields[name]; ok {
			return f, nil
		}
		if name == "size" {
			return &shape{kind: shapeScalar}, nil
		}
		fields := make([]string, 0, len(s.fields))
		for k := range s.fields {
			fields = append(fields, k)
		}
		slices.Sort(fields)
		return nil, fmt.Errorf("unknown variable %s.%s: %s has no field %q (fields: %s)", path, name, path, name, strings.Join(fields, ", "))
	case shapeList:
		switch name {
		case "size":
			return &shape{kind: shapeScalar}, nil
		case "first", "last":
			return s.elem, nil
		}
		return nil, fmt.Errorf("unknown variable %s.%s: %s is a list (it has size, first and last)", path, name, path)
	case shapeScalar:
		if name == "size" {
			return s, nil
		}
		return nil, fmt.Errorf("unknown variable %s.%s: %s is a single value, not an object", path, name, path)
	}
	return anyShape, nil
}

func (c *checker) unknownVariable(name string) string {
	switch name {
	case "empty", "blank", "null":
		return fmt.Sprintf("%q is not supported by this Liquid engine; compare a size instead, as in {%% if issue.labels.size > 0 %%}", name)
	case "tablerowloop":
		return `"tablerowloop" is not supported by this Liquid engine; inside {% tablerow %} use forloop (index, index0, rindex, rindex0, first, last, length)`
	}
	known := make([]string, 0, len(c.data))
	for k := range c.data {
		known = append(known, k)
	}
	slices.Sort(known)
	return fmt.Sprintf("unknown variable %q (the data has %s; a template may add its own with assign, capture and for)", name, strings.Join(known, ", "))
}

// liquidToken is one token of a Liquid expression, as the engine's scanner splits it.
type liquidToken struct {
	kind tokenKind
	text string // the name (without the dot or colon) or the punctuation
	end  int    // offset in the source just after the token
}

type tokenKind int

const (
	tokIdent    tokenKind = iota // a name: a variable, a filter, a loop modifier
	tokKeyword                   // a name followed by ':' (a filter with arguments, limit:)
	tokProperty                  // .name
	tokWord                      // and, or, contains, in, true, false, nil
	tokLiteral                   // a string or a number
	tokPunct                     // anything else
)

var liquidWords = []string{"and", "or", "contains", "in", "true", "false", "nil"}

// lexLiquid splits src the way the engine's scanner does, closely enough to find
// variables, properties and filter names. src is already known to parse.
func lexLiquid(src string) []liquidToken {
	var out []liquidToken
	nameEnd := func(i int) int {
		for i < len(src) && (isNameByte(src[i]) || src[i] == '-') {
			i++
		}
		if i < len(src) && src[i] == '?' {
			i++
		}
		return i
	}
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '"' || c == '\'':
			end := strings.IndexByte(src[i+1:], c)
			if end < 0 {
				end = len(src) - i - 1
			}
			i += end + 2
			out = append(out, liquidToken{kind: tokLiteral, end: min(i, len(src))})
		case '0' <= c && c <= '9' || c == '-' && i+1 < len(src) && '0' <= src[i+1] && src[i+1] <= '9':
			i++
			for i < len(src) && '0' <= src[i] && src[i] <= '9' {
				i++
			}
			if i+1 < len(src) && src[i] == '.' && '0' <= src[i+1] && src[i+1] <= '9' {
				i++
				for i < len(src) && '0' <= src[i] && src[i] <= '9' {
					i++
				}
			}
			out = append(out, liquidToken{kind: tokLiteral, end: i})
		case c == '.' && i+1 < len(src) && isNameStart(src[i+1]):
			end := nameEnd(i + 1)
			out = append(out, liquidToken{kind: tokProperty, text: src[i+1 : end], end: end})
			i = end
		case isNameStart(c):
			end := nameEnd(i)
			name := src[i:end]
			switch {
			case end < len(src) && src[end] == ':':
				out = append(out, liquidToken{kind: tokKeyword, text: name, end: end + 1})
				end++
			case slices.Contains(liquidWords, name):
				out = append(out, liquidToken{kind: tokWord, text: name, end: end})
			default:
				out = append(out, liquidToken{kind: tokIdent, text: name, end: end})
			}
			i = end
		case c == '.' && i+1 < len(src) && src[i+1] == '.':
			out = append(out, liquidToken{kind: tokPunct, text: "..", end: i + 2})
			i += 2
		default:
			out = append(out, liquidToken{kind: tokPunct, text: string(c), end: i + 1})
			i++
		}
	}
	return out
}
