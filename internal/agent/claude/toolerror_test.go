package claude

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestFormatToolError(t *testing.T) {
	cases := []struct{ in, want string }{
		{"<tool_use_error>File has not been read yet.</tool_use_error>", "File has not been read yet."},
		{"  <tool_use_error>\n padded \n</tool_use_error>  ", "padded"},
		{"\x1b[31merror:\x1b[0m \x1b[1mbuild failed\x1b[22m", "error: build failed"},
		{"\x1b]8;;https://example.com\x07link\x1b]8;;\x07 text", "link text"},
		{"\x1b]0;title\x1b\\after", "after"},
		{"8-bit \u009b31mcsi\u009b0m", "8-bit csi"},
		{"no <tool_use_error>inner</tool_use_error> envelope", "no <tool_use_error>inner</tool_use_error> envelope"},
		{"trailing escape \x1b", "trailing escape"},
		{"", ""},
	}
	for _, c := range cases {
		if got := formatToolError(c.in); got != c.want {
			t.Errorf("formatToolError(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestFormatToolError_TruncationKeepsFirstLineAndTail(t *testing.T) {
	in := "Exit code 2\n" + strings.Repeat("noise line\n", 1000) + "FAIL: the real reason"
	got := formatToolError(in)
	if len(got) > maxToolError {
		t.Errorf("len = %d, want ≤ %d", len(got), maxToolError)
	}
	if !strings.HasPrefix(got, "Exit code 2\n…\n") || !strings.HasSuffix(got, "FAIL: the real reason") {
		t.Errorf("got %q…%q", got[:30], got[len(got)-30:])
	}

	// Multi-byte text is never cut inside a character, and a huge first line is capped.
	in = strings.Repeat("é", 3000) + "\n" + strings.Repeat("ü", 3000)
	got = formatToolError(in)
	if !utf8.ValidString(got) || len(got) > maxToolError {
		t.Errorf("len %d valid %v", len(got), utf8.ValidString(got))
	}
}

func TestFormatToolError_LongFirstLineShortRest(t *testing.T) {
	got := formatToolError(strings.Repeat("x", 3000) + "\nshort tail")
	if len(got) > maxToolError || !strings.HasSuffix(got, "short tail") {
		t.Errorf("len %d, suffix %q", len(got), got[len(got)-12:])
	}
}
