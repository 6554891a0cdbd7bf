package prompt

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"text/template"
	"text/template/parse"
)

// MaxPromptBytes bounds a rendered prompt. A template that produces more (a runaway
// range, say) fails to render instead of exhausting memory.
const MaxPromptBytes = 4 << 20

// ErrorKind says whether a template failed to parse or to render.
type ErrorKind string

// Template error kinds.
const (
	ErrParse  ErrorKind = "parse"  // the template is invalid; the workflow cannot be used
	ErrRender ErrorKind = "render" // rendering failed for this issue; the attempt fails
)

// TemplateError is a template that failed to parse or render. Line is the line in the
// WORKFLOW.md file (not in the template body), 0 when text/template did not say.
type TemplateError struct {
	Kind ErrorKind
	Name string // the name given to Parse, usually the WORKFLOW.md path
	Line int
	Err  error // the text/template error
}

func (e *TemplateError) Error() string {
	var loc string
	if e.Line > 0 {
		loc = fmt.Sprintf(" (line %d)", e.Line)
	}
	return fmt.Sprintf("prompt: template %s error in %s%s: %s", e.Kind, e.Name, loc, e.detail())
}

func (e *TemplateError) Unwrap() error { return e.Err }

// detail is Err's message without text/template's "template: NAME:LINE:COL: " prefix,
// whose line is relative to the template body and would mislead.
func (e *TemplateError) detail() string {
	msg := e.Err.Error()
	rest, ok := strings.CutPrefix(msg, "template: "+e.Name+":")
	if !ok {
		return msg
	}
	// Skip "LINE:" or "LINE:COL:", then the space.
	for range 2 {
		digits := len(rest) - len(strings.TrimLeft(rest, "0123456789"))
		if digits == 0 || len(rest) == digits || rest[digits] != ':' {
			break
		}
		rest = rest[digits+1:]
	}
	rest = strings.TrimPrefix(rest, " ")
	// The top-level template is the whole file; naming it again adds nothing.
	return strings.TrimPrefix(rest, "executing "+strconv.Quote(e.Name)+" ")
}

// templateLine extracts the template-relative line from a text/template error, or 0.
func templateLine(name string, err error) int {
	rest, ok := strings.CutPrefix(err.Error(), "template: "+name+":")
	if !ok {
		return 0
	}
	end := len(rest) - len(strings.TrimLeft(rest, "0123456789"))
	n, err := strconv.Atoi(rest[:end])
	if err != nil {
		return 0
	}
	return n
}

func newTemplateError(kind ErrorKind, name string, firstLine int, err error) *TemplateError {
	te := &TemplateError{Kind: kind, Name: name, Err: err}
	if n := templateLine(name, err); n > 0 {
		te.Line = n + firstLine - 1
	}
	return te
}

// Template is a parsed prompt template. It is safe for concurrent Render calls.
type Template struct {
	name      string
	firstLine int
	engine    Engine
	tmpl      *template.Template // EngineGo
	liquid    *liquidTemplate    // EngineLiquid
}

// Parse parses src, the prompt template body of the workflow file name, whose first
// line is line firstLine of that file (1 when the file has no front matter), in the
// dialect DetectEngine finds. It is ParseEngine with EngineAuto.
func Parse(name, src string, firstLine int) (*Template, error) {
	return ParseEngine(name, src, firstLine, EngineAuto)
}

