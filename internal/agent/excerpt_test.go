package agent

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestTruncate_KeepsNCharactersAndMarksTheCut(t *testing.T) {
	cases := []struct {
		s    string
		n    int
		want string
	}{
		{"", 3, ""},
		{"abc", 3, "abc"},
		{"abcd", 3, "abc…"},
		{"éé🚀x", 3, "éé🚀…"},
		{"éé🚀", 3, "éé🚀"},
		{"abc", 0, "…"},
	}
	for _, c := range cases {
		if got := Truncate(c.s, c.n); got != c.want {
			t.Errorf("Truncate(%q, %d) = %q, want %q", c.s, c.n, got, c.want)
		}
	}
}

func TestExcerpt_IsValidUTF8AndBounded(t *testing.T) {
	cases := []struct {
		name string
		line []byte
		n    int
		want string
	}{
		{"short", []byte(`{"type":`), 10, `{"type":`},
		{"cut", []byte("0123456789abc"), 10, "0123456789…"},
		{"invalid UTF-8 replaced", []byte("a\xffb"), 10, "a\uFFFDb"},
		{"multi-byte characters count once", []byte(strings.Repeat("é", 12)), 10, strings.Repeat("é", 10) + "…"},
	}
	for _, c := range cases {
		if got := Excerpt(c.line, c.n); got != c.want {
			t.Errorf("%s: Excerpt(%q, %d) = %q, want %q", c.name, c.line, c.n, got, c.want)
		}
	}
	huge := []byte(strings.Repeat("x", 4<<20))
	if got := Excerpt(huge, 500); got != strings.Repeat("x", 500)+"…" {
		t.Errorf("Excerpt of a 4 MiB line: %d characters, want 500 and the mark", utf8.RuneCountInString(got))
	}
}

func TestTail_KeepsTheEndOnACharacterBoundary(t *testing.T) {
	cases := []struct {
		s    string
		n    int
		want string
	}{
		{"  boom\n", 10, "boom"},
		{"0123456789", 4, "…6789"},
		{"aé", 1, "…"},   // the last byte alone would split é
		{"aéb", 2, "…b"}, // likewise
		{"aéb", 3, "…éb"},
		{"", 4, ""},
	}
	for _, c := range cases {
		if got := Tail(c.s, c.n); got != c.want {
			t.Errorf("Tail(%q, %d) = %q, want %q", c.s, c.n, got, c.want)
		}
	}
}
