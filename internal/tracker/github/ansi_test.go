package github

import (
	"bytes"
	"io"
	"slices"
	"strings"
	"testing"
)

func TestCleanLogLine(t *testing.T) {
	cases := []struct {
		name, raw, want string
		drop            bool
	}{
		{"timestamp", "2026-04-02T08:41:46.2000100Z --- FAIL: TestNextHighTide (0.00s)", "--- FAIL: TestNextHighTide (0.00s)", false},
		{"timestamp without fraction", "2026-04-02T08:41:46Z ok", "ok", false},
		{"byte-order mark", "\ufeff2026-04-02T08:41:03.1185210Z Current runner version: '2.323.0'", "Current runner version: '2.323.0'", false},
		{"not a timestamp", "2026-04-02 08:41:46 local time", "2026-04-02 08:41:46 local time", false},
		{"colours", "2026-04-02T08:41:46.3Z \x1b[31;1mFAIL\x1b[0m\tgithub.com/x/tide", "FAIL\tgithub.com/x/tide", false},
		{"hyperlink", "\x1b]8;;https://example.com/a\x07tide_test.go:31\x1b]8;;\x1b\\", "tide_test.go:31", false},
		{"charset and cursor", "\x1b(B\x1b[2K\x1b[1Gdone", "done", false},
		{"truncated escape", "half \x1b[31", "half", false},
		{"lone escape", "a\x1bb", "a", false},
		{"error marker", "2026-04-02T08:41:46.4Z ##[error]Process completed with exit code 1.", "Error: Process completed with exit code 1.", false},
		{"warning marker", "##[warning]Node.js 16 actions are deprecated.", "Warning: Node.js 16 actions are deprecated.", false},
		{"group", "##[group]Run go test -race ./...", "Run go test -race ./...", false},
		{"endgroup", "2026-04-02T08:41:46.4Z ##[endgroup]", "", true},
		{"command", "[command]/usr/bin/git version", "$ /usr/bin/git version", false},
		{"marker with properties", "##[error file=a.go,line=3]boom", "Error: boom", false},
		{"progress redraw", "Counting objects:  50% (106/212)\rCounting objects: 100% (212/212), done.   \r", "Counting objects: 100% (212/212), done.", false},
		{"control characters and C1", "a\x00b\x07c\u009bd\u0085e\x7f", "abcde", false},
		{"invalid UTF-8", "caf\xe9", "caf\uFFFD", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, keep := cleanLogLine([]byte(c.raw))
			if keep == c.drop || got != c.want {
				t.Errorf("cleanLogLine(%q) = %q, keep %v; want %q, keep %v", c.raw, got, keep, c.want, !c.drop)
			}
		})
	}
	long := strings.Repeat("é", maxCleanLine) // two bytes each
	if got, _ := cleanLogLine([]byte(long)); len(got) > maxCleanLine+len("…") || !strings.HasSuffix(got, "…") || !strings.HasPrefix(got, "éé") {
		t.Errorf("a long line cleaned to %d bytes, want at most %d ending in …", len(got), maxCleanLine+len("…"))
	}
}

// TestTailLog_Fixture: the lines of a real-looking Actions log that end with its last
// runner error, cleaned: what failed, not the post-job clean-up after it.
func TestTailLog_Fixture(t *testing.T) {
	got, cut, err := tailLog(bytes.NewReader(ownFile(t, "job_log.txt")), 10, MaxLogBytes, false)
	if err != nil || cut {
		t.Fatalf("tailLog: cut %v, %v", cut, err)
	}
	want := []string{
		"ok   \tgithub.com/harbor-labs/tidewatch/station\t0.311s",
		"--- FAIL: TestNextHighTide (0.00s)",
		"    tide_test.go:31: next high tide = 14:05 UTC, want 15:05 Europe/Lisbon",
		"--- FAIL: TestNextHighTide/spring_tide (0.00s)",
		"    tide_test.go:44: height = 3.1m, want 3.4m",
		"FAIL",
		"FAIL\tgithub.com/harbor-labs/tidewatch/tide\t0.012s",
		"tide_test.go:31",
		"FAIL",
		"Error: Process completed with exit code 1.",
	}
	if !slices.Equal(got, want) {
		t.Errorf("tail\n got %q\nwant %q", got, want)
	}
	// With fewer lines asked for than follow the error, the plain tail.
	got, _, _ = tailLog(bytes.NewReader(ownFile(t, "job_log.txt")), 5, MaxLogBytes, false)
	want = []string{
		"$ /usr/bin/git version",
		"git version 2.49.0",
		"Temporarily overriding HOME='/home/runner/work/_temp/7c1d2e3f' before making global git config changes",
		"$ /usr/bin/git config --local --name-only --get-regexp core\\.sshCommand",
		"Cleaning up orphan processes",
	}
	if !slices.Equal(got, want) {
		t.Errorf("short tail\n got %q\nwant %q", got, want)
	}
	all, _, _ := tailLog(bytes.NewReader(ownFile(t, "job_log.txt")), MaxLogLines, MaxLogBytes, false)
	if all[0] != "Current runner version: '2.323.0'" || slices.Contains(all, "") || slices.ContainsFunc(all, func(l string) bool { return strings.Contains(l, "endgroup") }) {
		t.Errorf("whole log cleaned to %q", all)
	}
}

func TestTailLog_PiecesAndPartialFirstLine(t *testing.T) {
	log := "tail of an earlier line\nline 1\nline 2\n\n   \nline 3" // no final newline
	tl := newLogTail(2, true)
	for i := range len(log) { // one byte at a time
		_, _ = tl.Write([]byte{log[i]})
	}
	if got := tl.lines(); !slices.Equal(got, []string{"line 2", "line 3"}) {
		t.Errorf("lines = %q, want the last two, blank ones left out", got)
	}
	if got, _, _ := tailLog(strings.NewReader("x\n"), 0, 10, false); !slices.Equal(got, []string{"x"}) {
		t.Errorf("maxLines 0 kept %q, want one line", got)
	}
}

// countingReader counts what was read from it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// TestTailLog_ReadsAtMostMaxBytes: a log bigger than the cap is read to the cap and no
// further, and said to be cut.
func TestTailLog_ReadsAtMostMaxBytes(t *testing.T) {
	const maxBytes = 1 << 20
	line := strings.Repeat("x", 99) + "\n"
	r := &countingReader{r: strings.NewReader(strings.Repeat(line, 3*maxBytes/len(line)))}
	got, cut, err := tailLog(r, 5, maxBytes, false)
	if err != nil || !cut || len(got) != 5 {
		t.Fatalf("tailLog: %d lines, cut %v, %v; want 5 lines, cut", len(got), cut, err)
	}
	if r.n > maxBytes+1 {
		t.Errorf("read %d bytes, want at most %d", r.n, maxBytes+1)
	}
	// One endless line holds no more than maxRawLine in memory.
	tl := newLogTail(3, false)
	for range 100 {
		_, _ = tl.Write([]byte(strings.Repeat("y", 64<<10)))
	}
	if len(tl.cur) > maxRawLine {
		t.Errorf("an endless line holds %d bytes, want at most %d", len(tl.cur), maxRawLine)
	}
}
