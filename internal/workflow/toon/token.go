package toon

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// tokenError is an error at a byte offset within the text being parsed; the
// parser turns it into a SyntaxError with the line's coordinates.
type tokenError struct {
	off int
	msg string
}

func (e *tokenError) Error() string { return e.msg }

func tokErr(off int, msg string) error { return &tokenError{off: off, msg: msg} }

// parseQuoted reads the quoted string at the start of s (s[0] == '"') and
// returns its unescaped value and the number of bytes consumed, including
// both quotes. Escapes are those of §7.1; anything else is an error.
func parseQuoted(s string) (string, int, error) {
	var b strings.Builder
	i := 1
	for i < len(s) {
		c := s[i]
		switch {
		case c == '"':
			return b.String(), i + 1, nil
		case c == '\\':
			if i+1 >= len(s) {
				return "", 0, tokErr(i, "unterminated string")
			}
			switch s[i+1] {
			case '\\':
				b.WriteByte('\\')
			case '"':
				b.WriteByte('"')
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			case 'u':
				if i+6 > len(s) {
					return "", 0, tokErr(i, `\u escape needs four hex digits`)
				}
				n, err := strconv.ParseUint(s[i+2:i+6], 16, 32)
				if err != nil || strings.ContainsAny(s[i+2:i+6], "+-_") {
					return "", 0, tokErr(i, `\u escape needs four hex digits`)
				}
				if n >= 0xD800 && n <= 0xDFFF {
					return "", 0, tokErr(i, "surrogate code point \\u"+s[i+2:i+6]+" is not allowed")
				}
				b.WriteRune(rune(n))
				i += 6
				continue
			default:
				_, size := utf8.DecodeRuneInString(s[i+1:])
				return "", 0, tokErr(i, "invalid escape \\"+s[i+1:i+1+size]+` (allowed: \\ \" \n \r \t \uXXXX)`)
			}
			i += 2
		case c < 0x20 && c != '\t':
			return "", 0, tokErr(i, "control character in quoted string; escape it")
		default:
			b.WriteByte(c)
			i++
		}
	}
	return "", 0, tokErr(0, "unterminated string")
}

// parsePrimitive types one value token (§4): a quoted string, true, false,
// null, a number, or else an unquoted string. tok must already be trimmed.
func parsePrimitive(tok string) (any, error) {
	if tok == "" {
		return "", nil
	}
	if tok[0] == '"' {
		s, n, err := parseQuoted(tok)
		if err != nil {
			return nil, err
		}
		if n != len(tok) {
			return nil, tokErr(n, "unexpected text after closing quote")
		}
		return s, nil
	}
	switch tok {
	case "true":
		return true, nil
	case "false":
		return false, nil
	case "null":
		return nil, nil
	}
	if isNumber(tok) {
		f, err := strconv.ParseFloat(tok, 64)
		if err != nil && (errors.Is(err, strconv.ErrRange) && math.IsInf(f, 0)) {
			// Out of float64's range: keep the digits rather than invent
			// an infinity JSON cannot carry (the §4 out-of-range policy).
			return tok, nil
		}
		if err != nil {
			return tok, nil
		}
		if f == 0 {
			f = 0 // -0 decodes as 0 (§4)
		}
		return f, nil
	}
	return tok, nil
}

// isNumber reports whether tok is a decimal or exponent number without a
// forbidden leading zero (§4): -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func isNumber(tok string) bool {
	i := 0
	if i < len(tok) && tok[i] == '-' {
		i++
	}
	start := i
	for i < len(tok) && isDigit(tok[i]) {
		i++
	}
	if i == start || (tok[start] == '0' && i-start > 1) {
		return false
	}
	if i < len(tok) && tok[i] == '.' {
		i++
		fs := i
		for i < len(tok) && isDigit(tok[i]) {
			i++
		}
		if i == fs {
			return false
		}
	}
	if i < len(tok) && (tok[i] == 'e' || tok[i] == 'E') {
		i++
		if i < len(tok) && (tok[i] == '+' || tok[i] == '-') {
			i++
		}
		es := i
		for i < len(tok) && isDigit(tok[i]) {
			i++
		}
		if i == es {
			return false
		}
	}
	return i == len(tok)
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// span is a token within a line and its byte offset there.
type span struct {
	text string
	off  int
}

// splitDelimited splits s on unquoted occurrences of delim (B.3), keeping
// empty tokens and trimming surrounding spaces and tabs from each.
func splitDelimited(s string, delim byte, base int) []span {
	var out []span
	start, inQuotes := 0, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case inQuotes && c == '\\':
			i++
		case c == '"':
			inQuotes = !inQuotes
		case !inQuotes && c == delim:
			out = append(out, trimSpan(s[start:i], base+start))
			start = i + 1
		}
	}
	return append(out, trimSpan(s[start:], base+start))
}

func trimSpan(s string, off int) span {
	t := strings.TrimLeft(s, " \t")
	off += len(s) - len(t)
	return span{text: strings.TrimRight(t, " \t"), off: off}
}

