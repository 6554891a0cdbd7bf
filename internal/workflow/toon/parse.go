package toon

import (
	"errors"
	"fmt"
	"strings"
)

// line is one physical line of the document.
type line struct {
	num    int // 1-based
	indent int // bytes of indentation before text
	depth  int
	text   string // content after indentation
	blank  bool
}

type parser struct {
	src    string
	opts   Options
	lines  []line
	blanks []int // blanks[i] = number of blank lines among lines[:i]
	pos    int   // next unread line
	last   int   // last consumed non-blank line
}

func newParser(src string, opts Options) *parser {
	return &parser{src: src, opts: opts, last: -1}
}

// scan splits the document into lines and measures their depth (§12).
func (p *parser) scan() error {
	raw := strings.Split(p.src, "\n")
	p.lines = make([]line, 0, len(raw))
	p.blanks = make([]int, 1, len(raw)+1)
	for i, s := range raw {
		// A CR before the LF is tolerated so files edited on Windows load.
		s = strings.TrimSuffix(s, "\r")
		ln := line{num: i + 1}
		spaces, units := 0, 0
		j := 0
	indent:
		for ; j < len(s); j++ {
			switch s[j] {
			case ' ':
				spaces++
			case '\t':
				if strings.TrimLeft(s[j:], " \t") == "" {
					break indent
				}
				if p.opts.Strict {
					return p.errAt(&ln, j, "tab in indentation; indent with spaces")
				}
				units++
			default:
				break indent
			}
		}
		ln.indent = j
		ln.text = s[j:]
		if strings.TrimLeft(ln.text, " \t") == "" {
			ln.blank = true
		} else {
			if p.opts.Strict && spaces%p.opts.Indent != 0 {
				return p.errAt(&line{num: ln.num}, 0, fmt.Sprintf("indentation of %d spaces is not a multiple of %d", spaces, p.opts.Indent))
			}
			ln.depth = spaces/p.opts.Indent + units
		}
		p.lines = append(p.lines, ln)
		n := p.blanks[len(p.blanks)-1]
		if ln.blank {
			n++
		}
		p.blanks = append(p.blanks, n)
	}
	return nil
}

func (p *parser) errAt(ln *line, off int, msg string) error {
	return &SyntaxError{Line: ln.num, Column: ln.indent + off + 1, Msg: msg}
}

// wrap turns a tokenError from text starting at byte base of ln into a
// SyntaxError.
func (p *parser) wrap(ln *line, base int, err error) error {
	var te *tokenError
	if errors.As(err, &te) {
		return p.errAt(ln, base+te.off, te.msg)
	}
	return err
}

// peek returns the next non-blank line, or nil at the end.
func (p *parser) peek() *line {
	for i := p.pos; i < len(p.lines); i++ {
		if !p.lines[i].blank {
			return &p.lines[i]
		}
	}
	return nil
}

// take consumes the line returned by peek.
func (p *parser) take(ln *line) {
	p.pos = ln.num
	p.last = ln.num - 1
}

func (p *parser) parseRoot() (any, error) {
	first := p.peek()
	if first == nil {
		return newObject(), nil
	}
	nonBlank := len(p.lines) - p.blanks[len(p.lines)]
	h, ok, err := parseHead(first.text, p.opts.Strict)
	if err != nil {
		return nil, p.wrap(first, 0, err)
	}
	var v any
	switch {
	case ok && h.isArray && !h.hasKey:
		p.take(first)
		v, err = p.parseArray(first, h, 1, 0)
	case nonBlank == 1 && strings.TrimSpace(first.text) == "[]":
		p.take(first)
		v = []any{}
	case nonBlank == 1 && !ok:
		p.take(first)
		v, err = parsePrimitive(strings.TrimSpace(first.text))
		err = p.wrap(first, 0, err)
	default:
		obj := newObject()
		err = p.parseObject(obj, 0, 0)
		v = obj
	}
	if err != nil {
		return nil, err
	}
	if ln := p.peek(); ln != nil {
		return nil, p.errAt(ln, 0, "unexpected content after the root value")
	}
	return v, nil
}

