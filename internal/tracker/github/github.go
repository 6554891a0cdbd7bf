// Package github is the tracker adapter for GitHub Issues (kind "github"), on
// github.com or GitHub Enterprise Server through the REST API. States are labels; it
// polls politely: every read is a conditional request, so a poll that finds nothing
// changed is answered with 304s that GitHub does not charge, and it holds back on its
// own before and after GitHub's rate limits rather than being refused. It owns the HTTP
// conversation with GitHub and nothing else: what to run is the orchestrator's business.
//
// Configuration, state labels, permissions and errors are documented for operators in
// docs/trackers/github.md.
package github

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"sortie/internal/tracker"
)

// DefaultEndpoint is the REST API of github.com. GitHub Enterprise Server's is
// https://HOST/api/v3.
const DefaultEndpoint = "https://api.github.com"

var (
	_ tracker.Tracker     = (*Tracker)(nil)
	_ tracker.RateLimiter = (*Tracker)(nil)
	_ tracker.Account     = (*Tracker)(nil)
	_ tracker.Labeler     = (*Tracker)(nil)
)

func init() {
	tracker.Register("github", tracker.Meta{RequiresProject: true, RequiresAPIKey: true}, New)
}

// Tracker talks to one repository's issues. It is safe for concurrent use; its requests
// go out one at a time. Build it with New.
type Tracker struct {
	base      *url.URL // endpoint, without a trailing slash
	repo      string   // owner/repo
	token     string
	userAgent string
	filter    string // tracker.query_filter: search qualifiers
	states    states

	client *http.Client
	now    func() time.Time // the rate limiter's clock; replaced in tests

	reqMu  sync.Mutex // serialises requests
	limits *limiter

	selfMu sync.Mutex
	self   *tracker.Identity // the token's account, once known (Self)
	etags  *etagCache
	sent   atomic.Int64 // requests sent, for tests
}

// New builds a GitHub tracker from cfg: Project is owner/repo, APIKey the token (sent as
// a Bearer token), Endpoint the API base URL (DefaultEndpoint when empty). Nothing is
// sent until the first call.
func New(cfg tracker.Config) (tracker.Tracker, error) {
	if err := ValidateProject(cfg.Project); err != nil {
		return nil, &tracker.Error{Kind: tracker.ErrMissingProject, Message: err.Error()}
	}
	token := strings.TrimSpace(cfg.APIKey)
	if token == "" {
		return nil, &tracker.Error{Kind: tracker.ErrMissingAPIKey, Message: "config: tracker.api_key: is required for tracker.kind github; set it, for example to $GITHUB_TOKEN"}
	}
	if strings.ContainsAny(token, " \t\r\n") {
		return nil, &tracker.Error{Kind: tracker.ErrAuth, Message: "config: tracker.api_key: contains whitespace; a GitHub token is one word (is the variable set to something else?)"}
	}
	base, err := ParseEndpoint(cfg.Endpoint)
	if err != nil {
		return nil, &tracker.Error{Kind: tracker.ErrPayload, Message: err.Error()}
	}
	ua := strings.TrimSpace(cfg.UserAgent)
	if ua == "" {
		ua = "sortie"
	}
	return &Tracker{
		base:      base,
		repo:      strings.TrimSpace(cfg.Project),
		token:     token,
		userAgent: ua,
		filter:    strings.TrimSpace(cfg.QueryFilter),
		states:    newStates(cfg),
		// Redirects are never followed: GitHub answers 301 for an issue transferred to
		// another repository, and following it would read or move an issue outside
		// tracker.project (statusError reports it).
		client: &http.Client{Timeout: requestTimeout, CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		}},
		now:    time.Now,
		limits: newLimiter(),
		etags:  newETagCache(etagCacheSize),
	}, nil
}

var (
	ownerRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9](?:[A-Za-z0-9_-]{0,38})$`) })
	repoRe  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9._-]{1,100}$`) })
)

