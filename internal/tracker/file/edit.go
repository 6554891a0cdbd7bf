package file

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/go-json-experiment/json/jsontext"

	"sortie/internal/tracker"
)

// The edits in this file rewrite one issue object, and the file around it keeps
// every other byte as it was: other issues, unknown fields, key order, whitespace and
// line endings. New text copies the indentation of its neighbours, so a hand-formatted
// file still looks hand-formatted after Sortie writes to it.

// setState returns the object obj of an issue with its state set to state and its
// updated_at to updatedAt, adding updated_at if the issue has none.
func setState(obj []byte, state, updatedAt string) ([]byte, error) {
	ms, err := objectMembers(obj)
	if err != nil {
		return nil, err
	}
	var edits []replacement
	si := lastMember(ms, "state")
	if si < 0 {
		return nil, fmt.Errorf("the issue has no state field")
	}
	edits = append(edits, replacement{ms[si].valStart, ms[si].valEnd, encodeJSON(state, "", "", "")})
	edits = append(edits, setUpdatedAt(obj, ms, updatedAt))
	return applyEdits(obj, edits), nil
}

// setUpdatedAt is the edit that sets the updated_at, adding it if the issue has
// none.
func setUpdatedAt(obj []byte, ms []member, updatedAt string) replacement {
	if ui := lastMember(ms, "updated_at"); ui >= 0 {
		return replacement{ms[ui].valStart, ms[ui].valEnd, encodeJSON(updatedAt, "", "", "")}
	}
	return appendMember(obj, ms, "updated_at", encodeJSON(updatedAt, "", "", ""))
}

// addLabel returns the object obj of an issue with label appended to its labels and its
// updated_at set to updatedAt. The labels array is created when absent; a new element
// follows the last one as it follows the one before (on one line, after ", " when the
// array has a single element).
func addLabel(obj []byte, label, updatedAt string) ([]byte, error) {
	ms, err := objectMembers(obj)
	if err != nil {
		return nil, err
	}
	edits := []replacement{setUpdatedAt(obj, ms, updatedAt)}
	li := lastMember(ms, "labels")
	if li < 0 {
		arr := append(append([]byte{'['}, encodeJSON(label, "", "", "")...), ']')
		edits = append(edits, appendMember(obj, ms, "labels", arr))
		return applyEdits(obj, edits), nil
	}
	m := ms[li]
	val := obj[m.valStart:m.valEnd]
	elems, err := arrayElements(val)
	if err != nil {
		return nil, err
	}
	if len(elems) == 0 {
		arr := append(append([]byte{'['}, encodeJSON(label, "", "", "")...), ']')
		edits = append(edits, replacement{m.valStart, m.valEnd, arr})
		return applyEdits(obj, edits), nil
	}
	last := elems[len(elems)-1]
	sep := memberSep(val, last.start)
	if len(elems) == 1 && !bytes.ContainsRune(sep, '\n') {
		sep = []byte{' '}
	}
	text := append([]byte{','}, sep...)
	text = append(text, encodeJSON(label, "", "", "")...)
	at := m.valStart + last.end
	edits = append(edits, replacement{at, at, text})
	return applyEdits(obj, edits), nil
}

// appendComment returns the object obj of an issue with c appended to its comments,
// creating the comments array if it is absent, null or empty. objIndent is the
// indentation of the line the object starts on.
func appendComment(obj []byte, objIndent string, c tracker.Comment) ([]byte, error) {
	ms, err := objectMembers(obj)
	if err != nil {
		return nil, err
	}
	unit := indentUnit(objIndent, obj, ms)
	ci := lastMember(ms, "comments")
	if ci < 0 {
		indent, nl := layout(memberSep(obj, ms[len(ms)-1].keyStart))
		arr := commentArray(c, indent, unit, nl)
		return applyEdits(obj, []replacement{appendMember(obj, ms, "comments", arr)}), nil
	}
	m := ms[ci]
	val := obj[m.valStart:m.valEnd]
	var elems []span
	if !isNull(val) {
		if elems, err = arrayElements(val); err != nil {
			return nil, err
		}
	}
	if len(elems) == 0 {
		indent, nl := layout(memberSep(obj, m.keyStart))
		arr := commentArray(c, indent, unit, nl)
		return applyEdits(obj, []replacement{{m.valStart, m.valEnd, arr}}), nil
	}
	// After the last element, separated from it as it is from the one before.
	last := elems[len(elems)-1]
	sep := memberSep(val, last.start)
	indent, nl := layout(sep)
	text := append([]byte{','}, sep...)
	text = append(text, encodeJSON(c, indent, unit, nl)...)
	at := m.valStart + last.end
	return applyEdits(obj, []replacement{{at, at, text}}), nil
}

// member is one "key": value pair of a JSON object, located by byte offsets into it.
type member struct {
	key      string
	keyStart int // the key's opening quote
	keyEnd   int // just past its closing quote
	valStart int
	valEnd   int
}

// rawOpts read an issues file's JSON as encoding/json does: a repeated key and
// invalid UTF-8 in a string are not errors.
var rawOpts = []jsontext.Options{jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true)}

