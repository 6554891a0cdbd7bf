package webhook

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// answerOf decodes an answer: its result, or its error code.
func answerOf(t *testing.T, body []byte) (result, code string) {
	t.Helper()
	var a struct {
		Result string `json:"result"`
		Error  *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &a); err != nil {
		t.Fatalf("the answer is not JSON: %v: %s", err, body)
	}
	if a.Error != nil {
		if a.Error.Message == "" {
			t.Errorf("error %s has no message", a.Error.Code)
		}
		return "", a.Error.Code
	}
	return a.Result, ""
}

// wantRecorded checks that the last request was counted once as result for kind (or not
// at all when result is ""), and that kind's Status says so with event.
func (h *harness) wantRecorded(kind, result, event string) {
	h.t.Helper()
	counted := h.takeCounted()
	if result == "" {
		if len(counted) != 0 {
			h.t.Errorf("counted %q, want nothing counted", counted)
		}
		if st := h.r.Status(); len(st) != 0 {
			h.t.Errorf("Status() = %+v, want none", st)
		}
		return
	}
	if want := []string{kind + " " + result}; !slices.Equal(counted, want) {
		h.t.Errorf("counted %q, want %q", counted, want)
	}
	st, ok := h.status(kind)
	if !ok {
		h.t.Fatalf("no Status for %s", kind)
	}
	if st.LastResult != result || st.LastEvent != event || !st.LastAt.Equal(testNowOf(h)) {
		h.t.Errorf("Status: last %s %q at %v, want %s %q at %v", st.LastResult, st.LastEvent, st.LastAt, result, event, testNowOf(h))
	}
	if st.Counts[result] < 1 {
		h.t.Errorf("Status.Counts[%s] = %d, want at least 1", result, st.Counts[result])
	}
}

func testNowOf(h *harness) time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.now
}

// Each fixture, signed as its tracker signs it, ends as its tracker's event would: issue
// events and comments on issues delivered naming the issue, a label change delivered
// naming none, a pull request's comment and GitHub's ping ignored but recorded.
func TestServeHTTP_Fixtures(t *testing.T) {
	cases := []struct {
		file   string
		result string
		event  string
		issues []string
	}{
		{"github_issues_opened.json", Accepted, "issues.opened", []string{"12"}},
		{"github_issues_labeled.json", Accepted, "issues.labeled", []string{"12"}},
		{"github_issue_comment_created.json", Accepted, "issue_comment.created", []string{"12"}},
		{"github_issue_comment_pr.json", Ignored, "issue_comment.created", nil},
		{"github_label_deleted.json", Accepted, "label.deleted", nil},
		{"github_ping.json", Ignored, "ping", nil},
		{"linear_issue_create.json", Accepted, "Issue.create", []string{"ENG-12"}},
		{"linear_issue_update.json", Accepted, "Issue.update", []string{"ENG-12"}},
		{"linear_comment_create.json", Accepted, "Comment.create", []string{"ENG-12"}},
		{"jira_issue_created.json", Accepted, "jira:issue_created", []string{"PROJ-7"}},
		{"jira_issue_updated.json", Accepted, "jira:issue_updated", []string{"PROJ-7"}},
		{"jira_comment_created.json", Accepted, "comment_created", []string{"PROJ-7"}},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			i := slices.IndexFunc(fixtures, func(f fixture) bool { return f.file == c.file })
			f := fixtures[i]
			h := newHarness(t, settingsFor(f.kind))
			body := readFixture(t, f.file)
			id := "delivery-" + c.file
			w := h.post(f.kind, headersFor(f.kind, f.event, id, testSecret, body), body)

			wantStatus := map[string]int{Accepted: http.StatusAccepted, Ignored: http.StatusOK}[c.result]
			if w.Code != wantStatus {
				t.Fatalf("status %d, want %d: %s", w.Code, wantStatus, w.Body)
			}
			if got, _ := answerOf(t, w.Body.Bytes()); got != c.result {
				t.Errorf("answer result %q, want %q", got, c.result)
			}
			delivered := h.takeDelivered()
			if c.result != Accepted {
				if len(delivered) != 0 {
					t.Errorf("delivered %+v, want nothing", delivered)
				}
			} else {
				want := Delivery{Tracker: f.kind, ID: id, Event: c.event, Issues: c.issues, At: testNow}
				if len(delivered) != 1 || !sameDelivery(delivered[0], want) {
					t.Errorf("delivered %+v, want [%+v]", delivered, want)
				}
			}
			h.wantRecorded(f.kind, c.result, c.event)
			st, _ := h.status(f.kind)
			if c.result == Accepted && !st.LastAcceptedAt.Equal(testNow) {
				t.Errorf("Status.LastAcceptedAt = %v, want %v", st.LastAcceptedAt, testNow)
			}
			if c.result != Accepted && !st.LastAcceptedAt.IsZero() {
				t.Errorf("Status.LastAcceptedAt = %v, want zero", st.LastAcceptedAt)
			}
		})
	}
}