// firstUnquoted returns the index of the first c in s outside quotes, or -1.
func firstUnquoted(s string, c byte) int {
	inQuotes := false
	for i := 0; i < len(s); i++ {
		switch {
		case inQuotes && s[i] == '\\':
			i++
		case s[i] == '"':
			inQuotes = !inQuotes
		case !inQuotes && s[i] == c:
			return i
		}
	}
	return -1
}

// head is the part of a line up to and including its colon: a key, an array
// header (§6), or both.
type head struct {
	key      string
	quoted   bool // the key was quoted, so path expansion leaves it alone
	hasKey   bool
	isArray  bool
	length   int
	delim    byte
	fields   []string
	tabular  bool
	rest     string // text after the colon, trimmed
	restOff  int
	fieldOff []int
}

// parseHead parses the key or header at the start of s. ok is false when s
// is not a key line at all (no colon follows a key); err reports a key or
// header that is malformed.
func parseHead(s string, strict bool) (h head, ok bool, err error) {
	if s == "" {
		return h, false, nil
	}
	if s[0] == '"' {
		key, n, err := parseQuoted(s)
		if err != nil {
			return h, false, err
		}
		h.key, h.quoted, h.hasKey = key, true, true
		r := s[n:]
		if strings.HasPrefix(r, "[") {
			if err := parseHeader(&h, r, n); err != nil {
				return h, false, err
			}
			return h, true, nil
		}
		t := strings.TrimLeft(r, " ")
		if !strings.HasPrefix(t, ":") {
			return h, false, nil
		}
		off := n + len(r) - len(t) + 1
		setRest(&h, s[off:], off)
		return h, true, nil
	}
	colon := strings.IndexByte(s, ':')
	br := strings.IndexByte(s, '[')
	if br >= 0 && (colon < 0 || br < colon) {
		hh := head{key: strings.TrimRight(s[:br], " "), hasKey: br > 0}
		herr := parseHeader(&hh, s[br:], br)
		if herr == nil {
			return hh, true, nil
		}
		if colon < 0 {
			return h, false, nil
		}
		if strict {
			return h, false, herr
		}
		// Lenient: §6 lets a malformed header fall back to a key-value
		// line whose key is the literal text before the colon.
	}
	if colon < 0 {
		return h, false, nil
	}
	key := strings.TrimSpace(s[:colon])
	if key == "" {
		return h, false, tokErr(colon, "missing key before ':'")
	}
	h.key, h.hasKey = key, true
	setRest(&h, s[colon+1:], colon+1)
	return h, true, nil
}

func setRest(h *head, r string, off int) {
	t := strings.TrimLeft(r, " \t")
	h.rest = strings.TrimRight(t, " \t")
	h.restOff = off + len(r) - len(t)
}

// parseHeader parses the bracket segment, optional fields segment and colon
// of an array header (§6); s starts at '[' and base is its offset.
func parseHeader(h *head, s string, base int) error {
	end := strings.IndexByte(s, ']')
	if end < 0 {
		return tokErr(base, "array header: missing ']'")
	}
	inner := s[1:end]
	h.delim = ','
	if n := len(inner); n > 0 && (inner[n-1] == '\t' || inner[n-1] == '|') {
		h.delim = inner[n-1]
		inner = inner[:n-1]
	}
	if inner == "" || !allDigits(inner) || (inner[0] == '0' && len(inner) > 1) {
		return tokErr(base, "array header: length ["+s[1:end]+"] must be a non-negative integer without leading zeros")
	}
	n, err := strconv.Atoi(inner)
	if err != nil || n > math.MaxInt32 {
		return tokErr(base, "array header: length "+inner+" is too large")
	}
	h.isArray, h.length = true, n
	r := s[end+1:]
	off := base + end + 1
	if strings.HasPrefix(r, "{") {
		close := firstUnquoted(r, '}')
		if close < 0 {
			return tokErr(off, "array header: missing '}' after field list")
		}
		h.tabular = true
		for _, f := range splitDelimited(r[1:close], h.delim, off+1) {
			name := f.text
			if name == "" {
				return tokErr(f.off, "array header: empty field name")
			}
			if name[0] == '"' {
				v, m, err := parseQuoted(name)
				if err != nil {
					return shift(err, f.off)
				}
				if m != len(name) {
					return tokErr(f.off+m, "array header: unexpected text after quoted field name")
				}
				name = v
			} else if strings.ContainsAny(name, ",|\t") {
				return tokErr(f.off, "array header: field list uses a different delimiter than the brackets ["+s[1:end]+"]")
			}
			h.fields = append(h.fields, name)
			h.fieldOff = append(h.fieldOff, f.off)
		}
		off += close + 1
		r = r[close+1:]
	}
	if !strings.HasPrefix(r, ":") {
		return tokErr(off, "array header: expected ':' right after "+s[:len(s)-len(r)]+" (nothing may come between them)")
	}
	setRest(h, r[1:], off+1)
	return nil
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return true
}

// shift moves a tokenError's offset by base.
func shift(err error, base int) error {
	var te *tokenError
	if errors.As(err, &te) {
		return &tokenError{off: te.off + base, msg: te.msg}
	}
	return err
}
