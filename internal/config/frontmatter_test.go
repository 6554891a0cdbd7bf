package config

import (
	"strings"
	"testing"
)

func TestSplitFrontMatter(t *testing.T) {
	tests := []struct {
		name       string
		in         string
		want       Document
		wantYAML   string
		wantPrompt string
	}{
		{
			name: "no front matter: whole file is the prompt",
			in:   "\n\nHello {{ .issue.title }}\n",
			want: Document{Prompt: "Hello {{ .issue.title }}", PromptLine: 3},
		},
		{
			name: "front matter and prompt",
			in:   "---\na: 1\n---\nHello\n",
			want: Document{HasFrontMatter: true, Closed: true, FrontMatter: "a: 1\n", FrontMatterLine: 2, Prompt: "Hello", PromptLine: 4},
		},
		{
			name: "blank lines before the prompt move its first line",
			in:   "---\na: 1\nb: 2\n---\n\n\n  Hello\nworld\n\n",
			want: Document{HasFrontMatter: true, Closed: true, FrontMatter: "a: 1\nb: 2\n", FrontMatterLine: 2, Prompt: "Hello\nworld", PromptLine: 7},
		},
		{
			name: "UTF-8 BOM is stripped",
			in:   "\uFEFF---\na: 1\n---\nHi",
			want: Document{HasFrontMatter: true, Closed: true, FrontMatter: "a: 1\n", FrontMatterLine: 2, Prompt: "Hi", PromptLine: 4},
		},
		{
			name: "CRLF becomes LF",
			in:   "---\r\na: 1\r\n---\r\nHi\r\nthere\r\n",
			want: Document{HasFrontMatter: true, Closed: true, FrontMatter: "a: 1\n", FrontMatterLine: 2, Prompt: "Hi\nthere", PromptLine: 4},
		},
		{
			name: "trailing spaces and tabs on delimiters are allowed",
			in:   "--- \t\na: 1\n---\t \nHi",
			want: Document{HasFrontMatter: true, Closed: true, FrontMatter: "a: 1\n", FrontMatterLine: 2, Prompt: "Hi", PromptLine: 4},
		},
		{
			name: "missing closing delimiter: rest is YAML, prompt empty",
			in:   "---\na: 1\nb: 2\n",
			want: Document{HasFrontMatter: true, FrontMatter: "a: 1\nb: 2\n", FrontMatterLine: 2, PromptLine: 5},
		},
		{
			name: "closing delimiter at end of file without newline",
			in:   "---\na: 1\n---",
			want: Document{HasFrontMatter: true, Closed: true, FrontMatter: "a: 1\n", FrontMatterLine: 2, PromptLine: 4},
		},
		{
			name: "empty front matter",
			in:   "---\n---\nHi",
			want: Document{HasFrontMatter: true, Closed: true, FrontMatterLine: 2, Prompt: "Hi", PromptLine: 3},
		},
		{
			name: "opening line without newline is not front matter",
			in:   "---",
			want: Document{Prompt: "---", PromptLine: 1},
		},
		{
			name: "indented opening line is not front matter",
			in:   " ---\na: 1\n---\nHi",
			want: Document{Prompt: "---\na: 1\n---\nHi", PromptLine: 1},
		},
		{
			name: "four dashes are not a delimiter",
			in:   "----\na: 1\n",
			want: Document{Prompt: "----\na: 1", PromptLine: 1},
		},
		{
			name: "a later --- in the prompt stays in the prompt",
			in:   "---\na: 1\n---\nHi\n---\nBye",
			want: Document{HasFrontMatter: true, Closed: true, FrontMatter: "a: 1\n", FrontMatterLine: 2, Prompt: "Hi\n---\nBye", PromptLine: 4},
		},
		{
			name: "indented --- inside YAML does not close it",
			in:   "---\na: |\n  ---\n---\nHi",
			want: Document{HasFrontMatter: true, Closed: true, FrontMatter: "a: |\n  ---\n", FrontMatterLine: 2, Prompt: "Hi", PromptLine: 5},
		},
		{
			name: "empty file",
			in:   "",
			want: Document{PromptLine: 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := SplitFrontMatter([]byte(tt.in))
			if got != tt.want {
				t.Errorf("SplitFrontMatter(%q)\n got %+v\nwant %+v", tt.in, got, tt.want)
			}
		})
	}
}

