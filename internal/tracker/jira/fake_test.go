package jira

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"sortie/internal/tracker"
)

// referenceDir holds sortie 1.9's Jira response bodies, third-party data beside the
// repository (/work/shared/testdata/README.md): read in place when present, as in CI,
// never copied. The package's own bodies, written in the shapes of Jira Cloud's REST
// API v3, are in testdata/.
const referenceDir = "../../../../shared/testdata/sortie-1.9/internal/tracker/jira/testdata"

// fixture reads one of the package's own response bodies from testdata/.
func fixture(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// referenceFixture reads one reference body, skipping the test, and saying what was
// skipped, when the shared data is not beside the repository.
func referenceFixture(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(referenceDir, name))
	if err != nil {
		t.Skipf("skipped: ../shared/testdata/sortie-1.9/internal/tracker/jira/testdata/%s not present (third-party sortie 1.9 compatibility data, run in CI)", name)
	}
	return data
}

// fakeJira is an httptest Jira that behaves like the real one on the paths the adapter
// uses: it checks auth, evaluates the JQL shapes the adapter sends, pages by token
// (Cloud) or offset (Data Center, capping maxResults like the server does), keeps
// comments and statuses, and offers transitions per issue.
type fakeJira struct {
	t       testing.TB
	cloud   bool
	auth    string // the Authorization header it accepts
	maxPage int    // server-side cap on maxResults

	mu          sync.Mutex
	issues      []map[string]any // in search order
	transitions map[string][]map[string]any
	comments    map[string][]map[string]any
	requests    int
	paths       []string
	jqls        []string
	bodies      []string
	agents      []string
	// intercept, when set, may answer a request itself (an error, a 429).
	intercept func(w http.ResponseWriter, r *http.Request) bool
}

const (
	cloudKey = "bot@example.com:tok3n"
	dcKey    = "pat-secret"
)

func newFake(t testing.TB, cloud bool) (*fakeJira, *httptest.Server) {
	f := &fakeJira{t: t, cloud: cloud, maxPage: 100, transitions: map[string][]map[string]any{}, comments: map[string][]map[string]any{}}
	if cloud {
		f.auth = "Basic " + base64.StdEncoding.EncodeToString([]byte(cloudKey))
	} else {
		f.auth = "Bearer " + dcKey
	}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv
}

// newFakeTracker builds a tracker through the registry path (New's checks) against srv.
func newFakeTracker(t testing.TB, srv *httptest.Server, cloud bool, now func() time.Time, mut ...func(*tracker.Config)) *Tracker {
	t.Helper()
	cfg := tracker.Config{Kind: "jira", Endpoint: srv.URL + "/", APIKey: cloudKey, Project: "PROJ",
		ActiveStates: []string{"To Do", "In Progress"}, UserAgent: "sortie/test", Options: map[string]any{}}
	if !cloud {
		cfg.APIKey = dcKey
		cfg.Options["api"] = "datacenter"
	}
	for _, m := range mut {
		m(&cfg)
	}
	if now == nil {
		now = func() time.Time { return time.Date(2026, 4, 1, 12, 0, 0, 0, time.UTC) }
	}
	tr, err := newTracker(cfg, now, nil)
	if err != nil {
		t.Fatalf("newTracker: %v", err)
	}
	return tr
}

