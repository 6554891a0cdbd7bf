package file

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"sortie/internal/tracker"
)

// document is one parsed issues file: the normalised issues in file order, and where
// each issue's object sits in the bytes it was parsed from, so that an edit can rewrite
// one issue and leave every other byte alone.
type document struct {
	issues       []*tracker.Issue // shared with the documents patched from this one: never modified
	spans        []span           // spans[i] is the byte range of issues[i]'s object
	byID         map[string]int
	byIdentifier map[string]int
	// blockers[i] is issues[i]'s blocked_by as written, before fillBlockers completed
	// it from the issues it points at; absent for an issue without blockers (nil when
	// no issue has any: copied per write, so sized by the issues with blockers). A document
	// patched after an edit (patch) fills them again from the issues' new states.
	blockers map[int][]tracker.BlockerRef
}

// span is a half-open byte range [start, end).
type span struct{ start, end int }

var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// parse validates and normalises an issues file (reference §3.3). Its errors carry a
// line and column or an issue's position for the operator, and no tracker kind: the
// caller adds it.
func parse(data []byte) (*document, error) {
	// Some Windows editors start UTF-8 files with a byte-order mark; encoding/json
	// rejects it, an operator would not understand why.
	base := 0
	if bytes.HasPrefix(data, utf8BOM) {
		base = len(utf8BOM)
	}
	if len(bytes.TrimSpace(data[base:])) == 0 {
		return nil, errors.New("the file is empty; an issues file is a JSON array of issue objects ([] for none)")
	}
	doc, err := parseArray(data, base)
	// Issues are checked as they stream by, so a bad issue can be found before a
	// syntax error further down. Broken JSON is the more basic problem: report it.
	if err != nil && !json.Valid(data[base:]) {
		return nil, syntaxError(data, base)
	}
	return doc, err
}

func parseArray(data []byte, base int) (*document, error) {
	dec := json.NewDecoder(bytes.NewReader(data[base:]))
	dec.UseNumber() // keeps a number's literal text, for the integer-priority rule
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		start := base + skipSpace(data[base:], 0)
		return nil, fmt.Errorf("%s: the top level must be a JSON array of issue objects, found %s",
			position(data, start), describeToken(tok))
	}

	doc := &document{byID: map[string]int{}, byIdentifier: map[string]int{}}
	for dec.More() {
		from := base + int(dec.InputOffset())
		var w wireIssue
		if err := dec.Decode(&w); err != nil {
			var te *json.UnmarshalTypeError
			if !errors.As(err, &te) || te.Field != "" {
				return nil, err
			}
			w = wireIssue{notObject: te.Value}
		}
		// Between the previous element and this one there is only whitespace and a comma.
		sp := span{from, base + int(dec.InputOffset())}
		for data[sp.start] == ',' || isSpace(data[sp.start]) {
			sp.start++
		}
		if string(data[sp.start:sp.end]) == "null" { // decodes into a struct without error
			w.notObject = "null"
		}
		n := len(doc.issues)
		iss, err := w.issue()
		if err != nil {
			return nil, fmt.Errorf("issue #%d (line %d): %w", n+1, lineOf(data, sp.start), err)
		}
		if prev, dup := doc.byID[iss.ID]; dup {
			return nil, fmt.Errorf("issue #%d (line %d) has the same id %q as issue #%d (line %d); ids must be unique",
				n+1, lineOf(data, sp.start), iss.ID, prev+1, lineOf(data, doc.spans[prev].start))
		}
		if prev, dup := doc.byIdentifier[iss.Identifier]; dup {
			return nil, fmt.Errorf("issue #%d (line %d) has the same identifier %q as issue #%d (line %d); identifiers must be unique",
				n+1, lineOf(data, sp.start), iss.Identifier, prev+1, lineOf(data, doc.spans[prev].start))
		}
		doc.byID[iss.ID] = n
		doc.byIdentifier[iss.Identifier] = n
		doc.issues = append(doc.issues, &iss)
		doc.spans = append(doc.spans, sp)
	}
	// The closing ']' and then nothing: a json.Decoder reads a stream of values, so
	// trailing data must be rejected by hand.
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("unexpected data after the issues array")
	}
	fillBlockers(doc)
	return doc, nil
}

// fillBlockers completes blocker refs that point at an issue in the same file: a missing
// state (and id or identifier) is taken from that issue, so "blocked by" follows the
// blocker's live state. A state written in the ref is the operator's and is kept.
func fillBlockers(doc *document) {
	for i := range doc.issues {
		if len(doc.issues[i].BlockedBy) > 0 {
			if doc.blockers == nil {
				doc.blockers = map[int][]tracker.BlockerRef{}
			}
			doc.blockers[i] = slices.Clone(doc.issues[i].BlockedBy)
		}
	}
	refillBlockers(doc)
}

