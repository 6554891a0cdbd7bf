package selfreview

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// VerdictFile is the file in `.sortie/` a review turn writes its verdict to.
const VerdictFile = "review_verdict.json"

// MaxVerdictSize is the largest verdict file read, in bytes.
const MaxVerdictSize = 64 << 10

// Limits on what of a verdict's issues reaches a prompt or the Result.
const (
	MaxIssues      = 20  // issues kept; the rest are counted
	MaxIssueLength = 500 // bytes of each issue kept
)

// The verdicts.
const (
	VerdictPass    = "pass"
	VerdictIterate = "iterate"
	VerdictNone    = "none" // no verdict was read (none written, or not readable)
)

// Verdict is a parsed verdict file.
type Verdict struct {
	Verdict string   // VerdictPass or VerdictIterate
	Issues  []string // at most MaxIssues, each at most MaxIssueLength bytes, one line of valid UTF-8
	Dropped int      // issues left out beyond MaxIssues
}

// ParseVerdict parses a verdict file: a JSON object whose "verdict" is "pass" or
// "iterate" (any case, spaces around ignored) and whose optional "issues" is a list
// of strings, or of objects of the reference daemon's shape ({file, line, end_line,
// severity, message}), which are written out as one string each. Issues are cut to
// MaxIssues of MaxIssueLength bytes each, one line of printable text. Anything else
// is an error naming what is wrong, in words safe to put in a prompt.
func ParseVerdict(data []byte) (Verdict, error) {
	var raw struct {
		Verdict *string           `json:"verdict"`
		Issues  []json.RawMessage `json:"issues"`
	}
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return Verdict{}, errors.New("the verdict file is empty")
	}
	if data[0] != '{' {
		return Verdict{}, errors.New("the verdict file is not a JSON object")
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return Verdict{}, errors.New("the verdict file is not valid JSON of the expected shape")
	}
	if raw.Verdict == nil {
		return Verdict{}, errors.New(`the verdict file has no "verdict"`)
	}
	v := Verdict{Verdict: strings.ToLower(strings.TrimSpace(*raw.Verdict))}
	if v.Verdict != VerdictPass && v.Verdict != VerdictIterate {
		return Verdict{}, errors.New(`"verdict" is neither "pass" nor "iterate"`)
	}
	for _, r := range raw.Issues {
		s := issueText(r)
		if s == "" {
			continue
		}
		if len(v.Issues) == MaxIssues {
			v.Dropped++
			continue
		}
		v.Issues = append(v.Issues, s)
	}
	return v, nil
}

// issueText is one issue as one line of text, cut to MaxIssueLength bytes: a string
// as it is, an object of the reference's shape as "file:line-end_line [severity]
// message". Anything else is "".
func issueText(r json.RawMessage) string {
	var s string
	if json.Unmarshal(r, &s) == nil {
		return clean(s, MaxIssueLength)
	}
	var o struct {
		File     string          `json:"file"`
		Line     json.RawMessage `json:"line"`
		EndLine  json.RawMessage `json:"end_line"`
		Severity string          `json:"severity"`
		Message  string          `json:"message"`
	}
	if json.Unmarshal(r, &o) != nil {
		return ""
	}
	var b strings.Builder
	if o.File != "" {
		b.WriteString(clean(o.File, MaxIssueLength))
		if l, ok := lineNumber(o.Line); ok {
			fmt.Fprintf(&b, ":%d", l)
			if e, ok := lineNumber(o.EndLine); ok && e > l {
				fmt.Fprintf(&b, "-%d", e)
			}
		}
		b.WriteString(": ")
	}
	if sev := clean(o.Severity, 20); sev != "" {
		fmt.Fprintf(&b, "[%s] ", sev)
	}
	b.WriteString(clean(o.Message, MaxIssueLength))
	return clean(b.String(), MaxIssueLength)
}

func lineNumber(r json.RawMessage) (int64, bool) {
	n, err := strconv.ParseInt(string(bytes.TrimSpace(r)), 10, 64)
	return n, err == nil && n > 0
}

// clean makes s one line of printable, valid UTF-8 of at most max bytes: control
// characters (newlines too) become spaces, runs of spaces one, and the end is cut at
// a character's boundary, with "…" when something was cut.
func clean(s string, max int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	var b strings.Builder
	space := false
	for _, r := range s {
		if unicode.IsSpace(r) || !unicode.IsPrint(r) {
			space = b.Len() > 0
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteRune(r)
	}
	return cut(b.String(), max)
}

// cut is s cut to at most max bytes at a character's boundary, ending in "…" when
// anything was cut.
func cut(s string, max int) string {
	if len(s) <= max {
		return s
	}
	const ell = "…"
	n := max - len(ell)
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	if n <= 0 {
		return ""
	}
	return s[:n] + ell
}
