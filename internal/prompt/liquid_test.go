package prompt

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"sortie/internal/tracker"
)

// symphonyPrompt is the body of a typical Symphony WORKFLOW.md.
const symphonyPrompt = "You are working on a Linear ticket `{{ issue.identifier }}`\n" +
	"{% if attempt %}This is retry attempt #{{ attempt }}.{% endif %}\n" +
	"Title: {{ issue.title }} Labels: {{ issue.labels | join: \", \" }}\n" +
	"{% if issue.description %}{{ issue.description }}{% else %}No description provided.{% endif %}\n"

func mustParseLiquid(t *testing.T, src string) *Template {
	t.Helper()
	tmpl, err := ParseEngine("WORKFLOW.md", src, 1, EngineLiquid)
	if err != nil {
		t.Fatalf("ParseEngine(%q, liquid): %v", src, err)
	}
	return tmpl
}

func renderLiquid(t *testing.T, src string, d Data) string {
	t.Helper()
	out, err := mustParseLiquid(t, src).Render(d)
	if err != nil {
		t.Fatalf("Render(%q): %v", src, err)
	}
	return out
}

func TestLiquid_SymphonyPromptRendersUnchanged(t *testing.T) {
	tmpl, err := Parse("WORKFLOW.md", symphonyPrompt, 28)
	if err != nil {
		t.Fatal(err)
	}
	if tmpl.Engine() != EngineLiquid {
		t.Fatalf("detected %q, want liquid", tmpl.Engine())
	}
	first, err := tmpl.Render(Data{Issue: sampleIssue()})
	if err != nil {
		t.Fatal(err)
	}
	want := "You are working on a Linear ticket `PROJ-42`\n\n" +
		"Title: Add retry logic to webhook handler Labels: backend, reliability\n" +
		"The webhook handler fails silently.\n"
	if first != want {
		t.Errorf("first run:\n%q\nwant\n%q", first, want)
	}
	retry, err := tmpl.Render(Data{Issue: sampleIssueBare(), Attempt: 3})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(retry, "This is retry attempt #3.") || !strings.Contains(retry, "No description provided.") {
		t.Errorf("retry of a bare issue:\n%s", retry)
	}
}

func TestLiquid_DataMatchesTheGoDialect(t *testing.T) {
	d := Data{Issue: sampleIssue(), Attempt: 2, Run: Run{TurnNumber: 3, MaxTurns: 20, IsContinuation: true}}
	tests := []struct{ src, want string }{
		{"{{ issue.id }} {{ issue.identifier }} {{ issue.state }} {{ issue.priority }}", "10042 PROJ-42 In Progress 2"},
		{"{{ issue.branch_name }} {{ issue.url }} {{ issue.assignee }} {{ issue.issue_type }}", "proj-42-retry https://tracker.example.com/browse/PROJ-42 alice Bug"},
		{"{{ issue.parent.identifier }}/{{ issue.parent.id }}", "PROJ-40/10040"},
		{"{% for b in issue.blocked_by %}{{ b.identifier }}={{ b.state }} ({{ b.id }}){% endfor %}", "PROJ-41=In Review (10041)"},
		{"{% for c in issue.comments %}{{ c.author }}@{{ c.created_at }}: {{ c.body }}{% endfor %}", "bob@2026-03-25T10:00:00Z: Seen in prod."},
		{"{{ issue.created_at }} {{ issue.updated_at }}", "2026-03-20T09:00:00Z 2026-03-25T14:30:00Z"},
		{"{{ attempt }} {{ run.turn_number }}/{{ run.max_turns }} {{ run.is_continuation }}", "2 3/20 true"},
		{"{{ issue.labels.size }} {{ issue.labels.first }} {{ issue.labels | join: '/' | upcase }}", "2 backend BACKEND/RELIABILITY"},
		{"{{ issue.blocked_by | map: 'identifier' | join: ',' }}", "PROJ-41"},
		{"{% if ci_failure %}ci{% else %}no-ci{% endif %}", "no-ci"},
		{"{% assign n = issue.labels.size %}{% capture t %}[{{ issue.title | truncate: 10 }}]{% endcapture %}{{ n }}{{ t }}", "2[Add ret...]"},
		{"{% for l in issue.labels reversed limit: 1 %}{{ forloop.index }}:{{ l }}{% endfor %}", "1:reliability"},
		{"{% case issue.state %}{% when 'In Progress' %}busy{% else %}idle{% endcase %}", "busy"},
		{"{{ issue.labels[1] }} {{ issue.blocked_by[0].identifier }} {% assign i = 0 %}{{ issue.labels[i] | upcase }}", "reliability PROJ-41 BACKEND"},
		{"{% for l in issue.labels %}{{ forloop.index0 }}{{ forloop.rindex }}{{ forloop.rindex0 }}{{ forloop.length }}{% if forloop.first %}F{% endif %}{% if forloop.last %}L{% endif %};{% endfor %}", "0212F;1102L;"},
		{"{% tablerow l in issue.labels cols:2 %}{{ forloop.index }}{% endtablerow %}", `<tr class="row1"><td class="col1">1</td><td class="col2">2</td></tr>`},
	}
	for _, tt := range tests {
		if got := renderLiquid(t, tt.src, d); got != tt.want {
			t.Errorf("Render(%q) = %q, want %q", tt.src, got, tt.want)
		}
	}
}

