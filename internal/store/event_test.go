package store

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestTruncate_CutsOnARuneBoundaryAndMarksTheCut(t *testing.T) {
	tests := []struct {
		in    string
		limit int
		want  string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"eleven chars", 10, "eleven …"},
		{strings.Repeat("é", 6), 10, "ééé…"}, // 6 bytes of é and 3 of the mark: 9 ≤ 10
		{"日本語テキスト", 8, "日…"},
		{"abcdef", 2, "…"}, // below the mark's own length: only the mark
	}
	for _, tt := range tests {
		got := Truncate(tt.in, tt.limit)
		if got != tt.want || !utf8.ValidString(got) {
			t.Errorf("Truncate(%q, %d) = %q, want %q", tt.in, tt.limit, got, tt.want)
		}
	}
}

func TestBounded_CutsAgentText(t *testing.T) {
	e := Event{Type: strings.Repeat("t", MaxEventTypeBytes+1), Message: strings.Repeat("m", MaxEventMessageBytes+1)}.Bounded()
	if len(e.Type) > MaxEventTypeBytes || len(e.Message) > MaxEventMessageBytes {
		t.Errorf("Event.Bounded: type %d bytes, message %d bytes", len(e.Type), len(e.Message))
	}
	warnings := []string{strings.Repeat("w", MaxEventMessageBytes+1)}
	te := TraceEvent{Error: strings.Repeat("e", MaxRunErrorBytes+1), Detail: strings.Repeat("d", MaxEventMessageBytes+1), Warnings: warnings}.Bounded()
	if len(te.Error) > MaxRunErrorBytes || len(te.Detail) > MaxEventMessageBytes || len(te.Warnings[0]) > MaxEventMessageBytes {
		t.Errorf("TraceEvent.Bounded: error %d, detail %d, warning %d bytes", len(te.Error), len(te.Detail), len(te.Warnings[0]))
	}
	if len(warnings[0]) != MaxEventMessageBytes+1 {
		t.Error("TraceEvent.Bounded changed the caller's warnings")
	}
	if (TraceEvent{}).Bounded().Warnings != nil {
		t.Error("TraceEvent.Bounded made nil warnings non-nil")
	}
}

func TestMarshalList_RoundTripsWithEmptyAsNil(t *testing.T) {
	for _, in := range [][]CheckpointOption{nil, {}, {{ID: "a", Label: "A"}, {ID: "b", Label: "B", Description: "d"}}} {
		s, err := MarshalList(in)
		if err != nil {
			t.Fatal(err)
		}
		if len(in) == 0 && s != "[]" {
			t.Errorf("MarshalList(%#v) = %q, want []", in, s)
		}
		out, err := UnmarshalList[CheckpointOption](s)
		if err != nil || len(out) != len(in) || (len(in) == 0) != (out == nil) {
			t.Errorf("UnmarshalList(%q) = %#v, %v; want %#v (nil when empty)", s, out, err, in)
		}
	}
	if _, err := UnmarshalList[string](`{"not": "a list"}`); err == nil {
		t.Error("UnmarshalList of an object succeeded")
	}
}
