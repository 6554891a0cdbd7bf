package file

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"sortie/internal/tracker"
)

func intp(n int) *int { return &n }

func parseFile(t *testing.T, path string) (*document, error) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return parse(data)
}

// parseCase is one input file and what parse makes of it.
type parseCase struct {
	file    string
	wantIDs []string
	wantErr string
	check   func(t *testing.T, doc *document)
}

// runParseCases parses each case's file, found by path, and checks the result.
func runParseCases(t *testing.T, path func(testing.TB, string) string, cases []parseCase) {
	t.Helper()
	for _, tt := range cases {
		t.Run(tt.file, func(t *testing.T) {
			doc, err := parseFile(t, path(t, tt.file))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("parse() error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("parse() error = %v", err)
			}
			if got := ids(doc.issues); !reflect.DeepEqual(got, tt.wantIDs) {
				t.Fatalf("ids = %v, want %v", got, tt.wantIDs)
			}
			if tt.check != nil {
				tt.check(t, doc)
			}
		})
	}
}

// ownFile is a file of the package's testdata.
func ownFile(_ testing.TB, name string) string { return filepath.Join("testdata", name) }

func TestParse_Inputs(t *testing.T) {
	runParseCases(t, ownFile, []parseCase{
		{
			file:    "issues.json",
			wantIDs: []string{"201", "202", "203", "204", "205"},
			check: func(t *testing.T, doc *document) {
				want := tracker.Issue{
					ID: "201", Identifier: "SITE-1", Title: "Publish an RSS feed for the blog",
					Description: "Readers ask for a feed. Generate feed.xml from the posts at build time.",
					Priority:    intp(2), State: "To Do", BranchName: "feature/SITE-1-rss", URL: "https://issues.example.org/SITE-1",
					Labels: []string{"feature", "rss"}, Assignee: "dana", IssueType: "Story",
					Parent:    &tracker.ParentRef{ID: "200", Identifier: "SITE-0"},
					BlockedBy: []tracker.BlockerRef{{ID: "202", Identifier: "SITE-2", State: "In Progress"}},
					Comments: []tracker.Comment{
						{ID: "k1", Author: "eli", Body: "Atom would do as well; pick one.", CreatedAt: "2026-02-10T09:15:00Z"},
						{ID: "k2", Author: "dana", Body: "RSS 2.0, with full post bodies.", CreatedAt: "2026-02-11T16:40:00Z"},
					},
					CreatedAt: "2026-02-09T08:00:00Z", UpdatedAt: "2026-02-11T16:40:00Z",
				}
				if !reflect.DeepEqual(*doc.issues[0], want) {
					t.Errorf("issue 201 =\n%+v\nwant\n%+v", doc.issues[0], want)
				}
				if c := doc.issues[1].Comments; c == nil || len(c) != 0 {
					t.Errorf(`"comments": [] parsed as %#v, want empty non-nil`, c)
				}
				if c := doc.issues[2].Comments; c != nil {
					t.Errorf(`"comments": null parsed as %#v, want nil (not fetched)`, c)
				}
				if p := doc.issues[3].Priority; p != nil {
					t.Errorf(`"priority": null parsed as %d, want none`, *p)
				}
				if got := doc.issues[3].Labels; !reflect.DeepEqual(got, []string{"design", "ux"}) {
					t.Errorf("SITE-4 labels = %v, want [design ux]", got)
				}
				minimal := tracker.Issue{
					ID: "205", Identifier: "SITE-5", Title: "Only the required fields", State: "to do",
					Labels: []string{}, BlockedBy: []tracker.BlockerRef{},
				}
				if !reflect.DeepEqual(*doc.issues[4], minimal) {
					t.Errorf("minimal issue =\n%#v\nwant\n%#v", doc.issues[4], minimal)
				}
			},
		},
		{
			file:    "normalization.json",
			wantIDs: []string{"p1", "p2", "p3", "p4", "p5", "p6", "p7", "p8", "p9"},
			check: func(t *testing.T, doc *document) {
				// Only a true JSON integer is a priority.
				wantPriority := []*int{intp(1), nil, nil, nil, nil, nil, intp(0), nil, nil}
				for i, is := range doc.issues {
					if !reflect.DeepEqual(is.Priority, wantPriority[i]) {
						t.Errorf("%s (%s): priority = %v, want %v", is.ID, is.Title, deref(is.Priority), deref(wantPriority[i]))
					}
				}
				if got := doc.issues[0].Labels; !reflect.DeepEqual(got, []string{"needs-triage", "api", "été"}) {
					t.Errorf("p1 labels = %v, want lowercased [needs-triage api été]", got)
				}
				p9 := doc.issues[8]
				if p9.Labels == nil || p9.BlockedBy == nil || p9.Comments != nil || p9.Parent != nil || p9.Description != "" {
					t.Errorf("p9 (absent fields) = %+v; want labels and blocked_by [], comments and parent nil, strings empty", p9)
				}
			},
		},
		{file: "empty.json", wantIDs: []string{}},
		{file: "malformed.json", wantErr: "line 2, column 73: invalid JSON: invalid character ']' looking for beginning of object key string"},
	})
}

