package agent

import (
	"strings"
	"unicode/utf8"
)

// Truncate keeps the first n characters (runes) of s and marks a cut with "…", for an
// event message taken from an agent's output.
func Truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i := 0
	for k := range s {
		if i == n {
			return s[:k] + "…"
		}
		i++
	}
	return s
}

// Excerpt is the start of a line of agent output, for the message of a malformed or
// unrecognised event: at most n characters, invalid UTF-8 replaced, "…" where it was
// cut. It copies no more of a line, which may be megabytes long, than n characters can
// take.
func Excerpt(line []byte, n int) string {
	return Truncate(strings.ToValidUTF8(string(line[:min(len(line), n*utf8.UTFMax)]), "\uFFFD"), n)
}

// Tail is the end of s without surrounding white space, at most n bytes cut at a
// character boundary, with "…" in front where it was cut: enough of an agent's stderr
// to explain a failure in one line.
func Tail(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		cut := len(s) - n
		for cut < len(s) && (s[cut]&0xC0) == 0x80 {
			cut++
		}
		s = "…" + s[cut:]
	}
	return s
}

// StripANSI removes ANSI/VT100 escape sequences: CSI sequences (colours, cursor
// movement), OSC sequences (titles, hyperlinks) and two-byte escapes, which CLIs put in their
// messages even when they do not write to a terminal.
func StripANSI(s string) string {
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
