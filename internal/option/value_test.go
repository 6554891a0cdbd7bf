package option

import (
	"math"
	"testing"
)

// TestIntValue: every integer form the YAML decoder gives, and the reason for each refusal.
func TestIntValue(t *testing.T) {
	tests := []struct {
		in     any
		want   int64
		reason string
	}{
		{5000, 5000, ""},
		{int64(-3), -3, ""},
		{uint64(7), 7, ""},
		{uint64(math.MaxUint64), 0, "is too large"},
		{" 5000 ", 5000, ""},
		{"-1", -1, ""},
		{"99999999999999999999", 0, "is too large"},
		{"5000.0", 0, "must be an integer"},
		{"1e3", 0, "must be an integer"},
		{5000.0, 5000, ""},
		{1.5, 0, "must be a whole number"},
		{math.NaN(), 0, "must be a whole number"},
		{math.Inf(1), 0, "must be a whole number"},
		{1e30, 0, "is too large"},
		{true, 0, "must be an integer"},
		{nil, 0, "must be an integer"},
		{[]any{1}, 0, "must be an integer"},
		{map[string]any{}, 0, "must be an integer"},
	}
	for _, tt := range tests {
		got, reason := IntValue(tt.in)
		if got != tt.want || reason != tt.reason {
			t.Errorf("IntValue(%#v) = %d, %q; want %d, %q", tt.in, got, reason, tt.want, tt.reason)
		}
	}
}

// TestNumberValue: numbers and numeric strings are numbers; NaN, the infinities and
// everything else are not.
func TestNumberValue(t *testing.T) {
	tests := []struct {
		in   any
		want float64
		ok   bool
	}{
		{3, 3, true}, {int64(-2), -2, true}, {uint64(4), 4, true}, {0.25, 0.25, true},
		{" 1.5 ", 1.5, true}, {"1e3", 1000, true},
		{math.NaN(), 0, false}, {math.Inf(-1), 0, false}, {"NaN", 0, false}, {"Inf", 0, false},
		{"x", 0, false}, {true, 0, false}, {nil, 0, false}, {[]any{1}, 0, false},
	}
	for _, tt := range tests {
		got, ok := NumberValue(tt.in)
		if ok != tt.ok || (ok && got != tt.want) {
			t.Errorf("NumberValue(%#v) = %v, %v; want %v, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}
