package jira

import (
	"reflect"
	"strings"
	"testing"

	"sortie/internal/testkit/fakejira"
	"sortie/internal/tracker"
)

// TestCandidatesJQL_ValuesCannotChangeTheQuery lexes the query as Jira would and checks
// that every hostile project or state name stays one string literal, equal to itself.
func TestCandidatesJQL_ValuesCannotChangeTheQuery(t *testing.T) {
	hostile := []string{
		`Done" OR project = "SECRET`,
		`In \" Progress`,
		`back\slash\`,
		`") OR (1=1`,
		`To Do' OR status != '`,
		"new\nline\ttab",
		`status IN ("x") ORDER BY key`,
		`日本語 "引用"`,
	}
	jql := candidatesJQL(`PR"OJ\`, hostile, "")
	toks, err := fakejira.LexJQL(jql)
	if err != nil {
		t.Fatalf("query does not lex: %v\n%s", err, jql)
	}
	var shape, literals []string
	for _, tk := range toks {
		if tk.Quoted {
			shape = append(shape, "STR")
			literals = append(literals, tk.Text)
		} else {
			shape = append(shape, strings.ToUpper(tk.Text))
		}
	}
	wantShape := []string{"PROJECT", "=", "STR", "AND", "STATUS", "IN", "("}
	for i := range hostile {
		if i > 0 {
			wantShape = append(wantShape, ",")
		}
		wantShape = append(wantShape, "STR")
	}
	wantShape = append(wantShape, ")", "ORDER", "BY", "PRIORITY", "ASC", ",", "CREATED", "ASC")
	if !reflect.DeepEqual(shape, wantShape) {
		t.Fatalf("query structure changed:\n%s\ngot  %v\nwant %v", jql, shape, wantShape)
	}
	wantLit := []string{`PR"OJ\`}
	for _, h := range hostile {
		wantLit = append(wantLit, strings.NewReplacer("\n", " ", "\t", " ").Replace(h))
	}
	if !reflect.DeepEqual(literals, wantLit) {
		t.Errorf("literals\ngot  %q\nwant %q", literals, wantLit)
	}
}

func TestCandidatesJQL_FilterIsParenthesised(t *testing.T) {
	got := candidatesJQL("PROJ", []string{"To Do"}, "labels = 'agent-ready' OR assignee = currentUser()")
	want := `project = "PROJ" AND status IN ("To Do") AND (labels = 'agent-ready' OR assignee = currentUser()) ORDER BY priority ASC, created ASC`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestCheckQueryFilter(t *testing.T) {
	ok := []string{"", "labels = 'agent-ready'", `summary ~ "a ) b"`, `summary ~ "esc \" )"`, "(a = 1 OR b = 2) AND c IN (1, 2)", "labels = 'order by'"}
	bad := map[string]string{
		"labels = x) OR (project = SECRET": "')' without its '('",
		"(labels = x":                      "'(' without ')'",
		`summary ~ "open`:                  "unterminated",
		"labels = x ORDER BY key":          "ORDER BY",
		"labels = x order\nby key":         "ORDER BY",
	}
	for _, f := range ok {
		if err := checkQueryFilter(f); err != nil {
			t.Errorf("checkQueryFilter(%q) = %v, want nil", f, err)
		}
	}
	for f, want := range bad {
		err := checkQueryFilter(f)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "tracker.query_filter") {
			t.Errorf("checkQueryFilter(%q) = %v, want an error about %s", f, err, want)
		}
	}
}

func TestValidateProject(t *testing.T) {
	for _, p := range []string{"PROJ", "AB", "A1_B", "proj"} {
		if err := ValidateProject(p); err != nil {
			t.Errorf("ValidateProject(%q) = %v", p, err)
		}
	}
	bad := map[string]string{
		"":                          "needs a project key",
		"PROJ-12":                   `use "PROJ"`,
		"owner/repo":                "not owner/repo",
		"https://x.atlassian.net/P": "not a URL",
		"MY PROJ":                   "ASCII letter",
		"1ABC":                      "ASCII letter",
		`P" OR "1`:                  "ASCII letter",
	}
	for p, want := range bad {
		err := ValidateProject(p)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.HasPrefix(err.Error(), "config: tracker.project:") {
			t.Errorf("ValidateProject(%q) = %v, want config: tracker.project: … %s", p, err, want)
		}
	}
}

func TestNew_ConfigErrorsAreActionable(t *testing.T) {
	base := func() tracker.Config {
		return tracker.Config{Kind: "jira", Endpoint: "https://x.atlassian.net", APIKey: cloudKey, Project: "PROJ", Options: map[string]any{}}
	}
	cases := []struct {
		name string
		mut  func(*tracker.Config)
		want string
	}{
		{"missing token", func(c *tracker.Config) { c.APIKey = "  " }, "missing_tracker_api_key"},
		{"missing project", func(c *tracker.Config) { c.Project = "" }, "missing_tracker_project"},
		{"cloud token without email", func(c *tracker.Config) { c.APIKey = "justatoken" }, "tracker.api_key: Jira Cloud needs email:api_token"},
		{"issue key as project", func(c *tracker.Config) { c.Project = "PROJ-1" }, "tracker.project"},
		{"no endpoint", func(c *tracker.Config) { c.Endpoint = "" }, "tracker.endpoint: Jira needs the site URL"},
		{"API path in endpoint", func(c *tracker.Config) { c.Endpoint = "https://x.atlassian.net/rest/api/3" }, "without /rest/api/"},
		{"not a URL", func(c *tracker.Config) { c.Endpoint = "x.atlassian.net" }, "http(s) URL"},
		{"credentials in endpoint", func(c *tracker.Config) { c.Endpoint = "https://u:p@x.atlassian.net" }, "without credentials"},
		{"unknown api", func(c *tracker.Config) { c.Options["api"] = "v4" }, "jira.api"},
		{"page size", func(c *tracker.Config) { c.Options["page_size"] = 1000 }, "jira.page_size"},
		{"timeout", func(c *tracker.Config) { c.Options["timeout_ms"] = "soon" }, "jira.timeout_ms"},
		{"filter escapes", func(c *tracker.Config) { c.QueryFilter = "a = 1) OR (b = 2" }, "tracker.query_filter"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := base()
			c.mut(&cfg)
			_, err := tracker.New(cfg)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err %v, want it to mention %q", err, c.want)
			}
			if strings.Contains(err.Error(), "tok3n") || strings.Contains(err.Error(), "justatoken") {
				t.Errorf("error leaks the token: %v", err)
			}
		})
	}
	dc := base()
	dc.APIKey, dc.Options["api"] = "pat", "datacenter"
	if _, err := tracker.New(dc); err != nil {
		t.Errorf("a Data Center PAT without email: %v", err)
	}
	if _, err := tracker.New(base()); err != nil {
		t.Errorf("valid config: %v", err)
	}
}
