// Package fakejira is a fake Jira REST API for tests, Cloud (v3) or Data Center (v2):
// an httptest server that keeps one site's issues, comments and transitions and answers
// on the paths Sortie's Jira adapter uses, in Jira's JSON shapes. It checks auth (Basic
// email:api_token on Cloud, a Bearer personal access token on Data Center), evaluates
// the JQL subset the adapter sends (LexJQL), pages search results by token (Cloud) or
// offset (Data Center), capping maxResults as the server does, keeps comments (ADF on
// Cloud, text on Data Center) and statuses, moves an issue by the transitions it
// offers, and edits its labels (PUT /issue/{ref}) with Jira's rules for them.
//
// Issues are kept as Jira's JSON: a test adds them by id, key and status, or as the
// bytes of a response body (a search page, an issue) it read from its own testdata.
// The mutators are safe to call while a tracker polls, and move the issue's updated
// time. The fake imports nothing of Sortie's.
//
// The token's account (GET /myself, the author of comments posted through the API) is
// "Sortie Bot", sortie@example.com: on Cloud accountId 5b10ac8d82e05b22cc7d4ef5, on
// Data Center key JIRAUSER10100 and name sortie.
package fakejira

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// API is the flavour of Jira the fake is.
type API int

const (
	// Cloud is Jira Cloud's REST API v3: /rest/api/3, search/jql paged by
	// nextPageToken, bulkfetch, ADF descriptions and comment bodies.
	Cloud API = iota
	// DataCenter is Jira Data Center's REST API v2: /rest/api/2, search paged by
	// startAt, text descriptions and comment bodies.
	DataCenter
)

const (
	// CloudKey is the tracker.api_key the Cloud fake accepts (email:api_token).
	CloudKey = "bot@example.com:tok3n"
	// DataCenterKey is the personal access token the Data Center fake accepts.
	DataCenterKey = "pat-secret"
)

// timeLayout is Jira's timestamp format: milliseconds, an offset without a colon.
const timeLayout = "2006-01-02T15:04:05.000-0700"

// Request is one request the fake received.
type Request struct {
	Method, Path string
	JQL          string // the jql query parameter, "" when none
	Body         string // the request body, "" when none
	UserAgent    string
}

// Comment is a comment as the fake keeps it.
type Comment struct {
	ID      string
	Author  string // the author's display name
	Body    string // the text: Data Center's string, or the text of Cloud's ADF document
	Created string // Jira's timestamp
}

// Option configures a Server.
type Option func(*Server)

// WithClock sets the fake's clock, which stamps comments and changes (default time.Now).
func WithClock(now func() time.Time) Option { return func(s *Server) { s.clock = now } }

// WithPageCap sets the server's cap on a search's maxResults (default 100); a smaller
// one makes the adapter page.
func WithPageCap(n int) Option { return func(s *Server) { s.maxPage = n } }

// Server is the fake. Its exported methods are safe for concurrent use, with each other
// and with the requests it serves.
type Server struct {
	srv     *httptest.Server
	cloud   bool
	auth    string // the Authorization header it accepts
	maxPage int
	clock   func() time.Time

	mu          sync.Mutex
	issues      []map[string]any // in search order
	transitions map[string][]map[string]any
	comments    map[string][]map[string]any // by issue id
	nextComment int
	log         []Request
	hook        func(w http.ResponseWriter, r *http.Request) bool
}