// refillBlockers is fillBlockers for a document whose blockers, as written, are
// known: those of the issues in doc.blockers, which hold copies of them.
func refillBlockers(doc *document) {
	for i := range doc.blockers {
		for j := range doc.issues[i].BlockedBy {
			b := &doc.issues[i].BlockedBy[j]
			k, ok := doc.byID[b.ID]
			if !ok {
				k, ok = doc.byIdentifier[b.Identifier]
			}
			if !ok {
				continue
			}
			ref := doc.issues[k]
			if b.State == "" {
				b.State = ref.State
			}
			if b.ID == "" {
				b.ID = ref.ID
			}
			if b.Identifier == "" {
				b.Identifier = ref.Identifier
			}
		}
	}
}

// parseObject validates and normalises one issue object on its own, as parseArray
// does each element: how an edited issue is checked without parsing the whole file.
func parseObject(obj []byte) (tracker.Issue, error) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	dec.UseNumber()
	var w wireIssue
	if err := dec.Decode(&w); err != nil {
		return tracker.Issue{}, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return tracker.Issue{}, errors.New("unexpected data after the issue object")
	}
	return w.issue()
}

// patch is the document of data with the objects of the issues in objs (index → new
// object) replaced by their new bytes, whose parses are in issues: the new file content
// and its document, built from doc without parsing the other issues again. The content
// is written into a buffer of readBuffers (the tracker recycles it once it is no longer
// the file's cached or last written content). doc is not changed; the new document
// shares its unchanged issues' data, which no one modifies (callers copy what they
// hand out).
func patch(data []byte, doc *document, objs map[int][]byte, issues map[int]tracker.Issue) ([]byte, *document) {
	grow := 0
	for i, obj := range objs {
		grow += len(obj) - (doc.spans[i].end - doc.spans[i].start)
	}
	out := scratch()
	if need := len(data) + max(grow, 0); cap(out) < need {
		recycle(out)
		out = make([]byte, 0, need+need/16) // room for the comments to come
	}
	after := &document{
		issues:       slices.Clone(doc.issues),
		spans:        make([]span, len(doc.spans)),
		byID:         doc.byID, // ids and identifiers are unchanged (checked by the caller)
		byIdentifier: doc.byIdentifier,
		blockers:     maps.Clone(doc.blockers),
	}
	at, delta := 0, 0
	for i, sp := range doc.spans {
		obj, ok := objs[i]
		if !ok {
			after.spans[i] = span{sp.start + delta, sp.end + delta}
			continue
		}
		out = append(out, data[at:sp.start]...)
		start := len(out)
		out = append(out, obj...)
		after.spans[i] = span{start, len(out)}
		at = sp.end
		delta = len(out) - at
		edited := issues[i]
		after.issues[i] = &edited
		delete(after.blockers, i)
		if len(issues[i].BlockedBy) > 0 {
			if after.blockers == nil {
				after.blockers = map[int][]tracker.BlockerRef{}
			}
			after.blockers[i] = slices.Clone(issues[i].BlockedBy)
		}
	}
	out = append(out, data[at:]...)
	// Blocker refs follow their issues' new states: fill them again, as written, in
	// copies of the issues that have them (the old document's stay as they are).
	if len(after.blockers) == 0 {
		after.blockers = nil // as parse leaves it
	}
	for i, refs := range after.blockers {
		c := *after.issues[i]
		c.BlockedBy = slices.Clone(refs)
		after.issues[i] = &c
	}
	refillBlockers(after)
	return out, after
}

// syntaxError explains why data is not valid JSON, with the line and column of the first
// offending character. It is only called once decoding failed, so the second scan costs
// nothing on the happy path.
func syntaxError(data []byte, base int) error {
	var v json.RawMessage
	err := json.Unmarshal(data[base:], &v)
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		return errors.New("invalid JSON")
	}
	// Offset counts the bytes read including the offending one; at end of input it is
	// the input's length.
	off := base + int(se.Offset) - 1
	msg := se.Error()
	if int(se.Offset) >= len(data)-base && strings.Contains(msg, "end of JSON input") {
		off = len(data)
		msg += " (is the file truncated?)"
	}
	return fmt.Errorf("%s: invalid JSON: %s", position(data, max(off, 0)), msg)
}

