package claude

import (
	"strings"
	"unicode/utf8"

	"sortie/internal/agent"
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
	s = strings.TrimSpace(agent.StripANSI(s))
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
