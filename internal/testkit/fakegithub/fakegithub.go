package fakegithub

import (
	"cmp"
	"crypto/rand"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	// Token is the token the fake accepts, as "Authorization: Bearer ghp_test".
	Token = "ghp_test"
	// DefaultProject is the repository the fake serves unless WithRepo names another.
	DefaultProject = "octo/hello"
	// BotLogin and BotID name the account Token belongs to (GET /user), the author of
	// the comments posted through the API.
	BotLogin = "sortie-bot"
	BotID    = 4242
)

// User is a GitHub account as issues and comments show it.
type User struct {
	Login string
	ID    int64
	Type  string // User, Bot (a GitHub App) or Organization
}

// Issue is an issue (or a pull request) as the fake stores it.
type Issue struct {
	Number int64
	ID     int64
	Title  string
	Body   string // "" is served as null, as GitHub does for an issue without a body
	State  string // open or closed
	// StateReason is served as state_reason: completed, not_planned or reopened; ""
	// is null.
	StateReason string
	Labels      []string
	// PR marks a pull request (AddPullRequest, AddPR): served with pull_request and
	// excluded by is:issue.
	PR        bool
	User      User // the author
	CreatedAt time.Time
	UpdatedAt time.Time
	ClosedAt  time.Time // zero while open
}

// Comment is a comment on an issue.
type Comment struct {
	ID   int64
	User User
	Body string
	// AuthorAssociation is the author's relation to the repository: OWNER, MEMBER,
	// COLLABORATOR, CONTRIBUTOR, NONE, ...
	AuthorAssociation string
	CreatedAt         time.Time
}

// Counts are the requests the fake has seen.
type Counts struct {
	Requests    int // every request that reached the server, hooked ones and signed log URLs included
	Charged     int // requests charged against a rate limit: not 304s, not refusals, not signed log URLs
	NotModified int // conditional requests answered 304 Not Modified
}

// Option configures a Server.
type Option func(*Server)

// WithClock sets the fake's clock: it tells rate-limit resets and the times of changes.
// The default is time.Now.
func WithClock(now func() time.Time) Option {
	return func(s *Server) { s.clock = now }
}

// WithRepo sets the repository the fake serves (default DefaultProject). Requests for
// any other repository are answered 404.
func WithRepo(owner, name string) Option {
	return func(s *Server) { s.owner, s.repo = owner, name }
}

// Server is the fake. Its exported methods are safe for concurrent use, with each other
// and with the requests it serves.
type Server struct {
	srv   *httptest.Server
	owner string
	repo  string
	clock func() time.Time

	mu       sync.Mutex
	issues   map[int64]*Issue
	comments map[int64][]*Comment
	blocked  map[int64][]int64 // issue → its blockers
	parent   map[int64]int64
	users    map[string]User // by login
	labelIDs map[string]int64
	nextID   int64
	limits   map[string]*budget
	hook     func(w http.ResponseWriter, r *http.Request) bool
	counts   Counts
	log      []string

	// The code host: pull requests by number, the commits the fake knows (by SHA)
	// and the branches (name → SHA) a ref may name.
	pulls    map[int64]*pull
	commits  map[string]bool
	branches map[string]string
	checks   []*CheckRun      // in creation order
	suites   map[string]int64 // sha + " " + app slug → check suite id
	statuses []*Status        // in creation order
	reviews  map[int64][]*Review
	// reviewComments are by pull request, in creation order.
	reviewComments map[int64][]*ReviewComment
	jobLogs        map[int64]string
	blobs          map[string]int64 // signed log URL token → job id
	blobKey        []byte
	leaks          int
}

type budget struct {
	limit, remaining int
	reset            time.Time
}