// objectMembers locates the members of a valid JSON object, in order. Keys are
// unescaped, so "st\u0061te" is state, as encoding/json reads it.
func objectMembers(obj []byte) ([]member, error) {
	dec := jsontext.NewDecoder(bytes.NewReader(obj), rawOpts...)
	if _, err := dec.ReadToken(); err != nil {
		return nil, err
	}
	var ms []member
	prev := int(dec.InputOffset())
	for dec.PeekKind() == '"' {
		tok, err := dec.ReadToken()
		if err != nil {
			return nil, err
		}
		key := tok.String()
		keyEnd := int(dec.InputOffset())
		// Between the previous value and a key there is only whitespace and a comma.
		keyStart := prev + bytes.IndexByte(obj[prev:], '"')
		raw, err := dec.ReadValue()
		if err != nil {
			return nil, err
		}
		valEnd := int(dec.InputOffset())
		ms = append(ms, member{key: key, keyStart: keyStart, keyEnd: keyEnd, valStart: valEnd - len(raw), valEnd: valEnd})
		prev = valEnd
	}
	if _, err := dec.ReadToken(); err != nil { // the closing brace
		return nil, err
	}
	return ms, nil
}

// arrayElements locates the elements of a valid JSON array, in order.
func arrayElements(arr []byte) ([]span, error) {
	dec := jsontext.NewDecoder(bytes.NewReader(arr), rawOpts...)
	if _, err := dec.ReadToken(); err != nil {
		return nil, err
	}
	var out []span
	for k := dec.PeekKind(); k != ']' && k != 0; k = dec.PeekKind() {
		raw, err := dec.ReadValue()
		if err != nil {
			return nil, err
		}
		end := int(dec.InputOffset())
		out = append(out, span{end - len(raw), end})
	}
	if _, err := dec.ReadToken(); err != nil { // the closing bracket
		return nil, err
	}
	return out, nil
}

// lastMember returns the index of the member a reader takes for key, or -1: as
// encoding/json decodes into a struct, the last one whose name matches key exactly or
// case-insensitively.
func lastMember(ms []member, key string) int {
	for i := len(ms) - 1; i >= 0; i-- {
		if strings.EqualFold(ms[i].key, key) {
			return i
		}
	}
	return -1
}

// memberSep returns the whitespace before offset at in b, back to the preceding comma
// or bracket: the separator a new sibling should copy.
func memberSep(b []byte, at int) []byte {
	i := at
	for i > 0 && isSpace(b[i-1]) {
		i--
	}
	return b[i:at]
}

// layout reads a separator: the indentation of the line it ends on, and its line ending
// ("" when the separator has no line break, i.e. the object is on one line).
func layout(sep []byte) (indent, newline string) {
	nl := bytes.LastIndexByte(sep, '\n')
	if nl < 0 {
		return "", ""
	}
	newline = "\n"
	if nl > 0 && sep[nl-1] == '\r' {
		newline = "\r\n"
	}
	return string(sep[nl+1:]), newline
}

// lineIndent is the indentation of the line of data that offset at is on, up to at.
func lineIndent(data []byte, at int) string {
	lineStart := bytes.LastIndexByte(data[:at], '\n') + 1
	return string(data[lineStart : lineStart+skipSpace(data[lineStart:at], 0)])
}

// indentUnit guesses one level of indentation from how far the members are
// indented past the line the issue starts on (objIndent); two spaces when that says
// nothing.
func indentUnit(objIndent string, obj []byte, ms []member) string {
	memberIndent, nl := layout(memberSep(obj, ms[0].keyStart))
	if nl != "" && len(memberIndent) > len(objIndent) && strings.HasPrefix(memberIndent, objIndent) {
		return memberIndent[len(objIndent):]
	}
	return "  "
}

// appendMember adds "key": value after the object's last member, laid out like it.
func appendMember(obj []byte, ms []member, key string, value []byte) replacement {
	last := ms[len(ms)-1]
	text := append([]byte{','}, memberSep(obj, last.keyStart)...)
	text = append(text, encodeJSON(key, "", "", "")...)
	text = append(text, obj[last.keyEnd:last.valStart]...) // the same ": " as its neighbour
	text = append(text, value...)
	return replacement{last.valEnd, last.valEnd, text}
}

// commentArray formats [c] for a member indented by indent; newline "" means on one line.
func commentArray(c tracker.Comment, indent, unit, newline string) []byte {
	if newline == "" {
		return append(append([]byte{'['}, encodeJSON(c, "", "", "")...), ']')
	}
	inner := indent + unit
	var b []byte
	b = append(b, '[')
	b = append(b, newline+inner...)
	b = append(b, encodeJSON(c, inner, unit, newline)...)
	b = append(b, newline+indent+"]"...)
	return b
}

// encodeJSON encodes v without HTML escaping (a hand-edited file should say <, not
// \u003c). With newline "" it is one line; otherwise each nesting level is indented by
// unit, lines after the first start with indent, and lines end with newline.
func encodeJSON(v any, indent, unit, newline string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if newline != "" {
		enc.SetIndent(indent, unit)
	}
	_ = enc.Encode(v) // only strings and tracker.Comment come here; they always encode
	b := bytes.TrimSuffix(buf.Bytes(), []byte{'\n'})
	if newline == "\r\n" {
		// JSON strings cannot hold a raw newline, so every '\n' here is layout.
		b = bytes.ReplaceAll(b, []byte{'\n'}, []byte("\r\n"))
	}
	return b
}

// replacement replaces b[start:end] with text; start == end inserts.
type replacement struct {
	start, end int
	text       []byte
}

// applyEdits applies non-overlapping replacements to b and returns a new slice.
func applyEdits(b []byte, edits []replacement) []byte {
	slices.SortFunc(edits, func(x, y replacement) int { return x.start - y.start })
	out := make([]byte, 0, len(b)+64)
	at := 0
	for _, e := range edits {
		out = append(out, b[at:e.start]...)
		out = append(out, e.text...)
		at = e.end
	}
	return append(out, b[at:]...)
}

func isNull(raw []byte) bool { return string(raw) == "null" }
