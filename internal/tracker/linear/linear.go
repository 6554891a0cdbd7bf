// Package linear is the tracker adapter for Linear (kind "linear"), through Linear's
// GraphQL API. It is scoped to one project (tracker.project_slug) or one team
// (tracker.team_key); an issue's state is its workflow state, moved by the state's id
// after looking the team's states up by name. It pages with cursors, holds back before
// Linear's request and complexity budgets run out, and serves the host-side
// linear_graphql agent tool (agent.go) with its own key, within a policy that keeps the
// agent to its own issue. Which issues to run and when is the orchestrator's business.
//
// Configuration, rate limits, states and errors are documented for operators in
// docs/trackers/linear.md.
package linear

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"sortie/internal/tracker"
)

// DefaultEndpoint is Linear's GraphQL API.
const DefaultEndpoint = "https://api.linear.app/graphql"

const (
	// PageSize is how many issues or comments one page asks for.
	PageSize = 50
	// MaxPages bounds one listing (2,500 issues): a scope that needs more is too broad
	// to poll.
	MaxPages = 50
	// idBatch is how many issues one state lookup asks for.
	idBatch = 50
)

// Default state lists when tracker.active_states or tracker.terminal_states is empty:
// the states of a new Linear team's workflow.
var (
	DefaultActiveStates   = []string{"Todo", "In Progress"}
	DefaultTerminalStates = []string{"Closed", "Cancelled", "Canceled", "Duplicate", "Done"}
)

var (
	_ tracker.Tracker     = (*Tracker)(nil)
	_ tracker.RateLimiter = (*Tracker)(nil)
	_ tracker.Account     = (*Tracker)(nil)
	_ tracker.Labeler     = (*Tracker)(nil)
)

// Tracker talks to one Linear workspace about one project or team. It is safe for
// concurrent use. Build it with New.
type Tracker struct {
	endpoint  string
	key       string // tracker.api_key; never logged or shown
	auth      string // the Authorization header value
	userAgent string
	project   string // project slugId; "" when scoped by team
	team      string // team key, upper case; "" when scoped by project
	// assignee narrows the candidates to one assignee's issues (tracker.assignee):
	// "me" (the key's user), an e-mail address or a user id; "" for everyone's.
	assignee string
	active   []string
	terminal []string

	client *http.Client
	now    func() time.Time // the rate limiter's clock; replaced in tests
	limits *limiter
	states *stateCache

	agentCalls agentLimiter // linear_graphql's per-issue limits (agentlimit.go)
	// agentReadsUnrestricted is linear.agent_reads: unrestricted: linear_graphql
	// queries may read anything the key can see (agentread.go is skipped).
	agentReadsUnrestricted bool

	selfMu sync.Mutex
	self   *tracker.Identity // the key's account, once known (Self)
}

// New builds a Linear tracker from cfg: Project is a project's slugId (or its URL),
// Team a team key, at least one of them; APIKey a personal API key (sent as it is) or
// an OAuth token written "Bearer …"; Endpoint the GraphQL URL (DefaultEndpoint when
// empty). Nothing is sent until the first call.
func New(cfg tracker.Config) (tracker.Tracker, error) {
	return newTracker(cfg)
}

// ValidateConfig checks everything New checks without building a tracker, for
// `sortie validate`. Its errors name the WORKFLOW.md key and the fix.
func ValidateConfig(cfg tracker.Config) error {
	_, err := newTracker(cfg)
	return err
}

var teamKeyRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9]{1,10}$`) })

func newTracker(cfg tracker.Config) (*Tracker, error) {
	project, err := ParseProject(cfg.Project)
	if err != nil {
		return nil, &tracker.Error{Kind: tracker.ErrMissingProject, Message: err.Error()}
	}
	team := strings.ToUpper(strings.TrimSpace(cfg.Team))
	switch {
	case project == "" && team == "":
		return nil, &tracker.Error{Kind: tracker.ErrMissingProject, Message: "config: tracker.project_slug or tracker.team_key: one is required for tracker.kind linear; " +
			"set project_slug to the project's slug id (the end of its URL, linear.app/ORG/project/NAME-<slug id>) or team_key to the team's key (ENG in ENG-42)"}
	case team != "" && !teamKeyRe().MatchString(team):
		return nil, &tracker.Error{Kind: tracker.ErrMissingProject, Message: fmt.Sprintf("config: tracker.team_key: must be a Linear team key, letters and digits as in the team's issue identifiers (ENG in ENG-42) (got %q)", cfg.Team)}
	}
	key := strings.TrimSpace(cfg.APIKey)
	switch {
	case key == "":
		return nil, &tracker.Error{Kind: tracker.ErrMissingAPIKey, Message: "config: tracker.api_key: is required for tracker.kind linear; set it, for example to $LINEAR_API_KEY (a personal API key from Linear's Settings → Security & access)"}
	case strings.ContainsAny(strings.TrimPrefix(key, "Bearer "), " \t\r\n"):
		return nil, &tracker.Error{Kind: tracker.ErrAuth, Message: "config: tracker.api_key: contains whitespace; a Linear API key is one word (is the variable set to something else?)"}
	}
	endpoint, err := ParseEndpoint(cfg.Endpoint)
	if err != nil {
		return nil, &tracker.Error{Kind: tracker.ErrPayload, Message: err.Error()}
	}
	ua := strings.TrimSpace(cfg.UserAgent)
	if ua == "" {
		ua = "sortie"
	}
	t := &Tracker{
		endpoint: endpoint, key: strings.TrimPrefix(key, "Bearer "), auth: key, userAgent: ua,
		project: project, team: team, assignee: strings.TrimSpace(cfg.Assignee),
		active: clean(cfg.ActiveStates), terminal: clean(cfg.TerminalStates),
		// Redirects are not followed: the key must go to the configured endpoint only.
		client: &http.Client{Timeout: requestTimeout, CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		}},
		now:    time.Now,
		limits: newLimiter(),
		states: &stateCache{byTeam: map[string][]apiState{}},
	}
	opts, err := parseOptions(cfg.Options)
	if err != nil {
		return nil, err
	}
	t.agentReadsUnrestricted = opts.agentReadsUnrestricted
	if len(t.active) == 0 {
		t.active = slices.Clone(DefaultActiveStates)
	}
	if len(t.terminal) == 0 {
		t.terminal = slices.Clone(DefaultTerminalStates)
	}
	return t, nil
}

var slugRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9]{1,64}$`) })

// ParseProject returns the project slugId of tracker.project_slug: the slug id itself
// (8e8d1fcd6c4c), the project's URL slug (my-project-8e8d1fcd6c4c) or its URL; "" when
// empty.
func ParseProject(project string) (string, error) {
	p := strings.TrimSpace(project)
	if p == "" {
		return "", nil
	}
	if i := strings.Index(p, "/project/"); i >= 0 {
		p = p[i+len("/project/"):]
		p, _, _ = strings.Cut(p, "/")
	}
	if i := strings.LastIndex(p, "-"); i >= 0 {
		p = p[i+1:]
	}
	if !slugRe().MatchString(p) {
		return "", fmt.Errorf("config: tracker.project_slug: must be a Linear project's slug id, the end of its URL (linear.app/ORG/project/NAME-<slug id>) (got %q)", project)
	}
	return p, nil
}

// ParseEndpoint checks tracker.endpoint; empty means DefaultEndpoint.
func ParseEndpoint(endpoint string) (string, error) {
	e := strings.TrimSpace(endpoint)
	if e == "" {
		return DefaultEndpoint, nil
	}
	u, err := url.Parse(e)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil || u.Fragment != "" {
		return "", fmt.Errorf("config: tracker.endpoint: must be Linear's GraphQL URL, %s (got %q)", DefaultEndpoint, endpoint)
	}
	return u.String(), nil
}