// ValidateProject checks that project is a GitHub repository as owner/repo and says how
// to fix it when it is not. The error starts with "config: tracker.project:".
func ValidateProject(project string) error {
	p := strings.TrimSpace(project)
	bad := func(why string) error {
		return fmt.Errorf("config: tracker.project: %s (got %q)", why, project)
	}
	switch {
	case p == "":
		return fmt.Errorf("config: tracker.project: is required for tracker.kind github; set it to the repository as owner/repo")
	case strings.Contains(p, "://") || strings.HasPrefix(p, "github.com/") || strings.HasPrefix(p, "git@"):
		return bad("must be owner/repo, not a URL; for GitHub Enterprise put the API URL in tracker.endpoint")
	}
	owner, repo, ok := strings.Cut(p, "/")
	switch {
	case !ok || owner == "" || repo == "":
		return bad("must be owner/repo, for example octocat/hello-world")
	case strings.Contains(repo, "/"):
		return bad("must be owner/repo with exactly one slash")
	case !ownerRe().MatchString(owner):
		return bad("the owner must be a GitHub user or organisation name (letters, digits, hyphens; at most 39)")
	case repo == "." || repo == ".." || !repoRe().MatchString(repo):
		return bad("the repository name may hold only letters, digits, '.', '-' and '_' (at most 100)")
	case strings.HasSuffix(strings.ToLower(repo), ".git"):
		return bad("drop the .git suffix: owner/repo")
	}
	return nil
}

// ParseEndpoint checks tracker.endpoint and returns it without a trailing slash; empty
// means DefaultEndpoint.
func ParseEndpoint(endpoint string) (*url.URL, error) {
	e := strings.TrimRight(strings.TrimSpace(endpoint), "/")
	if e == "" {
		e = DefaultEndpoint
	}
	u, err := url.Parse(e)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return nil, fmt.Errorf("config: tracker.endpoint: must be the API base URL, https://api.github.com or https://HOST/api/v3 for GitHub Enterprise (got %q)", endpoint)
	}
	return u, nil
}

// RateLimits returns the budgets GitHub last reported (core, search), with
// ThrottledUntil set while the adapter is holding requests back.
func (t *Tracker) RateLimits() []tracker.RateLimit { return t.limits.snapshot(t.now()) }

func (t *Tracker) repoURL(path string, query url.Values) string {
	u := *t.base
	u.Path = strings.TrimRight(t.base.Path, "/") + "/repos/" + t.repo + path
	u.RawQuery = query.Encode()
	return u.String()
}

