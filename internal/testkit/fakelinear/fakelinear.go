// Package fakelinear is a fake Linear GraphQL API for tests: an httptest server that
// keeps state (teams, workflow states, users, issues, labels, relations, comments) and
// executes the GraphQL documents it is sent, queries and mutations, against that state,
// answering in Linear's shapes: the data/errors envelope, connections with pageInfo and
// cursors, rate-limit headers for the request and complexity budgets, and Linear's
// error codes (AUTHENTICATION_ERROR, RATELIMITED, INVALID_INPUT,
// GRAPHQL_VALIDATION_FAILED). It checks the Authorization header, and a test can inject
// failures and rate limiting. It serves the fields Sortie's adapter and the
// linear_graphql tests use; asking for another field is a validation error, as it is
// on Linear for a field that does not exist.
package fakelinear

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/parser"
)

// Key is the API key the fake accepts unless a test sets another.
const Key = "lin_api_fake0123456789"

// Team is a Linear team.
type Team struct{ ID, Key, Name string }

// State is a workflow state of a team. Type is Linear's: triage, backlog, unstarted,
// started, completed or canceled.
type State struct{ ID, Name, Type, TeamID string }

// User is a workspace member.
type User struct{ ID, Name, DisplayName, Email string }

// Issue is an issue as the fake stores it.
type Issue struct {
	ID, Identifier, Title, Description string
	Number                             int
	Priority                           float64
	TeamID, StateID, ProjectSlug       string
	AssigneeID, ParentID               string
	Labels                             []string
	BranchName, URL                    string
	CreatedAt, UpdatedAt               time.Time
}

// Label is an issue label: a team's (TeamID set) or the workspace's (TeamID ""). A
// group label (IsGroup) holds other labels and cannot be put on an issue. An issue
// keeps the names of its labels (Issue.Labels).
type Label struct {
	ID, Name, TeamID string
	IsGroup          bool
}

// Comment is a comment; UserID "" with BotName set is an integration's.
type Comment struct {
	ID, IssueID, Body, UserID, BotName string
	CreatedAt                          time.Time
}

// Relation is an issue relation: Issue blocks Related when Type is "blocks".
type Relation struct{ ID, Type, IssueID, RelatedID string }

// Budget is one of the two rate-limit budgets.
type Budget struct {
	Limit, Remaining int
	Reset            time.Time
}

// Server is the fake. Its exported methods are safe for concurrent use.
type Server struct {
	URL string // the GraphQL endpoint
	srv *httptest.Server

	mu        sync.Mutex
	key       string
	clock     func() time.Time
	teams     []*Team
	states    []*State
	users     []*User
	viewer    string
	issues    []*Issue
	comments  []*Comment
	relations []*Relation
	labels    []*Label
	requests  Budget
	cplx      Budget
	seq       int
	hook      func(w http.ResponseWriter, body []byte) bool
	log       []string
}

// New starts a fake with no data, a viewer user, and budgets of 5,000 requests and
// 250,000 complexity points per hour. clock tells the fake's time (nil: time.Now). It is
// closed when the test ends.
func New(t interface {
	Helper()
	Cleanup(func())
}, clock func() time.Time) *Server {
	t.Helper()
	if clock == nil {
		clock = time.Now
	}
	s := &Server{key: Key, clock: clock}
	now := clock()
	s.requests = Budget{Limit: 5000, Remaining: 5000, Reset: now.Add(time.Hour)}
	s.cplx = Budget{Limit: 250000, Remaining: 250000, Reset: now.Add(time.Hour)}
	s.users = []*User{{ID: "user-sortie", Name: "Sortie Bot", DisplayName: "sortie", Email: "sortie@example.com"}}
	s.viewer = "user-sortie"
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL + "/graphql"
	t.Cleanup(s.srv.Close)
	return s
}

func (s *Server) nextID(prefix string) string {
	s.seq++
	return fmt.Sprintf("%s-%04d-0000-4000-8000-%012d", prefix, s.seq, s.seq)
}

// AddTeam adds a team with the default workflow of a new Linear team: Backlog, Todo,
// In Progress, In Review, Done, Canceled, Duplicate.
func (s *Server) AddTeam(key, name string) *Team {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := &Team{ID: s.nextID("team"), Key: key, Name: name}
	s.teams = append(s.teams, t)
	for _, st := range [][2]string{{"Backlog", "backlog"}, {"Todo", "unstarted"}, {"In Progress", "started"},
		{"In Review", "started"}, {"Done", "completed"}, {"Canceled", "canceled"}, {"Duplicate", "canceled"}} {
		s.states = append(s.states, &State{ID: s.nextID("state"), Name: st[0], Type: st[1], TeamID: t.ID})
	}
	return t
}

// AddState adds a workflow state to a team (as a person editing the workflow would).
func (s *Server) AddState(teamKey, name, typ string) *State {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := &State{ID: s.nextID("state"), Name: name, Type: typ, TeamID: s.teamByKey(teamKey).ID}
	s.states = append(s.states, st)
	return st
}