// addIssues adds the issues of a search response body.
func (f *fakeJira) addIssues(body []byte) {
	var resp struct {
		Issues []map[string]any `json:"issues"`
	}
	if err := json.Unmarshal(body, &resp); err != nil {
		f.t.Fatalf("fixture: %v", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.issues = append(f.issues, resp.Issues...)
}

// addIssue adds one issue with the given key, id and status.
func (f *fakeJira) addIssue(id, key, status string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.issues = append(f.issues, map[string]any{"id": id, "key": key, "fields": map[string]any{
		"summary": "Issue " + key, "status": map[string]any{"name": status}, "labels": []any{}, "issuelinks": []any{},
		"description": nil, "created": "2025-01-15T10:30:00.000+0000", "updated": "2025-01-16T14:00:00.000+0000",
	}})
}

func (f *fakeJira) requestCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.requests
}

func (f *fakeJira) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.requests++
	f.paths = append(f.paths, r.Method+" "+r.URL.Path)
	f.agents = append(f.agents, r.UserAgent())
	if q := r.URL.Query().Get("jql"); q != "" {
		f.jqls = append(f.jqls, q)
	}
	body, _ := io.ReadAll(r.Body)
	if len(body) > 0 {
		f.bodies = append(f.bodies, string(body))
	}
	intercept := f.intercept
	f.mu.Unlock()
	if intercept != nil && intercept(w, r) {
		return
	}
	if r.Header.Get("Authorization") != f.auth {
		writeJSON(w, http.StatusUnauthorized, map[string]any{"errorMessages": []string{"You are not authenticated."}})
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	api := "/rest/api/2"
	if f.cloud {
		api = "/rest/api/3"
	}
	path, ok := strings.CutPrefix(r.URL.Path, api)
	if !ok {
		writeJSON(w, http.StatusNotFound, map[string]any{"errorMessages": []string{"no such API"}})
		return
	}
	switch {
	case f.cloud && path == "/search/jql" && r.Method == http.MethodGet:
		f.searchCloud(w, r)
	case !f.cloud && path == "/search" && r.Method == http.MethodGet:
		f.searchDC(w, r)
	case f.cloud && path == "/issue/bulkfetch" && r.Method == http.MethodPost:
		var req struct {
			IssueIdsOrKeys []string `json:"issueIdsOrKeys"`
		}
		if json.Unmarshal(body, &req) != nil || len(req.IssueIdsOrKeys) > 100 {
			writeJSON(w, http.StatusBadRequest, map[string]any{"errorMessages": []string{"bad bulkfetch"}})
			return
		}
		var out []map[string]any
		for _, is := range f.issues {
			if slices.Contains(req.IssueIdsOrKeys, is["id"].(string)) || slices.Contains(req.IssueIdsOrKeys, is["key"].(string)) {
				out = append(out, is)
			}
		}
		writeJSON(w, http.StatusOK, map[string]any{"issues": out, "issueErrors": []any{}})
	case path == "/myself" && r.Method == http.MethodGet:
		writeJSON(w, http.StatusOK, f.bot())
	case strings.HasPrefix(path, "/issue/"):
		f.issue(w, r, strings.Split(strings.TrimPrefix(path, "/issue/"), "/"), body)
	default:
		writeJSON(w, http.StatusNotFound, map[string]any{"errorMessages": []string{"no route " + path}})
	}
}

// bot is the account the token belongs to, as GET /myself and comment authors show it:
// Cloud names it by accountId, Data Center by key and name.
func (f *fakeJira) bot() map[string]any {
	if f.cloud {
		return map[string]any{"accountId": "5b10ac8d82e05b22cc7d4ef5", "accountType": "atlassian",
			"displayName": "Sortie Bot", "emailAddress": "sortie@example.com"}
	}
	return map[string]any{"key": "JIRAUSER10100", "name": "sortie", "displayName": "Sortie Bot",
		"emailAddress": "sortie@example.com"}
}

func (f *fakeJira) find(ref string) map[string]any {
	for _, is := range f.issues {
		if is["id"] == ref || is["key"] == ref {
			return is
		}
	}
	return nil
}

func (f *fakeJira) issue(w http.ResponseWriter, r *http.Request, parts []string, body []byte) {
	is := f.find(parts[0])
	if is == nil {
		writeJSON(w, http.StatusNotFound, map[string]any{"errorMessages": []string{"Issue does not exist or you do not have permission to see it."}})
		return
	}
	id := is["id"].(string)
	switch {
	case len(parts) == 1 && r.Method == http.MethodGet:
		writeJSON(w, http.StatusOK, is)
	case len(parts) == 2 && parts[1] == "transitions" && r.Method == http.MethodGet:
		writeJSON(w, http.StatusOK, map[string]any{"transitions": f.transitions[id]})
	case len(parts) == 2 && parts[1] == "transitions" && r.Method == http.MethodPost:
		var req struct {
			Transition struct {
				ID string `json:"id"`
			} `json:"transition"`
		}
		_ = json.Unmarshal(body, &req)
		for _, tr := range f.transitions[id] {
			if tr["id"] == req.Transition.ID {
				is["fields"].(map[string]any)["status"] = map[string]any{"name": tr["to"].(map[string]any)["name"]}
				w.WriteHeader(http.StatusNoContent)
				return
			}
		}
		writeJSON(w, http.StatusBadRequest, map[string]any{"errorMessages": []string{"Transition id '" + req.Transition.ID + "' is not valid for this issue."}})
	case len(parts) == 2 && parts[1] == "comment" && r.Method == http.MethodGet:
		all := f.comments[id]
		start, _ := strconv.Atoi(r.URL.Query().Get("startAt"))
		max, _ := strconv.Atoi(r.URL.Query().Get("maxResults"))
		max = min(max, 2) // a small server cap, so paging is exercised
		end := min(start+max, len(all))
		page := []map[string]any{}
		if start < len(all) {
			page = all[start:end]
		}
		writeJSON(w, http.StatusOK, map[string]any{"startAt": start, "maxResults": max, "total": len(all), "comments": page})
	case len(parts) == 2 && parts[1] == "comment" && r.Method == http.MethodPost:
		var req struct {
			Body json.RawMessage `json:"body"`
		}
		if json.Unmarshal(body, &req) != nil {
			writeJSON(w, http.StatusBadRequest, map[string]any{"errorMessages": []string{"bad comment"}})
			return
		}
		// Cloud v3 accepts only ADF bodies, v2 only strings.
		if f.cloud != strings.HasPrefix(strings.TrimSpace(string(req.Body)), "{") {
			writeJSON(w, http.StatusBadRequest, map[string]any{"errors": map[string]string{"comment": "Comment body is not valid"}})
			return
		}
		c := map[string]any{"id": strconv.Itoa(50000 + len(f.comments[id])), "author": f.bot(),
			"body": req.Body, "created": "2026-04-01T12:00:00.000+0000"}
		f.comments[id] = append(f.comments[id], c)
		writeJSON(w, http.StatusCreated, c)
	default:
		writeJSON(w, http.StatusMethodNotAllowed, nil)
	}
}

// match evaluates the JQL shapes the adapter sends.
func (f *fakeJira) match(jql string) ([]map[string]any, error) {
	toks, err := lexJQL(jql)
	if err != nil {
		return nil, err
	}
	var project string
	var states, keys, ids []string
	for i := 0; i < len(toks); i++ {
		switch {
		case toks[i].word("project") && i+2 < len(toks):
			project = toks[i+2].text
		case toks[i].word("status") || toks[i].word("key") || toks[i].word("id"):
			field := strings.ToLower(toks[i].text)
			j := i + 3 // field IN (
			for ; j < len(toks) && toks[j].text != ")"; j++ {
				if toks[j].text == "," {
					continue
				}
				switch field {
				case "status":
					states = append(states, toks[j].text)
				case "key":
					keys = append(keys, toks[j].text)
				case "id":
					ids = append(ids, toks[j].text)
				}
			}
			i = j
		case toks[i].word("order"):
			i = len(toks)
		}
	}
	var out []map[string]any
	for _, is := range f.issues {
		key := is["key"].(string)
		st := is["fields"].(map[string]any)["status"].(map[string]any)["name"].(string)
		switch {
		case project != "" && !strings.HasPrefix(key, project+"-"),
			states != nil && !tracker.StateIn(st, states),
			keys != nil && !slices.Contains(keys, key),
			ids != nil && !slices.Contains(ids, is["id"].(string)):
			continue
		}
		out = append(out, is)
	}
	return out, nil
}

func (f *fakeJira) searchCloud(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	all, err := f.match(q.Get("jql"))
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"errorMessages": []string{err.Error()}})
		return
	}
	max, _ := strconv.Atoi(q.Get("maxResults"))
	max = min(max, f.maxPage)
	start := 0
	if tok := q.Get("nextPageToken"); tok != "" {
		start, _ = strconv.Atoi(strings.TrimPrefix(tok, "tok-"))
	}
	end := min(start+max, len(all))
	resp := map[string]any{"issues": all[start:end], "isLast": end >= len(all)}
	if end < len(all) {
		resp["nextPageToken"] = "tok-" + strconv.Itoa(end)
	}
	writeJSON(w, http.StatusOK, resp)
}