// A template written with Symphony's field names (SPEC §4) parses and renders: they are
// aliases of Sortie's, plus native_ref (null) and dispatchable (true: the issue was
// dispatched).
func TestLiquid_SymphonyFieldNames(t *testing.T) {
	const src = "{{ issue.identifier }} for {{ issue.assignee_id }}" +
		"{% if issue.native_ref %} ref{% endif %}{% if issue.dispatchable %} dispatchable{% endif %}\n" +
		"{% for c in issue.comments %}{{ c.author_name }} ({{ c.author_id }}) {{ c.created_at }}/{{ c.updated_at }}: {{ c.body }}{% endfor %}"
	tmpl, err := Parse("WORKFLOW.md", src, 1)
	if err != nil {
		t.Fatal(err)
	}
	if tmpl.Engine() != EngineLiquid {
		t.Fatalf("detected %q, want liquid", tmpl.Engine())
	}
	out, err := tmpl.Render(Data{Issue: sampleIssue()})
	if err != nil {
		t.Fatal(err)
	}
	want := "PROJ-42 for alice dispatchable\nbob (bob) 2026-03-25T10:00:00Z/2026-03-25T10:00:00Z: Seen in prod."
	if out != want {
		t.Errorf("Render = %q, want %q", out, want)
	}
	// Unset, they are nil like their Sortie names.
	out = renderLiquid(t, "[{{ issue.assignee_id }}][{{ issue.native_ref }}]", Data{Issue: sampleIssueBare()})
	if out != "[][]" {
		t.Errorf("bare issue: Render = %q, want [][]", out)
	}
	// An alias of a comment field is not an issue field, and the Go dialect is unchanged.
	if _, err := ParseEngine("WORKFLOW.md", "{{ issue.author_name }}", 1, EngineLiquid); err == nil {
		t.Error("issue.author_name parsed; want an unknown-field error")
	}
	if _, err := mustParse(t, "{{ .issue.assignee_id }}").Render(Data{Issue: sampleIssue()}); err == nil {
		t.Error("Go template rendered .issue.assignee_id; the aliases are Liquid's")
	}
}

func TestLiquid_FirstRunAndMissingFieldsAreNil(t *testing.T) {
	d := Data{Issue: tracker.Issue{ID: "1", Identifier: "X-1", Title: "T", State: "Todo"}}
	tests := []struct{ src, want string }{
		{"[{{ attempt }}]{% if attempt %}retry{% else %}first{% endif %}", "[]first"},
		{"[{{ issue.priority }}][{{ issue.description }}][{{ issue.parent.identifier }}]", "[][][]"},
		{"{% if issue.description %}d{% endif %}{% if issue.url %}u{% endif %}{% unless issue.parent %}no-parent{% endunless %}", "no-parent"},
		{"{{ issue.labels.size }}{% for b in issue.blocked_by %}b{% else %}none{% endfor %}", "0none"},
	}
	for _, tt := range tests {
		if got := renderLiquid(t, tt.src, d); got != tt.want {
			t.Errorf("Render(%q) = %q, want %q", tt.src, got, tt.want)
		}
	}
}

