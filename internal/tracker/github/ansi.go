package github

import (
	"bytes"
	"io"
	"strings"
	"unicode/utf8"
)

// Cleaning a GitHub Actions job log for a prompt. The raw log is one line per output
// line, each prefixed with an RFC 3339 timestamp with seven fractional digits and a
// space; the first line starts with a byte-order mark; output keeps the tools' ANSI
// colours; the runner's own lines are "##[group]", "##[endgroup]", "##[error]",
// "##[warning]", "##[notice]", "##[debug]", "##[command]" and "##[section]" markers, and
// the commands an action runs are "[command]…". A cleaned line has no timestamp, no
// escape sequence and no control character, and a marker becomes plain text
// ("##[error]x" reads "Error: x", "[command]git" reads "$ git"; an endgroup line goes).

const (
	// maxRawLine bounds the bytes of one log line kept for cleaning; the rest of a
	// longer line (minified output, a base64 blob) is dropped.
	maxRawLine = 16 << 10
	// maxCleanLine bounds one cleaned line, in bytes, "…" marking the cut.
	maxCleanLine = 2000
)

// logTail keeps the last max cleaned, non-blank lines of a log written to it in any
// pieces, or, when the log has a runner error line (##[error]) followed by at most
// max lines, the max lines that end with the last such error: a failed job's log ends
// with the runner's post-job clean-up, and the lines that say what failed are the ones
// before the error. Its memory is bounded by 2·max lines of maxCleanLine bytes,
// whatever the log's size. The zero value is not usable; see newLogTail.
type logTail struct {
	max       int
	ring      []string // the last 2·max lines: line i at ring[i % len(ring)]
	seen      int      // lines kept so far
	lastErr   int      // the index of the last error line, -1 for none
	cur       []byte
	skipFirst bool // the first line is partial (a range starting mid-log): drop it
}

func newLogTail(n int, skipFirst bool) *logTail {
	n = max(n, 1)
	return &logTail{max: n, ring: make([]string, 2*n), lastErr: -1, skipFirst: skipFirst}
}

// Write splits p into lines; it never fails.
func (l *logTail) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			l.hold(p)
			break
		}
		l.hold(p[:i])
		l.endLine()
		p = p[i+1:]
	}
	return n, nil
}

func (l *logTail) hold(p []byte) {
	if room := maxRawLine - len(l.cur); room > 0 {
		l.cur = append(l.cur, p[:min(len(p), room)]...)
	}
}

func (l *logTail) endLine() {
	raw := l.cur
	l.cur = l.cur[:0]
	if l.skipFirst {
		l.skipFirst = false
		return
	}
	line, keep := cleanLogLine(raw)
	if !keep || strings.TrimSpace(line) == "" {
		return
	}
	if isErrorMarker(raw) {
		l.lastErr = l.seen
	}
	l.ring[l.seen%len(l.ring)] = line
	l.seen++
}

// isErrorMarker reports whether raw is a runner error line ("##[error]…" after its
// timestamp).
func isErrorMarker(raw []byte) bool {
	b := stripTimestamp(bytes.TrimPrefix(raw, []byte("\xef\xbb\xbf")))
	return bytes.HasPrefix(b, []byte("##[error]"))
}

// lines ends the last line, if the log did not end with a newline, and returns the
// kept lines, oldest first.
func (l *logTail) lines() []string {
	if len(l.cur) > 0 {
		l.endLine()
	}
	end := l.seen // one past the last line returned
	if l.lastErr >= 0 && l.seen-l.lastErr <= l.max+1 {
		end = l.lastErr + 1
	}
	start := max(end-l.max, 0)
	out := make([]string, 0, end-start)
	for i := start; i < end; i++ {
		out = append(out, l.ring[i%len(l.ring)])
	}
	return out
}

// tailLog reads at most maxBytes of r and returns its last maxLines cleaned lines, and
// whether r had more than maxBytes (the lines are then the tail of its first maxBytes).
func tailLog(r io.Reader, maxLines int, maxBytes int64, skipFirst bool) ([]string, bool, error) {
	t := newLogTail(maxLines, skipFirst)
	n, err := io.Copy(t, io.LimitReader(r, maxBytes+1))
	if err != nil {
		return nil, false, err
	}
	cut := n > maxBytes
	if cut {
		t.cur = t.cur[:0] // the line the cap cut through
	}
	return t.lines(), cut, nil
}