func TestParseFrontMatter(t *testing.T) {
	const path = "/w/WORKFLOW.md"
	tests := []struct {
		name    string
		in      string
		wantLen int    // keys in the map when there is no error
		wantErr string // exact Problem.String() of the first problem
	}{
		{name: "no front matter is an empty map", in: "just a prompt", wantLen: 0},
		{name: "empty front matter is an empty map", in: "---\n---\n", wantLen: 0},
		{name: "comment-only front matter is an empty map", in: "---\n# nothing\n---\n", wantLen: 0},
		{name: "null document is an empty map", in: "---\nnull\n---\n", wantLen: 0},
		{name: "map", in: "---\na: 1\nb: x\n---\n", wantLen: 2},
		{name: "list is refused", in: "---\n- a\n- b\n---\n", wantErr: "config: /w/WORKFLOW.md: front matter must be a YAML map (got list)"},
		{name: "scalar is refused", in: "---\nhello\n---\n", wantErr: "config: /w/WORKFLOW.md: front matter must be a YAML map (got string)"},
		{
			name:    "syntax error reports the WORKFLOW.md line",
			in:      "---\na: 1\nb: c: d\n---\n",
			wantErr: "config: /w/WORKFLOW.md:3: invalid YAML front matter: mapping values are not allowed in this context",
		},
		{
			name:    "duplicate key reports both WORKFLOW.md lines",
			in:      "---\nagent:\n  kind: mock\nagent: {}\n---\n",
			wantErr: `config: /w/WORKFLOW.md:4: invalid YAML front matter: mapping key "agent" already defined at line 2`,
		},
		{
			name:    "syntax error without closing delimiter hints at it",
			in:      "---\na: [1,\n",
			wantErr: "config: /w/WORKFLOW.md:2: invalid YAML front matter: did not find expected node content (is the closing '---' line missing?)",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, problems := parseFrontMatter(path, SplitFrontMatter([]byte(tt.in)))
			if tt.wantErr != "" {
				if len(problems) == 0 {
					t.Fatalf("got no problem, want %q", tt.wantErr)
				}
				if got := problems[0].String(); got != tt.wantErr {
					t.Errorf("problem:\n got %q\nwant %q", got, tt.wantErr)
				}
				if m != nil {
					t.Errorf("map = %v, want nil on error", m)
				}
				return
			}
			if len(problems) > 0 {
				t.Fatalf("unexpected problems: %v", problems)
			}
			if len(m) != tt.wantLen {
				t.Errorf("map has %d keys (%v), want %d", len(m), m, tt.wantLen)
			}
		})
	}
}

func TestParseFrontMatter_NonStringKeysBecomeStrings(t *testing.T) {
	m, problems := parseFrontMatter("/w/WORKFLOW.md", SplitFrontMatter([]byte("---\n1: a\nx:\n  true: b\n---\n")))
	if len(problems) > 0 {
		t.Fatalf("unexpected problems: %v", problems)
	}
	if m["1"] != "a" {
		t.Errorf(`m["1"] = %v, want "a"`, m["1"])
	}
	inner, ok := m["x"].(map[string]any)
	if !ok || inner["true"] != "b" {
		t.Errorf(`m["x"] = %#v, want map[string]any{"true": "b"}`, m["x"])
	}
}

func TestSplitFrontMatter_PromptLineMapsTemplateLines(t *testing.T) {
	in := "---\na: 1\n---\n\nfirst\nsecond {{ bad }}\n"
	doc := SplitFrontMatter([]byte(in))
	lines := strings.Split(in, "\n")
	// Template line 2 ("second ...") must be WORKFLOW.md line PromptLine+1.
	if got := lines[doc.PromptLine+1-1]; !strings.HasPrefix(got, "second") {
		t.Errorf("line %d of the file is %q, want the template's second line", doc.PromptLine+1, got)
	}
}