// New starts a fake Jira of the given flavour with no issues. It is closed when the
// test ends.
func New(t testing.TB, api API, opts ...Option) *Server {
	t.Helper()
	s := &Server{cloud: api == Cloud, maxPage: 100, clock: time.Now,
		transitions: map[string][]map[string]any{}, comments: map[string][]map[string]any{}, nextComment: 50000}
	for _, o := range opts {
		o(s)
	}
	if s.cloud {
		s.auth = "Basic " + base64.StdEncoding.EncodeToString([]byte(CloudKey))
	} else {
		s.auth = "Bearer " + DataCenterKey
	}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

// URL is the site URL, for tracker.endpoint; the adapter adds /rest/api/N.
func (s *Server) URL() string { return s.srv.URL }

// Key is the tracker.api_key the fake accepts: CloudKey or DataCenterKey.
func (s *Server) Key() string {
	if s.cloud {
		return CloudKey
	}
	return DataCenterKey
}

// Close shuts the server down; later requests fail to connect.
func (s *Server) Close() { s.srv.Close() }

// AddIssue adds an issue with the given id, key and status, summary "Issue " + key,
// no labels, links or description, created 2025-01-15T10:30Z and updated a day later.
func (s *Server) AddIssue(id, key, status string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.issues = append(s.issues, map[string]any{"id": id, "key": key, "fields": map[string]any{
		"summary": "Issue " + key, "status": map[string]any{"name": status}, "labels": []any{}, "issuelinks": []any{},
		"description": nil, "created": "2025-01-15T10:30:00.000+0000", "updated": "2025-01-16T14:00:00.000+0000",
	}})
}

// AddSearchPage adds the issues of a search response body ({"issues": [...]}), as they
// are, after those the fake has.
func (s *Server) AddSearchPage(body []byte) error {
	var resp struct {
		Issues []map[string]any `json:"issues"`
	}
	if err := json.Unmarshal(body, &resp); err != nil {
		return fmt.Errorf("fakejira: a search page: %w", err)
	}
	for _, is := range resp.Issues {
		if err := checkIssue(is); err != nil {
			return err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.issues = append(s.issues, resp.Issues...)
	return nil
}

// AddIssueJSON adds one issue as GET /issue/{key} returns it, as it is.
func (s *Server) AddIssueJSON(body []byte) error {
	var is map[string]any
	if err := json.Unmarshal(body, &is); err != nil {
		return fmt.Errorf("fakejira: an issue: %w", err)
	}
	if err := checkIssue(is); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.issues = append(s.issues, is)
	return nil
}

// checkIssue makes sure the fake can serve is: string id and key, fields with a
// status name.
func checkIssue(is map[string]any) error {
	id, _ := is["id"].(string)
	key, _ := is["key"].(string)
	f, _ := is["fields"].(map[string]any)
	st, _ := f["status"].(map[string]any)
	if _, ok := st["name"].(string); id == "" || key == "" || !ok {
		return fmt.Errorf("fakejira: an issue needs a string id and key and fields.status.name (got id %v key %v)", is["id"], is["key"])
	}
	return nil
}

// SetField sets fields.<field> of the issue with id or key ref to value, as a JSON
// copy, and moves its updated time. It panics when there is no such issue.
func (s *Server) SetField(ref, field string, value any) {
	data, err := json.Marshal(value)
	if err != nil {
		panic(fmt.Sprintf("fakejira: SetField(%s, %s): %v", ref, field, err))
	}
	var v any
	_ = json.Unmarshal(data, &v)
	s.mu.Lock()
	defer s.mu.Unlock()
	is := s.mustFind(ref)
	fields(is)[field] = v
	if field != "updated" {
		s.touch(is)
	}
}

// SetStatus moves the issue with id or key ref to status, as a person would on the
// board, whatever the transitions. It panics when there is no such issue.
func (s *Server) SetStatus(ref, status string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	is := s.mustFind(ref)
	fields(is)["status"] = map[string]any{"name": status}
	s.touch(is)
}

// Status returns the status name of the issue with id or key ref, and whether there
// is one.
func (s *Server) Status(ref string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	is := s.find(ref)
	if is == nil {
		return "", false
	}
	return status(is), true
}

// Labels returns the labels of the issue with id or key ref, in order, and whether
// there is such an issue.
func (s *Server) Labels(ref string) ([]string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	is := s.find(ref)
	if is == nil {
		return nil, false
	}
	return labelsOf(is), true
}

// SetTransitions sets the transitions the issue with id or key ref offers to those of a
// GET transitions response body ({"transitions": [...]}). Each needs an id and a
// to.name.
func (s *Server) SetTransitions(ref string, body []byte) error {
	var resp struct {
		Transitions []map[string]any `json:"transitions"`
	}
	if err := json.Unmarshal(body, &resp); err != nil {
		return fmt.Errorf("fakejira: transitions: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	is := s.find(ref)
	if is == nil {
		return fmt.Errorf("fakejira: no issue %s", ref)
	}
	s.transitions[is["id"].(string)] = resp.Transitions
	return nil
}

// AddTransition lets the issue with id or key ref move to status to by the transition
// id named name. It panics when there is no such issue.
func (s *Server) AddTransition(ref, id, name, to string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := s.mustFind(ref)["id"].(string)
	s.transitions[key] = append(s.transitions[key], map[string]any{
		"id": id, "name": name, "to": map[string]any{"name": to}, "hasScreen": false, "isAvailable": true,
	})
}

// AddComment adds a comment with text by the person author (a user name) to the issue
// with id or key ref, now, and moves the issue's updated time. The author's account is
// made from the name: displayName author, e-mail author@example.com, and on Cloud
// accountId "acct-"+author, on Data Center name author and key "JIRAUSER-"+author. It
// panics when there is no such issue.
func (s *Server) AddComment(ref, author, text string) Comment {
	s.mu.Lock()
	defer s.mu.Unlock()
	is := s.mustFind(ref)
	var who map[string]any
	if s.cloud {
		who = map[string]any{"accountId": "acct-" + author, "accountType": "atlassian", "displayName": author, "emailAddress": author + "@example.com"}
	} else {
		who = map[string]any{"key": "JIRAUSER-" + author, "name": author, "displayName": author, "emailAddress": author + "@example.com"}
	}
	var body any = text
	if s.cloud {
		body = textADF(text)
	}
	c := s.addComment(is, who, body)
	s.touch(is)
	return commentOf(c)
}

// AddCommentPage adds the comments of a GET comment response body ({"comments": [...]})
// to the issue with id or key ref, as they are.
func (s *Server) AddCommentPage(ref string, body []byte) error {
	var page struct {
		Comments []map[string]any `json:"comments"`
	}
	if err := json.Unmarshal(body, &page); err != nil {
		return fmt.Errorf("fakejira: a comment page: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	is := s.find(ref)
	if is == nil {
		return fmt.Errorf("fakejira: no issue %s", ref)
	}
	id := is["id"].(string)
	s.comments[id] = append(s.comments[id], page.Comments...)
	return nil
}

// Comments returns the comments of the issue with id or key ref, oldest first.
func (s *Server) Comments(ref string) []Comment {
	s.mu.Lock()
	defer s.mu.Unlock()
	is := s.find(ref)
	if is == nil {
		return nil
	}
	var out []Comment
	for _, c := range s.comments[is["id"].(string)] {
		out = append(out, commentOf(c))
	}
	return out
}

// RequestCount is how many requests reached the fake, hooked ones included.
func (s *Server) RequestCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.log)
}

// Log returns every request that reached the fake, oldest first.
func (s *Server) Log() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.log)
}

// SetHook installs a function that may answer a request itself (an error, a 429) and
// returns true when it did; returning false lets the fake serve the request. It runs
// after the request is logged, before auth, without the fake's lock; the request's
// body is readable. nil removes it.
func (s *Server) SetHook(h func(w http.ResponseWriter, r *http.Request) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hook = h
}

// WriteError answers with Jira's error shape: status and errorMessages.
func WriteError(w http.ResponseWriter, status int, messages ...string) {
	if messages == nil {
		messages = []string{}
	}
	writeJSON(w, status, map[string]any{"errorMessages": messages})
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	r.Body = io.NopCloser(bytes.NewReader(body))
	s.mu.Lock()
	s.log = append(s.log, Request{Method: r.Method, Path: r.URL.Path, JQL: r.URL.Query().Get("jql"), Body: string(body), UserAgent: r.UserAgent()})
	hook := s.hook
	s.mu.Unlock()
	if hook != nil && hook(w, r) {
		return
	}
	if r.Header.Get("Authorization") != s.auth {
		WriteError(w, http.StatusUnauthorized, "You are not authenticated.")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.route(w, r, body)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if v != nil {
		_ = json.NewEncoder(w).Encode(v)
	}
}

func (s *Server) find(ref string) map[string]any {
	for _, is := range s.issues {
		if is["id"] == ref || is["key"] == ref {
			return is
		}
	}
	return nil
}

func (s *Server) mustFind(ref string) map[string]any {
	is := s.find(ref)
	if is == nil {
		panic("fakejira: no issue " + ref)
	}
	return is
}

func fields(is map[string]any) map[string]any {
	f, _ := is["fields"].(map[string]any)
	if f == nil {
		f = map[string]any{}
		is["fields"] = f
	}
	return f
}

func status(is map[string]any) string {
	st, _ := fields(is)["status"].(map[string]any)
	name, _ := st["name"].(string)
	return name
}

func (s *Server) now() time.Time { return s.clock().UTC().Truncate(time.Millisecond) }

// touch moves an issue's updated time to now, and into a later second than its last
// value, so a change always shows, even to a reader that keeps seconds (Sortie's
// adapter normalises to RFC 3339 seconds).
func (s *Server) touch(is map[string]any) {
	now := s.now()
	if prev, err := time.Parse(timeLayout, fmt.Sprint(fields(is)["updated"])); err == nil {
		if last := prev.Truncate(time.Second); !now.Truncate(time.Second).After(last) {
			now = last.Add(time.Second)
		}
	}
	fields(is)["updated"] = now.Format(timeLayout)
}

func (s *Server) addComment(is map[string]any, author map[string]any, body any) map[string]any {
	s.nextComment++
	c := map[string]any{"id": strconv.Itoa(s.nextComment), "author": author, "body": body,
		"created": s.now().Format(timeLayout), "updated": s.now().Format(timeLayout)}
	id := is["id"].(string)
	s.comments[id] = append(s.comments[id], c)
	return c
}

func commentOf(c map[string]any) Comment {
	out := Comment{}
	out.ID, _ = c["id"].(string)
	out.Created, _ = c["created"].(string)
	if a, ok := c["author"].(map[string]any); ok {
		out.Author, _ = a["displayName"].(string)
	}
	switch b := c["body"].(type) {
	case string:
		out.Body = b
	case json.RawMessage:
		var v any
		if json.Unmarshal(b, &v) == nil {
			if s, ok := v.(string); ok {
				out.Body = s
			} else {
				out.Body = adfText(v)
			}
		}
	default:
		out.Body = adfText(b)
	}
	return out
}

// textADF wraps text in an ADF document as Jira Cloud's editor would: a paragraph per
// blank-line-separated block, a hard break for each other newline.
func textADF(text string) map[string]any {
	var paras []any
	for _, para := range strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n\n") {
		content := []any{}
		for i, line := range strings.Split(para, "\n") {
			if i > 0 {
				content = append(content, map[string]any{"type": "hardBreak"})
			}
			if line != "" {
				content = append(content, map[string]any{"type": "text", "text": line})
			}
		}
		paras = append(paras, map[string]any{"type": "paragraph", "content": content})
	}
	return map[string]any{"type": "doc", "version": 1, "content": paras}
}

// adfText is the text of an ADF node: its text nodes, hard breaks as newlines, blocks
// separated by a blank line. Marks and the other node types' formatting are dropped.
func adfText(v any) string {
	n, _ := v.(map[string]any)
	switch n["type"] {
	case "text":
		t, _ := n["text"].(string)
		return t
	case "hardBreak":
		return "\n"
	}
	children, _ := n["content"].([]any)
	var parts []string
	inline := true
	for _, c := range children {
		if cm, _ := c.(map[string]any); cm["type"] != "text" && cm["type"] != "hardBreak" {
			inline = false
		}
		parts = append(parts, adfText(c))
	}
	if inline {
		return strings.Join(parts, "")
	}
	return strings.Join(parts, "\n\n")
}