// cleanLogLine cleans one raw log line (without its newline). keep is false for a line
// that says nothing (##[endgroup]).
func cleanLogLine(raw []byte) (line string, keep bool) {
	b := bytes.TrimPrefix(raw, []byte("\xef\xbb\xbf"))
	b = bytes.TrimSuffix(b, []byte("\r"))
	b = stripTimestamp(b)
	// A carriage return redraws the line (progress bars): what shows is the last part.
	if i := bytes.LastIndexByte(b, '\r'); i >= 0 {
		b = b[i+1:]
	}
	s := visible(stripANSI(b))
	if rest, ok := strings.CutPrefix(s, "[command]"); ok {
		s = "$ " + rest
	} else if rest, ok := strings.CutPrefix(s, "##["); ok {
		if end := strings.IndexByte(rest, ']'); end >= 0 {
			name, _, _ := strings.Cut(rest[:end], " ")
			text := rest[end+1:]
			switch strings.ToLower(name) {
			case "endgroup":
				return "", false
			case "error":
				s = "Error: " + text
			case "warning":
				s = "Warning: " + text
			case "notice":
				s = "Notice: " + text
			case "debug":
				s = "Debug: " + text
			case "command":
				s = "$ " + text
			default: // group, section, and any other marker
				s = text
			}
		}
	}
	s = strings.TrimRight(s, " \t")
	if len(s) > maxCleanLine {
		cut := maxCleanLine
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s, true
}

// stripTimestamp drops a leading "2006-01-02T15:04:05.1234567Z " (any number of
// fractional digits, or none).
func stripTimestamp(b []byte) []byte {
	const shape = "dddd-dd-ddTdd:dd:dd"
	if len(b) < len(shape)+2 {
		return b
	}
	for i := 0; i < len(shape); i++ {
		if shape[i] == 'd' {
			if b[i] < '0' || b[i] > '9' {
				return b
			}
		} else if b[i] != shape[i] {
			return b
		}
	}
	i := len(shape)
	if b[i] == '.' {
		i++
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	}
	if i+1 < len(b) && b[i] == 'Z' && b[i+1] == ' ' {
		return b[i+2:]
	}
	if i+1 == len(b) && b[i] == 'Z' {
		return b[i+1:]
	}
	return b
}

// stripANSI removes ECMA-48 escape sequences: CSI (ESC [ … final byte), OSC and the
// other string controls (ESC ] … BEL or ESC \), character-set designations (ESC ( B)
// and two-byte escapes. A lone or truncated escape is dropped.
func stripANSI(b []byte) []byte {
	if bytes.IndexByte(b, 0x1b) < 0 {
		return b
	}
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); {
		if b[i] != 0x1b {
			out = append(out, b[i])
			i++
			continue
		}
		i++ // ESC
		if i >= len(b) {
			break
		}
		switch c := b[i]; {
		case c == '[': // CSI: parameters 0x30–0x3F, intermediates 0x20–0x2F, final 0x40–0x7E
			i++
			for i < len(b) && b[i] >= 0x30 && b[i] <= 0x3f {
				i++
			}
			for i < len(b) && b[i] >= 0x20 && b[i] <= 0x2f {
				i++
			}
			if i < len(b) && b[i] >= 0x40 && b[i] <= 0x7e {
				i++
			}
		case c == ']' || c == 'P' || c == 'X' || c == '^' || c == '_': // string, to BEL or ST
			i++
			for i < len(b) {
				if b[i] == 0x07 {
					i++
					break
				}
				if b[i] == 0x1b && i+1 < len(b) && b[i+1] == '\\' {
					i += 2
					break
				}
				i++
			}
		case c >= 0x20 && c <= 0x2f: // nF: intermediates, then a final byte
			for i < len(b) && b[i] >= 0x20 && b[i] <= 0x2f {
				i++
			}
			if i < len(b) && b[i] >= 0x30 && b[i] <= 0x7e {
				i++
			}
		case c >= 0x30 && c <= 0x7e: // two-byte escape
			i++
		}
	}
	return out
}

// visible is b as valid UTF-8 without control characters (C0 but tab, DEL, C1): what
// is left of escape sequences GitHub or a tool garbled cannot reach the prompt.
func visible(b []byte) string {
	var sb strings.Builder
	sb.Grow(len(b))
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		b = b[size:]
		switch {
		case r == utf8.RuneError && size == 1:
			sb.WriteRune(utf8.RuneError)
		case r == '\t':
			sb.WriteByte('\t')
		case r < 0x20 || r == 0x7f || r >= 0x80 && r <= 0x9f:
		default:
			sb.WriteRune(r)
		}
	}
	return sb.String()
}