func TestLiquid_StrictAtParseWithWorkflowLine(t *testing.T) {
	tests := []struct {
		name, src string
		line      int
		contains  string
	}{
		{"unknown variable", "a\n{{ nope }}", 11, `unknown variable "nope"`},
		{"unknown variable in a tag", "a\n\n{% if issu.title %}x{% endif %}", 12, `unknown variable "issu"`},
		{"unknown issue field", "{{ issue.nonexistent }}", 10, `issue has no field "nonexistent"`},
		{"unknown field in an elsif", "{% if attempt %}{% elsif run.turns %}{% endif %}", 10, `run has no field "turns"`},
		{"unknown field of a loop element", "{% for b in issue.blocked_by %}\n{{ b.title }}{% endfor %}", 11, `b has no field "title"`},
		{"property of a list", "{{ issue.labels.name }}", 10, "is a list"},
		{"property of a string", "{{ issue.title.name }}", 10, "single value"},
		{"loop variable outside its loop", "{% for l in issue.labels %}{% endfor %}{{ l }}", 10, `unknown variable "l"`},
		{"unknown filter", "\n{{ issue.title | upper }}", 11, `unknown filter "upper"; did you mean upcase?`},
		{"unknown filter with arguments", "{{ issue.title | shorten: 3 }}", 10, `unknown filter "shorten"`},
		{"empty is not a value", "{% if issue.labels == empty %}x{% endif %}", 10, `"empty" is not supported`},
		{"include reads files", "{% include 'secrets.txt' %}", 10, "include"},
		{"syntax error", "a\nb\n{% if attempt %}", 12, "unterminated"},
		{"unknown tag", "\n{% shout %}", 11, `undefined tag "shout"`},
		{"bad expression", "{{ issue.title | }}", 10, "syntax error"},
		{"field of a list element by index", "{{ issue.labels[0].nope }}", 10, "issue.labels[0] is a single value"},
		{"unknown field of an indexed object", "{{ issue.blocked_by[0].title }}", 10, `issue.blocked_by[0] has no field "title"`},
		{"unknown variable in an index", "{{ issue.labels[i] }}", 10, `unknown variable "i"`},
		{"unknown forloop field", "{% for l in issue.labels %}{{ forloop.nope }}{% endfor %}", 10, `forloop has no field "nope"`},
		{"unknown forloop field in a tablerow", "{% tablerow l in issue.labels %}{{ forloop.col }}{% endtablerow %}", 10, `forloop has no field "col"`},
		{"tablerowloop, which the engine never sets", "{% tablerow l in issue.labels %}{{ tablerowloop.col }}{% endtablerow %}", 10, `"tablerowloop" is not supported`},
		{"forloop outside a loop", "{{ forloop.index }}", 10, `unknown variable "forloop"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseEngine("/etc/sortie/WORKFLOW.md", tt.src, 10, EngineLiquid)
			te, ok := errors.AsType[*TemplateError](err)
			if !ok || te.Kind != ErrParse || te.Line != tt.line || !strings.Contains(err.Error(), tt.contains) {
				t.Fatalf("err = %v, want a parse error at line %d containing %q", err, tt.line, tt.contains)
			}
			if prefix := "prompt: template parse error in /etc/sortie/WORKFLOW.md (line "; !strings.HasPrefix(err.Error(), prefix) {
				t.Errorf("Error() = %q, want prefix %q", err, prefix)
			}
		})
	}
}

func TestLiquid_StrictAtRender(t *testing.T) {
	tests := []struct {
		name, src string
		line      int
		contains  string
	}{
		{"index by an unknown key", "a\n{{ issue['nope'] }}", 2, `no field "nope"`},
		{"field through a filter", "{{ issue.blocked_by | first | map: 'x' }}{% assign b = issue.blocked_by | first %}{{ b.nope }}", 1, `no field "nope"`},
		{"default does not hide it", "{% assign p = issue.parent %}\n\n{{ issue['nope'] | default: 'x' }}", 3, `no field "nope"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := mustParseLiquid(t, tt.src).Render(Data{Issue: sampleIssue()})
			te, ok := errors.AsType[*TemplateError](err)
			if !ok || te.Kind != ErrRender || te.Line != tt.line || !strings.Contains(err.Error(), tt.contains) {
				t.Fatalf("Render = %q, %v; want a render error at line %d containing %q", out, err, tt.line, tt.contains)
			}
		})
	}
}

func TestLiquid_FilterListMatchesEngine(t *testing.T) {
	for _, f := range liquidFilters {
		// Parsed with the check bypassed: the engine alone must know the filter.
		tmpl := &Template{name: "WORKFLOW.md", engine: EngineLiquid}
		lt, err := parseLiquid("WORKFLOW.md", "{{ 'a' | "+f+" }}", 1)
		if err != nil {
			t.Fatalf("filter %s: %v", f, err)
		}
		tmpl.liquid = lt
		if _, err := tmpl.Render(Data{}); err != nil && strings.Contains(err.Error(), "undefined filter") {
			t.Errorf("filter %s is in liquidFilters but the engine does not define it: %v", f, err)
		}
	}
}

