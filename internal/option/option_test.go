package option

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
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

func TestString_TrimsAndRefusesOtherTypes(t *testing.T) {
	checkOption(t, String, []optionCase[string]{
		{"nothing is empty", nil, "", ""},
		{"trimmed", "  sonnet \n", "sonnet", ""},
		{"number", 3, "", "must be a string (got 3)"},
		{"list", []any{"a"}, "", "must be a string (got a list)"},
		{"mapping", map[string]any{"a": 1}, "", "must be a string (got a mapping)"},
	})
}

func TestEnum_AcceptsOnlyTheValidValues(t *testing.T) {
	valid := []string{"low", "high"}
	enum := func(v any) (string, error) { return Enum(v, valid) }
	checkOption(t, enum, []optionCase[string]{
		{"valid", " high ", "high", ""},
		{"empty is unset", "", "", ""},
		{"nothing is unset", nil, "", ""},
		{"unknown", "medium", "", `unknown value "medium" (valid: low, high)`},
		{"not a string", true, "", "must be a string (got true)"},
	})
}

func TestBool_TakesOnlyBooleans(t *testing.T) {
	checkOption(t, Bool, []optionCase[bool]{
		{"true", true, true, ""},
		{"false", false, false, ""},
		{"nothing is false", nil, false, ""},
		{"string", "yes", false, `must be true or false (got "yes")`},
		{"number", 1, false, "must be true or false (got 1)"},
	})
}

func TestToolList_ListsAreJoinedStringsKeptAsWritten(t *testing.T) {
	checkOption(t, ToolList, []optionCase[string]{
		{"list", []any{" Edit ", "Bash(git log:*)"}, "Edit,Bash(git log:*)", ""},
		{"empty list", []any{}, "", ""},
		{"string as written", " Edit, Write Bash ", "Edit, Write Bash", ""},
		{"nothing", nil, "", ""},
		{"blank item", []any{"Edit", " "}, "", `[1]: must be a non-empty tool name (got " ")`},
		{"number item", []any{"Edit", 7}, "", "[1]: must be a non-empty tool name (got 7)"},
		{"mapping", map[string]any{}, "", "must be a string (got a mapping)"},
	})
}

