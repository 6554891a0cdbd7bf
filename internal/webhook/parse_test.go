package webhook

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// linearBody is a Linear delivery of typ with data, sent at ts (Unix ms).
func linearBody(typ, data string, ts int64) []byte {
	return []byte(`{"action":"create","type":"` + typ + `","data":` + data + `,"webhookTimestamp":` + strconv.FormatInt(ts, 10) + `}`)
}

func TestParse(t *testing.T) {
	nowMs := testNow.UnixMilli()
	gh := func(event string) http.Header { return http.Header{"X-Github-Event": {event}} }
	cases := []struct {
		name   string
		kind   string
		h      http.Header
		body   string
		s      Settings
		result string
		event  string
		issues []string
	}{
		{name: "linear comment naming only its issue's id", kind: Linear,
			body:   string(linearBody("Comment", `{"id":"c1","body":"hi","issueId":"2a7c9e41-5d3b-4f60-9a81-c2e4b6d8f013"}`, nowMs)),
			s:      Settings{Team: "ENG"},
			result: Accepted, event: "Comment.create", issues: []string{"2a7c9e41-5d3b-4f60-9a81-c2e4b6d8f013"}},
		{name: "linear comment on another team's issue", kind: Linear,
			body:   string(linearBody("Comment", `{"issueId":"i1","issue":{"id":"i1","identifier":"OPS-3","team":{"key":"OPS"}}}`, nowMs)),
			s:      Settings{Team: "ENG"},
			result: Ignored, event: "Comment.create"},
		{name: "linear team key in another case", kind: Linear,
			body:   string(linearBody("Issue", `{"identifier":"ENG-1","team":{"key":"eng"}}`, nowMs)),
			s:      Settings{Team: "ENG"},
			result: Accepted, event: "Issue.create", issues: []string{"ENG-1"}},
		{name: "linear payload naming no team", kind: Linear,
			body:   string(linearBody("Issue", `{"identifier":"ENG-1"}`, nowMs)),
			s:      Settings{Team: "OPS"},
			result: Accepted, event: "Issue.create", issues: []string{"ENG-1"}},
		{name: "linear exactly a minute old", kind: Linear,
			body:   string(linearBody("Issue", `{"identifier":"ENG-1"}`, nowMs-60_000)),
			result: Accepted, event: "Issue.create", issues: []string{"ENG-1"}},
		{name: "linear exactly a minute ahead", kind: Linear,
			body:   string(linearBody("Issue", `{"identifier":"ENG-1"}`, nowMs+60_000)),
			result: Accepted, event: "Issue.create", issues: []string{"ENG-1"}},
		{name: "linear a minute and a millisecond old", kind: Linear,
			body:   string(linearBody("Issue", `{"identifier":"ENG-1"}`, nowMs-60_001)),
			result: Stale, event: "Issue.create"},
		{name: "linear stale even when it would be ignored", kind: Linear,
			body:   string(linearBody("Cycle", `{"id":"c"}`, nowMs-3_600_000)),
			result: Stale, event: "Cycle.create"},
		{name: "linear timestamp zero", kind: Linear,
			body:   string(linearBody("Issue", `{"identifier":"ENG-1"}`, 0)),
			result: Stale, event: "Issue.create"},
		{name: "linear timestamp huge", kind: Linear,
			body:   `{"type":"Issue","data":{"identifier":"ENG-1"},"webhookTimestamp":1e300}`,
			result: Stale, event: "Issue"},
		{name: "linear identifier with a space", kind: Linear,
			body:   string(linearBody("Issue", `{"identifier":"ENG 1"}`, nowMs)),
			result: Malformed, event: "Issue.create"},
		{name: "linear data null", kind: Linear,
			body:   `{"type":"Comment","action":"create","data":null,"webhookTimestamp":` + strconv.FormatInt(nowMs, 10) + `}`,
			result: Malformed, event: "Comment.create"},
		{name: "github issues with no project filter", kind: GitHub, h: gh("issues"),
			body:   `{"action":"closed","issue":{"number":3},"repository":{"full_name":"someone/else"}}`,
			result: Accepted, event: "issues.closed", issues: []string{"3"}},
		{name: "github issue_comment with pull_request null", kind: GitHub, h: gh("issue_comment"),
			body:   `{"action":"created","issue":{"number":3,"pull_request":null},"repository":{"full_name":"a/b"}}`,
			s:      Settings{Project: "a/b"},
			result: Accepted, event: "issue_comment.created", issues: []string{"3"}},
		{name: "github ping of another repository", kind: GitHub, h: gh("ping"),
			body:   `{"zen":"Design for failure.","hook_id":1,"repository":{"full_name":"x/y"}}`,
			s:      Settings{Project: "a/b"},
			result: Ignored, event: "ping"},
		{name: "github label of another repository", kind: GitHub, h: gh("label"),
			body:   `{"action":"created","label":{"name":"x"},"repository":{"full_name":"x/y"}}`,
			s:      Settings{Project: "a/b"},
			result: Ignored, event: "label.created"},
		{name: "github issue number zero", kind: GitHub, h: gh("issues"),
			body:   `{"action":"opened","issue":{"number":0},"repository":{"full_name":"a/b"}}`,
			result: Malformed, event: "issues.opened"},
		{name: "github issue number not an integer", kind: GitHub, h: gh("issues"),
			body:   `{"action":"opened","issue":{"number":1.5},"repository":{"full_name":"a/b"}}`,
			result: Malformed},
		{name: "github action not a name", kind: GitHub, h: gh("issues"),
			body:   `{"action":"opened now","issue":{"number":1},"repository":{"full_name":"a/b"}}`,
			result: Malformed, event: "issues"},
		{name: "github event header not a name", kind: GitHub, h: gh("issues\x00"),
			body:   `{"action":"opened","issue":{"number":1},"repository":{"full_name":"a/b"}}`,
			result: Malformed},
		{name: "github issues without action", kind: GitHub, h: gh("issues"),
			body:   `{"issue":{"number":1},"repository":{"full_name":"a/b"}}`,
			result: Malformed, event: "issues"},
		{name: "jira comment updated", kind: Jira,
			body:   `{"webhookEvent":"comment_updated","comment":{"id":"1"},"issue":{"key":"PROJ-9","fields":{"project":{"key":"PROJ"}}}}`,
			s:      Settings{Project: "PROJ"},
			result: Accepted, event: "comment_updated", issues: []string{"PROJ-9"}},
		{name: "jira issue naming no project", kind: Jira,
			body:   `{"webhookEvent":"jira:issue_updated","issue":{"key":"PROJ-9"}}`,
			s:      Settings{Project: "OPS"},
			result: Accepted, event: "jira:issue_updated", issues: []string{"PROJ-9"}},
		{name: "jira issue id as a number", kind: Jira,
			body:   `{"webhookEvent":"jira:issue_created","issue":{"id":10042,"key":"PROJ-9","fields":{"project":{"key":"PROJ","id":10000}}}}`,
			result: Accepted, event: "jira:issue_created", issues: []string{"PROJ-9"}},
		{name: "jira project key not a string", kind: Jira,
			body:   `{"webhookEvent":"jira:issue_created","issue":{"key":"PROJ-9","fields":{"project":{"key":7}}}}`,
			result: Malformed},
		{name: "jira sprint event", kind: Jira,
			body:   `{"webhookEvent":"sprint_started","sprint":{"id":1}}`,
			result: Ignored, event: "sprint_started"},
		{name: "unknown kind", kind: "gitlab", body: `{}`, result: Malformed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := c.h
			if h == nil {
				h = http.Header{}
			}
			d, result, err := Parse(c.kind, h, []byte(c.body), c.s, testNow)
			if result != c.result {
				t.Fatalf("result %s (%v), want %s", result, err, c.result)
			}
			if (err == nil) != (result == Accepted) {
				t.Errorf("error %v with result %s: want an error exactly when not accepted", err, result)
			}
			if d.Tracker != c.kind || !d.At.Equal(testNow) || d.Event != c.event || !slices.Equal(d.Issues, c.issues) {
				t.Errorf("delivery %+v, want tracker %s, event %q, issues %q at %v", d, c.kind, c.event, c.issues, testNow)
			}
			if err != nil && strings.Contains(err.Error(), "1.5") {
				t.Errorf("the error quotes the body: %v", err)
			}
		})
	}
}