// StateID returns the id of the workflow state named name of the team keyed teamKey, ""
// when there is none.
func (s *Server) StateID(teamKey, name string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st := s.stateByName(s.teamByKey(teamKey).ID, name); st != nil {
		return st.ID
	}
	return ""
}

// AddUser adds a workspace member.
func (s *Server) AddUser(name, displayName, email string) *User {
	s.mu.Lock()
	defer s.mu.Unlock()
	u := &User{ID: s.nextID("user"), Name: name, DisplayName: displayName, Email: email}
	s.users = append(s.users, u)
	return u
}

// Viewer is the user the key belongs to.
func (s *Server) Viewer() User {
	s.mu.Lock()
	defer s.mu.Unlock()
	return *s.user(s.viewer)
}

// AddIssue adds an issue to team teamKey in state stateName; mutate, when not nil,
// sets the other fields before it is stored. The issue returned is the one stored:
// while the fake serves requests, read only its ID, Identifier and Number, which never
// change, and use Issue for the rest.
func (s *Server) AddIssue(teamKey, title, stateName string, mutate func(*Issue)) *Issue {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.teamByKey(teamKey)
	n := 1
	for _, is := range s.issues {
		if is.TeamID == t.ID {
			n++
		}
	}
	now := s.clock().UTC().Add(time.Duration(len(s.issues)) * time.Second)
	is := &Issue{ID: s.nextID("issue"), Identifier: fmt.Sprintf("%s-%d", t.Key, n), Number: n, Title: title,
		TeamID: t.ID, StateID: s.stateByName(t.ID, stateName).ID, CreatedAt: now, UpdatedAt: now}
	is.URL = "https://linear.app/fake/issue/" + strings.ToLower(is.Identifier)
	is.BranchName = strings.ToLower(is.Identifier) + "-" + strings.ReplaceAll(strings.ToLower(title), " ", "-")
	if mutate != nil {
		mutate(is)
	}
	s.issues = append(s.issues, is)
	return is
}

// AddLabel creates a label named name in the team keyed teamKey, or in the workspace
// when teamKey is "", as a person would in Linear's settings; group makes it a label
// group, which issues cannot carry.
func (s *Server) AddLabel(teamKey, name string, group bool) *Label {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := &Label{ID: s.nextID("label"), Name: name, IsGroup: group}
	if teamKey != "" {
		l.TeamID = s.teamByKey(teamKey).ID
	}
	s.labels = append(s.labels, l)
	return l
}

// Block records that blocker blocks blocked.
func (s *Server) Block(blocker, blocked string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.relations = append(s.relations, &Relation{ID: s.nextID("rel"), Type: "blocks", IssueID: blocker, RelatedID: blocked})
}

// Relate records a relation of another type (related, duplicate).
func (s *Server) Relate(typ, from, to string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.relations = append(s.relations, &Relation{ID: s.nextID("rel"), Type: typ, IssueID: from, RelatedID: to})
}

// AddComment adds a comment by userID ("" with bot set: an integration's).
func (s *Server) AddComment(issueID, userID, bot, body string) *Comment {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := &Comment{ID: s.nextID("comment"), IssueID: issueID, UserID: userID, BotName: bot, Body: body,
		CreatedAt: s.clock().UTC().Add(time.Duration(len(s.comments)) * time.Second)}
	s.comments = append(s.comments, c)
	return c
}

// Issue returns a copy of the issue with id, and the name of its state.
func (s *Server) Issue(id string) (Issue, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	is := s.issue(id)
	if is == nil {
		return Issue{}, ""
	}
	return *is, s.state(is.StateID).Name
}

// SetState moves an issue as a person would.
func (s *Server) SetState(id, stateName string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	is := s.issue(id)
	is.StateID = s.stateByName(is.TeamID, stateName).ID
	is.UpdatedAt = s.clock().UTC()
}

// Comments returns copies of an issue's comments, oldest first.
func (s *Server) Comments(issueID string) []Comment {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Comment
	for _, c := range s.comments {
		if c.IssueID == issueID {
			out = append(out, *c)
		}
	}
	return out
}

// SetKey changes the key the fake accepts.
func (s *Server) SetKey(k string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.key = k
}

// SetBudgets sets the request and complexity budgets.
func (s *Server) SetBudgets(requests, complexity Budget) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests, s.cplx = requests, complexity
}

// SetHook installs a function that may answer a request itself (an injected failure)
// and returns true when it did; nil removes it. body is the request body.
func (s *Server) SetHook(h func(w http.ResponseWriter, body []byte) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hook = h
}

// Log returns the operation name (or the first field) of every request served.
func (s *Server) Log() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.log)
}

// WriteError answers with GraphQL errors of code in Linear's shape and status.
func WriteError(w http.ResponseWriter, status int, code, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"errors": []any{gqlErr(code, message)}})
}