// TestParse_ReferenceInputs reads sortie 1.9's issues files: files written for it must
// parse here unchanged.
func TestParse_ReferenceInputs(t *testing.T) {
	runParseCases(t, referenceFile, []parseCase{
		{
			file:    "internal/tracker/file/testdata/basic.json",
			wantIDs: []string{"10001", "10002", "10003"},
			check: func(t *testing.T, doc *document) {
				want := tracker.Issue{
					ID: "10001", Identifier: "PROJ-1", Title: "Implement login",
					Description: "Add OAuth2 login flow.", Priority: intp(2), State: "To Do",
					BranchName: "feature/PROJ-1", URL: "https://tracker.example.com/PROJ-1",
					Labels: []string{"feature", "auth"}, Assignee: "alice", IssueType: "Story",
					Parent:    &tracker.ParentRef{ID: "10000", Identifier: "PROJ-0"},
					BlockedBy: []tracker.BlockerRef{{ID: "10002", Identifier: "PROJ-2", State: "Done"}},
					Comments:  []tracker.Comment{{ID: "c1", Author: "bob", Body: "Needs SSO support.", CreatedAt: "2026-03-01T10:00:00Z"}},
					CreatedAt: "2026-02-28T09:00:00Z", UpdatedAt: "2026-03-01T12:00:00Z",
				}
				if !reflect.DeepEqual(*doc.issues[0], want) {
					t.Errorf("issue 10001 =\n%+v\nwant\n%+v", doc.issues[0], want)
				}
				if c := doc.issues[1].Comments; c == nil || len(c) != 0 {
					t.Errorf(`"comments": [] parsed as %#v, want empty non-nil`, c)
				}
				if c := doc.issues[2].Comments; c != nil {
					t.Errorf(`"comments": null parsed as %#v, want nil (not fetched)`, c)
				}
			},
		},
		{
			file:    "internal/tracker/file/testdata/normalization.json",
			wantIDs: []string{"n1", "n2", "n3", "n4", "n5", "n6", "n7"},
			check: func(t *testing.T, doc *document) {
				wantPriority := []*int{intp(1), nil, nil, nil, intp(1), nil, nil}
				for i, is := range doc.issues {
					if !reflect.DeepEqual(is.Priority, wantPriority[i]) {
						t.Errorf("%s (%s): priority = %v, want %v", is.ID, is.Title, deref(is.Priority), deref(wantPriority[i]))
					}
				}
				if got := doc.issues[0].Labels; !reflect.DeepEqual(got, []string{"bug", "high-priority"}) {
					t.Errorf("n1 labels = %v, want lowercased [bug high-priority]", got)
				}
				n7 := doc.issues[6]
				if n7.Labels == nil || n7.BlockedBy == nil || n7.Comments != nil || n7.Parent != nil || n7.Description != "" {
					t.Errorf("n7 (absent fields) = %+v; want labels and blocked_by [], comments and parent nil, strings empty", n7)
				}
			},
		},
		{file: "internal/tracker/file/testdata/empty.json", wantIDs: []string{}},
		{file: "internal/tracker/file/testdata/malformed.json", wantErr: "line 1, column 2: invalid JSON: invalid character 'n' looking for beginning of object key string"},
		{
			file:    "examples/issues.json",
			wantIDs: []string{"10001", "10002", "10003", "10004", "10005"},
			check: func(t *testing.T, doc *document) {
				want := tracker.Issue{
					ID: "10005", Identifier: "PROJ-5", Title: "Minimal issue with only required fields", State: "To Do",
					Labels: []string{}, BlockedBy: []tracker.BlockerRef{},
				}
				if !reflect.DeepEqual(*doc.issues[4], want) {
					t.Errorf("minimal issue =\n%#v\nwant\n%#v", doc.issues[4], want)
				}
				if got := doc.issues[3].Labels; !reflect.DeepEqual(got, []string{"enhancement"}) {
					t.Errorf("PROJ-4 labels = %v, want [enhancement]", got)
				}
			},
		},
	})
}