func sameDelivery(a, b Delivery) bool {
	return a.Tracker == b.Tracker && a.ID == b.ID && a.Event == b.Event && slices.Equal(a.Issues, b.Issues) && a.At.Equal(b.At)
}

// Ways of proving the secret other than the usual one are accepted: Jira's shared
// token (Data Center, Automation), a repository named in another case, a valid token
// beside a wrong signature.
func TestServeHTTP_AcceptsOtherProofs(t *testing.T) {
	jiraBody := readFixture(t, "jira_issue_updated.json")
	ghBody := readFixture(t, "github_issues_opened.json")
	cases := []struct {
		name     string
		settings Settings
		kind     string
		hdr      http.Header
		body     []byte
		issues   []string
	}{
		{"jira data center token", settingsFor(Jira), Jira,
			http.Header{"X-Sortie-Webhook-Token": {testSecret}}, jiraBody, []string{"PROJ-7"}},
		{"jira token beside a wrong signature", settingsFor(Jira), Jira,
			http.Header{"X-Sortie-Webhook-Token": {testSecret}, "X-Hub-Signature": {"sha256=" + signHex("other", jiraBody)}}, jiraBody, []string{"PROJ-7"}},
		{"jira project key in another case", Settings{Tracker: Jira, Secret: testSecret, Project: "proj"}, Jira,
			headersFor(Jira, "", "", testSecret, jiraBody), jiraBody, []string{"PROJ-7"}},
		{"github repository in another case", Settings{Tracker: GitHub, Secret: testSecret, Project: "ACME/Widgets"}, GitHub,
			headersFor(GitHub, "issues", "", testSecret, ghBody), ghBody, []string{"12"}},
		{"github with no project filter", Settings{Tracker: GitHub, Secret: testSecret}, GitHub,
			headersFor(GitHub, "issues", "", testSecret, ghBody), ghBody, []string{"12"}},
		{"github signature in upper-case hex", settingsFor(GitHub), GitHub,
			http.Header{"X-Github-Event": {"issues"}, "X-Hub-Signature-256": {"sha256=" + strings.ToUpper(signHex(testSecret, ghBody))}}, ghBody, []string{"12"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, c.settings)
			w := h.post(c.kind, c.hdr, c.body)
			if w.Code != http.StatusAccepted {
				t.Fatalf("status %d, want 202: %s", w.Code, w.Body)
			}
			delivered := h.takeDelivered()
			if len(delivered) != 1 || !slices.Equal(delivered[0].Issues, c.issues) || delivered[0].ID != "" {
				t.Errorf("delivered %+v, want one naming %q with no id", delivered, c.issues)
			}
			if got := h.takeCounted(); !slices.Equal(got, []string{c.kind + " " + Accepted}) {
				t.Errorf("counted %q", got)
			}
		})
	}
}