func TestCount_TakesEveryWholeNumberForm(t *testing.T) {
	checkOption(t, Count, []optionCase[int64]{
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

func TestUSD_TakesNonNegativeFiniteAmounts(t *testing.T) {
	checkOption(t, USD, []optionCase[float64]{
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

func TestDescribe(t *testing.T) {
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
		if got := Describe(c.in); got != c.want {
			t.Errorf("Describe(%#v) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestWord_RefusesWhatReadsAsAFlag(t *testing.T) {
	checkOption(t, Word, []optionCase[string]{
		{"word", " build ", "build", ""},
		{"nothing", nil, "", ""},
		{"flag", "--yolo", "", `must not start with '-' (got "--yolo")`},
		{"not a string", 3, "", "must be a string (got 3)"},
	})
}

func TestOneOf_IsEnum(t *testing.T) {
	checkOption(t, OneOf("low", "high"), []optionCase[string]{
		{"valid", "low", "low", ""},
		{"unknown", "mid", "", `unknown value "mid" (valid: low, high)`},
	})
}

func TestResolvePath_RelativeToTheWorkflowDirectory(t *testing.T) {
	cases := []struct{ dir, p, want string }{
		{"/wf", "mcp.json", "/wf/mcp.json"},
		{"/wf", "./a/../b.json", "/wf/b.json"},
		{"/wf", "/abs/mcp.json", "/abs/mcp.json"},
		{"/wf", "", ""},
		{"", "rel.json", "rel.json"},
	}
	for _, c := range cases {
		if got := ResolvePath(c.dir, c.p); got != c.want {
			t.Errorf("ResolvePath(%q, %q) = %q, want %q", c.dir, c.p, got, c.want)
		}
	}
}

// testOptions is the options type of the adapter the Set tests declare.
type testOptions struct {
	Model   string
	Turns   int64
	Persist bool
	Script  []string
}

// testScript reads a list of strings, naming each item's path in its errors.
func testScript(at string, v any) ([]string, error) {
	list, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("%s: must be a list (got %s)", at, Describe(v))
	}
	var out []string
	for i, item := range list {
		s, ok := item.(string)
		if !ok {
			return nil, fmt.Errorf("%s[%d]: must be a string (got %s)", at, i, Describe(item))
		}
		out = append(out, s)
	}
	return out, nil
}

func testSet(strict bool) Set {
	return Set{Strict: strict, Keys: []Option{
		{Key: "turns", Default: 50, Set: Field(Count, func(o *testOptions) *int64 { return &o.Turns })},
		{Key: "model", Set: Field(Word, func(o *testOptions) *string { return &o.Model })},
		{Key: "persist", Default: true, Set: Field(Bool, func(o *testOptions) *bool { return &o.Persist })},
		{Key: "script", Set: FieldAt(testScript, func(o *testOptions) *[]string { return &o.Script })},
		{Key: "mcp_config"}, // read by someone else
		{Key: "turn_outcomes", Retired: "no longer read; use script"},
	}}
}

func TestSet_Parse(t *testing.T) {
	const known = "(known: mcp_config, model, persist, script, turns)"
	defaults := testOptions{Turns: 50, Persist: true}
	cases := []struct {
		name     string
		strict   bool
		raw      map[string]any
		want     testOptions // when err is ""
		warnings []string
		err      string
	}{
		{name: "absent keys take their defaults", want: defaults},
		{name: "an empty key keeps its default", raw: map[string]any{"turns": nil, "persist": nil, "model": nil}, want: defaults},
		{name: "every key", raw: map[string]any{"turns": "7", "model": " m ", "persist": false, "script": []any{"a", "b"}},
			want: testOptions{Turns: 7, Model: "m", Script: []string{"a", "b"}}},
		{name: "a key read elsewhere is accepted and left alone", raw: map[string]any{"mcp_config": 3}, want: defaults},
		{name: "an unknown key is a warning listing the known keys, sorted", raw: map[string]any{"modle": "x", "turns": 1},
			want: testOptions{Turns: 1, Persist: true}, warnings: []string{"blk.modle: unknown key, ignored " + known}},
		{name: "strict: an unknown key is an error", strict: true, raw: map[string]any{"modle": "x"},
			err: "blk.modle: unknown key " + known},
		{name: "a retired key says what to write instead", raw: map[string]any{"turn_outcomes": []any{}},
			want: defaults, warnings: []string{"blk.turn_outcomes: no longer read; use script"}},
		{name: "strict: a retired key is an error", strict: true, raw: map[string]any{"turn_outcomes": []any{}},
			err: "blk.turn_outcomes: no longer read; use script"},
		{name: "every problem, in key order, each after its path", raw: map[string]any{"turns": -1, "model": "-x", "persist": "no"},
			err: `blk.model: must not start with '-' (got "-x"); blk.persist: must be true or false (got "no"); blk.turns: must be a non-negative whole number (got -1)`},
		{name: "strict: unknown keys and wrong values, in key order", strict: true, raw: map[string]any{"turns": -1, "a": 1},
			err: "blk.a: unknown key " + known + "; blk.turns: must be a non-negative whole number (got -1)"},
		{name: "a FieldAt reader names the path of a part", raw: map[string]any{"script": []any{"a", 3}},
			err: "blk.script[1]: must be a string (got 3)"},
		{name: "a FieldAt reader is given nothing too", raw: map[string]any{"script": nil},
			err: "blk.script: must be a list (got nothing)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			set := testSet(c.strict)
			var o testOptions
			set.Defaults(&o)
			warnings, err := set.Parse("blk", c.raw, &o)
			if !slices.Equal(warnings, c.warnings) {
				t.Errorf("warnings = %q, want %q", warnings, c.warnings)
			}
			switch {
			case c.err != "":
				var oe *Error
				if err == nil || err.Error() != c.err || !errors.As(err, &oe) {
					t.Errorf("error = %v, want the *Error %q", err, c.err)
				}
			case err != nil:
				t.Errorf("error = %v, want none", err)
			case !reflect.DeepEqual(o, c.want):
				t.Errorf("options = %+v, want %+v", o, c.want)
			}
		})
	}
}

func TestSet_ParseAPartKeepsWhatItDoesNotSet(t *testing.T) {
	// A nested block (the mock's per-issue ones) starts from a copy of its parent.
	o := testOptions{Turns: 3, Model: "parent"}
	if _, err := testSet(true).Parse("blk.issues.A-1", map[string]any{"model": "child"}, &o); err != nil {
		t.Fatal(err)
	}
	if want := (testOptions{Turns: 3, Model: "child"}); !reflect.DeepEqual(o, want) {
		t.Errorf("options = %+v, want %+v", o, want)
	}
	_, err := testSet(true).Parse("blk.issues.A-1", map[string]any{"turns": "x"}, &o)
	if err == nil || err.Error() != `blk.issues.A-1.turns: must be a non-negative whole number (got "x")` {
		t.Errorf("error = %v, want one with the nested path", err)
	}
}

func TestSet_KnownAndLookup(t *testing.T) {
	set := testSet(false)
	if got, want := set.Known(), []string{"mcp_config", "model", "persist", "script", "turns"}; !slices.Equal(got, want) {
		t.Errorf("Known = %q, want %q (sorted, without the retired key)", got, want)
	}
	if o, ok := set.Lookup("persist"); !ok || o.Default != true {
		t.Errorf("Lookup(persist) = %+v, %v", o, ok)
	}
	if _, ok := set.Lookup("nope"); ok {
		t.Error("Lookup found an undeclared key")
	}
}

func TestSet_DeclarationMistakesPanic(t *testing.T) {
	cases := map[string]func(){
		"a default its reader refuses": func() {
			set := Set{Keys: []Option{{Key: "turns", Default: -1, Set: Field(Count, func(o *testOptions) *int64 { return &o.Turns })}}}
			set.Defaults(&testOptions{})
		},
		"a field of another options type": func() {
			var other struct{ Turns int64 }
			_, _ = testSet(false).Parse("blk", map[string]any{"turns": 1}, &other)
		},
	}
	for name, f := range cases {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Error("no panic")
				}
			}()
			f()
		})
	}
}

func TestRead_DefaultsThenTheBlockWithPathsResolved(t *testing.T) {
	type opts struct {
		Config string
		Note   string
		Keep   bool
	}
	set := Set{Keys: []Option{
		{Key: "config", Path: true, Set: Field(String, func(o *opts) *string { return &o.Config })},
		{Key: "note", Set: Field(String, func(o *opts) *string { return &o.Note })},
		{Key: "keep", Default: true, Set: Field(Bool, func(o *opts) *bool { return &o.Keep })},
	}}
	raw := map[string]any{"config": " rel/c.json ", "note": "rel/n"}
	o, warnings, err := Read[opts](set, "x", raw, "/srv/wf")
	if err != nil || len(warnings) != 0 {
		t.Fatalf("Read = %v, %v", warnings, err)
	}
	if o != (opts{Config: "/srv/wf/rel/c.json", Note: "rel/n", Keep: true}) {
		t.Errorf("options = %+v: want the default kept, the Path key resolved against the directory, the other as written", o)
	}
	if raw["config"] != " rel/c.json " {
		t.Errorf("the caller's block was changed: %q", raw["config"])
	}
	if o, _, _ := Read[opts](set, "x", map[string]any{"config": "/abs/c.json"}, "/srv/wf"); o.Config != "/abs/c.json" {
		t.Errorf("absolute path = %q, want it as written", o.Config)
	}
	if _, _, err := Read[opts](set, "x", map[string]any{"config": 3}, "/srv/wf"); err == nil || !strings.Contains(err.Error(), "x.config: must be a string") {
		t.Errorf("a path that is not a string: %v", err)
	}
}