func deref(p *int) any {
	if p == nil {
		return nil
	}
	return *p
}

// oneIssue is a valid single-issue file with extra members appended to the issue.
func oneIssue(extra string) string {
	if extra != "" {
		extra = ", " + extra
	}
	return `[{"id": "a", "identifier": "A-1", "title": "T", "state": "Open"` + extra + `}]`
}

func TestParse_Normalisation(t *testing.T) {
	tests := []struct {
		name  string
		input string
		check func(is tracker.Issue) bool
	}{
		{"labels are lowercased", oneIssue(`"labels": ["BUG", "High-Priority", "ÉTÉ"]`),
			func(is tracker.Issue) bool {
				return reflect.DeepEqual(is.Labels, []string{"bug", "high-priority", "été"})
			}},
		{"absent labels are empty", oneIssue(""), func(is tracker.Issue) bool { return is.Labels != nil && len(is.Labels) == 0 }},
		{"absent blocked_by is empty", oneIssue(""), func(is tracker.Issue) bool { return is.BlockedBy != nil && len(is.BlockedBy) == 0 }},
		{"integer priority", oneIssue(`"priority": 3`), func(is tracker.Issue) bool { return deref(is.Priority) == 3 }},
		{"zero priority", oneIssue(`"priority": 0`), func(is tracker.Issue) bool { return deref(is.Priority) == 0 }},
		{"negative priority", oneIssue(`"priority": -2`), func(is tracker.Issue) bool { return deref(is.Priority) == -2 }},
		{"fractional priority is none", oneIssue(`"priority": 2.5`), func(is tracker.Issue) bool { return is.Priority == nil }},
		{"2.0 priority is none", oneIssue(`"priority": 2.0`), func(is tracker.Issue) bool { return is.Priority == nil }},
		{"exponent priority is none", oneIssue(`"priority": 1e2`), func(is tracker.Issue) bool { return is.Priority == nil }},
		{"overflowing priority is none", oneIssue(`"priority": 99999999999999999999`), func(is tracker.Issue) bool { return is.Priority == nil }},
		{"string priority is none", oneIssue(`"priority": "high"`), func(is tracker.Issue) bool { return is.Priority == nil }},
		{"numeric string priority is none", oneIssue(`"priority": "1"`), func(is tracker.Issue) bool { return is.Priority == nil }},
		{"boolean priority is none", oneIssue(`"priority": true`), func(is tracker.Issue) bool { return is.Priority == nil }},
		{"object priority is none", oneIssue(`"priority": {"level": 1}`), func(is tracker.Issue) bool { return is.Priority == nil }},
		{"null priority is none", oneIssue(`"priority": null`), func(is tracker.Issue) bool { return is.Priority == nil }},
		{"optional strings default to empty", oneIssue(""), func(is tracker.Issue) bool {
			return is.Description == "" && is.BranchName == "" && is.URL == "" && is.Assignee == "" && is.IssueType == "" && is.CreatedAt == "" && is.UpdatedAt == ""
		}},
		{"null optional strings are empty", oneIssue(`"description": null, "url": null, "assignee": null`), func(is tracker.Issue) bool {
			return is.Description == "" && is.URL == "" && is.Assignee == ""
		}},
		{"optional strings are kept", oneIssue(`"description": "d", "branch_name": "b", "url": "u", "assignee": "x", "issue_type": "Bug", "created_at": "c", "updated_at": "u2"`),
			func(is tracker.Issue) bool {
				return is.Description == "d" && is.BranchName == "b" && is.URL == "u" && is.Assignee == "x" && is.IssueType == "Bug" && is.CreatedAt == "c" && is.UpdatedAt == "u2"
			}},
		{"state keeps its casing", oneIssue(""), func(is tracker.Issue) bool { return is.State == "Open" }},
		{"absent comments are not fetched", oneIssue(""), func(is tracker.Issue) bool { return is.Comments == nil }},
		{"null comments are not fetched", oneIssue(`"comments": null`), func(is tracker.Issue) bool { return is.Comments == nil }},
		{"empty comments are none", oneIssue(`"comments": []`), func(is tracker.Issue) bool { return is.Comments != nil && len(is.Comments) == 0 }},
		{"comments are read", oneIssue(`"comments": [{"id": "c1", "author": "bob", "body": "hi", "created_at": "2026-01-01T00:00:00Z"}, {}]`),
			func(is tracker.Issue) bool {
				return reflect.DeepEqual(is.Comments, []tracker.Comment{{ID: "c1", Author: "bob", Body: "hi", CreatedAt: "2026-01-01T00:00:00Z"}, {}})
			}},
		{"null parent", oneIssue(`"parent": null`), func(is tracker.Issue) bool { return is.Parent == nil }},
		{"empty parent object is no parent", oneIssue(`"parent": {}`), func(is tracker.Issue) bool { return is.Parent == nil }},
		{"parent", oneIssue(`"parent": {"id": "p", "identifier": "P-1"}`), func(is tracker.Issue) bool {
			return reflect.DeepEqual(is.Parent, &tracker.ParentRef{ID: "p", Identifier: "P-1"})
		}},
		{"blocker with state", oneIssue(`"blocked_by": [{"id": "x", "identifier": "X-1", "state": "Done"}]`), func(is tracker.Issue) bool {
			return reflect.DeepEqual(is.BlockedBy, []tracker.BlockerRef{{ID: "x", Identifier: "X-1", State: "Done"}})
		}},
		{"blocker outside the file keeps an empty state", oneIssue(`"blocked_by": [{"id": "x", "identifier": "X-1"}]`), func(is tracker.Issue) bool {
			return is.BlockedBy[0].State == ""
		}},
		{"unknown fields are ignored", oneIssue(`"estimate": 3, "custom": {"nested": [1, 2]}, "labelz": null`), func(is tracker.Issue) bool {
			return is.State == "Open" && len(is.Labels) == 0
		}},
		{"keys match case-insensitively, last one wins", oneIssue(`"State": "Closed", "Labels": ["A"]`), func(is tracker.Issue) bool {
			return is.State == "Closed" && reflect.DeepEqual(is.Labels, []string{"a"})
		}},
		{"path-like identifiers are just data", `[{"id": "../../etc/passwd", "identifier": "../../etc", "title": "T", "state": "Open"}]`,
			func(is tracker.Issue) bool { return is.ID == "../../etc/passwd" && is.Identifier == "../../etc" }},
		{"escaped key names", `[{"\u0069d": "a", "identifier": "A-1", "title": "T", "st\u0061te": "Open"}]`,
			func(is tracker.Issue) bool { return is.ID == "a" && is.State == "Open" }},
		{"byte-order mark", "\xef\xbb\xbf" + oneIssue(""), func(is tracker.Issue) bool { return is.ID == "a" }},
		{"last duplicate key wins", oneIssue(`"state": "Closed"`), func(is tracker.Issue) bool { return is.State == "Closed" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc, err := parse([]byte(tt.input))
			if err != nil {
				t.Fatalf("parse(%s) error = %v", tt.input, err)
			}
			if len(doc.issues) != 1 {
				t.Fatalf("parse(%s) gave %d issues, want 1", tt.input, len(doc.issues))
			}
			if !tt.check(*doc.issues[0]) {
				t.Errorf("parse(%s) = %+v, which breaks the rule", tt.input, doc.issues[0])
			}
		})
	}
}