// Every request that is not an authentic, fresh, new, relevant delivery is answered
// without calling Deliver, and counted under its result (or, for a wrong method or
// path, not counted at all).
func TestServeHTTP_RefusalsDeliverNothing(t *testing.T) {
	ghBody := readFixture(t, "github_issues_opened.json")
	linBody := readFixture(t, "linear_issue_update.json")
	jiraBody := readFixture(t, "jira_issue_created.json")
	gh := func(body []byte, mutate ...func(http.Header)) http.Header {
		hdr := headersFor(GitHub, "issues", "d-1", testSecret, body)
		for _, m := range mutate {
			m(hdr)
		}
		return hdr
	}
	del := func(k string) func(http.Header) { return func(h http.Header) { h.Del(k) } }
	set := func(k, v string) func(http.Header) { return func(h http.Header) { h.Set(k, v) } }
	sha1Hex := func(body []byte) string {
		m := hmac.New(sha1.New, []byte(testSecret))
		m.Write(body)
		return hex.EncodeToString(m.Sum(nil))
	}
	linearOther := []byte(strings.Replace(string(linBody), `"type": "Issue"`, `"type": "Project"`, 1))
	jiraDeleted := []byte(strings.Replace(string(jiraBody), "jira:issue_created", "jira:issue_deleted", 1))
	oversized := bytes.Repeat([]byte{' '}, MaxBody+1)

	post := func(kind string, hdr http.Header, body []byte) testRequest {
		return testRequest{method: http.MethodPost, path: "/webhooks/" + kind, hdr: hdr, body: body}
	}
	unread := func(r testRequest) testRequest { r.unread = true; return r }

	cases := []struct {
		name     string
		settings Settings
		at       time.Time // the receiver's clock; zero: testNow
		kind     string
		req      testRequest
		status   int
		result   string // "" when the request is not counted
		code     string // the error code, or the result for 200s
		event    string // Status.LastEvent
	}{
		// Method and path: not deliveries, not counted.
		{name: "GET", settings: settingsFor(GitHub), kind: GitHub,
			req:    testRequest{method: http.MethodGet, path: "/webhooks/github"},
			status: http.StatusMethodNotAllowed, code: "method_not_allowed"},
		{name: "PUT with a valid signature", settings: settingsFor(GitHub), kind: GitHub,
			req:    testRequest{method: http.MethodPut, path: "/webhooks/github", hdr: gh(ghBody), body: ghBody, unread: true},
			status: http.StatusMethodNotAllowed, code: "method_not_allowed"},
		{name: "unknown kind", settings: settingsFor(GitHub), kind: GitHub,
			req:    unread(post("gitlab", gh(ghBody), ghBody)),
			status: http.StatusNotFound, code: "not_found"},
		{name: "no kind", settings: settingsFor(GitHub), kind: GitHub,
			req:    unread(post("", gh(ghBody), ghBody)),
			status: http.StatusNotFound, code: "not_found"},
		{name: "path below a kind", settings: settingsFor(GitHub), kind: GitHub,
			req:    unread(post("github/extra", gh(ghBody), ghBody)),
			status: http.StatusNotFound, code: "not_found"},
		{name: "outside /webhooks/", settings: settingsFor(GitHub), kind: GitHub,
			req:    testRequest{method: http.MethodPost, path: "/hooks/github", hdr: gh(ghBody), body: ghBody, unread: true},
			status: http.StatusNotFound, code: "not_found"},

		// Not configured: counted, body unread.
		{name: "kind not in force", settings: settingsFor(Linear), kind: GitHub,
			req:    unread(post(GitHub, gh(ghBody), ghBody)),
			status: http.StatusNotFound, result: NotConfigured, code: NotConfigured},
		{name: "no secret", settings: Settings{Tracker: GitHub, Project: "acme/widgets"}, kind: GitHub,
			req:    unread(post(GitHub, gh(ghBody), ghBody)),
			status: http.StatusNotFound, result: NotConfigured, code: NotConfigured},

		// Signatures.
		{name: "github missing signature", settings: settingsFor(GitHub), kind: GitHub,
			req:    unread(post(GitHub, gh(ghBody, del("X-Hub-Signature-256")), ghBody)),
			status: http.StatusUnauthorized, result: Unauthorized, code: Unauthorized},
		{name: "github empty signature", settings: settingsFor(GitHub), kind: GitHub,
			req:    unread(post(GitHub, gh(ghBody, set("X-Hub-Signature-256", "")), ghBody)),
			status: http.StatusUnauthorized, result: Unauthorized, code: Unauthorized},
		{name: "github signature of another body", settings: settingsFor(GitHub), kind: GitHub,
			req:    post(GitHub, gh([]byte(`{"action":"opened"}`)), ghBody),
			status: http.StatusUnauthorized, result: Unauthorized, code: Unauthorized},
		{name: "github wrong secret", settings: settingsFor(GitHub), kind: GitHub,
			req:    post(GitHub, headersFor(GitHub, "issues", "d-1", "not the secret", ghBody), ghBody),
			status: http.StatusUnauthorized, result: Unauthorized, code: Unauthorized},
		{name: "github signature without sha256=", settings: settingsFor(GitHub), kind: GitHub,
			req:    post(GitHub, gh(ghBody, set("X-Hub-Signature-256", signHex(testSecret, ghBody))), ghBody),
			status: http.StatusUnauthorized, result: Unauthorized, code: Unauthorized},
		{name: "github signature not hex", settings: settingsFor(GitHub), kind: GitHub,
			req:    post(GitHub, gh(ghBody, set("X-Hub-Signature-256", "sha256=zz"+signHex(testSecret, ghBody)[2:])), ghBody),
			status: http.StatusUnauthorized, result: Unauthorized, code: Unauthorized},
		{name: "github truncated signature", settings: settingsFor(GitHub), kind: GitHub,
			req:    post(GitHub, gh(ghBody, set("X-Hub-Signature-256", "sha256="+signHex(testSecret, ghBody)[:32])), ghBody),
			status: http.StatusUnauthorized, result: Unauthorized, code: Unauthorized},
		{name: "github signature in Linear's header", settings: settingsFor(GitHub), kind: GitHub,
			req:    unread(post(GitHub, http.Header{"X-Github-Event": {"issues"}, "Linear-Signature": {signHex(testSecret, ghBody)}}, ghBody)),
			status: http.StatusUnauthorized, result: Unauthorized, code: Unauthorized},
		{name: "linear wrong secret", settings: settingsFor(Linear), kind: Linear,
			req:    post(Linear, headersFor(Linear, "", "d-1", "not the secret", linBody), linBody),
			status: http.StatusUnauthorized, result: Unauthorized, code: Unauthorized},
		{name: "linear missing signature", settings: settingsFor(Linear), kind: Linear,
			req:    unread(post(Linear, http.Header{"Linear-Delivery": {"d-1"}}, linBody)),
			status: http.StatusUnauthorized, result: Unauthorized, code: Unauthorized},
		{name: "linear signature with a sha256= prefix", settings: settingsFor(Linear), kind: Linear,
			req:    post(Linear, http.Header{"Linear-Signature": {"sha256=" + signHex(testSecret, linBody)}}, linBody),
			status: http.StatusUnauthorized, result: Unauthorized, code: Unauthorized},
		{name: "jira sha1 signature", settings: settingsFor(Jira), kind: Jira,
			req:    post(Jira, http.Header{"X-Hub-Signature": {"sha1=" + sha1Hex(jiraBody)}}, jiraBody),
			status: http.StatusUnauthorized, result: Unauthorized, code: Unauthorized},
		{name: "jira wrong secret", settings: settingsFor(Jira), kind: Jira,
			req:    post(Jira, headersFor(Jira, "", "d-1", "not the secret", jiraBody), jiraBody),
			status: http.StatusUnauthorized, result: Unauthorized, code: Unauthorized},
		{name: "jira wrong token", settings: settingsFor(Jira), kind: Jira,
			req:    post(Jira, http.Header{"X-Sortie-Webhook-Token": {testSecret + "x"}}, jiraBody),
			status: http.StatusUnauthorized, result: Unauthorized, code: Unauthorized},
		{name: "jira token that is a prefix of the secret", settings: settingsFor(Jira), kind: Jira,
			req:    post(Jira, http.Header{"X-Sortie-Webhook-Token": {testSecret[:5]}}, jiraBody),
			status: http.StatusUnauthorized, result: Unauthorized, code: Unauthorized},
		{name: "jira neither signature nor token", settings: settingsFor(Jira), kind: Jira,
			req:    unread(post(Jira, http.Header{"X-Atlassian-Webhook-Identifier": {"d-1"}}, jiraBody)),
			status: http.StatusUnauthorized, result: Unauthorized, code: Unauthorized},

		// Size.
		{name: "body over MaxBody", settings: settingsFor(GitHub), kind: GitHub,
			req:    post(GitHub, gh(oversized), oversized),
			status: http.StatusRequestEntityTooLarge, result: TooLarge, code: TooLarge},
		{name: "declared length over MaxBody", settings: settingsFor(GitHub), kind: GitHub,
			req:    testRequest{method: http.MethodPost, path: "/webhooks/github", hdr: gh(ghBody), unread: true, length: MaxBody + 1},
			status: http.StatusRequestEntityTooLarge, result: TooLarge, code: TooLarge},

		// Freshness.
		{name: "linear 61 s old", settings: settingsFor(Linear), kind: Linear, at: testNow.Add(61 * time.Second),
			req:    post(Linear, headersFor(Linear, "", "d-1", testSecret, linBody), linBody),
			status: http.StatusUnauthorized, result: Stale, code: Stale, event: "Issue.update"},
		{name: "linear 61 s ahead", settings: settingsFor(Linear), kind: Linear, at: testNow.Add(-61 * time.Second),
			req:    post(Linear, headersFor(Linear, "", "d-1", testSecret, linBody), linBody),
			status: http.StatusUnauthorized, result: Stale, code: Stale, event: "Issue.update"},
		{name: "linear a day old", settings: settingsFor(Linear), kind: Linear, at: testNow.Add(24 * time.Hour),
			req:    post(Linear, headersFor(Linear, "", "d-1", testSecret, linBody), linBody),
			status: http.StatusUnauthorized, result: Stale, code: Stale, event: "Issue.update"},

		// Relevance.
		{name: "github another repository", settings: Settings{Tracker: GitHub, Secret: testSecret, Project: "acme/gadgets"}, kind: GitHub,
			req:    post(GitHub, gh(ghBody), ghBody),
			status: http.StatusOK, result: Ignored, code: Ignored, event: "issues.opened"},
		{name: "github push event", settings: settingsFor(GitHub), kind: GitHub,
			req:    post(GitHub, gh(ghBody, set("X-GitHub-Event", "push")), ghBody),
			status: http.StatusOK, result: Ignored, code: Ignored, event: "push.opened"},
		{name: "linear another team", settings: Settings{Tracker: Linear, Secret: testSecret, Team: "OPS"}, kind: Linear,
			req:    post(Linear, headersFor(Linear, "", "d-1", testSecret, linBody), linBody),
			status: http.StatusOK, result: Ignored, code: Ignored, event: "Issue.update"},
		{name: "linear project delivery", settings: settingsFor(Linear), kind: Linear,
			req:    post(Linear, headersFor(Linear, "", "d-1", testSecret, linearOther), linearOther),
			status: http.StatusOK, result: Ignored, code: Ignored, event: "Project.update"},
		{name: "jira another project", settings: Settings{Tracker: Jira, Secret: testSecret, Project: "OPS"}, kind: Jira,
			req:    post(Jira, headersFor(Jira, "", "d-1", testSecret, jiraBody), jiraBody),
			status: http.StatusOK, result: Ignored, code: Ignored, event: "jira:issue_created"},
		{name: "jira issue deleted", settings: settingsFor(Jira), kind: Jira,
			req:    post(Jira, headersFor(Jira, "", "d-1", testSecret, jiraDeleted), jiraDeleted),
			status: http.StatusOK, result: Ignored, code: Ignored, event: "jira:issue_deleted"},

		// Shape, after a valid signature.
		{name: "github not JSON", settings: settingsFor(GitHub), kind: GitHub,
			req:    post(GitHub, gh([]byte("action=opened")), []byte("action=opened")),
			status: http.StatusBadRequest, result: Malformed, code: Malformed},
		{name: "github truncated JSON", settings: settingsFor(GitHub), kind: GitHub,
			req:    post(GitHub, gh(ghBody[:200]), ghBody[:200]),
			status: http.StatusBadRequest, result: Malformed, code: Malformed},
		{name: "github JSON array", settings: settingsFor(GitHub), kind: GitHub,
			req:    post(GitHub, gh([]byte("[]")), []byte("[]")),
			status: http.StatusBadRequest, result: Malformed, code: Malformed},
		{name: "github JSON null", settings: settingsFor(GitHub), kind: GitHub,
			req:    post(GitHub, gh([]byte("null")), []byte("null")),
			status: http.StatusBadRequest, result: Malformed, code: Malformed},
		{name: "github issue number a string", settings: settingsFor(GitHub), kind: GitHub,
			req:    postJSON(GitHub, githubHeaders, `{"action":"opened","issue":{"number":"12"},"repository":{"full_name":"acme/widgets"}}`),
			status: http.StatusBadRequest, result: Malformed, code: Malformed},
		{name: "github no issue", settings: settingsFor(GitHub), kind: GitHub,
			req:    postJSON(GitHub, githubHeaders, `{"action":"opened","repository":{"full_name":"acme/widgets"}}`),
			status: http.StatusBadRequest, result: Malformed, code: Malformed, event: "issues.opened"},
		{name: "github no repository", settings: settingsFor(GitHub), kind: GitHub,
			req:    postJSON(GitHub, githubHeaders, `{"action":"opened","issue":{"number":12}}`),
			status: http.StatusBadRequest, result: Malformed, code: Malformed, event: "issues.opened"},
		{name: "github no event header", settings: settingsFor(GitHub), kind: GitHub,
			req:    post(GitHub, gh(ghBody, del("X-GitHub-Event")), ghBody),
			status: http.StatusBadRequest, result: Malformed, code: Malformed},
		{name: "github delivery id too long", settings: settingsFor(GitHub), kind: GitHub,
			req:    post(GitHub, gh(ghBody, set("X-GitHub-Delivery", strings.Repeat("d", 257))), ghBody),
			status: http.StatusBadRequest, result: Malformed, code: Malformed},
		{name: "linear no webhookTimestamp", settings: settingsFor(Linear), kind: Linear,
			req:    postJSON(Linear, linearHeaders, `{"action":"create","type":"Issue","data":{"identifier":"ENG-1"}}`),
			status: http.StatusBadRequest, result: Malformed, code: Malformed, event: "Issue.create"},
		{name: "linear webhookTimestamp a string", settings: settingsFor(Linear), kind: Linear,
			req:    postJSON(Linear, linearHeaders, `{"action":"create","type":"Issue","data":{"identifier":"ENG-1"},"webhookTimestamp":"1767268800000"}`),
			status: http.StatusBadRequest, result: Malformed, code: Malformed},
		{name: "linear issue without identifier", settings: settingsFor(Linear), kind: Linear,
			req:    postJSON(Linear, linearHeaders, `{"action":"create","type":"Issue","data":{"id":"x"},"webhookTimestamp":1767268800000}`),
			status: http.StatusBadRequest, result: Malformed, code: Malformed, event: "Issue.create"},
		{name: "jira no issue", settings: settingsFor(Jira), kind: Jira,
			req:    postJSON(Jira, jiraHeaders, `{"webhookEvent":"jira:issue_updated"}`),
			status: http.StatusBadRequest, result: Malformed, code: Malformed, event: "jira:issue_updated"},
		{name: "jira no webhookEvent", settings: settingsFor(Jira), kind: Jira,
			req:    postJSON(Jira, jiraHeaders, `{"issue":{"key":"PROJ-7"}}`),
			status: http.StatusBadRequest, result: Malformed, code: Malformed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, c.settings)
			if !c.at.IsZero() {
				h.setNow(c.at)
			}
			var body io.Reader = bytes.NewReader(c.req.body)
			if c.req.unread {
				body = unreadable{t}
			}
			req := request(c.req.method, c.req.path, c.req.hdr, body)
			if c.req.length != 0 {
				req.ContentLength = c.req.length
			}
			w := h.do(req)
			if w.Code != c.status {
				t.Errorf("status %d, want %d: %s", w.Code, c.status, w.Body)
			}
			result, code := answerOf(t, w.Body.Bytes())
			if c.status < 300 {
				code = result
			}
			if code != c.code {
				t.Errorf("answer code %q, want %q: %s", code, c.code, w.Body)
			}
			if c.status == http.StatusMethodNotAllowed && w.Header().Get("Allow") != http.MethodPost {
				t.Errorf("Allow: %q, want POST", w.Header().Get("Allow"))
			}
			if got := h.takeDelivered(); len(got) != 0 {
				t.Errorf("delivered %+v, want nothing", got)
			}
			h.wantRecorded(c.kind, c.result, c.event)
			if st, ok := h.status(c.kind); ok && !st.LastAcceptedAt.IsZero() {
				t.Errorf("Status.LastAcceptedAt = %v, want zero", st.LastAcceptedAt)
			}
		})
	}
}