// parseObject reads the fields of obj at depth until a shallower line.
func (p *parser) parseObject(obj *Object, depth, nest int) error {
	if nest > MaxDepth {
		if ln := p.peek(); ln != nil {
			return p.errAt(ln, 0, fmt.Sprintf("nesting deeper than %d levels", MaxDepth))
		}
	}
	seen := map[string]bool{}
	for {
		ln := p.peek()
		if ln == nil || ln.depth < depth {
			return nil
		}
		if ln.depth > depth {
			return p.errAt(ln, 0, "unexpected indentation")
		}
		p.take(ln)
		if err := p.parseField(obj, seen, ln, ln.text, 0, depth, nest); err != nil {
			return err
		}
	}
}

// parseField parses the field whose text starts at byte base of ln and
// stores it in obj. Its nested content is at depth+1.
func (p *parser) parseField(obj *Object, seen map[string]bool, ln *line, text string, base, depth, nest int) error {
	h, ok, err := parseHead(text, p.opts.Strict)
	if err != nil {
		return p.wrap(ln, base, err)
	}
	if !ok {
		return p.errAt(ln, base, fmt.Sprintf("missing ':' after key %q", strings.TrimSpace(text)))
	}
	if !h.hasKey {
		return p.errAt(ln, base, "array header without a key inside an object")
	}
	v, err := p.fieldValue(ln, h, base, depth+1, nest)
	if err != nil {
		return err
	}
	dup := seen[h.key]
	if dup && p.opts.Strict {
		return p.errAt(ln, base, fmt.Sprintf("duplicate key %q", h.key))
	}
	seen[h.key] = true
	return p.insert(obj, h.key, h.quoted, dup, v, ln, base)
}

// fieldValue decodes the value after a key's colon; nested lines are at
// child depth.
func (p *parser) fieldValue(ln *line, h head, base, child, nest int) (any, error) {
	if h.isArray {
		return p.parseArray(ln, h, child, nest+1)
	}
	switch h.rest {
	case "":
		obj := newObject()
		return obj, p.parseObject(obj, child, nest+1)
	case "[]":
		return []any{}, nil
	}
	v, err := parsePrimitive(h.rest)
	return v, p.wrap(ln, base+h.restOff, err)
}

// parseArray decodes the body of an array header found on ln; its rows or
// list items are at depth child.
func (p *parser) parseArray(ln *line, h head, child, nest int) (any, error) {
	if nest > MaxDepth {
		return nil, p.errAt(ln, 0, fmt.Sprintf("nesting deeper than %d levels", MaxDepth))
	}
	firstItem := -1
	var items []any
	var err error
	switch {
	case h.tabular:
		if h.rest != "" {
			return nil, p.errAt(ln, h.restOff, "tabular header must end the line; rows go on the following lines")
		}
		items, firstItem, err = p.parseRows(h, child)
	case h.rest != "":
		items, err = p.parseInline(ln, h)
	default:
		items, firstItem, err = p.parseItems(h, child, nest)
	}
	if err != nil {
		return nil, err
	}
	if p.opts.Strict {
		if len(items) != h.length {
			what := "values"
			if h.tabular {
				what = "rows"
			} else if h.rest == "" {
				what = "list items"
			}
			return nil, p.errAt(ln, 0, fmt.Sprintf("array declares [%d] but has %d %s", h.length, len(items), what))
		}
		if firstItem >= 0 && p.blanks[p.last+1]-p.blanks[firstItem] > 0 {
			for i := firstItem; i <= p.last; i++ {
				if p.lines[i].blank {
					return nil, p.errAt(&p.lines[i], 0, "blank line inside an array")
				}
			}
		}
	}
	if items == nil {
		items = []any{}
	}
	return items, nil
}