// New starts a fake serving an empty repository, with GitHub's default budgets: core
// 5,000 requests an hour, search 30 a minute. It is closed when the test ends.
func New(t testing.TB, opts ...Option) *Server {
	t.Helper()
	s := &Server{
		owner: "octo", repo: "hello", clock: time.Now,
		issues: map[int64]*Issue{}, comments: map[int64][]*Comment{},
		blocked: map[int64][]int64{}, parent: map[int64]int64{},
		users: map[string]User{
			BotLogin:   {Login: BotLogin, ID: BotID, Type: "User"},
			"reporter": {Login: "reporter", ID: 1001, Type: "User"},
		},
		labelIDs: map[string]int64{},
		nextID:   1000,

		pulls: map[int64]*pull{}, commits: map[string]bool{}, branches: map[string]string{},
		suites: map[string]int64{}, reviews: map[int64][]*Review{},
		reviewComments: map[int64][]*ReviewComment{},
		jobLogs:        map[int64]string{}, blobs: map[string]int64{}, blobKey: make([]byte, 32),
	}
	_, _ = rand.Read(s.blobKey)
	for _, o := range opts {
		o(s)
	}
	now := s.clock()
	s.limits = map[string]*budget{
		"core":   {limit: 5000, remaining: 5000, reset: now.Add(time.Hour)},
		"search": {limit: 30, remaining: 30, reset: now.Add(time.Minute)},
	}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

// URL is the API base URL, for tracker.endpoint (as https://api.github.com is).
func (s *Server) URL() string { return s.srv.URL }

// Project is the repository served, owner/repo, for tracker.project.
func (s *Server) Project() string { return s.owner + "/" + s.repo }

// Client returns an HTTP client for the fake's server.
func (s *Server) Client() *http.Client { return s.srv.Client() }

// Close shuts the server down; later requests fail to connect. It blocks until the
// requests being served are done.
func (s *Server) Close() { s.srv.Close() }

// epoch is the day issues are created, one hour apart by number.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// AddIssue creates (or replaces, a pull request too) issue number with the given state
// (open or closed) and labels, a body of "body of " + title, by the account "reporter"; its id is 100 +
// number. It is created at 2026-01-01T00:00Z plus number hours, so creation order is
// number order, and last updated then. Touch changes the other fields.
func (s *Server) AddIssue(number int64, title, state string, labels ...string) Issue {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.pulls, number)
	return *s.add(number, title, state, labels)
}

func (s *Server) add(number int64, title, state string, labels []string) *Issue {
	created := epoch.Add(time.Duration(number) * time.Hour)
	is := &Issue{
		Number: number, ID: 100 + number, Title: title, Body: "body of " + title, State: state,
		Labels: slices.Clone(labels), User: s.users["reporter"], CreatedAt: created, UpdatedAt: created,
	}
	if state == "closed" {
		is.StateReason, is.ClosedAt = "completed", created
	}
	s.issues[number] = is
	return is
}

// Issue returns a copy of issue number and whether there is one.
func (s *Server) Issue(number int64) (Issue, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	is, ok := s.issues[number]
	if !ok {
		return Issue{}, false
	}
	c := *is
	c.Labels = slices.Clone(is.Labels)
	return c, true
}

// Touch changes issue number the way a person editing it on GitHub would: mutate
// changes the stored issue (with the fake's lock held: it must not call the Server),
// then updated_at moves on. It panics when there is no such issue.
func (s *Server) Touch(number int64, mutate func(*Issue)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	is := s.mustIssue(number)
	mutate(is)
	s.bump(is)
}