func githubHeaders(body []byte) http.Header {
	return headersFor(GitHub, "issues", "d-1", testSecret, body)
}

func linearHeaders(body []byte) http.Header {
	return headersFor(Linear, "", "d-1", testSecret, body)
}

func jiraHeaders(body []byte) http.Header { return headersFor(Jira, "", "d-1", testSecret, body) }

// testRequest is a request a refusal case sends.
type testRequest struct {
	method, path string
	hdr          http.Header
	body         []byte
	unread       bool  // the body must not be read
	length       int64 // Content-Length to declare (0: as built)
}

// postJSON is a POST of body to kind's receiver with the headers headers builds for it
// (a valid signature).
func postJSON(kind string, headers func([]byte) http.Header, body string) testRequest {
	return testRequest{method: http.MethodPost, path: "/webhooks/" + kind, hdr: headers([]byte(body)), body: []byte(body)}
}

// A delivery received again, by id, is answered 200 replayed and not delivered again:
// for the replay window, per tracker kind, ignored deliveries too. A delivery without
// an id cannot be recognised and is delivered each time.
func TestServeHTTP_ReplayedDeliveryIsNotDeliveredTwice(t *testing.T) {
	body := readFixture(t, "github_issues_opened.json")
	h := newHarness(t, settingsFor(GitHub))
	send := func(id string) (int, string) {
		t.Helper()
		w := h.post(GitHub, headersFor(GitHub, "issues", id, testSecret, body), body)
		result, code := answerOf(t, w.Body.Bytes())
		return w.Code, result + code
	}
	steps := []struct {
		name   string
		at     time.Time
		id     string
		status int
		result string
	}{
		{"first", testNow, "72d3162e-cc78-11e3-81ab-4c9367dc0958", http.StatusAccepted, Accepted},
		{"again", testNow, "72d3162e-cc78-11e3-81ab-4c9367dc0958", http.StatusOK, Replayed},
		{"again an hour later", testNow.Add(time.Hour), "72d3162e-cc78-11e3-81ab-4c9367dc0958", http.StatusOK, Replayed},
		{"another id", testNow.Add(time.Hour), "8a1e0c9a-cc78-11e3-81ab-4c9367dc0958", http.StatusAccepted, Accepted},
		{"after the window", testNow.Add(24 * time.Hour), "72d3162e-cc78-11e3-81ab-4c9367dc0958", http.StatusAccepted, Accepted},
		{"no id", testNow.Add(24 * time.Hour), "", http.StatusAccepted, Accepted},
		{"no id again", testNow.Add(24 * time.Hour), "", http.StatusAccepted, Accepted},
	}
	for _, s := range steps {
		h.setNow(s.at)
		status, result := send(s.id)
		if status != s.status || result != s.result {
			t.Errorf("%s: %d %s, want %d %s", s.name, status, result, s.status, s.result)
		}
		delivered := h.takeDelivered()
		if want := map[bool]int{true: 1}[s.result == Accepted]; len(delivered) != want {
			t.Errorf("%s: %d deliveries, want %d", s.name, len(delivered), want)
		}
		h.wantRecorded(GitHub, s.result, "issues.opened")
	}
	st, _ := h.status(GitHub)
	if st.Counts[Accepted] != 5 || st.Counts[Replayed] != 2 {
		t.Errorf("Status.Counts = %v, want 5 accepted and 2 replayed", st.Counts)
	}

	// The same id from another tracker is another delivery; an ignored one is remembered.
	h.mu.Lock()
	h.settings = settingsFor(Jira)
	h.mu.Unlock()
	jira := readFixture(t, "jira_issue_created.json")
	if w := h.post(Jira, headersFor(Jira, "", "72d3162e-cc78-11e3-81ab-4c9367dc0958", testSecret, jira), jira); w.Code != http.StatusAccepted {
		t.Errorf("jira with github's delivery id: %d, want 202", w.Code)
	}
	h.mu.Lock()
	h.settings = settingsFor(GitHub)
	h.mu.Unlock()
	ping := readFixture(t, "github_ping.json")
	for i, want := range []string{Ignored, Replayed} {
		w := h.post(GitHub, headersFor(GitHub, "ping", "ping-1", testSecret, ping), ping)
		if got, _ := answerOf(t, w.Body.Bytes()); w.Code != http.StatusOK || got != want {
			t.Errorf("ping #%d: %d %s, want 200 %s", i+1, w.Code, got, want)
		}
	}
	if got := h.takeDelivered(); len(got) != 1 || got[0].Tracker != Jira {
		t.Errorf("delivered %+v, want the jira delivery alone", got)
	}
}