// position formats the 1-based line and column (in characters) of byte offset off.
func position(data []byte, off int) string {
	off = min(off, len(data))
	lineStart := bytes.LastIndexByte(data[:off], '\n') + 1
	line := bytes.Count(data[:lineStart], []byte{'\n'}) + 1
	col := utf8.RuneCount(data[lineStart:off]) + 1
	return fmt.Sprintf("line %d, column %d", line, col)
}

func lineOf(data []byte, off int) int {
	return bytes.Count(data[:min(off, len(data))], []byte{'\n'}) + 1
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func describeToken(tok json.Token) string {
	switch v := tok.(type) {
	case json.Delim:
		if v == '{' {
			return "an object"
		}
		return fmt.Sprintf("%q", v.String())
	case string:
		return "a string"
	case float64, json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%v", tok)
}

// describe names the JSON type of a decoded value for an error message.
func describe(v any) string {
	switch v.(type) {
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return "a number"
}

// wireIssue is one array element as decoded. Keys match as encoding/json matches them
// (exactly, else case-insensitively, the last match winning), which is what the
// reference adapter does; the editor finds the same key. Scalars decode into any so a
// wrong type gets our message rather than encoding/json's; the fields where absent and
// null mean different things stay raw.
type wireIssue struct {
	ID          any             `json:"id"`
	Identifier  any             `json:"identifier"`
	Title       any             `json:"title"`
	State       any             `json:"state"`
	Description any             `json:"description"`
	BranchName  any             `json:"branch_name"`
	URL         any             `json:"url"`
	Assignee    any             `json:"assignee"`
	IssueType   any             `json:"issue_type"`
	CreatedAt   any             `json:"created_at"`
	UpdatedAt   any             `json:"updated_at"`
	Priority    any             `json:"priority"`
	Labels      json.RawMessage `json:"labels"`
	BlockedBy   json.RawMessage `json:"blocked_by"`
	Comments    json.RawMessage `json:"comments"`
	Parent      json.RawMessage `json:"parent"`

	notObject string // set when the element was not an object: what it was
}

// issue validates and normalises a decoded element.
func (w *wireIssue) issue() (tracker.Issue, error) {
	if w.notObject != "" {
		return tracker.Issue{}, fmt.Errorf("must be a JSON object, found %s", article(w.notObject))
	}
	var f fields
	iss := tracker.Issue{
		ID:          f.required("id", w.ID),
		Identifier:  f.required("identifier", w.Identifier),
		Title:       f.required("title", w.Title),
		State:       f.required("state", w.State),
		Description: f.optional("description", w.Description),
		BranchName:  f.optional("branch_name", w.BranchName),
		URL:         f.optional("url", w.URL),
		Assignee:    f.optional("assignee", w.Assignee),
		IssueType:   f.optional("issue_type", w.IssueType),
		CreatedAt:   f.optional("created_at", w.CreatedAt),
		UpdatedAt:   f.optional("updated_at", w.UpdatedAt),
		Priority:    priority(w.Priority),
		Labels:      f.labels(f.raw("labels", w.Labels, true)),
		BlockedBy:   f.blockers(f.raw("blocked_by", w.BlockedBy, true)),
		Comments:    f.comments(f.raw("comments", w.Comments, false)),
		Parent:      f.parent(f.raw("parent", w.Parent, false)),
	}
	return iss, f.err
}

// article turns encoding/json's name for a JSON type ("number", "array") into ours.
func article(jsonType string) string {
	switch jsonType {
	case "array":
		return "an array"
	case "string", "number":
		return "a " + jsonType
	case "bool":
		return "a boolean"
	}
	return jsonType
}

// priority is the value of an integer priority; anything else (2.5, 2.0, 1e2, "high",
// true, null, absent, out of range) is no priority, as in the reference adapter.
func priority(v any) *int {
	num, ok := v.(json.Number)
	if !ok || strings.ContainsAny(string(num), ".eE") {
		return nil
	}
	n, err := strconv.Atoi(string(num))
	if err != nil {
		return nil
	}
	return &n
}

// fields validates values of one JSON object, keeping the first error.
type fields struct {
	path string // prefix for error messages, e.g. `blocked_by[2].`
	err  error
}

func (f *fields) fail(format string, args ...any) {
	if f.err == nil {
		f.err = fmt.Errorf(format, args...)
	}
}

func (f *fields) required(key string, v any) string {
	if v == nil {
		f.fail("field %q is missing or null; it is required and must be a non-empty string", f.path+key)
		return ""
	}
	s, ok := v.(string)
	if !ok {
		f.fail("field %q: must be a non-empty string, found %s", f.path+key, describe(v))
		return ""
	}
	if strings.TrimSpace(s) == "" {
		f.fail("field %q: must not be empty", f.path+key)
	}
	return s
}

// optional returns "" for an absent or null value.
func (f *fields) optional(key string, v any) string {
	if v == nil {
		return ""
	}
	s, ok := v.(string)
	if !ok {
		f.fail("field %q: must be a string, found %s", f.path+key, describe(v))
	}
	return s
}

// raw decodes a field kept raw; nil when absent or null. A null is refused when
// nullIsError (reference §3.3: labels and blocked_by must not be null).
func (f *fields) raw(key string, raw json.RawMessage, nullIsError bool) any {
	if raw == nil {
		return nil
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		f.fail("field %q: %v", f.path+key, err)
		return nil
	}
	if v == nil && nullIsError {
		f.fail("field %q: must not be null (use [] for none)", f.path+key)
	}
	return v
}

// array returns the elements of an array value; nil when absent or null.
func (f *fields) array(key, hint string, v any) []any {
	if v == nil {
		return nil
	}
	elems, ok := v.([]any)
	if !ok {
		f.fail("field %q: must be an array%s, found %s", f.path+key, hint, describe(v))
	}
	return elems
}

// labels are lowercased; absent is []; null is refused (reference §3.3).
func (f *fields) labels(v any) []string {
	elems := f.array("labels", " of strings ([] for none)", v)
	out := make([]string, 0, len(elems))
	for i, e := range elems {
		s, ok := e.(string)
		if !ok {
			f.fail("field %q: element %d must be a string, found %s", f.path+"labels", i+1, describe(e))
			return out
		}
		out = append(out, strings.ToLower(s))
	}
	return out
}

// blockers are refs {id, identifier, state?}; absent is []; null is refused.
func (f *fields) blockers(v any) []tracker.BlockerRef {
	elems := f.array("blocked_by", " of {id, identifier, state} objects ([] for none)", v)
	out := make([]tracker.BlockerRef, 0, len(elems))
	for i, e := range elems {
		sub, m, ok := f.object("blocked_by", i, e)
		if !ok {
			return out
		}
		b := tracker.BlockerRef{ID: sub.optional("id", m["id"]), Identifier: sub.optional("identifier", m["identifier"]), State: sub.optional("state", m["state"])}
		if b.ID == "" && b.Identifier == "" {
			sub.fail("field %q: needs an \"id\" or an \"identifier\"", strings.TrimSuffix(sub.path, "."))
		}
		if sub.err != nil {
			f.fail("%w", sub.err)
			return out
		}
		out = append(out, b)
	}
	return out
}

// comments are tri-state: absent or null is nil ("not fetched"), [] is none.
func (f *fields) comments(v any) []tracker.Comment {
	elems := f.array("comments", " of {id, author, body, created_at} objects, or null", v)
	if elems == nil {
		return nil
	}
	out := make([]tracker.Comment, 0, len(elems))
	for i, e := range elems {
		sub, m, ok := f.object("comments", i, e)
		if !ok {
			return out
		}
		c := tracker.Comment{ID: sub.optional("id", m["id"]), Author: sub.optional("author", m["author"]), Body: sub.optional("body", m["body"]), CreatedAt: sub.optional("created_at", m["created_at"])}
		if sub.err != nil {
			f.fail("%w", sub.err)
			return out
		}
		out = append(out, c)
	}
	return out
}

// parent is {id, identifier} or null; an object naming neither is treated as null.
func (f *fields) parent(v any) *tracker.ParentRef {
	if v == nil {
		return nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		f.fail("field %q: must be an {id, identifier} object or null, found %s", f.path+"parent", describe(v))
		return nil
	}
	sub := fields{path: f.path + "parent."}
	p := tracker.ParentRef{ID: sub.optional("id", m["id"]), Identifier: sub.optional("identifier", m["identifier"])}
	if sub.err != nil {
		f.fail("%w", sub.err)
		return nil
	}
	if p.ID == "" && p.Identifier == "" {
		return nil
	}
	return &p
}

// object opens element i of the array field key as a nested object. Keys inside nested
// objects (comments, blockers, parent) are matched exactly.
func (f *fields) object(key string, i int, v any) (*fields, map[string]any, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		f.fail("field %q: element %d must be an object, found %s", f.path+key, i+1, describe(v))
		return nil, nil, false
	}
	return &fields{path: fmt.Sprintf("%s%s[%d].", f.path, key, i+1)}, m, true
}