// SetState opens or closes issue number (state open or closed), as the buttons on
// GitHub do: closing sets closed_at and state_reason completed, reopening clears
// closed_at and sets state_reason reopened.
func (s *Server) SetState(number int64, state string) {
	if state != "open" && state != "closed" {
		panic(fmt.Sprintf("fakegithub: SetState(%d, %q): a GitHub issue is open or closed", number, state))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	is := s.mustIssue(number)
	s.setState(is, state, "")
	s.bump(is)
}

// CloseIssue closes issue number as completed.
func (s *Server) CloseIssue(number int64) { s.SetState(number, "closed") }

// ReopenIssue reopens issue number.
func (s *Server) ReopenIssue(number int64) { s.SetState(number, "open") }

// setState records a change of state; reason "" is GitHub's default for it.
func (s *Server) setState(is *Issue, state, reason string) {
	switch {
	case state == is.State:
	case state == "closed":
		is.ClosedAt = s.now()
		is.StateReason = cmp.Or(reason, "completed")
	default:
		is.ClosedAt = time.Time{}
		is.StateReason = cmp.Or(reason, "reopened")
	}
	is.State = state
}

// AddLabel adds label to issue number unless it has it already (compared
// case-insensitively, as GitHub names labels).
func (s *Server) AddLabel(number int64, label string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	is := s.mustIssue(number)
	if slices.ContainsFunc(is.Labels, func(l string) bool { return strings.EqualFold(l, label) }) {
		return
	}
	is.Labels = append(is.Labels, label)
	s.bump(is)
}

// RemoveLabel removes label (compared case-insensitively) from issue number.
func (s *Server) RemoveLabel(number int64, label string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	is := s.mustIssue(number)
	kept := slices.DeleteFunc(slices.Clone(is.Labels), func(l string) bool { return strings.EqualFold(l, label) })
	if len(kept) == len(is.Labels) {
		return
	}
	is.Labels = kept
	s.bump(is)
}

// AddComment adds a comment by login to issue number, now. The author is a person
// (type User; Bot when login ends in "[bot]") with association MEMBER, whose comment
// may answer a checkpoint; mutate, when given, changes the comment before it is
// stored (another association, say). The issue's updated_at moves on, as on GitHub.
func (s *Server) AddComment(number int64, login, body string, mutate ...func(*Comment)) Comment {
	s.mu.Lock()
	defer s.mu.Unlock()
	is := s.mustIssue(number)
	c := &Comment{ID: s.newID(), User: s.user(login), Body: body, AuthorAssociation: "MEMBER", CreatedAt: s.now()}
	for _, m := range mutate {
		m(c)
	}
	s.comments[number] = append(s.comments[number], c)
	s.bump(is)
	return *c
}

// Comments returns copies of issue number's comments, oldest first.
func (s *Server) Comments(number int64) []Comment {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Comment, 0, len(s.comments[number]))
	for _, c := range s.comments[number] {
		out = append(out, *c)
	}
	return out
}

// SetBlockedBy records that the given issues block issue number (its
// dependencies/blocked_by), replacing what was recorded; none clears it.
func (s *Server) SetBlockedBy(number int64, blockers ...int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.blocked[number] = slices.Clone(blockers)
	s.bump(s.mustIssue(number))
}

// SetParent makes parent issue number's parent (sub-issues); 0 removes it.
func (s *Server) SetParent(number, parent int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if parent == 0 {
		delete(s.parent, number)
	} else {
		s.parent[number] = parent
	}
	s.bump(s.mustIssue(number))
}

// Counts returns how many requests the fake has seen, charged and answered 304.
func (s *Server) Counts() Counts {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts
}

// Log returns every request that reached the server, as "METHOD /path?query".
func (s *Server) Log() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.log)
}

// SetBudget sets the rate-limit budget of resource (core or search): limit requests a
// window, remaining of them left until reset; at reset the budget refills to limit for
// an hour.
func (s *Server) SetBudget(resource string, limit, remaining int, reset time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.limits[resource] = &budget{limit: limit, remaining: remaining, reset: reset}
}

// SetHook installs a function that may answer a request itself (an injected failure)
// and returns true when it did; returning false lets the fake serve the request, which
// the hook may have changed. It runs after the request is counted and logged, before
// auth and rate limits, without the fake's lock, for the signed log URLs too (to fail
// the storage host). nil removes it.
func (s *Server) SetHook(h func(w http.ResponseWriter, r *http.Request) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hook = h
}

func (s *Server) mustIssue(number int64) *Issue {
	is, ok := s.issues[number]
	if !ok {
		panic(fmt.Sprintf("fakegithub: no issue #%d", number))
	}
	return is
}

// bump moves an issue's updated_at to now, and at least a second past its last value
// (GitHub's timestamps are to the second), so a change always shows.
func (s *Server) bump(is *Issue) {
	now := s.now()
	if !now.After(is.UpdatedAt) {
		now = is.UpdatedAt.Add(time.Second)
	}
	is.UpdatedAt = now
}

func (s *Server) now() time.Time { return s.clock().UTC().Truncate(time.Second) }

func (s *Server) newID() int64 {
	s.nextID++
	return s.nextID
}

// user is the account login, made up (with a new id) the first time it is named.
func (s *Server) user(login string) User {
	u, ok := s.users[login]
	if !ok {
		typ := "User"
		if strings.HasSuffix(login, "[bot]") {
			typ = "Bot"
		}
		u = User{Login: login, ID: int64(5000 + len(s.users)), Type: typ}
		s.users[login] = u
	}
	return u
}