// Only deliveries that pass verification are remembered: forged, oversized and stale
// requests carrying a real delivery's id neither fill the memory nor make the real one
// look replayed.
func TestServeHTTP_OnlyAuthenticDeliveriesAreRemembered(t *testing.T) {
	body := readFixture(t, "linear_issue_create.json")
	const id = "3f1b4c2a-8e0d-4c6b-9a57-1d2e3f4a5b6c"
	h := newHarness(t, settingsFor(Linear))
	forged := headersFor(Linear, "", id, "guessed", body)
	if w := h.post(Linear, forged, body); w.Code != http.StatusUnauthorized {
		t.Fatalf("forged: %d, want 401", w.Code)
	}
	h.setNow(testNow.Add(2 * time.Minute))
	if w := h.post(Linear, headersFor(Linear, "", id, testSecret, body), body); w.Code != http.StatusUnauthorized {
		t.Fatalf("stale: %d, want 401", w.Code)
	}
	if n := h.r.seen.Len(); n != 0 {
		t.Errorf("%d ids remembered after refused requests, want 0", n)
	}
	h.setNow(testNow)
	if w := h.post(Linear, headersFor(Linear, "", id, testSecret, body), body); w.Code != http.StatusAccepted {
		t.Errorf("the real delivery after forged copies: %d, want 202: %s", w.Code, w.Body)
	}
	if got := h.takeDelivered(); len(got) != 1 || got[0].ID != id {
		t.Errorf("delivered %+v, want the real delivery", got)
	}
}