// FetchCandidateIssues returns the open issues (not pull requests) whose state label is
// active, oldest first. Without tracker.query_filter it lists the repository's open
// issues; with one it uses the search API with the filter's qualifiers.
func (t *Tracker) FetchCandidateIssues(ctx context.Context) ([]tracker.Issue, error) {
	const op = "fetch_candidates"
	var out []tracker.Issue
	keep := func(a *apiIssue) {
		if a.isPullRequest() || a.Number <= 0 {
			return
		}
		is := t.states.normalize(a, t.repo)
		if tracker.StateIn(is.State, t.states.active) {
			out = append(out, is)
		}
	}
	first := t.listURL()
	if t.filter != "" {
		first = t.searchURL()
	}
	err := t.pages(ctx, op, first, func(body []byte) error {
		var list []apiIssue
		if t.filter != "" {
			var s apiSearch
			if err := json.Unmarshal(body, &s); err != nil {
				return t.payloadErr(op, "search results", err)
			}
			list = s.Items
		} else if err := json.Unmarshal(body, &list); err != nil {
			return t.payloadErr(op, "issue list", err)
		}
		for i := range list {
			keep(&list[i])
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if out == nil {
		out = []tracker.Issue{}
	}
	return out, nil
}

// listURL lists open issues oldest first: with a fixed order, a change to one issue
// changes only its own page, so the other pages keep answering 304.
func (t *Tracker) listURL() string {
	return t.repoURL("/issues", url.Values{"state": {"open"}, "sort": {"created"}, "direction": {"asc"}, "per_page": {"100"}})
}

func (t *Tracker) searchURL() string {
	u := *t.base
	u.Path = strings.TrimRight(t.base.Path, "/") + "/search/issues"
	q := "repo:" + t.repo + " is:issue is:open " + t.filter
	u.RawQuery = url.Values{"q": {q}, "sort": {"created"}, "order": {"asc"}, "per_page": {"100"}}.Encode()
	return u.String()
}

func (t *Tracker) payloadErr(op, what string, err error) error {
	return &tracker.Error{Kind: tracker.ErrPayload, Op: op, Message: "GitHub sent a malformed " + what, Err: err}
}

// issueNumber parses an issue id: its number, optionally written #N.
func issueNumber(id string) (int64, bool) {
	n, err := strconv.ParseInt(strings.TrimPrefix(strings.TrimSpace(id), "#"), 10, 64)
	return n, err == nil && n > 0
}

// fetchIssue GETs one issue conditionally. A pull request is tracker_not_found.
func (t *Tracker) fetchIssue(ctx context.Context, op, id string) (apiIssue, error) {
	n, ok := issueNumber(id)
	if !ok {
		return apiIssue{}, tracker.Errorf(tracker.ErrNotFound, op, "%q is not a GitHub issue number", id)
	}
	r, err := t.get(ctx, op, t.repoURL("/issues/"+strconv.FormatInt(n, 10), nil))
	if err != nil {
		return apiIssue{}, err
	}
	a, err := parseIssue(r.body)
	if err != nil {
		return apiIssue{}, t.payloadErr(op, "issue", err)
	}
	// The request named tracker.project and redirects are not followed, so the answer
	// is of that repository; its repository_url must say so all the same.
	if other := repoOf(&a); other != "" && !strings.EqualFold(other, t.repo) {
		return apiIssue{}, &tracker.Error{Kind: tracker.ErrNotFound, Op: op,
			Message: fmt.Sprintf("#%d is an issue of %s, not of %s", n, other, t.repo), Err: tracker.ErrOutOfProject}
	}
	if a.isPullRequest() {
		return apiIssue{}, tracker.Errorf(tracker.ErrNotFound, op, "#%d in %s is a pull request, not an issue", n, t.repo)
	}
	return a, nil
}

// FetchIssueByID returns one issue with its comments, blockers and parent. Blockers and
// the parent come from GitHub's issue dependencies and sub-issues; where the API does not
// offer them (older GitHub Enterprise) the issue has none.
func (t *Tracker) FetchIssueByID(ctx context.Context, id string) (tracker.Issue, error) {
	const op = "fetch_issue"
	a, err := t.fetchIssue(ctx, op, id)
	if err != nil {
		return tracker.Issue{}, err
	}
	is := t.states.normalize(&a, t.repo)
	num := strconv.FormatInt(a.Number, 10)
	if is.Comments, err = t.comments(ctx, op, num); err != nil {
		return tracker.Issue{}, err
	}
	if is.BlockedBy, err = t.blockers(ctx, op, num); err != nil {
		return tracker.Issue{}, err
	}
	if is.Parent, err = t.parent(ctx, op, num); err != nil {
		return tracker.Issue{}, err
	}
	return is, nil
}

// optional reports whether an error from an optional endpoint means "not offered here"
// (skip it) rather than a failure the caller must see.
func optional(err error) bool {
	switch tracker.KindOf(err) {
	case tracker.ErrNotFound, tracker.ErrAuth, tracker.ErrPayload:
		return true
	}
	return false
}

func (t *Tracker) blockers(ctx context.Context, op, num string) ([]tracker.BlockerRef, error) {
	out := []tracker.BlockerRef{}
	err := t.pages(ctx, op, t.repoURL("/issues/"+num+"/dependencies/blocked_by", url.Values{"per_page": {"100"}}), func(body []byte) error {
		var list []apiIssue
		if err := json.Unmarshal(body, &list); err != nil {
			return t.payloadErr(op, "blocked_by list", err)
		}
		for i := range list {
			b := t.states.normalize(&list[i], t.repo)
			out = append(out, tracker.BlockerRef{ID: b.ID, Identifier: b.Identifier, State: b.State})
		}
		return nil
	})
	if err != nil {
		if optional(err) {
			return []tracker.BlockerRef{}, nil
		}
		return nil, err
	}
	return out, nil
}

func (t *Tracker) parent(ctx context.Context, op, num string) (*tracker.ParentRef, error) {
	r, err := t.get(ctx, op, t.repoURL("/issues/"+num+"/parent", nil))
	if err != nil {
		if optional(err) {
			return nil, nil
		}
		return nil, err
	}
	a, err := parseIssue(r.body)
	if err != nil {
		return nil, nil
	}
	return &tracker.ParentRef{ID: strconv.FormatInt(a.Number, 10), Identifier: refIdentifier(&a, t.repo)}, nil
}

// FetchIssueStatesByIDs returns issue number → state. Each issue is a conditional GET,
// answered 304 (free) when it did not change since the last call. Unknown ids, pull
// requests and ids that are not numbers are omitted.
func (t *Tracker) FetchIssueStatesByIDs(ctx context.Context, ids []string) (map[string]string, error) {
	return t.statesOf(ctx, "fetch_states_by_ids", ids)
}

// FetchIssueStatesByIdentifiers is FetchIssueStatesByIDs: an issue's identifier is its
// number.
func (t *Tracker) FetchIssueStatesByIdentifiers(ctx context.Context, identifiers []string) (map[string]string, error) {
	return t.statesOf(ctx, "fetch_states_by_identifiers", identifiers)
}

func (t *Tracker) statesOf(ctx context.Context, op string, ids []string) (map[string]string, error) {
	out := make(map[string]string, len(ids))
	for _, id := range ids {
		if _, dup := out[id]; dup {
			continue
		}
		a, err := t.fetchIssue(ctx, op, id)
		if tracker.KindOf(err) == tracker.ErrNotFound {
			continue
		}
		if err != nil {
			return nil, err
		}
		out[id] = t.states.of(!strings.EqualFold(a.State, "closed"), a.Labels)
	}
	return out, nil
}

// FetchIssueComments returns an issue's comments, oldest first, empty when none.
func (t *Tracker) FetchIssueComments(ctx context.Context, id string) ([]tracker.Comment, error) {
	const op = "fetch_comments"
	n, ok := issueNumber(id)
	if !ok {
		return nil, tracker.Errorf(tracker.ErrNotFound, op, "%q is not a GitHub issue number", id)
	}
	return t.comments(ctx, op, strconv.FormatInt(n, 10))
}

func (t *Tracker) comments(ctx context.Context, op, num string) ([]tracker.Comment, error) {
	out := []tracker.Comment{}
	err := t.pages(ctx, op, t.repoURL("/issues/"+num+"/comments", url.Values{"per_page": {"100"}}), func(body []byte) error {
		var list []apiComment
		if err := json.Unmarshal(body, &list); err != nil {
			return t.payloadErr(op, "comment list", err)
		}
		for i := range list {
			out = append(out, normalizeComment(&list[i]))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// CommentIssue posts text as a new comment.
func (t *Tracker) CommentIssue(ctx context.Context, id, text string) error {
	const op = "comment"
	n, ok := issueNumber(id)
	if !ok {
		return tracker.Errorf(tracker.ErrNotFound, op, "%q is not a GitHub issue number", id)
	}
	_, err := t.send(ctx, op, http.MethodPost, t.repoURL("/issues/"+strconv.FormatInt(n, 10)+"/comments", nil), map[string]string{"body": text})
	return err
}

// TransitionIssue moves an issue to targetState, which must be a configured state: the
// other state labels are removed and the target's added, the issue is closed (as
// completed) when the target is terminal and reopened when it is not, all in one PATCH.
// Nothing is sent when the issue is already there.
func (t *Tracker) TransitionIssue(ctx context.Context, id, targetState string) error {
	const op = "transition"
	target, ok := t.states.isState(targetState)
	if !ok {
		return tracker.Errorf(tracker.ErrPayload, op, "%q is not a configured state; GitHub states are labels from tracker.active_states (%s), tracker.terminal_states (%s) or tracker.handoff_state",
			targetState, strings.Join(t.states.active, ", "), strings.Join(t.states.terminal, ", "))
	}
	a, err := t.fetchIssue(ctx, op, id)
	if err != nil {
		return err
	}
	labels := make([]string, 0, len(a.Labels)+1)
	hasTarget, changed := false, false
	for _, l := range a.Labels {
		if st, isState := t.states.isState(l.Name); isState {
			if st == target && !hasTarget {
				hasTarget = true
				labels = append(labels, l.Name)
			} else {
				changed = true
			}
			continue
		}
		labels = append(labels, l.Name)
	}
	if !hasTarget {
		labels = append(labels, target)
		changed = true
	}
	patch := map[string]any{"labels": labels}
	open := !strings.EqualFold(a.State, "closed")
	switch terminal := t.states.terminalState(target); {
	case terminal && open:
		patch["state"], patch["state_reason"] = "closed", "completed"
		changed = true
	case !terminal && !open:
		patch["state"] = "open"
		changed = true
	}
	if !changed {
		return nil
	}
	_, err = t.send(ctx, op, http.MethodPatch, t.repoURL("/issues/"+strconv.FormatInt(a.Number, 10), nil), patch)
	return err
}

// AddLabel puts label on an issue with POST /issues/{n}/labels, which adds it to the
// issue's labels (GitHub creates it in the repository when there is no such label).
// Nothing is sent when the issue has it already, compared case-insensitively as GitHub
// names labels. A state label is refused: states move with TransitionIssue.
func (t *Tracker) AddLabel(ctx context.Context, id, label string) error {
	const op = "add_label"
	label = strings.TrimSpace(label)
	if label == "" {
		return tracker.Errorf(tracker.ErrPayload, op, "the label to add is empty")
	}
	if st, isState := t.states.isState(label); isState {
		return tracker.Errorf(tracker.ErrPayload, op, "%q is the label of state %q; GitHub states are labels, moved by a transition, not added beside another", label, st)
	}
	a, err := t.fetchIssue(ctx, op, id)
	if err != nil {
		return err
	}
	for _, l := range a.Labels {
		if strings.EqualFold(strings.TrimSpace(l.Name), label) {
			return nil
		}
	}
	_, err = t.send(ctx, op, http.MethodPost, t.repoURL("/issues/"+strconv.FormatInt(a.Number, 10)+"/labels", nil), map[string][]string{"labels": {label}})
	return err
}

// Self returns the account the token acts as (GET /user), asked once and kept. A GitHub
// App installation token has no user (GitHub answers 403): its comments are by the
// app's bot account, and Self says so with Identity.App.
func (t *Tracker) Self(ctx context.Context) (tracker.Identity, error) {
	const op = "self"
	t.selfMu.Lock()
	defer t.selfMu.Unlock()
	if t.self != nil {
		return *t.self, nil
	}
	u := *t.base
	u.Path = strings.TrimRight(t.base.Path, "/") + "/user"
	status, _, body, err := t.roundTrip(ctx, op, http.MethodGet, u.String(), nil, http.Header{})
	var id tracker.Identity
	switch {
	case status == http.StatusForbidden && tracker.KindOf(err) == tracker.ErrAuth:
		id = tracker.Identity{App: true}
	case err != nil:
		return tracker.Identity{}, err
	default:
		var me apiUser
		if err := json.Unmarshal(body, &me); err != nil || me.Login == "" {
			return tracker.Identity{}, tracker.Errorf(tracker.ErrPayload, op, "GitHub's GET /user answer names no login")
		}
		id = tracker.Identity{Login: me.Login, App: strings.EqualFold(me.Type, "Bot")}
		if me.ID > 0 {
			id.ID = strconv.FormatInt(me.ID, 10)
		}
	}
	t.self = &id
	return id, nil
}
