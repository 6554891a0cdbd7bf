package agent

import (
	"math"
	"testing"
)

// optionCase is one value given to an Option function: what it returns, or the error
// text it fails with.
type optionCase[T comparable] struct {
	name string
	in   any
	want T
	err  string
}

func checkOption[T comparable](t *testing.T, f func(any) (T, error), cases []optionCase[T]) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := f(c.in)
			switch {
			case c.err != "" && (err == nil || err.Error() != c.err):
				t.Errorf("%#v: error %v, want %q", c.in, err, c.err)
			case c.err == "" && err != nil:
				t.Errorf("%#v: error %v, want %v", c.in, err, c.want)
			case c.err == "" && got != c.want:
				t.Errorf("%#v = %v, want %v", c.in, got, c.want)
			}
		})
	}
}

func TestOptionString_TrimsAndRefusesOtherTypes(t *testing.T) {
	checkOption(t, OptionString, []optionCase[string]{
		{"nothing is empty", nil, "", ""},
		{"trimmed", "  sonnet \n", "sonnet", ""},
		{"number", 3, "", "must be a string (got 3)"},
		{"list", []any{"a"}, "", "must be a string (got a list)"},
		{"mapping", map[string]any{"a": 1}, "", "must be a string (got a mapping)"},
	})
}

func TestOptionEnum_AcceptsOnlyTheValidValues(t *testing.T) {
	valid := []string{"low", "high"}
	enum := func(v any) (string, error) { return OptionEnum(v, valid) }
	checkOption(t, enum, []optionCase[string]{
		{"valid", " high ", "high", ""},
		{"empty is unset", "", "", ""},
		{"nothing is unset", nil, "", ""},
		{"unknown", "medium", "", `unknown value "medium" (valid: low, high)`},
		{"not a string", true, "", "must be a string (got true)"},
	})
}

func TestOptionBool_TakesOnlyBooleans(t *testing.T) {
	checkOption(t, OptionBool, []optionCase[bool]{
		{"true", true, true, ""},
		{"false", false, false, ""},
		{"nothing is false", nil, false, ""},
		{"string", "yes", false, `must be true or false (got "yes")`},
		{"number", 1, false, "must be true or false (got 1)"},
	})
}

func TestOptionToolList_ListsAreJoinedStringsKeptAsWritten(t *testing.T) {
	checkOption(t, OptionToolList, []optionCase[string]{
		{"list", []any{" Edit ", "Bash(git log:*)"}, "Edit,Bash(git log:*)", ""},
		{"empty list", []any{}, "", ""},
		{"string as written", " Edit, Write Bash ", "Edit, Write Bash", ""},
		{"nothing", nil, "", ""},
		{"blank item", []any{"Edit", " "}, "", `[1]: must be a non-empty tool name (got " ")`},
		{"number item", []any{"Edit", 7}, "", "[1]: must be a non-empty tool name (got 7)"},
		{"mapping", map[string]any{}, "", "must be a string (got a mapping)"},
	})
}

func TestOptionCount_TakesEveryWholeNumberForm(t *testing.T) {
	checkOption(t, OptionCount, []optionCase[int64]{
		{"nothing is zero", nil, 0, ""},
		{"int", 50, 50, ""},
		{"int64", int64(7), 7, ""},
		{"uint64", uint64(8), 8, ""},
		{"whole float", 9.0, 9, ""},
		{"string", " 10 ", 10, ""},
		{"zero", 0, 0, ""},
		{"negative", -1, 0, "must be a non-negative whole number (got -1)"},
		{"negative int64", int64(-1), 0, "must be a non-negative whole number (got -1)"},
		{"fraction", 2.5, 0, "must be a non-negative whole number (got 2.5)"},
		{"huge uint64", uint64(math.MaxInt32) + 1, 0, "must be a non-negative whole number (got 2147483648)"},
		{"huge float", 1e10, 0, "must be a non-negative whole number (got 1e+10)"},
		{"word", "many", 0, `must be a non-negative whole number (got "many")`},
		{"negative string", "-3", 0, `must be a non-negative whole number (got "-3")`},
		{"bool", true, 0, "must be a non-negative whole number (got true)"},
	})
}

func TestOptionUSD_TakesNonNegativeFiniteAmounts(t *testing.T) {
	checkOption(t, OptionUSD, []optionCase[float64]{
		{"nothing is zero", nil, 0, ""},
		{"int", 5, 5, ""},
		{"int64", int64(6), 6, ""},
		{"uint64", uint64(7), 7, ""},
		{"float", 2.5, 2.5, ""},
		{"string", " 0.75 ", 0.75, ""},
		{"word", "lots", 0, `must be an amount in USD (got "lots")`},
		{"bool", true, 0, "must be an amount in USD (got true)"},
		{"negative", -5, 0, "must be a non-negative amount in USD (got -5)"},
		{"not a number", "NaN", 0, `must be a non-negative amount in USD (got "NaN")`},
		{"infinite", math.Inf(1), 0, "must be a non-negative amount in USD (got +Inf)"},
	})
}

func TestDescribeValue(t *testing.T) {
	cases := []struct {
		in   any
		want string
	}{
		{nil, "nothing"},
		{`say "hi"`, `"say \"hi\""`},
		{[]any{1}, "a list"},
		{map[string]any{"a": 1}, "a mapping"},
		{map[any]any{1: "a"}, "a mapping"},
		{42, "42"},
		{2.5, "2.5"},
		{false, "false"},
	}
	for _, c := range cases {
		if got := DescribeValue(c.in); got != c.want {
			t.Errorf("DescribeValue(%#v) = %q, want %q", c.in, got, c.want)
		}
	}
}