func clean(list []string) []string {
	var out []string
	for _, s := range list {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// RateLimits returns the request and complexity budgets Linear last reported, with
// ThrottledUntil set while the adapter holds its requests back.
func (t *Tracker) RateLimits() []tracker.RateLimit { return t.limits.snapshot(t.now()) }

// scope is the filter every listing is narrowed by: the project, the team, or both.
func (t *Tracker) scope() map[string]any {
	f := map[string]any{}
	if t.project != "" {
		f["project"] = map[string]any{"slugId": map[string]any{"eq": t.project}}
	}
	if t.team != "" {
		f["team"] = map[string]any{"key": map[string]any{"eq": t.team}}
	}
	return f
}

// assigneeFilter is the IssueFilter's assignee part for tracker.assignee (Symphony's
// rule: only the worker's issues are dispatched): isMe for "me", the e-mail address
// (case ignored) for a value with an @, else the user id; nil for no assignee filter.
func assigneeFilter(assignee string) map[string]any {
	switch {
	case assignee == "":
		return nil
	case strings.EqualFold(assignee, "me"):
		return map[string]any{"isMe": map[string]any{"eq": true}}
	case strings.Contains(assignee, "@"):
		return map[string]any{"email": map[string]any{"eqIgnoreCase": assignee}}
	}
	return map[string]any{"id": map[string]any{"eq": assignee}}
}

// inScope reports whether an issue is in the configured project and team.
func (t *Tracker) inScope(a *apiIssue) bool {
	if t.project != "" && (a.Project == nil || !strings.EqualFold(a.Project.SlugID, t.project)) {
		return false
	}
	if t.team != "" && (a.Team == nil || !strings.EqualFold(a.Team.Key, t.team)) {
		return false
	}
	return true
}

func (t *Tracker) scopeName() string {
	switch {
	case t.project != "" && t.team != "":
		return fmt.Sprintf("project %s of team %s", t.project, t.team)
	case t.project != "":
		return "project " + t.project
	}
	return "team " + t.team
}

func (t *Tracker) payloadErr(op, what string, err error) error {
	return &tracker.Error{Kind: tracker.ErrPayload, Op: op, Message: "Linear sent a malformed " + what, Err: err}
}

// pages runs a cursor-paged query: vars gets first and after, at names the connection
// in the answer, and each is called with every page's raw nodes.
func (t *Tracker) pages(ctx context.Context, op, query string, vars map[string]any, at func(rawData) (connection, error), each func(nodes []byte) error) error {
	var after any
	for n := 0; ; n++ {
		if n == MaxPages {
			return tracker.Errorf(tracker.ErrPayload, op, "more than %d pages of %d; narrow the scope (%s) or the states", MaxPages, PageSize, t.scopeName())
		}
		v := make(map[string]any, len(vars)+2)
		for k, x := range vars {
			v[k] = x
		}
		v["first"], v["after"] = PageSize, after
		var raw rawData
		if err := t.query(ctx, op, query, v, &raw); err != nil {
			return err
		}
		c, err := at(raw)
		if err != nil {
			return t.payloadErr(op, "page", err)
		}
		if err := each(c.Nodes); err != nil {
			return err
		}
		if !c.PageInfo.HasNextPage {
			return nil
		}
		if c.PageInfo.EndCursor == nil || *c.PageInfo.EndCursor == "" {
			return tracker.Errorf(tracker.ErrMissingEndCursor, op, "Linear said there is a next page but gave no endCursor")
		}
		after = *c.PageInfo.EndCursor
	}
}

// FetchCandidateIssues returns the issues of the scope in the active states, oldest
// first.
func (t *Tracker) FetchCandidateIssues(ctx context.Context) ([]tracker.Issue, error) {
	const op = "fetch_candidates"
	filter := t.scope()
	filter["state"] = map[string]any{"name": map[string]any{"in": t.active}}
	if f := assigneeFilter(t.assignee); f != nil {
		filter["assignee"] = f
	}
	out := []tracker.Issue{}
	err := t.pages(ctx, op, queryCandidates, map[string]any{"filter": filter}, field("issues"), func(nodes []byte) error {
		list, err := decodeNodes[apiIssue](nodes)
		if err != nil {
			return t.payloadErr(op, "issue list", err)
		}
		for i := range list {
			a := &list[i]
			// A malformed or out-of-scope issue in a listing is dropped, not fatal.
			if a.check() != nil || !t.inScope(a) {
				continue
			}
			is := normalize(a)
			if tracker.StateIn(is.State, t.active) {
				out = append(out, is)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// fetchIssue asks for one issue and refuses one outside the scope.
func (t *Tracker) fetchIssue(ctx context.Context, op, id string) (apiIssue, error) {
	id = strings.TrimSpace(id)
	if id == "" {
		return apiIssue{}, tracker.Errorf(tracker.ErrNotFound, op, "empty issue id")
	}
	var raw rawData
	if err := t.query(ctx, op, queryIssue, map[string]any{"id": id}, &raw); err != nil {
		return apiIssue{}, err
	}
	obj, err := field("issue")(raw)
	if err != nil {
		return apiIssue{}, t.payloadErr(op, "issue", err)
	}
	if len(obj.raw) == 0 || string(obj.raw) == "null" {
		return apiIssue{}, tracker.Errorf(tracker.ErrNotFound, op, "Linear has no issue %s (or the key's user cannot see it)", id)
	}
	a, err := parseIssue(obj.raw)
	if err != nil {
		return apiIssue{}, t.payloadErr(op, "issue", err)
	}
	if !t.inScope(&a) {
		return apiIssue{}, &tracker.Error{Kind: tracker.ErrNotFound, Op: op, Err: tracker.ErrOutOfProject,
			Message: fmt.Sprintf("%s is not in %s", a.Identifier, t.scopeName())}
	}
	return a, nil
}

// FetchIssueByID returns one issue, by its UUID or its identifier, with its comments
// and blockers.
func (t *Tracker) FetchIssueByID(ctx context.Context, id string) (tracker.Issue, error) {
	const op = "fetch_issue"
	a, err := t.fetchIssue(ctx, op, id)
	if err != nil {
		return tracker.Issue{}, err
	}
	is := normalize(&a)
	if is.Comments, err = t.comments(ctx, op, a.ID); err != nil {
		return tracker.Issue{}, err
	}
	return is, nil
}

// FetchIssueStatesByIDs returns id → state for the ids in the scope, batched.
func (t *Tracker) FetchIssueStatesByIDs(ctx context.Context, ids []string) (map[string]string, error) {
	const op = "fetch_states_by_ids"
	out := map[string]string{}
	want := uniq(ids)
	for start := 0; start < len(want); start += idBatch {
		batch := want[start:min(start+idBatch, len(want))]
		filter := t.scope()
		filter["id"] = map[string]any{"in": batch}
		err := t.stateList(ctx, op, filter, func(r stateRow) {
			if slices.Contains(batch, r.ID) {
				out[r.ID] = r.State
			}
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// FetchIssueStatesByIdentifiers returns identifier → state for the identifiers (ENG-42)
// in the scope; the keys are the identifiers as given. Malformed ones are omitted.
func (t *Tracker) FetchIssueStatesByIdentifiers(ctx context.Context, identifiers []string) (map[string]string, error) {
	const op = "fetch_states_by_identifiers"
	out := map[string]string{}
	byUpper := map[string]string{}
	var parsed []string
	for _, id := range uniq(identifiers) {
		if _, _, ok := splitIdentifier(id); ok {
			byUpper[strings.ToUpper(strings.TrimSpace(id))] = id
			parsed = append(parsed, id)
		}
	}
	for start := 0; start < len(parsed); start += idBatch {
		batch := parsed[start:min(start+idBatch, len(parsed))]
		numbers := map[string][]int{}
		var keys []string
		for _, id := range batch {
			k, n, _ := splitIdentifier(id)
			if _, seen := numbers[k]; !seen {
				keys = append(keys, k)
			}
			numbers[k] = append(numbers[k], n)
		}
		var or []any
		for _, k := range keys {
			or = append(or, map[string]any{"team": map[string]any{"key": map[string]any{"eq": k}}, "number": map[string]any{"in": numbers[k]}})
		}
		filter := t.scope()
		filter["or"] = or
		err := t.stateList(ctx, op, filter, func(r stateRow) {
			if given, ok := byUpper[strings.ToUpper(r.Identifier)]; ok {
				out[given] = r.State
			}
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// splitIdentifier splits ENG-42 into ENG and 42.
func splitIdentifier(id string) (string, int, bool) {
	k, num, ok := strings.Cut(strings.TrimSpace(id), "-")
	n, err := strconv.Atoi(num)
	if !ok || err != nil || n <= 0 || !teamKeyRe().MatchString(k) {
		return "", 0, false
	}
	return strings.ToUpper(k), n, true
}

type stateRow struct {
	ID, Identifier, State string
}

func (t *Tracker) stateList(ctx context.Context, op string, filter map[string]any, each func(stateRow)) error {
	return t.pages(ctx, op, queryStates, map[string]any{"filter": filter}, field("issues"), func(nodes []byte) error {
		list, err := decodeNodes[apiRef](nodes)
		if err != nil {
			return t.payloadErr(op, "issue list", err)
		}
		for _, r := range list {
			if r.ID == "" || r.State == nil {
				continue
			}
			each(stateRow{ID: r.ID, Identifier: r.Identifier, State: r.State.Name})
		}
		return nil
	})
}

func uniq(ids []string) []string {
	var out []string
	for _, id := range ids {
		if id = strings.TrimSpace(id); id != "" && !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}

// FetchIssueComments returns an issue's comments, oldest first, empty when none.
func (t *Tracker) FetchIssueComments(ctx context.Context, id string) ([]tracker.Comment, error) {
	const op = "fetch_comments"
	a, err := t.fetchIssue(ctx, op, id)
	if err != nil {
		return nil, err
	}
	return t.comments(ctx, op, a.ID)
}

func (t *Tracker) comments(ctx context.Context, op, id string) ([]tracker.Comment, error) {
	out := []tracker.Comment{}
	at := func(raw rawData) (connection, error) {
		issue, err := field("issue")(raw)
		if err != nil {
			return connection{}, err
		}
		if len(issue.raw) == 0 || string(issue.raw) == "null" {
			return connection{}, errIssueGone
		}
		return field("comments")(rawData(issue.raw))
	}
	err := t.pages(ctx, op, queryComments, map[string]any{"id": id}, at, func(nodes []byte) error {
		list, err := decodeNodes[apiComment](nodes)
		if err != nil {
			return t.payloadErr(op, "comment list", err)
		}
		for i := range list {
			if list[i].ID != "" {
				out = append(out, normalizeComment(&list[i]))
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sortComments(out)
	return out, nil
}

// CommentIssue posts text as a new comment (commentCreate).
func (t *Tracker) CommentIssue(ctx context.Context, id, text string) error {
	const op = "comment"
	var r struct {
		CommentCreate *struct {
			Success bool `json:"success"`
		} `json:"commentCreate"`
	}
	if err := t.query(ctx, op, mutationComment, map[string]any{"issue": strings.TrimSpace(id), "body": text}, &r); err != nil {
		return err
	}
	if r.CommentCreate == nil || !r.CommentCreate.Success {
		return tracker.Errorf(tracker.ErrPayload, op, "Linear did not create the comment on %s (success false)", id)
	}
	return nil
}

// TransitionIssue moves an issue to the workflow state named targetState (matched
// case-insensitively) of the issue's team: the state's id is looked up in the team's
// workflow states, cached and asked again when the name is not among them. Nothing is
// sent when the issue is already there.
func (t *Tracker) TransitionIssue(ctx context.Context, id, targetState string) error {
	const op = "transition"
	target := strings.TrimSpace(targetState)
	if target == "" {
		return tracker.Errorf(tracker.ErrPayload, op, "empty target state")
	}
	a, err := t.issueTeam(ctx, op, pollFloorFraction, id)
	if err != nil {
		return err
	}
	if a.State != nil && strings.EqualFold(a.State.Name, target) {
		return nil
	}
	st, err := t.states.byName(ctx, t, op, pollFloorFraction, a.Team.ID, target)
	if err != nil {
		return err
	}
	var r struct {
		IssueUpdate *struct {
			Success bool `json:"success"`
		} `json:"issueUpdate"`
	}
	if err := t.query(ctx, op, mutationMove, map[string]any{"id": a.ID, "state": st.ID}, &r); err != nil {
		return err
	}
	if r.IssueUpdate == nil || !r.IssueUpdate.Success {
		return tracker.Errorf(tracker.ErrPayload, op, "Linear did not move %s to %q (success false)", a.Identifier, st.Name)
	}
	return nil
}

// issueTeam asks where an issue is (its state, team and project) and refuses one
// outside the scope. floor is the rate-limit floor of the work it serves (queryAt).
func (t *Tracker) issueTeam(ctx context.Context, op string, floor int, id string) (apiIssue, error) {
	var r struct {
		Issue *apiIssue `json:"issue"`
	}
	id = strings.TrimSpace(id)
	if id == "" {
		return apiIssue{}, tracker.Errorf(tracker.ErrNotFound, op, "empty issue id")
	}
	if err := t.queryAt(ctx, op, floor, queryIssueTeam, map[string]any{"id": id}, &r); err != nil {
		return apiIssue{}, err
	}
	if r.Issue == nil {
		return apiIssue{}, tracker.Errorf(tracker.ErrNotFound, op, "Linear has no issue %s (or the key's user cannot see it)", id)
	}
	if err := r.Issue.check(); err != nil || r.Issue.Team == nil || r.Issue.Team.ID == "" {
		return apiIssue{}, t.payloadErr(op, "issue", fmt.Errorf("issue %s without an id, identifier or team", id))
	}
	if !t.inScope(r.Issue) {
		return apiIssue{}, &tracker.Error{Kind: tracker.ErrNotFound, Op: op, Err: tracker.ErrOutOfProject,
			Message: fmt.Sprintf("%s is not in %s", r.Issue.Identifier, t.scopeName())}
	}
	return *r.Issue, nil
}

// Self returns the account the key acts as (viewer), asked once and kept.
func (t *Tracker) Self(ctx context.Context) (tracker.Identity, error) {
	const op = "self"
	t.selfMu.Lock()
	defer t.selfMu.Unlock()
	if t.self != nil {
		return *t.self, nil
	}
	var r struct {
		Viewer *apiUser `json:"viewer"`
	}
	if err := t.query(ctx, op, queryViewer, nil, &r); err != nil {
		return tracker.Identity{}, err
	}
	if r.Viewer == nil || r.Viewer.ID == "" {
		return tracker.Identity{}, tracker.Errorf(tracker.ErrPayload, op, "Linear's viewer answer names no user id")
	}
	id := tracker.Identity{ID: r.Viewer.ID, Login: r.Viewer.DisplayName, Email: r.Viewer.Email, Name: r.Viewer.Name}
	t.self = &id
	return id, nil
}

// stateMissTTL is how long a state id that is not among its team's workflow states is
// remembered as missing: an agent repeating a bogus stateId costs no request until then.
const stateMissTTL = time.Minute

// maxStateMisses bounds the remembered missing ids; past it, the oldest are forgotten.
const maxStateMisses = 1024

// errNoSuchState is wrapped by the error of a state lookup that found no such state in
// the team's workflow, as opposed to one that could not ask Linear.
var errNoSuchState = errors.New("no such workflow state")

// stateCache is the workflow states of each team seen, by team id, and the state ids
// recently found missing.
type stateCache struct {
	mu     sync.Mutex
	byTeam map[string][]apiState
	missed map[string]time.Time // team id + "/" + state id → until when it is known missing
}

// byName finds the state named name (case-insensitively) of team, asking Linear when
// the team is not cached or the name is not among its cached states; floor is the
// rate-limit floor of the work it serves (queryAt).
func (c *stateCache) byName(ctx context.Context, t *Tracker, op string, floor int, team, name string) (apiState, error) {
	find := func(list []apiState) (apiState, bool) {
		i := slices.IndexFunc(list, func(s apiState) bool { return strings.EqualFold(strings.TrimSpace(s.Name), name) })
		if i < 0 {
			return apiState{}, false
		}
		return list[i], true
	}
	return c.lookup(ctx, t, op, floor, team, find, func(list []apiState) error {
		names := make([]string, len(list))
		for i, s := range list {
			names[i] = s.Name
		}
		return &tracker.Error{Kind: tracker.ErrPayload, Op: op, Err: errNoSuchState,
			Message: fmt.Sprintf("%q is not a workflow state of the issue's team (its states: %s); check tracker.active_states, handoff_state and terminal_states", name, strings.Join(names, ", "))}
	})
}

// byID finds the state with id of team, asking Linear on a miss as byName does. An id
// found missing is not asked about again for stateMissTTL: its error wraps
// errNoSuchState.
func (c *stateCache) byID(ctx context.Context, t *Tracker, op string, floor int, team, id string) (apiState, error) {
	missing := func([]apiState) error {
		return &tracker.Error{Kind: tracker.ErrPayload, Op: op, Err: errNoSuchState,
			Message: fmt.Sprintf("%q is not the id of a workflow state of the issue's team", id)}
	}
	key, now := team+"/"+id, t.now()
	c.mu.Lock()
	until, known := c.missed[key]
	c.mu.Unlock()
	if known && now.Before(until) {
		return apiState{}, missing(nil)
	}
	find := func(list []apiState) (apiState, bool) {
		i := slices.IndexFunc(list, func(s apiState) bool { return s.ID == id })
		if i < 0 {
			return apiState{}, false
		}
		return list[i], true
	}
	s, err := c.lookup(ctx, t, op, floor, team, find, missing)
	if errors.Is(err, errNoSuchState) {
		c.mu.Lock()
		if c.missed == nil {
			c.missed = map[string]time.Time{}
		}
		for k, u := range c.missed {
			if !now.Before(u) || len(c.missed) >= maxStateMisses {
				delete(c.missed, k)
			}
		}
		c.missed[key] = now.Add(stateMissTTL)
		c.mu.Unlock()
	}
	return s, err
}

func (c *stateCache) lookup(ctx context.Context, t *Tracker, op string, floor int, team string, find func([]apiState) (apiState, bool), missing func([]apiState) error) (apiState, error) {
	c.mu.Lock()
	list, cached := c.byTeam[team]
	c.mu.Unlock()
	if cached {
		if s, ok := find(list); ok {
			return s, nil
		}
	}
	var r struct {
		WorkflowStates *struct {
			Nodes []apiState `json:"nodes"`
		} `json:"workflowStates"`
	}
	if err := t.queryAt(ctx, op, floor, queryWorkflowStates, map[string]any{"team": team}, &r); err != nil {
		return apiState{}, err
	}
	if r.WorkflowStates == nil {
		return apiState{}, tracker.Errorf(tracker.ErrPayload, op, "Linear's workflowStates answer is empty")
	}
	list = r.WorkflowStates.Nodes
	c.mu.Lock()
	c.byTeam[team] = list
	c.mu.Unlock()
	if s, ok := find(list); ok {
		return s, nil
	}
	return apiState{}, missing(list)
}