func gqlErr(code, message string) map[string]any {
	typ := map[string]string{"AUTHENTICATION_ERROR": "authentication error", "RATELIMITED": "ratelimited",
		"INVALID_INPUT": "invalid input", "FORBIDDEN": "forbidden", "GRAPHQL_VALIDATION_FAILED": "graphql error"}[code]
	return map[string]any{"message": message, "extensions": map[string]any{"code": code, "type": typ,
		"userError": true, "userPresentableMessage": message}}
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	s.mu.Lock()
	hook := s.hook
	s.mu.Unlock()
	if hook != nil && hook(w, body) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.Method != http.MethodPost || r.URL.Path != "/graphql" {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	if r.Header.Get("Authorization") != s.key {
		WriteError(w, http.StatusBadRequest, "AUTHENTICATION_ERROR", "Authentication required, not authenticated")
		return
	}
	now := s.clock()
	for _, b := range []*Budget{&s.requests, &s.cplx} {
		if !now.Before(b.Reset) {
			b.Remaining, b.Reset = b.Limit, now.Add(time.Hour)
		}
	}
	s.headers(w)
	if s.requests.Remaining <= 0 || s.cplx.Remaining <= 0 {
		WriteError(w, http.StatusBadRequest, "RATELIMITED", "Rate limit exceeded")
		return
	}
	s.requests.Remaining--
	var req struct {
		Query         string         `json:"query"`
		Variables     map[string]any `json:"variables"`
		OperationName string         `json:"operationName"`
	}
	if err := json.Unmarshal(body, &req); err != nil || req.Query == "" {
		WriteError(w, http.StatusBadRequest, "GRAPHQL_PARSE_FAILED", "Must provide query string.")
		return
	}
	doc, perr := parser.ParseQuery(&ast.Source{Input: req.Query})
	if perr != nil {
		WriteError(w, http.StatusBadRequest, "GRAPHQL_PARSE_FAILED", "Syntax Error: "+perr.Error())
		return
	}
	op := doc.Operations.ForName(req.OperationName)
	if op == nil {
		WriteError(w, http.StatusBadRequest, "GRAPHQL_VALIDATION_FAILED", "Unknown operation, or several without operationName.")
		return
	}
	name := op.Name
	if name == "" && len(op.SelectionSet) > 0 {
		if f, ok := op.SelectionSet[0].(*ast.Field); ok {
			name = f.Name
		}
	}
	s.log = append(s.log, name)
	if op.Operation == ast.Subscription {
		WriteError(w, http.StatusBadRequest, "GRAPHQL_VALIDATION_FAILED", "Subscriptions are not served over HTTP.")
		return
	}
	ex := &exec{s: s, doc: doc, op: op, vars: req.Variables}
	data, err := ex.selection(root{mutation: op.Operation == ast.Mutation}, op.SelectionSet)
	cost := max(1, ex.objects+ex.fields/10)
	s.cplx.Remaining = max(s.cplx.Remaining-cost, 0)
	w.Header().Set("X-Complexity", strconv.Itoa(cost))
	s.headers(w)
	w.Header().Set("Content-Type", "application/json")
	if err != nil {
		status := http.StatusOK
		if err.code == "GRAPHQL_VALIDATION_FAILED" {
			status = http.StatusBadRequest
		}
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(map[string]any{"data": nil, "errors": []any{gqlErr(err.code, err.msg)}})
		return
	}
	json.NewEncoder(w).Encode(map[string]any{"data": data})
}

func (s *Server) headers(w http.ResponseWriter) {
	h := w.Header()
	for name, b := range map[string]Budget{"Requests": s.requests, "Complexity": s.cplx} {
		h.Set("X-RateLimit-"+name+"-Limit", strconv.Itoa(b.Limit))
		h.Set("X-RateLimit-"+name+"-Remaining", strconv.Itoa(b.Remaining))
		h.Set("X-RateLimit-"+name+"-Reset", strconv.FormatInt(b.Reset.UnixMilli(), 10))
	}
}

func (s *Server) teamByKey(key string) *Team {
	for _, t := range s.teams {
		if strings.EqualFold(t.Key, key) {
			return t
		}
	}
	panic("fakelinear: no team " + key)
}

func (s *Server) team(id string) *Team {
	for _, t := range s.teams {
		if t.ID == id {
			return t
		}
	}
	return nil
}

func (s *Server) stateByName(teamID, name string) *State {
	for _, st := range s.states {
		if st.TeamID == teamID && st.Name == name {
			return st
		}
	}
	panic("fakelinear: no state " + name)
}

func (s *Server) state(id string) *State {
	for _, st := range s.states {
		if st.ID == id {
			return st
		}
	}
	return nil
}

func (s *Server) user(id string) *User {
	for _, u := range s.users {
		if u.ID == id {
			return u
		}
	}
	return nil
}

// labelOf finds the label an issue of team teamID carries by name: the team's, else the
// workspace's; nil when neither has it (an issue added with a label never created).
func (s *Server) labelOf(teamID, name string) *Label {
	var ws *Label
	for _, l := range s.labels {
		switch {
		case l.Name != name || l.IsGroup:
		case l.TeamID == teamID:
			return l
		case l.TeamID == "" && ws == nil:
			ws = l
		}
	}
	return ws
}

// issue finds an issue by id or identifier, as Linear's issue(id:) does.
func (s *Server) issue(id string) *Issue {
	for _, is := range s.issues {
		if is.ID == id || strings.EqualFold(is.Identifier, id) {
			return is
		}
	}
	return nil
}