// Copies of one delivery arriving together are delivered once.
func TestServeHTTP_ConcurrentCopiesDeliveredOnce(t *testing.T) {
	body := readFixture(t, "jira_comment_created.json")
	h := newHarness(t, settingsFor(Jira))
	hdr := headersFor(Jira, "", "4f7c2a9e-0b1d-4e3f-8a6b-5c4d3e2f1a0b", testSecret, body)
	var wg sync.WaitGroup
	codes := make([]int, 16)
	for i := range codes {
		wg.Go(func() {
			w := httptest.NewRecorder()
			h.r.ServeHTTP(w, request(http.MethodPost, "/webhooks/jira", hdr.Clone(), bytes.NewReader(body)))
			codes[i] = w.Code
		})
	}
	wg.Wait()
	accepted := 0
	for _, c := range codes {
		if c == http.StatusAccepted {
			accepted++
		} else if c != http.StatusOK {
			t.Errorf("a copy answered %d", c)
		}
	}
	if accepted != 1 || len(h.takeDelivered()) != 1 {
		t.Errorf("%d copies accepted, want 1", accepted)
	}
	st, _ := h.status(Jira)
	if st.Counts[Accepted] != 1 || st.Counts[Replayed] != int64(len(codes)-1) {
		t.Errorf("Status.Counts = %v", st.Counts)
	}
}