// The delivery id comes from each tracker's own header, and a long one is refused
// rather than carried.
func TestParse_DeliveryID(t *testing.T) {
	for _, f := range fixtures {
		body := readFixture(t, f.file)
		h := headersFor(f.kind, f.event, "id-"+f.file, testSecret, body)
		d, _, _ := Parse(f.kind, h, body, settingsFor(f.kind), testNow)
		if d.ID != "id-"+f.file {
			t.Errorf("%s: ID %q, want %q", f.file, d.ID, "id-"+f.file)
		}
		h.Set(receivers[f.kind].delivery, strings.Repeat("x", maxIDLen+1))
		if d, result, _ := Parse(f.kind, h, body, settingsFor(f.kind), testNow); result != Malformed || d.ID != "" {
			t.Errorf("%s with a long id: %s, ID %d bytes; want malformed and no id", f.file, result, len(d.ID))
		}
	}
}

func TestSkewText(t *testing.T) {
	for _, c := range []struct {
		skew float64
		want string
	}{
		{61_000, "1m1s behind"},
		{-7_200_400, "2h0m0s ahead of"},
		{1e300, "centuries behind"},
		{-1e300, "centuries ahead of"},
	} {
		if got := skewText(c.skew); got != c.want {
			t.Errorf("skewText(%v) = %q, want %q", c.skew, got, c.want)
		}
	}
}
