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
