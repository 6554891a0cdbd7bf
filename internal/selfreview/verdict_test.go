package selfreview

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestParseVerdict(t *testing.T) {
	tests := []struct {
		in      string
		want    string
		issues  []string
		wantErr string
	}{
		{in: `{"verdict":"pass"}`, want: VerdictPass},
		{in: ` {"verdict":" Iterate ","issues":["a","",42,"b\nc"]} `, want: VerdictIterate, issues: []string{"a", "b c"}},
		{in: `{"verdict":"iterate","summary":"s","issues":[{"file":"x.go","line":3,"end_line":5,"severity":"high","message":"off by one"},{"message":"no file"},{"file":"y.go","line":"7"}]}`,
			want: VerdictIterate, issues: []string{"x.go:3-5: [high] off by one", "no file", "y.go:"}},
		{in: ``, wantErr: "empty"},
		{in: `null`, wantErr: "not a JSON object"},
		{in: `["pass"]`, wantErr: "not a JSON object"},
		{in: `{"verdict":"pass"`, wantErr: "not valid JSON"},
		{in: `{"verdict":1}`, wantErr: "not valid JSON"},
		{in: `{"issues":[]}`, wantErr: `no "verdict"`},
		{in: `{"verdict":"passed"}`, wantErr: "neither"},
		{in: `{"verdict":"pass","issues":"x"}`, wantErr: "not valid JSON"},
	}
	for _, tt := range tests {
		v, err := ParseVerdict([]byte(tt.in))
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseVerdict(%q) err = %v, want one containing %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || v.Verdict != tt.want || strings.Join(v.Issues, "|") != strings.Join(tt.issues, "|") {
			t.Errorf("ParseVerdict(%q) = %+v, %v; want %s with %q", tt.in, v, err, tt.want, tt.issues)
		}
	}
}

func TestClean(t *testing.T) {
	for in, want := range map[string]string{
		"  a\tb\n\nc  ":      "a b c",
		"x\u202ey\x00z\x1b[": "x y z [",
		"\xff ok":            "\uFFFD ok",
	} {
		if got := clean(in, 100); got != want {
			t.Errorf("clean(%q) = %q, want %q", in, got, want)
		}
	}
	long := strings.Repeat("é", 300)
	got := clean(long, MaxIssueLength)
	if len(got) > MaxIssueLength || !utf8.ValidString(got) || !strings.HasSuffix(got, "…") {
		t.Errorf("clean(long) has %d bytes, valid %v, ends %q", len(got), utf8.ValidString(got), got[len(got)-6:])
	}
}

func FuzzParseVerdict(f *testing.F) {
	for _, s := range []string{
		`{"verdict":"pass"}`,
		`{"verdict":"iterate","issues":["a","b\nc"]}`,
		`{"verdict":"ITERATE","issues":[{"file":"x.go","line":3,"end_line":1,"severity":"low","message":"m"}]}`,
		`{"verdict":"pass","issues":[null,1,{},[]]}`,
		`{"verdict":"pass","verdict":"iterate"}`,
		"{\"verdict\":\"pass\",\"issues\":[\"\xff\u202e\"]}",
		`null`, ``, `{`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := ParseVerdict(data)
		if err != nil {
			if v.Verdict != "" || v.Issues != nil {
				t.Fatalf("error %v with a verdict %+v", err, v)
			}
			if strings.ContainsAny(err.Error(), "\n`") || len(err.Error()) > 100 {
				t.Fatalf("error not safe for a prompt: %q", err)
			}
			return
		}
		if v.Verdict != VerdictPass && v.Verdict != VerdictIterate {
			t.Fatalf("verdict %q", v.Verdict)
		}
		if len(v.Issues) > MaxIssues || v.Dropped < 0 {
			t.Fatalf("%d issues, %d dropped", len(v.Issues), v.Dropped)
		}
		for _, s := range v.Issues {
			if s == "" || len(s) > MaxIssueLength || !utf8.ValidString(s) || strings.ContainsAny(s, "\n\r\x00") {
				t.Fatalf("issue %q", s)
			}
		}
	})
}
