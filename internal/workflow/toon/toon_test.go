package toon

import (
	"errors"
	"strings"
	"testing"
)

func TestDecode_ErrorsNameLineAndColumn(t *testing.T) {
	tests := []struct {
		name, in   string
		line, col  int
		msgContain string
	}{
		{"count mismatch", "a: 1\nb: 2\nc: 3\ntags[3]: a,b", 4, 1, "declares [3] but has 2 values"},
		{"missing colon", "a:\n  user", 2, 3, `missing ':' after key "user"`},
		{"bad escape", `x: "a\qb"`, 1, 6, `invalid escape \q`},
		{"odd indentation", "a:\n   b: 1", 2, 1, "not a multiple of 2"},
		{"tab indentation", "a:\n\tb: 1", 2, 1, "tab in indentation"},
		{"duplicate key", "a: 1\na: 2", 2, 1, `duplicate key "a"`},
		{"row width", "t[1]{a,b}:\n  1", 2, 3, "row has 1 values but the header declares 2 fields"},
		{"blank line in list", "l[2]:\n  - a\n\n  - b", 3, 1, "blank line inside an array"},
		{"bad length", "x[03]: a", 1, 2, "length [03]"},
		{"invalid utf8", "a: 1\nb: \xff", 2, 4, "invalid UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Decode([]byte(tt.in), DefaultOptions())
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("got %v, want a *SyntaxError", err)
			}
			if se.Line != tt.line || se.Column != tt.col || !strings.Contains(se.Msg, tt.msgContain) {
				t.Errorf("got %q (line %d, column %d), want line %d, column %d containing %q", err, se.Line, se.Column, tt.line, tt.col, tt.msgContain)
			}
			if !strings.HasPrefix(err.Error(), "toon: line ") {
				t.Errorf("error %q does not start with \"toon: line \"", err)
			}
		})
	}
}

func TestDecode_DeepNestingIsRejected(t *testing.T) {
	var b strings.Builder
	for i := 0; i < MaxDepth+10; i++ {
		b.WriteString(strings.Repeat("  ", i) + "k:\n")
	}
	_, err := Decode([]byte(b.String()), DefaultOptions())
	if err == nil || !strings.Contains(err.Error(), "nesting deeper than") {
		t.Fatalf("got %v, want a nesting-depth error", err)
	}
}

func TestDecode_OutOfRangeNumberKeepsItsDigits(t *testing.T) {
	v, err := Decode([]byte("n: 1e400\nz: -0"), DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	obj := v.(*Object)
	if n, _ := obj.Get("n"); n != "1e400" {
		t.Errorf("n = %#v, want the string \"1e400\"", n)
	}
	if z, _ := obj.Get("z"); z != 0.0 {
		t.Errorf("z = %#v, want 0", z)
	}
}

func TestDecode_BadOptionsAreRejected(t *testing.T) {
	if _, err := Decode([]byte("a: 1"), Options{Indent: -1}); err == nil {
		t.Error("negative indent accepted")
	}
	if _, err := Decode([]byte("a: 1"), Options{ExpandPaths: "deep"}); err == nil {
		t.Error(`expandPaths "deep" accepted`)
	}
}

func TestUnmarshal_FillsStructsAndKeepsOrderInJSON(t *testing.T) {
	src := "name: build\nsteps[2]{id,timeoutMs}:\n  lint,1000\n  test,60000\nmeta:\n  z: 1\n  a: 2\n"
	var wf struct {
		Name  string
		Steps []struct {
			ID        string
			TimeoutMs int
		}
		Meta map[string]int
	}
	if err := Unmarshal([]byte(src), &wf); err != nil {
		t.Fatal(err)
	}
	if wf.Name != "build" || len(wf.Steps) != 2 || wf.Steps[1].TimeoutMs != 60000 || wf.Meta["a"] != 2 {
		t.Errorf("got %+v", wf)
	}
	v, _ := Decode([]byte("meta:\n  z: 1\n  a: 2"), DefaultOptions())
	meta, _ := v.(*Object).Get("meta")
	if got := strings.Join(meta.(*Object).Keys(), ","); got != "z,a" {
		t.Errorf("keys = %s, want z,a (document order)", got)
	}
}

func TestUnmarshal_TypeMismatchNamesTheField(t *testing.T) {
	var wf struct{ Count int }
	err := Unmarshal([]byte("Count: many"), &wf)
	if err == nil || !strings.Contains(err.Error(), `"Count"`) {
		t.Fatalf("got %v, want an error naming Count", err)
	}
}