// ParseEngine parses src like Parse in the dialect engine (prompt.engine of the front
// matter), or the detected one for EngineAuto.
//
// The Go dialect is text/template with missingkey=error and exactly three functions:
// toJSON, join and lower. The Liquid dialect is strict: an unknown variable, field or
// filter is an error here when the data's shape shows it, else at render
// (liquidcheck.go). Errors are *TemplateError of kind ErrParse with the line in the
// workflow file.
func ParseEngine(name, src string, firstLine int, engine Engine) (*Template, error) {
	if firstLine < 1 {
		firstLine = 1
	}
	if engine == EngineAuto {
		e, mixed := detect(src)
		if mixed != nil {
			// Name the lines of the file, as the error's own line does.
			mixed.goAt.line += firstLine - 1
			mixed.liquidAt.line += firstLine - 1
			return nil, &TemplateError{Kind: ErrParse, Name: name, Line: mixed.line(), Err: mixed}
		}
		engine = e
	}
	switch engine {
	case EngineGo:
	case EngineLiquid:
		lt, err := parseLiquid(name, src, firstLine)
		if err != nil {
			return nil, err
		}
		return &Template{name: name, firstLine: firstLine, engine: engine, liquid: lt}, nil
	default:
		return nil, &TemplateError{Kind: ErrParse, Name: name, Err: fmt.Errorf("unknown template engine %q (known: go, liquid)", engine)}
	}
	t, err := template.New(name).Option("missingkey=error").Funcs(funcs()).Parse(src)
	if err != nil {
		return nil, newTemplateError(ErrParse, name, firstLine, err)
	}
	// Registered only after parsing, so a template cannot call it by name.
	t.Funcs(template.FuncMap{printFunc: printable})
	for _, tt := range t.Templates() {
		if tt.Tree != nil {
			printNilAsEmpty(tt.Tree, tt.Tree.Root)
		}
	}
	return &Template{name: name, firstLine: firstLine, engine: engine, tmpl: t}, nil
}

// Name returns the name the template was parsed with.
func (t *Template) Name() string { return t.name }

// Engine returns the dialect the template was parsed in.
func (t *Template) Engine() Engine { return t.engine }

// Render executes the template against d. A reference to a key the data does not have
// (`{{ .issue.nonexistent }}`), a call with wrong arguments, or output beyond
// MaxPromptBytes is a *TemplateError of kind ErrRender, with the workflow-file line
// when known. A nil value prints as nothing, never as "<no value>".
func (t *Template) Render(d Data) (string, error) {
	data, err := d.templateData()
	if err != nil {
		return "", &TemplateError{Kind: ErrRender, Name: t.name, Err: err}
	}
	buf := &limitedBuffer{max: MaxPromptBytes}
	if t.liquid != nil {
		if err := t.liquid.render(t.name, buf, data); err != nil {
			return "", err
		}
		return buf.String(), nil
	}
	if err := t.tmpl.Execute(buf, data); err != nil {
		return "", newTemplateError(ErrRender, t.name, t.firstLine, err)
	}
	return buf.String(), nil
}

// printFunc is appended to every printing action by printNilAsEmpty. Its name is a
// valid identifier that no template can reach (see Parse).
const printFunc = "sortie_print_value"

// printable maps a nil pipeline result to "", leaving everything else to
// text/template's usual printing.
func printable(v any) any {
	if v == nil {
		return ""
	}
	return v
}

// printNilAsEmpty rewrites every printing action {{ pipeline }} under n into
// {{ pipeline | sortie_print_value }}. text/template prints a nil value, such as the
// priority of an issue that has none, as "<no value>", which must never reach an agent.
// Actions that declare or assign variables print nothing and are left alone.
func printNilAsEmpty(tree *parse.Tree, n parse.Node) {
	switch n := n.(type) {
	case *parse.ListNode:
		if n == nil {
			return
		}
		for _, c := range n.Nodes {
			printNilAsEmpty(tree, c)
		}
	case *parse.ActionNode:
		if n.Pipe == nil || len(n.Pipe.Decl) > 0 {
			return
		}
		id := parse.NewIdentifier(printFunc).SetTree(tree).SetPos(n.Pos)
		n.Pipe.Cmds = append(n.Pipe.Cmds, &parse.CommandNode{NodeType: parse.NodeCommand, Pos: n.Pos, Args: []parse.Node{id}})
	case *parse.IfNode:
		printNilAsEmpty(tree, n.List)
		printNilAsEmpty(tree, n.ElseList)
	case *parse.RangeNode:
		printNilAsEmpty(tree, n.List)
		printNilAsEmpty(tree, n.ElseList)
	case *parse.WithNode:
		printNilAsEmpty(tree, n.List)
		printNilAsEmpty(tree, n.ElseList)
	}
}

var errPromptTooLarge = fmt.Errorf("rendered prompt exceeds %d bytes", MaxPromptBytes)

// limitedBuffer fails writes that would take it past max bytes, which aborts Execute.
type limitedBuffer struct {
	bytes.Buffer
	max int
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if b.Len()+len(p) > b.max {
		return 0, errPromptTooLarge
	}
	return b.Buffer.Write(p)
}