func TestParse_BlockersFollowIssuesInTheSameFile(t *testing.T) {
	input := `[
  {"id": "b", "identifier": "B-1", "title": "blocker", "state": "In Progress"},
  {"id": "a", "identifier": "A-1", "title": "blocked", "state": "Todo", "blocked_by": [
    {"id": "b"},
    {"identifier": "B-1"},
    {"id": "b", "identifier": "B-1", "state": "Done"},
    {"id": "elsewhere", "identifier": "EXT-9"}
  ]}
]`
	doc, err := parse([]byte(input))
	if err != nil {
		t.Fatal(err)
	}
	want := []tracker.BlockerRef{
		{ID: "b", Identifier: "B-1", State: "In Progress"}, // filled by id
		{ID: "b", Identifier: "B-1", State: "In Progress"}, // filled by identifier
		{ID: "b", Identifier: "B-1", State: "Done"},        // written state is kept
		{ID: "elsewhere", Identifier: "EXT-9"},             // unknown: empty state, which blocks
	}
	if got := doc.issues[1].BlockedBy; !reflect.DeepEqual(got, want) {
		t.Errorf("blocked_by =\n%+v\nwant\n%+v", got, want)
	}
}

func TestParse_Rejects(t *testing.T) {
	tests := []struct {
		name    string
		input   string
		wantErr string
	}{
		{"empty file", "", "the file is empty"},
		{"only whitespace", " \n\t", "the file is empty"},
		{"top-level object", `{"id": "a"}`, "line 1, column 1: the top level must be a JSON array of issue objects, found an object"},
		{"top-level string", ` "x"`, "line 1, column 2: the top level must be a JSON array of issue objects, found a string"},
		{"element not an object", `[1]`, "issue #1 (line 1): must be a JSON object, found a number"},
		{"array element", "[\n  []]", "issue #1 (line 2): must be a JSON object, found an array"},
		{"boolean element", `[{"id": "a", "identifier": "A-1", "title": "T", "state": "Open"}, false]`, "issue #2 (line 1): must be a JSON object, found a boolean"},
		{"null element", `[null]`, "issue #1 (line 1): must be a JSON object, found null"},
		{"trailing garbage", "[]\n x", "line 2, column 2: invalid JSON: invalid character 'x' after top-level value"},
		{"second array", `[] []`, "line 1, column 4: invalid JSON: invalid character '[' after top-level value"},
		{"truncated", "[\n  {\"id\": \"a\",", "line 2, column 14: invalid JSON: unexpected end of JSON input (is the file truncated?)"},
		{"missing comma", "[\n  {\"id\": \"a\"}\n  {\"id\": \"b\"}\n]", "line 3, column 3: invalid JSON: invalid character '{' after array element"},
		{"trailing comma", "[\n  {\"id\": \"a\"},\n]", "line 3, column 1: invalid JSON: invalid character ']'"},
		{"column counts characters", `[{"title": "ÉÉ" x}]`, "line 1, column 17"},
		{"missing id", `[{"identifier": "A-1", "title": "T", "state": "Open"}]`, `issue #1 (line 1): field "id" is missing or null; it is required and must be a non-empty string`},
		{"numeric id", `[{"id": 7, "identifier": "A-1", "title": "T", "state": "Open"}]`, `field "id": must be a non-empty string, found a number`},
		{"null identifier", `[{"id": "a", "identifier": null, "title": "T", "state": "Open"}]`, `field "identifier" is missing or null`},
		{"empty title", `[{"id": "a", "identifier": "A-1", "title": "", "state": "Open"}]`, `field "title": must not be empty`},
		{"blank state", `[{"id": "a", "identifier": "A-1", "title": "T", "state": "  "}]`, `field "state": must not be empty`},
		{"optional string of wrong type", oneIssue(`"url": 5`), `field "url": must be a string, found a number`},
		{"null labels", oneIssue(`"labels": null`), `field "labels": must not be null (use [] for none)`},
		{"labels not an array", oneIssue(`"labels": "bug"`), `field "labels": must be an array of strings ([] for none), found a string`},
		{"label not a string", oneIssue(`"labels": ["ok", 3]`), `field "labels": element 2 must be a string, found a number`},
		{"null blocked_by", oneIssue(`"blocked_by": null`), `field "blocked_by": must not be null (use [] for none)`},
		{"blocker not an object", oneIssue(`"blocked_by": ["B-1"]`), `field "blocked_by": element 1 must be an object, found a string`},
		{"blocker naming nothing", oneIssue(`"blocked_by": [{"id": "x"}, {"state": "Done"}]`), `field "blocked_by[2]": needs an "id" or an "identifier"`},
		{"blocker state of wrong type", oneIssue(`"blocked_by": [{"id": "x", "state": 1}]`), `field "blocked_by[1].state": must be a string, found a number`},
		{"comments not an array", oneIssue(`"comments": "none"`), `field "comments": must be an array of {id, author, body, created_at} objects, or null, found a string`},
		{"comment not an object", oneIssue(`"comments": [null]`), `field "comments": element 1 must be an object, found null`},
		{"comment body of wrong type", oneIssue(`"comments": [{"body": ["x"]}]`), `field "comments[1].body": must be a string, found an array`},
		{"parent not an object", oneIssue(`"parent": "P-1"`), `field "parent": must be an {id, identifier} object or null, found a string`},
		{"parent id of wrong type", oneIssue(`"parent": {"id": 1}`), `field "parent.id": must be a string, found a number`},
		{"duplicate id", "[\n" +
			`{"id": "a", "identifier": "A-1", "title": "T", "state": "Open"},` + "\n" +
			`{"id": "b", "identifier": "B-1", "title": "T", "state": "Open"},` + "\n" +
			`{"id": "a", "identifier": "C-1", "title": "T", "state": "Open"}` + "\n]",
			`issue #3 (line 4) has the same id "a" as issue #1 (line 2); ids must be unique`},
		{"duplicate identifier", "[\n" +
			`{"id": "a", "identifier": "A-1", "title": "T", "state": "Open"},` + "\n" +
			`{"id": "b", "identifier": "A-1", "title": "T", "state": "Open"}` + "\n]",
			`issue #2 (line 3) has the same identifier "A-1" as issue #1 (line 2); identifiers must be unique`},
		{"error names the issue's line", "[\n" + oneIssue("")[1:len(oneIssue(""))-1] + ",\n\n" + oneIssue(`"labels": null`)[1:], `issue #2 (line 4): field "labels"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc, err := parse([]byte(tt.input))
			if err == nil {
				t.Fatalf("parse(%q) = %d issues, want error %q", tt.input, len(doc.issues), tt.wantErr)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("parse(%q) error =\n  %v\nwant it to contain\n  %s", tt.input, err, tt.wantErr)
			}
		})
	}
}

// TestParse_DocExample keeps the example in docs/trackers/file.md true: it must parse,
// and read as the page says it does.
func TestParse_DocExample(t *testing.T) {
	page, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "trackers", "file.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(page), "```json\n")
	example, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatal("no ```json example in docs/trackers/file.md")
	}
	doc, err := parse([]byte(example))
	if err != nil {
		t.Fatalf("the documented example does not parse: %v", err)
	}
	p1 := doc.issues[0]
	if !reflect.DeepEqual(p1.Labels, []string{"feature", "auth"}) {
		t.Errorf("labels = %v, the page says feature and auth", p1.Labels)
	}
	if want := []tracker.BlockerRef{{ID: "10002", Identifier: "PROJ-2", State: "In Progress"}}; !reflect.DeepEqual(p1.BlockedBy, want) {
		t.Errorf("blocked_by = %+v, the page says %+v", p1.BlockedBy, want)
	}
}