func (f *fakeJira) searchDC(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	all, err := f.match(q.Get("jql"))
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"errorMessages": []string{err.Error()}})
		return
	}
	start, _ := strconv.Atoi(q.Get("startAt"))
	max, _ := strconv.Atoi(q.Get("maxResults"))
	max = min(max, f.maxPage)
	start = min(start, len(all))
	end := min(start+max, len(all))
	writeJSON(w, http.StatusOK, map[string]any{"startAt": start, "maxResults": max, "total": len(all), "issues": all[start:end]})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if v != nil {
		_ = json.NewEncoder(w).Encode(v)
	}
}

// jqlToken is one lexical token of JQL: a quoted string (text unescaped, quoted true), a
// word or number, or one of ( ) , =.
type jqlToken struct {
	text   string
	quoted bool
}

func (t jqlToken) word(w string) bool { return !t.quoted && strings.EqualFold(t.text, w) }

// lexJQL splits JQL as Jira's parser does for the subset Sortie sends: double- and
// single-quoted strings with backslash escapes, punctuation, and bare words.
func lexJQL(s string) ([]jqlToken, error) {
	var toks []jqlToken
	rs := []rune(s)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case r == ' ' || r == '\t' || r == '\n':
		case r == '(' || r == ')' || r == ',' || r == '=':
			toks = append(toks, jqlToken{text: string(r)})
		case r == '"' || r == '\'':
			var b strings.Builder
			j := i + 1
			for ; j < len(rs) && rs[j] != r; j++ {
				if rs[j] == '\\' && j+1 < len(rs) {
					j++
				}
				b.WriteRune(rs[j])
			}
			if j >= len(rs) {
				return nil, fmt.Errorf("unterminated string at %d", i)
			}
			toks = append(toks, jqlToken{text: b.String(), quoted: true})
			i = j
		default:
			j := i
			for j < len(rs) && !strings.ContainsRune(" \t\n(),=\"'", rs[j]) {
				j++
			}
			toks = append(toks, jqlToken{text: string(rs[i:j])})
			i = j - 1
		}
	}
	return toks, nil
}