func (p *parser) parseInline(ln *line, h head) ([]any, error) {
	var items []any
	for _, tok := range splitDelimited(h.rest, h.delim, h.restOff) {
		v, err := parsePrimitive(tok.text)
		if err != nil {
			return nil, p.wrap(ln, tok.off, err)
		}
		items = append(items, v)
	}
	return items, nil
}

// parseRows reads tabular rows at depth (§9.3).
func (p *parser) parseRows(h head, depth int) ([]any, int, error) {
	var items []any
	first := -1
	for {
		ln := p.peek()
		if ln == nil || ln.depth < depth {
			break
		}
		if ln.depth > depth {
			return nil, 0, p.errAt(ln, 0, "unexpected indentation in tabular rows")
		}
		// A line with an unquoted colon before any unquoted delimiter is a
		// key-value line, which ends the rows (§9.3).
		colon := firstUnquoted(ln.text, ':')
		if colon >= 0 {
			if d := firstUnquoted(ln.text, h.delim); d < 0 || colon < d {
				break
			}
		}
		p.take(ln)
		if first < 0 {
			first = ln.num - 1
		}
		cells := splitDelimited(ln.text, h.delim, 0)
		if p.opts.Strict && len(cells) != len(h.fields) {
			return nil, 0, p.errAt(ln, 0, fmt.Sprintf("row has %d values but the header declares %d fields", len(cells), len(h.fields)))
		}
		row := newObject()
		for i, c := range cells {
			if i >= len(h.fields) {
				break
			}
			v, err := parsePrimitive(c.text)
			if err != nil {
				return nil, 0, p.wrap(ln, c.off, err)
			}
			row.set(h.fields[i], v)
		}
		items = append(items, row)
	}
	return items, first, nil
}

// parseItems reads "- " list items at depth (§9.2, §9.4, §10).
func (p *parser) parseItems(h head, depth, nest int) ([]any, int, error) {
	var items []any
	first := -1
	for {
		ln := p.peek()
		if ln == nil || ln.depth < depth {
			break
		}
		if ln.depth > depth {
			return nil, 0, p.errAt(ln, 0, "unexpected indentation in list")
		}
		if ln.text != "-" && !strings.HasPrefix(ln.text, "- ") {
			return nil, 0, p.errAt(ln, 0, `expected a list item starting with "- "`)
		}
		p.take(ln)
		if first < 0 {
			first = ln.num - 1
		}
		v, err := p.parseItem(ln, depth, nest)
		if err != nil {
			return nil, 0, err
		}
		items = append(items, v)
	}
	return items, first, nil
}

func (p *parser) parseItem(ln *line, depth, nest int) (any, error) {
	if ln.text == "-" {
		obj := newObject()
		return obj, p.parseObject(obj, depth+1, nest+1)
	}
	text := strings.TrimLeft(ln.text[2:], " ")
	base := len(ln.text) - len(text)
	h, ok, err := parseHead(text, p.opts.Strict)
	if err != nil {
		return nil, p.wrap(ln, base, err)
	}
	switch {
	case !ok:
		v, err := parsePrimitive(strings.TrimRight(text, " \t"))
		return v, p.wrap(ln, base, err)
	case h.isArray && !h.hasKey:
		return p.parseArray(ln, h, depth+1, nest+1)
	}
	// An object whose first field sits on the hyphen line: that field's
	// nested content is at depth+2, the other fields at depth+1 (§10).
	obj := newObject()
	seen := map[string]bool{}
	if err := p.parseField(obj, seen, ln, text, base, depth+1, nest+1); err != nil {
		return nil, err
	}
	for {
		next := p.peek()
		if next == nil || next.depth != depth+1 {
			break
		}
		p.take(next)
		if err := p.parseField(obj, seen, next, next.text, 0, depth+1, nest+1); err != nil {
			return nil, err
		}
	}
	return obj, nil
}