// Status keeps one record per kind, sorted, with every result counted and the last
// acceptance kept through later refusals; what it returns is the caller's.
func TestStatus_PerKindSortedAndCopied(t *testing.T) {
	h := newHarness(t, settingsFor(Linear))
	lin := readFixture(t, "linear_comment_create.json")
	h.post(Linear, headersFor(Linear, "", "", testSecret, lin), lin)
	h.setNow(testNow.Add(time.Second))
	h.post(Linear, http.Header{"Linear-Signature": {"00"}}, lin)
	h.post(GitHub, nil, nil) // not in force

	st := h.r.Status()
	if len(st) != 2 || st[0].Tracker != GitHub || st[1].Tracker != Linear {
		t.Fatalf("Status() = %+v, want github then linear", st)
	}
	l := st[1]
	if l.LastResult != Unauthorized || l.LastEvent != "" || !l.LastAt.Equal(testNow.Add(time.Second)) || !l.LastAcceptedAt.Equal(testNow) {
		t.Errorf("linear: %+v, want last unauthorized with no event at +1s, last accepted at %v", l, testNow)
	}
	for _, r := range Results() {
		if _, ok := l.Counts[r]; !ok {
			t.Errorf("Counts has no %s", r)
		}
	}
	if l.Counts[Accepted] != 1 || l.Counts[Unauthorized] != 1 || st[0].Counts[NotConfigured] != 1 {
		t.Errorf("counts: linear %v, github %v", l.Counts, st[0].Counts)
	}
	l.Counts[Accepted] = 99
	if again, _ := h.status(Linear); again.Counts[Accepted] != 1 {
		t.Error("changing a returned Status changed the receiver's")
	}
	b, err := json.Marshal(st[0])
	if err != nil || !strings.Contains(string(b), `"last_result":"not_configured"`) || !strings.Contains(string(b), `"last_accepted_at":"0001-01-01T00:00:00Z"`) {
		t.Errorf("Status JSON %s (%v)", b, err)
	}
}

