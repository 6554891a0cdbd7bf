// Package toon decodes TOON (Token-Oriented Object Notation) documents, as
// specified by TOON 3.3 (SPEC.md in the toon-format/spec repository), into
// JSON-like Go values. It owns parsing, strict-mode validation and optional
// path expansion; it does not encode TOON.
//
// Decoded values are *Object (key order preserved, §2), []any, string,
// float64, bool and nil. Numbers are float64: integers beyond 2^53 are
// approximated, and a numeric token too large for float64 (for example
// 1e400) decodes as its literal string, which is the out-of-range policy
// §4 asks implementations to document. Tabs in indentation are errors in
// strict mode; in lenient mode each tab counts as one indentation unit.
package toon

import (
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"
)

// Path expansion modes for Options.ExpandPaths (§13.4).
const (
	ExpandOff  = "off"
	ExpandSafe = "safe"
)

// MaxDepth is the deepest nesting of objects and arrays Decode accepts; a
// deeper document is rejected with an error rather than exhausting the stack.
const MaxDepth = 256

// Options are the decoder options of §13. The zero value is lenient
// (Strict false); DefaultOptions returns the spec's defaults.
type Options struct {
	// Indent is the number of spaces per indentation level; 0 means 2.
	Indent int
	// Strict enables the strict-mode errors of §14: count and width
	// mismatches, indentation that is not a multiple of Indent, tabs in
	// indentation, blank lines inside arrays, duplicate keys and malformed
	// headers. When false, duplicates are last-write-wins and blank lines in
	// arrays are ignored.
	Strict bool
	// ExpandPaths is ExpandOff ("" means off) or ExpandSafe, which splits
	// unquoted dotted keys such as a.b.c into nested objects.
	ExpandPaths string
}

// DefaultOptions returns the defaults of §13: indent 2, strict, no path
// expansion.
func DefaultOptions() Options {
	return Options{Indent: 2, Strict: true, ExpandPaths: ExpandOff}
}

// SyntaxError reports where a document is malformed. Line and Column are
// 1-based; Column counts bytes.
type SyntaxError struct {
	Line   int
	Column int
	Msg    string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("toon: line %d, column %d: %s", e.Line, e.Column, e.Msg)
}

// Decode parses a TOON document into a JSON-like value (see the package
// documentation for the types). Malformed input yields a *SyntaxError; bad
// options yield a plain error.
func Decode(data []byte, opts Options) (any, error) {
	if opts.Indent == 0 {
		opts.Indent = 2
	}
	if opts.Indent < 0 {
		return nil, fmt.Errorf("toon: options: indent must be positive (got %d)", opts.Indent)
	}
	switch opts.ExpandPaths {
	case "", ExpandOff, ExpandSafe:
	default:
		return nil, fmt.Errorf("toon: options: expandPaths must be %q or %q (got %q)", ExpandOff, ExpandSafe, opts.ExpandPaths)
	}
	if !utf8.Valid(data) {
		return nil, invalidUTF8(data)
	}
	p := newParser(string(data), opts)
	if err := p.scan(); err != nil {
		return nil, err
	}
	return p.parseRoot()
}

// Unmarshal decodes a TOON document with DefaultOptions and stores the
// result in v the way encoding/json would store the equivalent JSON.
func Unmarshal(data []byte, v any) error {
	val, err := Decode(data, DefaultOptions())
	if err != nil {
		return err
	}
	b, err := json.Marshal(val)
	if err != nil {
		return fmt.Errorf("toon: %w", err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		var ute *json.UnmarshalTypeError
		if errors.As(err, &ute) {
			return fmt.Errorf("toon: field %q: cannot store %s in %s", ute.Field, ute.Value, ute.Type)
		}
		return fmt.Errorf("toon: %w", err)
	}
	return nil
}

func invalidUTF8(data []byte) error {
	line, col := 1, 1
	for len(data) > 0 {
		r, size := utf8.DecodeRune(data)
		if r == utf8.RuneError && size <= 1 {
			break
		}
		if r == '\n' {
			line, col = line+1, 1
		} else {
			col += size
		}
		data = data[size:]
	}
	return &SyntaxError{Line: line, Column: col, Msg: "invalid UTF-8"}
}
