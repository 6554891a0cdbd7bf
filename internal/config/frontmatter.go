package config

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"unicode"

	"go.yaml.in/yaml/v3"
)

// Document is a WORKFLOW.md split into its YAML front matter and its prompt template.
type Document struct {
	// HasFrontMatter reports whether the file opened with a `---` line.
	HasFrontMatter bool
	// Closed reports whether the closing `---` line was found. A missing closing line is
	// not an error: the rest of the file is YAML and the prompt is empty.
	Closed bool
	// FrontMatter is the YAML text between the delimiters, "" when there is none.
	FrontMatter string
	// FrontMatterLine is the 1-based WORKFLOW.md line of the first YAML line (2 when there
	// is front matter, 0 otherwise).
	FrontMatterLine int
	// Prompt is the template body after the closing delimiter, trimmed of surrounding
	// white space; the whole file when there is no front matter.
	Prompt string
	// PromptLine is the 1-based WORKFLOW.md line on which Prompt starts, so that line L
	// of the template is line PromptLine+L-1 of the file.
	PromptLine int
}

// SplitFrontMatter splits a WORKFLOW.md. It strips a UTF-8 byte-order mark and turns CRLF
// into LF first. Front matter exists only when the first line is exactly `---` (trailing
// spaces and tabs allowed) followed by a newline; it ends at the next such line.
func SplitFrontMatter(data []byte) Document {
	s := strings.TrimPrefix(string(data), "\uFEFF")
	s = strings.ReplaceAll(s, "\r\n", "\n")

	first, rest, hasNewline := strings.Cut(s, "\n")
	if !hasNewline || !isDelimiter(first) {
		prompt, line := trimBody(s, 1)
		return Document{Prompt: prompt, PromptLine: line}
	}

	doc := Document{HasFrontMatter: true, FrontMatterLine: 2}
	line := 2 // WORKFLOW.md line number of rest[off:]
	for off := 0; ; line++ {
		end := strings.IndexByte(rest[off:], '\n')
		text := rest[off:]
		if end >= 0 {
			text = rest[off : off+end]
		}
		if isDelimiter(text) {
			doc.Closed = true
			doc.FrontMatter = rest[:off]
			body := ""
			if end >= 0 {
				body = rest[off+end+1:]
			}
			doc.Prompt, doc.PromptLine = trimBody(body, line+1)
			return doc
		}
		if end < 0 {
			break
		}
		off += end + 1
	}
	doc.FrontMatter = rest
	doc.PromptLine = line + 1
	return doc
}

func isDelimiter(line string) bool {
	return strings.TrimRight(line, " \t") == "---"
}

// trimBody trims body and returns the line on which the trimmed text starts, given that
// body starts on line start.
func trimBody(body string, start int) (string, int) {
	lead := len(body) - len(strings.TrimLeftFunc(body, unicode.IsSpace))
	return strings.TrimSpace(body), start + strings.Count(body[:lead], "\n")
}

// yamlLineRE finds the line numbers yaml.v3 puts in its messages ("line 3: ...",
// "already defined at line 1"). They count from the first YAML line.
var yamlLineRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`line (\d+)`) })

// parseFrontMatter decodes the front matter of doc into a map. Problems name the
// WORKFLOW.md line where yaml.v3 reports one.
func parseFrontMatter(path string, doc Document) (map[string]any, []Problem) {
	if !doc.HasFrontMatter {
		return map[string]any{}, nil
	}
	var v any
	if err := unmarshalYAML([]byte(doc.FrontMatter), &v); err != nil {
		return nil, yamlProblems(path, doc, err)
	}
	switch m := normalizeYAML(v).(type) {
	case nil:
		return map[string]any{}, nil
	case map[string]any:
		return m, nil
	default:
		return nil, []Problem{{
			Severity: SeverityError,
			Check:    CheckWorkflowLoad,
			Message:  fmt.Sprintf("%s: front matter must be a YAML map (got %s)", path, yamlTypeName(v)),
		}}
	}
}

// unmarshalYAML is yaml.Unmarshal that turns a panic inside the decoder into an error:
// WORKFLOW.md is operator input and must never take the daemon down.
func unmarshalYAML(data []byte, v any) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("yaml: %v", r)
		}
	}()
	return yaml.Unmarshal(data, v)
}

func yamlProblems(path string, doc Document, err error) []Problem {
	// yaml.v3 counts from the first YAML line, which is line doc.FrontMatterLine of the file.
	shift := func(msg string) (string, string) {
		msg = strings.TrimPrefix(msg, "yaml: ")
		first := ""
		msg = yamlLineRE().ReplaceAllStringFunc(msg, func(m string) string {
			n, convErr := strconv.Atoi(strings.TrimPrefix(m, "line "))
			if convErr != nil {
				return m
			}
			n += doc.FrontMatterLine - 1
			if first == "" {
				first = strconv.Itoa(n)
			}
			return "line " + strconv.Itoa(n)
		})
		// Lead with the location so editors and terminals can jump to it.
		if first != "" {
			msg = strings.TrimPrefix(msg, "line "+first+": ")
			return path + ":" + first, msg
		}
		return path, msg
	}
	hint := ""
	if !doc.Closed {
		hint = " (is the closing '---' line missing?)"
	}
	var msgs []string
	var te *yaml.TypeError
	if errors.As(err, &te) {
		msgs = te.Errors
	} else {
		msgs = []string{err.Error()}
	}
	out := make([]Problem, 0, len(msgs))
	for _, m := range msgs {
		where, text := shift(m)
		out = append(out, Problem{
			Severity: SeverityError,
			Check:    CheckWorkflowLoad,
			Message:  fmt.Sprintf("%s: invalid YAML front matter: %s%s", where, text, hint),
		})
	}
	return out
}

// normalizeYAML turns the map[any]any that yaml.v3 produces for maps with non-string keys
// into map[string]any, recursively, so builders see one map type.
func normalizeYAML(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			t[k] = normalizeYAML(e)
		}
		return t
	case map[any]any:
		m := make(map[string]any, len(t))
		for k, e := range t {
			m[fmt.Sprint(k)] = normalizeYAML(e)
		}
		return m
	case []any:
		for i, e := range t {
			t[i] = normalizeYAML(e)
		}
		return t
	}
	return v
}

// yamlTypeName names the YAML type of a decoded value for error messages.
func yamlTypeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any, map[any]any:
		return "map"
	case []any:
		return "list"
	case string:
		return "string"
	case bool:
		return "boolean"
	case int, int64, uint64, int32, uint, uint32:
		return "integer"
	case float64, float32:
		return "number"
	}
	return fmt.Sprintf("%T", v)
}