func TestKindsAndResults(t *testing.T) {
	if got, want := Kinds(), []string{GitHub, Jira, Linear}; !slices.Equal(got, want) {
		t.Errorf("Kinds() = %q, want %q", got, want)
	}
	want := []string{Accepted, Ignored, Replayed, Unauthorized, Stale, Malformed, TooLarge, NotConfigured, Busy}
	if got := Results(); !slices.Equal(got, want) {
		t.Errorf("Results() = %q, want %q", got, want)
	}
}

func TestNew_RequiresSettingsAndDeliver(t *testing.T) {
	for _, o := range []Options{{Settings: func() Settings { return Settings{} }}, {Deliver: func(Delivery) {}}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("New(%+v) did not panic", o)
				}
			}()
			New(o)
		}()
	}
}

// Anyone can send requests that are refused, so a flood of them must not flood the log:
// one line per kind of refusal a minute, the next saying how many went unlogged. Every
// one is still counted.
func TestReceiver_RefusalsAreLoggedAtMostOnceAMinute(t *testing.T) {
	h := newHarness(t, Settings{Tracker: GitHub, Secret: testSecret, Project: "acme/widgets"})
	body := []byte(`{}`)
	bad := http.Header{"X-Github-Event": {"issues"}, "X-Hub-Signature-256": {"sha256=" + strings.Repeat("0", 64)}}
	for range 50 {
		if w := h.do(request(http.MethodPost, "/webhooks/github", bad, bytes.NewReader(body))); w.Code != http.StatusUnauthorized {
			t.Fatalf("HTTP %d, want 401", w.Code)
		}
	}
	lines := func() int {
		h.mu.Lock()
		defer h.mu.Unlock()
		return strings.Count(h.logs.String(), "webhook delivery refused")
	}
	if n := lines(); n != 1 {
		t.Fatalf("50 refusals in a minute logged %d lines, want 1", n)
	}
	h.setNow(testNow.Add(time.Minute))
	h.do(request(http.MethodPost, "/webhooks/github", bad, bytes.NewReader(body)))
	h.mu.Lock()
	logs := h.logs.String()
	h.mu.Unlock()
	if n := lines(); n != 2 || !strings.Contains(logs, "unlogged_since_last=49") {
		t.Fatalf("a minute later: %d lines, want 2, the second saying 49 went unlogged:\n%s", n, logs)
	}
	if s := h.r.Status(); len(s) != 1 || s[0].Counts[Unauthorized] != 51 {
		t.Fatalf("Status = %+v, want all 51 refusals counted", s)
	}
}

// Bodies are read before their signature can be checked, so how many are read at once
// is bounded: past MaxReading, a request is answered 503 with Retry-After, unread.
func TestReceiver_BoundsTheBodiesReadAtOnce(t *testing.T) {
	h := newHarness(t, Settings{Tracker: GitHub, Secret: testSecret, Project: "acme/widgets"})
	for range MaxReading {
		h.r.reading <- struct{}{} // as if MaxReading senders were stalling inside their bodies
	}
	hdr := http.Header{"X-Github-Event": {"issues"}, "X-Hub-Signature-256": {"sha256=" + strings.Repeat("0", 64)}}
	w := h.do(request(http.MethodPost, "/webhooks/github", hdr, unreadable{t}))
	if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") == "" {
		t.Fatalf("HTTP %d, Retry-After %q; want 503 with Retry-After", w.Code, w.Header().Get("Retry-After"))
	}
	for range MaxReading {
		<-h.r.reading
	}
	if s := h.r.Status(); len(s) != 1 || s[0].Counts[Busy] != 1 {
		t.Fatalf("Status = %+v, want one busy", s)
	}
}

// truncated is a body that stops short of its declared length.
type truncated struct{ sent bool }

func (b *truncated) Read(p []byte) (int, error) {
	if b.sent {
		return 0, io.ErrUnexpectedEOF
	}
	b.sent = true
	return copy(p, `{"action":"opened"`), nil
}

// A body that stops short proves nothing about its sender: it is counted unauthorized,
// not as a tracker's malformed delivery, and nothing is delivered.
func TestReceiver_ABodyCutShortIsUnauthorized(t *testing.T) {
	h := newHarness(t, Settings{Tracker: GitHub, Secret: testSecret, Project: "acme/widgets"})
	hdr := http.Header{"X-Github-Event": {"issues"}, "X-Hub-Signature-256": {"sha256=" + strings.Repeat("0", 64)}}
	w := h.do(request(http.MethodPost, "/webhooks/github", hdr, &truncated{}))
	if w.Code != http.StatusBadRequest {
		t.Fatalf("HTTP %d, want 400", w.Code)
	}
	if s := h.r.Status(); len(s) != 1 || s[0].Counts[Unauthorized] != 1 || s[0].Counts[Malformed] != 0 {
		t.Fatalf("Status = %+v, want the cut-short body counted unauthorized", s)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.delivered) != 0 {
		t.Fatalf("delivered %v", h.delivered)
	}
}