func TestLiquid_OutputIsBounded(t *testing.T) {
	_, err := mustParseLiquid(t, "{% for i in (1..5000000) %}xxxxxxxx{% endfor %}").Render(Data{})
	if te, ok := errors.AsType[*TemplateError](err); !ok || te.Kind != ErrRender || !strings.Contains(err.Error(), "exceeds") {
		t.Fatalf("err = %v, want a render error about the size limit", err)
	}
}

func TestLiquid_IssueTextIsNotTemplate(t *testing.T) {
	is := sampleIssue()
	is.Title = "{{ issue.id }} {% include '/etc/passwd' %}"
	got := renderLiquid(t, "{{ issue.title }}", Data{Issue: is})
	if got != is.Title {
		t.Fatalf("Render = %q, want the title verbatim", got)
	}
}

func TestLiquid_ContinuationTurn(t *testing.T) {
	src := "{% if run.is_continuation %}Turn {{ run.turn_number }}/{{ run.max_turns }}: keep going on {{ issue.identifier }}.{% else %}Start {{ issue.identifier }}.{% endif %}"
	tmpl := mustParseLiquid(t, src)
	first, err := tmpl.Render(Data{Issue: sampleIssue(), Run: Run{TurnNumber: 1, MaxTurns: 5}})
	if err != nil {
		t.Fatal(err)
	}
	if got := TurnPrompt(first, 1, nil); !strings.HasPrefix(got, "Start PROJ-42.\n\n") || !strings.Contains(got, StatusProtocolInstructions) {
		t.Errorf("first turn = %q", got)
	}
	later, err := tmpl.Render(Data{Issue: sampleIssue(), Run: Run{TurnNumber: 2, MaxTurns: 5, IsContinuation: true}})
	if err != nil {
		t.Fatal(err)
	}
	if got := TurnPrompt(later, 2, nil); got != "Turn 2/5: keep going on PROJ-42." {
		t.Errorf("continuation turn = %q", got)
	}
	blank := mustParseLiquid(t, "{% unless run.is_continuation %}Start.{% endunless %}")
	out, err := blank.Render(Data{Run: Run{TurnNumber: 2, IsContinuation: true}})
	if err != nil {
		t.Fatal(err)
	}
	if got := TurnPrompt(out, 2, nil); got != DefaultContinuationPrompt {
		t.Errorf("blank continuation = %q, want the default", got)
	}
}

func TestLiquid_ConcurrentRender(t *testing.T) {
	tmpl := mustParseLiquid(t, "{{ issue.identifier }} {{ attempt }}")
	done := make(chan string, 8)
	for i := range 8 {
		go func() {
			out, err := tmpl.Render(Data{Issue: tracker.Issue{Identifier: "P-1"}, Attempt: i + 1})
			if err != nil {
				out = err.Error()
			}
			done <- out
		}()
	}
	for range 8 {
		if out := <-done; !strings.HasPrefix(out, "P-1 ") {
			t.Errorf("concurrent Render = %q", out)
		}
	}
}

// The shipped Symphony example renders its first turn, a retry and a continuation turn.
func TestLiquid_SymphonyExampleRenders(t *testing.T) {
	path := filepath.Join("..", "..", "examples", "symphony", "WORKFLOW.md")
	body, firstLine := splitWorkflow(t, path, false)
	tmpl, err := Parse(path, body, firstLine)
	if err != nil {
		t.Fatal(err)
	}
	first, err := tmpl.Render(Data{Issue: sampleIssue(), Run: Run{TurnNumber: 1, MaxTurns: 20}})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"You are working on a Linear ticket `PROJ-42`: Add retry", "Labels: backend, reliability",
		"Ticket: https://tracker.example.com/browse/PROJ-42", "The webhook handler fails silently.", "- PROJ-41 (In Review)"} {
		if !strings.Contains(first, want) {
			t.Errorf("first turn lacks %q:\n%s", want, first)
		}
	}
	if strings.Contains(first, "retry attempt") || strings.Contains(first, "The prompt is Liquid") {
		t.Errorf("first turn shows the retry line or the comment:\n%s", first)
	}
	retry, err := tmpl.Render(Data{Issue: sampleIssueBare(), Attempt: 2, Run: Run{TurnNumber: 1, MaxTurns: 20}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(retry, "This is retry attempt #2;") || !strings.Contains(retry, "No description provided.") || strings.Contains(retry, "blocked by") {
		t.Errorf("retry of a bare issue:\n%s", retry)
	}
	later, err := tmpl.Render(Data{Issue: sampleIssue(), Run: Run{TurnNumber: 3, MaxTurns: 20, IsContinuation: true}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(later, "Turn 3 of 20 on `PROJ-42`") || strings.Contains(later, "Linear ticket") {
		t.Errorf("continuation turn:\n%s", later)
	}
}
