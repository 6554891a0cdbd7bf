package claude

import (
	"strings"
	"unicode/utf8"
)

// formatToolError cleans a failed tool's output for an event (spec, "Tool error
// formatting"): the <tool_use_error> envelope is removed, ANSI escape sequences are
// stripped, and text longer than 2048 bytes keeps its first line and as much of its
// end as fits, where a command's exit status and last error lines are.
func formatToolError(s string) string {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "<tool_use_error>") && strings.HasSuffix(s, "</tool_use_error>") {
		s = strings.TrimSpace(s[len("<tool_use_error>") : len(s)-len("</tool_use_error>")])
	}
	s = strings.TrimSpace(stripANSI(s))
	if len(s) <= maxToolError {
		return s
	}
	const sep = "\n…\n"
	first, rest, _ := strings.Cut(s, "\n")
	if len(first) > maxToolError/2 {
		first = first[:validCut(first, maxToolError/2)]
	}
	keep := maxToolError - len(first) - len(sep)
	tail := rest
	if len(rest) > keep {
		tail = rest[len(rest)-keep:]
	}
	for len(tail) > 0 && !utf8.RuneStart(tail[0]) {
		tail = tail[1:]
	}
	return first + sep + tail
}

// validCut returns the largest index ≤ n that does not split a UTF-8 sequence of s.
func validCut(s string, n int) int {
	for n > 0 && n < len(s) && !utf8.RuneStart(s[n]) {
		n--
	}
	return n
}

// stripANSI removes ANSI/VT100 escape sequences: CSI sequences (colours, cursor
// movement), OSC sequences (titles, hyperlinks) and two-byte escapes.
func stripANSI(s string) string {
	if !strings.ContainsRune(s, 0x1b) && !strings.ContainsRune(s, 0x9b) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		c := s[i]
		if c != 0x1b {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == 0x9b { // the 8-bit CSI
				i = skipCSI(s, i+size)
				continue
			}
			b.WriteString(s[i : i+size])
			i += size
			continue
		}
		if i+1 >= len(s) {
			break
		}
		switch s[i+1] {
		case '[':
			i = skipCSI(s, i+2)
		case ']':
			i = skipOSC(s, i+2)
		default:
			i += 2
		}
	}
	return b.String()
}

// skipCSI returns the index after a CSI sequence's final byte (0x40–0x7E).
func skipCSI(s string, i int) int {
	for i < len(s) {
		c := s[i]
		i++
		if c >= 0x40 && c <= 0x7e {
			break
		}
	}
	return i
}

// skipOSC returns the index after an OSC sequence, ended by BEL or ESC \.
func skipOSC(s string, i int) int {
	for i < len(s) {
		switch {
		case s[i] == 0x07:
			return i + 1
		case s[i] == 0x1b && i+1 < len(s) && s[i+1] == '\\':
			return i + 2
		}
		i++
	}
	return i
}
